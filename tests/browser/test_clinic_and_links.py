"""A clinic admin's pages (metadata list, break-glass with a reason, audit log); a one-time sign-in
link (works once); ``/docs`` from local files."""

from __future__ import annotations

import re

from sqlalchemy import text

from tests.browser.conftest import Web, axe_violations, published
from tests.factories import token_for
from verbatim.auth import token_id
from verbatim.db.engine import db_session
from verbatim.web.store import sign_in_link


def test_clinic_admin_reads_metadata_then_breaks_glass_with_a_reason(web: Web) -> None:
    assert web.settings.database_url
    url = web.settings.database_url
    sid = published(url, client_ids=["client-secret-id"])
    admin = token_for(web.settings, "ignored", "North Clinic", scope="clinic_admin")
    web.sign_in(admin, then="/app/clinic")
    page = web.page
    assert page.url.endswith("/app/clinic")
    assert "client-secret-id" not in page.content()  # metadata only
    assert page.locator("td .status-ready").count() == 1
    web.shot("clinic")
    # Without a grant, the transcript is a 404 page.
    assert web.go(f"/app/clinic/sessions/{sid}/transcript").status == 404
    web.go("/app/clinic")
    # The browser refuses a short reason (minlength); the server does too, with the reason why.
    csrf = page.locator('input[name="csrf_token"]').first.get_attribute("value")
    short = page.request.post(f"{web.url}/app/clinic/sessions/{sid}/break-glass",
                              form={"csrf_token": csrf or "", "reason": "too short"})
    assert short.status == 422 and "10 to 500 characters" in short.text()
    page.get_by_text("Break glass").click()
    page.get_by_label("Why you need this session now").fill("Client in crisis; their therapist is on leave today.")
    page.get_by_role("button", name="Read the transcript").click()
    page.get_by_role("heading", name="Break-glass reading").wait_for()
    assert page.get_by_text("How have you been?").is_visible()
    web.shot("break-glass")
    web.go("/app/audit")
    rows = page.locator("table.audit tbody tr")
    assert rows.filter(has_text="transcript_read_break_glass").count() == 1
    assert rows.filter(has_text="break_glass_opened").count() == 1
    web.shot("audit")
    assert not axe_violations(web)
    web.go("/app/clinic")
    assert not axe_violations(web)
    with db_session(url) as db:
        actions = set(db.execute(text("SELECT action FROM audit_log WHERE scope = 'clinic_admin'")).scalars())
    assert {"signed_in", "sessions_listed", "break_glass_opened", "transcript_read_break_glass",
            "audit_read"} <= actions


def test_therapist_cannot_open_the_audit_log(web: Web, alice: str) -> None:
    web.sign_in(alice)
    assert web.go("/app/audit").status == 403


def test_one_time_link_signs_in_once(web: Web) -> None:
    assert web.settings.database_url
    url = web.settings.database_url
    token = token_for(web.settings, "Alice", "North Clinic")
    link = sign_in_link(url, token_id(url, token), web.url, 60)
    web.page.goto(link)
    # The page names the account and waits to be asked: nothing posts it by itself.
    web.page.get_by_text("signs you in to Verbatim as Alice (North Clinic)").wait_for()
    assert web.page.url.startswith(link)
    web.page.get_by_role("button", name="Continue as Alice (North Clinic)").click()
    web.page.wait_for_url(re.compile(r".*/app/sessions$"))
    assert web.page.get_by_role("heading", name="Your sessions").is_visible()
    web.context.clear_cookies()
    web.page.goto(link)
    web.page.get_by_text("already used or has expired").wait_for()


def test_a_forwarded_link_never_replaces_the_signed_in_account_unasked(web: Web) -> None:
    """Login CSRF: Bob, of another clinic, sends his own unused link to Alice, who is signed in."""
    assert web.settings.database_url
    url = web.settings.database_url
    alice = token_for(web.settings, "Alice", "North Clinic")
    bob = token_for(web.settings, "Bob", "South Clinic")
    web.sign_in(alice)
    link = sign_in_link(url, token_id(url, bob), web.url, 60)
    web.page.goto(link)
    web.page.get_by_text("signs you in to Verbatim as Bob (South Clinic)").wait_for()
    web.page.get_by_role("button", name="Continue as Bob (South Clinic)").click()
    # Posted with Alice's live session: asked again, naming both; the link is not used yet.
    web.page.get_by_text("This browser is signed in as").wait_for()
    assert "Alice (North Clinic)" in web.page.content()
    with db_session(url) as db:
        assert db.execute(text("SELECT count(*) FROM web_sign_in_links WHERE used_at IS NOT NULL")).scalar() == 0
    web.shot("forwarded-link")
    assert not axe_violations(web)
    web.page.get_by_role("link", name="Stay signed in as Alice (North Clinic)").click()
    web.page.wait_for_url(re.compile(r".*/app/sessions$"))
    with db_session(url) as db:
        therapists = set(db.execute(text(
            "SELECT th.name FROM web_sessions w JOIN api_tokens t ON t.id = w.token_id "
            "JOIN therapists th ON th.id = t.therapist_id WHERE w.revoked_at IS NULL")).scalars())
    assert therapists == {"Alice"}


def test_docs_are_served_from_local_files(web: Web) -> None:
    web.go("/docs")
    web.page.get_by_text("/v1/sessions").first.wait_for()
    web.shot("docs")
    assert not web.outside
