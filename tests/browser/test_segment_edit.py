"""A therapist fixes a misheard word by rewriting the segment: a new transcript version, the
original shown on request, the correction kept when the transcript is republished; accessible."""

from __future__ import annotations

import re

from sqlalchemy import select

from tests.browser.conftest import Web, axe_violations, published
from tests.reliability.conftest import analyse_now, suggestions_of
from verbatim.db.engine import db_session
from verbatim.db.models import AuditEntry, SegmentEdit, Transcript
from verbatim.db.repo import Repo


def test_fix_a_misheard_word_by_free_text_correction(web: Web, alice: str) -> None:
    assert web.settings.database_url
    url = web.settings.database_url
    sid = published(url)
    analyse_now(url, sid)
    with db_session(url) as db:
        version = db.execute(select(Transcript.version).where(Transcript.session_id == sid)).scalar_one()
    web.sign_in(alice)
    web.go(f"/app/sessions/{sid}")
    page = web.page
    turn = page.locator("#turn-3")
    original = turn.locator("p.said").first.inner_text()
    assert "eek at work" in original
    turn.get_by_role("link", name=re.compile("Correct the words")).click()
    turn.get_by_label("Corrected words").fill("Weak at work, I said.")
    assert "/edit" not in page.url  # the form was loaded in place
    web.shot("segment-correcting")
    turn.get_by_role("button", name="Save correction").click()
    page.locator("#turn-3[data-corrected]").wait_for()
    turn = page.locator("#turn-3")
    assert turn.locator("p.said").first.inner_text() == "Weak at work, I said."
    assert turn.get_by_text("corrected", exact=True).is_visible()
    shown = turn.locator("details.original p")
    assert not shown.is_visible()
    turn.get_by_text("Show original").click()
    assert shown.is_visible() and shown.inner_text().split() == ["Original:", *original.split()]
    web.shot("segment-corrected")
    assert not axe_violations(web)

    with db_session(url) as db:
        rows = db.execute(select(Transcript.version, Transcript.segments).where(Transcript.session_id == sid)).one()
        edits = db.execute(select(SegmentEdit).where(SegmentEdit.session_id == sid)).scalars().all()
        audited = db.execute(select(AuditEntry.action).where(AuditEntry.session_id == sid)).scalars().all()
    assert rows.version == version + 1 and rows.segments[3]["id"] == "seg-3"
    assert rows.segments[3]["text"] == "Weak at work, I said."
    assert [(e.turn_index, e.original) for e in edits] == [(3, original)]
    assert "segment_corrected" in audited

    # Another review republishes the transcript from the recognizer's words: the correction stays.
    doubt = next(s for s in suggestions_of(url, sid) if s.turn_index != 3 and s.status == "pending"
                 and s.word_index is not None)
    page.get_by_role("button", name=f"Validate “{doubt.original}”").click()
    page.locator("mark.doubt-validated").first.wait_for()
    turns = Repo(url).get(sid).published_turns or []
    assert turns[3]["text"] == "Weak at work, I said."


def test_an_empty_correction_is_refused_and_changes_nothing(web: Web, alice: str) -> None:
    assert web.settings.database_url
    url = web.settings.database_url
    sid = published(url)
    web.sign_in(alice)
    web.go(f"/app/sessions/{sid}")
    before = Repo(url).get(sid).published_turns
    turn = web.page.locator("#turn-3")
    turn.get_by_role("link", name=re.compile("Correct the words")).click()
    box = turn.get_by_label("Corrected words")
    box.fill("   ")
    box.evaluate("b => b.removeAttribute('required')")
    turn.get_by_role("button", name="Save correction").click()
    web.page.get_by_role("alert").wait_for()
    assert "1 to 4000 characters" in web.page.get_by_role("alert").inner_text()
    assert Repo(url).get(sid).published_turns == before


def test_without_script_the_form_has_its_own_page_and_other_therapists_get_404(web: Web, alice: str) -> None:
    assert web.settings.database_url
    url = web.settings.database_url
    sid = published(url)
    other = published(url, therapist="Bob", clinic="South Clinic")
    web.sign_in(alice)
    assert web.go(f"/app/sessions/{other}/segments/seg-3/edit").status == 404
    assert web.page.get_by_role("heading", name="Not found").is_visible()
    web.go(f"/app/sessions/{sid}/segments/seg-3/edit")
    page = web.page
    page.get_by_label("Corrected words").fill("Weak at work.")
    page.get_by_role("button", name="Save correction").click()
    page.locator("#turn-3[data-corrected]").wait_for()
    assert (Repo(url).get(sid).published_turns or [])[3]["text"] == "Weak at work."
    assert (Repo(url).get(other).published_turns or [])[3]["text"] != "Weak at work."
