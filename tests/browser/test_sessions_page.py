"""The sessions page: newest first, failure reasons in words, filters, paging, live progress."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from sqlalchemy import insert, text, update

from tests.browser.conftest import Web, scaled_ms
from verbatim.auth import ensure_therapist
from verbatim.db.engine import db_session
from verbatim.db.models import Session
from verbatim.web.session_list import PAGE_SIZE


def _sessions(database_url: str, n: int, **fields: object) -> list[object]:
    therapist_id, clinic_id = ensure_therapist(database_url, "Alice", "North Clinic")
    now = datetime.now(UTC)
    rows = [dict(therapist_id=therapist_id, clinic_id=clinic_id, status="ready", client_ids=[f"client-{i}"],
                 recorded_at=now - timedelta(days=i), created_at=now - timedelta(days=i),
                 session_type="individual", audio_sha256="0" * 64, audio_bytes=1, audio_duration_s=3000.0,
                 audio_format="wav") | fields for i in range(n)]
    with db_session(database_url) as db:
        return list(db.execute(insert(Session).returning(Session.id), rows).scalars())


def test_filters_paging_and_failure_reasons(web: Web, alice: str) -> None:
    assert web.settings.database_url
    url = web.settings.database_url
    _sessions(url, PAGE_SIZE + 3)
    _sessions(url, 1, status="failed", failure_code="recognizer_unavailable", client_ids=["client-failed"])
    web.sign_in(alice)
    page = web.page
    rows = page.locator("#session-rows tr")
    assert rows.count() == PAGE_SIZE
    assert rows.first.get_by_text("client-failed").is_visible()  # newest first
    assert rows.first.get_by_text("could not be reached").is_visible()
    web.shot("sessions-page-1")
    page.get_by_role("link", name="Older").click()
    assert page.locator("#session-rows tr").count() == 4
    page.get_by_label("Status").select_option("failed")
    page.get_by_role("button", name="Filter").click()
    assert page.locator("#session-rows tr").count() == 1
    assert "status=failed" in page.url
    page.get_by_label("Status").select_option("")
    since = (datetime.now(UTC) - timedelta(days=2)).date().isoformat()
    page.get_by_label("Recorded from").fill(since)
    page.get_by_role("button", name="Filter").click()
    assert 2 <= page.locator("#session-rows tr").count() <= 4  # the last days' sessions only
    assert web.go("/app/sessions?since=yesterday").status == 422


def test_progress_updates_without_reloading(web: Web, alice: str) -> None:
    assert web.settings.database_url
    url = web.settings.database_url
    [sid] = _sessions(url, 1, status="queued")
    web.sign_in(alice)
    page = web.page
    page.evaluate("window.notReloaded = true")
    assert page.locator("#session-rows").get_by_text("Queued").is_visible()
    with db_session(url) as db:
        db.execute(update(Session).where(Session.id == sid).values(status="recognizing"))
    page.locator("#session-rows").get_by_text("Recognizing speech").wait_for(timeout=scaled_ms(20_000))
    with db_session(url) as db:
        db.execute(update(Session).where(Session.id == sid).values(status="failed", failure_code="interrupted"))
    page.locator("#session-rows").get_by_text("interrupted too many times").wait_for(timeout=scaled_ms(20_000))
    assert page.evaluate("window.notReloaded === true")
    # Nothing left in progress: the table stops asking.
    assert page.locator("#session-rows[hx-get]").count() == 0


def test_a_poll_after_idle_expiry_sends_the_page_to_sign_in(web: Web, alice: str) -> None:
    assert web.settings.database_url
    url = web.settings.database_url
    _sessions(url, 1, status="queued")
    web.sign_in(alice)
    with db_session(url) as db:
        db.execute(text("UPDATE web_sessions SET last_seen_at = now() - make_interval(secs => :s)"),
                   {"s": web.settings.web_idle_s + 1})
    web.page.wait_for_url(re.compile(r".*/app/sign-in\?.*expired=true"), timeout=scaled_ms(20_000))
    assert web.page.get_by_text("Your session ended after a period without activity").is_visible()
