"""A therapist reviews a transcript: the doubtful word, the family session's speakers, per-client tabs;
the pages pass an automated accessibility check (axe-core in the browser) at laptop and tablet widths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser

from tests.browser.conftest import Web, axe_violations, published, start_web
from tests.reliability.conftest import analyse_now, suggestions_of
from verbatim.config import Settings
from verbatim.db.repo import Repo


def test_fix_a_misheard_word_then_revert(web: Web, alice: str) -> None:
    assert web.settings.database_url
    url = web.settings.database_url
    sid = published(url)
    analyse_now(url, sid)
    web.sign_in(alice)
    web.go(f"/app/sessions/{sid}")
    page = web.page
    assert page.get_by_text("No audio to play.").is_visible()
    assert page.locator("mark.doubt-pending", has_text="week").is_visible()
    web.shot("session-review")
    page.get_by_role("button", name="Validate “week”").click()
    page.locator("mark.doubt-validated").first.wait_for()
    week = next(s for s in suggestions_of(url, sid) if s.original == "week")
    assert week.status == "validated"
    words = " ".join(t["text"] for t in (Repo(url).get(sid).published_turns or []))
    assert "Weak at work" in words
    page.get_by_role("button", name="Revert “week”").click()
    page.locator("mark.doubt-pending", has_text="week").wait_for()
    assert next(s for s in suggestions_of(url, sid) if s.original == "week").status == "pending"
    page.get_by_role("button", name="Ignore “week”").click()
    page.locator("mark.doubt-ignored", has_text="week").wait_for()


def test_family_session_speakers_and_tabs(web: Web, alice: str) -> None:
    assert web.settings.database_url
    url = web.settings.database_url
    sid = published(url, client_ids=["mum", "dad", "kid"])
    web.sign_in(alice)
    web.go(f"/app/sessions/{sid}")
    page = web.page
    # Voices not told apart yet: the client's turns are unassigned, in no client's record.
    assert page.get_by_role("heading", name="Unassigned turns").is_visible()
    assert page.get_by_role("tab").count() == 3
    web.shot("family-before")
    page.get_by_label("Speaker S2 is").select_option("dad")
    page.get_by_role("button", name="Save speakers").click()
    page.get_by_role("heading", name="Speakers").wait_for()
    assert page.get_by_role("heading", name="Unassigned turns").count() == 0
    assert Repo(url).get(sid).speaker_map == {"S1": "therapist", "S2": "dad"}
    page.get_by_role("tab", name="dad").click()
    dad = page.get_by_role("tabpanel", name="dad")
    assert dad.locator("p.said", has_text="Fine.").is_visible()
    assert page.get_by_role("tabpanel", name="mum").is_hidden()
    page.get_by_role("tab", name="dad").press("ArrowRight")
    assert page.get_by_role("tabpanel", name="kid").is_visible()
    web.shot("family-after")


@pytest.mark.parametrize("width", [1280, 800])
def test_pages_pass_axe(browser: Browser, settings: Settings, tmp_path: Path, alice: str, width: int) -> None:
    assert settings.database_url
    sid = published(settings.database_url, client_ids=["mum", "dad"])
    analyse_now(settings.database_url, sid)
    server, web = start_web(browser, settings, tmp_path, width=width, height=1000)
    try:
        found: dict[str, list[dict[str, Any]]] = {}
        web.go("/app/sign-in")
        found["sign-in"] = axe_violations(web)
        web.sign_in(alice)
        for name, path in (("sessions", "/app/sessions"), ("session", f"/app/sessions/{sid}"),
                           ("upload", "/app/upload")):
            web.go(path)
            found[name] = axe_violations(web)
            web.shot(f"{name}-{width}")
        bad = {k: [(v["id"], v["help"]) for v in vs] for k, vs in found.items() if vs}
        assert not bad, bad
        assert not web.outside
    finally:
        web.context.close()
        server.stop()
