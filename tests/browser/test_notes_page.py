"""Clinical notes on the pages, in a real browser: draft a SOAP note and watch it written, select a
sentence and see its evidence, edit, sign, export (PDF and FHIR downloads); a draft is never
exported; the note forms refuse a post without the CSRF token; another therapist's note is a 404 page."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

from playwright.sync_api import Browser, expect

from tests.browser.conftest import Web, axe_violations, start_web
from tests.conftest import SAMPLES
from tests.factories import ready_session, token_for
from verbatim.config import Settings
from verbatim.db.engine import db_session
from verbatim.db.models import Note, Session
from verbatim.notes.run import run_note
from verbatim.notes.service import request_note
from verbatim.runtime import build_context

DIALOGUE = SAMPLES / "therapy_dialogue.json"
CONTRADICTED = "Client reports that they fall asleep around three in the morning."


def session_of_alice(settings: Settings) -> uuid.UUID:
    return ready_session(settings, DIALOGUE, therapist="Alice", clinic="North Clinic")


def drafted(settings: Settings, sid: uuid.UUID) -> uuid.UUID:
    """A SOAP note of the session, requested and drafted by a real note run (in this process)."""
    with db_session(settings.database_url or "") as db:
        session = db.get(Session, sid)
        assert session is not None
        made = request_note(db, settings, session, "soap", None)
    run_note(build_context(settings), made.note_id)
    return made.note_id


def status_of(settings: Settings, note_id: uuid.UUID) -> tuple[str, int]:
    with db_session(settings.database_url or "") as db:
        note = db.get(Note, note_id)
        assert note is not None
        return note.status, note.version


def test_draft_watch_evidence_edit_sign_export(web: Web, alice: str, tmp_path: Path) -> None:
    sid = session_of_alice(web.settings)
    web.sign_in(alice)
    web.go(f"/app/sessions/{sid}")
    page = web.page
    page.get_by_label("Format").select_option("soap")
    page.get_by_role("button", name="Draft a note").click()
    page.wait_for_url(re.compile(r".*/app/notes/[0-9a-f-]+$"))
    note_id = uuid.UUID(page.url.rsplit("/", 1)[1])
    expect(page.get_by_role("status")).to_contain_text("Queued")
    web.shot("note-queued")
    # The note run (a real one, in this process): the page, polling, reloads once it is drafted.
    run_note(build_context(web.settings), note_id)
    page.get_by_role("heading", name="Subjective").wait_for()
    assert page.get_by_role("heading", name="Risk flags").is_visible()
    assert page.get_by_text("No risk statements detected by the automatic check").is_visible()
    assert not page.get_by_role("link", name="Download PDF").count()

    first = page.locator("a.sentence").first
    cited = (first.get_attribute("data-cites") or "").split()
    assert cited and all(c.startswith("seg-") for c in cited)
    first.click()
    evidence = page.locator(f"#ev-{cited[0]}")
    expect(evidence).to_have_class(re.compile(r"\bcited\b"))
    expect(evidence).to_be_in_viewport()
    assert evidence.get_attribute("aria-current") == "true"
    web.shot("note-evidence")
    assert not axe_violations(web)

    box = page.get_by_label("Subjective (one sentence a line)")
    lines = box.input_value().splitlines()
    box.fill("\n".join([CONTRADICTED, *lines[1:]]))
    page.get_by_role("button", name="Save edits").click()
    page.locator("#note-meta").get_by_text("version 2").wait_for()
    assert page.get_by_text("⚠ Contradicted by the cited words").first.is_visible()
    assert status_of(web.settings, note_id) == ("draft", 2)

    # Signing asks for a decision on each flagged sentence: nothing is signed by one click.
    decide = page.locator("fieldset.decide").filter(has_text=CONTRADICTED)
    expect(decide).to_contain_text("the cited words say otherwise")
    page.get_by_role("button", name="Sign the note").click()
    assert status_of(web.settings, note_id) == ("draft", 2)
    for box in page.get_by_label("Keep as written").all():
        box.check()
    web.shot("note-sign-review")
    page.get_by_role("button", name="Sign the note").click()
    page.get_by_role("heading", name="Export").wait_for()
    assert status_of(web.settings, note_id) == ("signed", 3)
    expect(page.locator("a.sentence", has_text=CONTRADICTED).locator("..")).to_contain_text(
        "kept as written at signing")
    with page.expect_download() as pdf:
        page.get_by_role("link", name="Download PDF").click()
    assert Path(pdf.value.path()).read_bytes().startswith(b"%PDF")
    with page.expect_download() as fhir:
        page.get_by_role("link", name="Download FHIR (JSON)").click()
    resource = json.loads(Path(fhir.value.path()).read_text())
    assert resource["resourceType"] == "Bundle"
    doc = next(e["resource"] for e in resource["entry"] if e["resource"]["resourceType"] == "DocumentReference")
    assert doc["docStatus"] == "final"
    assert not axe_violations(web)
    web.shot("note-signed")

    page.get_by_label("Reason for the amendment").fill("Corrected the time the client falls asleep.")
    page.get_by_role("button", name="Save amendment").click()
    page.get_by_text("amended").first.wait_for()
    assert status_of(web.settings, note_id) == ("signed", 4)


def test_a_draft_cannot_be_exported(web: Web, alice: str) -> None:
    note_id = drafted(web.settings, session_of_alice(web.settings))
    web.sign_in(alice)
    web.go(f"/app/notes/{note_id}")
    assert web.page.get_by_text("Drafts are never exported").is_visible()
    assert web.page.get_by_role("link", name="Download PDF").count() == 0
    for kind in ("pdf", "fhir"):
        answer = web.go(f"/app/notes/{note_id}/{kind}")
        assert answer.status == 409
        assert "sign the note first" in web.page.get_by_role("alert").inner_text()


def test_note_forms_without_csrf_token_are_refused(web: Web, alice: str) -> None:
    sid = session_of_alice(web.settings)
    note_id = drafted(web.settings, sid)
    web.sign_in(alice)
    web.go(f"/app/notes/{note_id}")
    page = web.page
    page.locator("form[action$='/sign'] input[name=csrf_token]").evaluate("e => e.remove()")
    page.get_by_role("button", name="Sign the note").click()
    page.get_by_role("heading", name="Not allowed").wait_for()
    assert "CSRF" in page.get_by_role("alert").inner_text()
    posts: list[tuple[str, dict[str, str | float | bool]]] = [
        (f"/app/notes/{note_id}/edit", {"section-0-name": "Subjective", "section-0-text": "x"}),
        (f"/app/notes/{note_id}/autosave", {"section-0-name": "Subjective", "section-0-text": "x"}),
        (f"/app/notes/{note_id}/amend", {"reason": "because I can"}),
        (f"/app/sessions/{sid}/notes", {"format": "soap"})]
    for path, form in posts:
        assert page.request.post(web.url + path, form=form, max_redirects=0).status == 403
    assert status_of(web.settings, note_id) == ("draft", 1)
    with db_session(web.settings.database_url or "") as db:
        assert db.query(Note).filter(Note.session_id == sid).count() == 1


def test_another_therapists_note_is_a_404_page(web: Web, alice: str) -> None:
    note_id = drafted(web.settings, session_of_alice(web.settings))
    web.sign_in(token_for(web.settings, "Bob", "South Clinic"))
    for path in (f"/app/notes/{note_id}", f"/app/notes/{note_id}/pdf", f"/app/notes/{note_id}/progress"):
        answer = web.go(path)
        assert answer.status == 404
        assert web.page.get_by_role("heading", name="Not found").is_visible()
    assert web.page.request.post(web.url + f"/app/notes/{note_id}/sign", max_redirects=0,
                                 headers={"x-csrf-token": "wrong"}).status in (403, 404)
    assert status_of(web.settings, note_id) == ("draft", 1)


def test_risk_flags_stand_out_and_lead_to_their_words_at_tablet_width(browser: Browser, settings: Settings,
                                                                      tmp_path: Path, alice: str) -> None:
    sid = ready_session(settings, SAMPLES / "notes" / "risk_discussed.json", therapist="Alice",
                        clinic="North Clinic")
    note_id = drafted(settings, sid)
    server, web = start_web(browser, settings, tmp_path, width=800, height=1000)
    try:
        web.sign_in(alice)
        web.go(f"/app/notes/{note_id}")
        page = web.page
        risk = page.get_by_role("region", name="Risk flags")
        expect(risk).to_contain_text("about risk found in the transcript")
        flag = risk.locator("a[data-cites]").first
        target = page.locator(f"#ev-{flag.get_attribute('data-cites')}")
        flag.click()
        expect(target).to_have_class(re.compile(r"\bcited\b"))
        # At tablet width the record is below the note: the cited words open under the flag instead.
        inline = risk.locator(".inline-evidence")
        expect(inline).to_be_in_viewport()
        expect(inline).to_contain_text(target.locator(".said").inner_text())
        web.shot("note-risk-tablet")
        bad = [(v["id"], v["help"]) for v in axe_violations(web)]
        assert not bad, bad
        assert not web.outside
    finally:
        web.context.close()
        server.stop()


def test_a_note_whose_transcript_is_gone_shows_its_quote_snapshots(web: Web, alice: str) -> None:
    from datetime import UTC, datetime

    from sqlalchemy import delete, update

    from verbatim.db.models import Transcript

    sid = session_of_alice(web.settings)
    note_id = drafted(web.settings, sid)
    with db_session(web.settings.database_url or "") as db:
        db.execute(delete(Transcript).where(Transcript.session_id == sid))
        db.execute(update(Session).where(Session.id == sid).values(transcript_expired_at=datetime.now(UTC)))
    web.sign_in(alice)
    web.go(f"/app/notes/{note_id}")
    page = web.page
    expect(page.locator(".evidence")).to_contain_text("the words each citation quoted")
    first = page.locator("a.sentence").first
    first.click()
    cited = page.locator(f"#ev-{(first.get_attribute('data-cites') or '').split()[0]}")
    expect(cited).to_have_class(re.compile(r"\bcited\b"))


def test_only_the_named_supervisor_cosigns_from_the_note_page(web: Web, alice: str) -> None:
    from verbatim import staff
    from verbatim.db.models import Therapist

    carol = token_for(web.settings, "Carol", "North Clinic")
    dave = token_for(web.settings, "Dave", "North Clinic")
    with db_session(web.settings.database_url or "") as db:
        ids = {t.name: (t.id, t.clinic_id) for t in db.query(Therapist)}
        staff.update_therapist(db, ids["Alice"][1], ids["Alice"][0], supervisor_id=ids["Carol"][0])
    note_id = drafted(web.settings, session_of_alice(web.settings))
    page = web.page
    web.sign_in(alice)
    web.go(f"/app/notes/{note_id}")
    for box in page.get_by_label("Keep as written").all():
        box.check()
    page.get_by_role("button", name="Sign the note").click()
    page.get_by_text("awaiting co-signature").wait_for()
    assert page.get_by_text("exported once their supervisor co-signs it").is_visible()
    assert page.get_by_role("button", name="Co-sign the note").count() == 0

    # Another therapist of the clinic: no note, no button.
    web.sign_in(dave)
    assert web.go(f"/app/notes/{note_id}").status == 404
    assert page.get_by_role("button", name="Co-sign the note").count() == 0

    web.sign_in(carol)
    answer = web.go(f"/app/notes/{note_id}")
    assert answer.status == 200, page.content()[:3000]
    page.get_by_role("heading", name="Subjective").wait_for()
    assert page.get_by_role("button", name="Sign the note", exact=True).count() == 0
    assert page.get_by_role("heading", name="Amend").count() == 0
    web.shot("note-cosign")
    page.get_by_role("button", name="Co-sign the note").click()
    page.get_by_text("co-signed").first.wait_for()
    with db_session(web.settings.database_url or "") as db:
        note = db.get(Note, note_id)
        assert note is not None and note.cosigned_by == ids["Carol"][0] and note.cosigned_at is not None
    assert not axe_violations(web)
