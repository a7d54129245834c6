"""What an attacker tries: no cookie, another therapist's session, a forged form, script in a transcript;
and how a page session ends: sign-out and idle expiry."""

from __future__ import annotations

import re

from sqlalchemy import text

from tests.browser.conftest import Web, published
from tests.factories import token_for
from tests.reliability.conftest import publish_session, punct, turn, word
from verbatim.db.engine import db_session


def test_no_cookie_is_sent_to_sign_in(web: Web) -> None:
    web.go("/app/sessions?status=ready")
    assert re.search(r"/app/sign-in\?next=%2Fapp%2Fsessions%3Fstatus%3Dready$", web.page.url)
    assert web.page.get_by_label("Your access token").is_visible()
    web.shot("sign-in")


def test_sign_in_sets_a_strict_httponly_cookie_and_sign_out_revokes_it(web: Web, alice: str) -> None:
    web.sign_in(alice)
    cookie = web.cookie()
    assert cookie is not None and cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert not cookie["secure"]  # plain http here; over TLS it is Secure
    web.page.get_by_role("button", name="Sign out").click()
    web.page.wait_for_url(re.compile(r".*/app/sign-in$"))
    # The old cookie value, replayed, opens nothing: the session was revoked on the server.
    web.context.add_cookies([{"name": cookie["name"], "value": cookie["value"], "url": web.url}])
    web.go("/app/sessions")
    assert "/app/sign-in" in web.page.url


def test_idle_session_asks_to_sign_in_again(web: Web, alice: str) -> None:
    web.sign_in(alice)
    assert web.settings.database_url
    with db_session(web.settings.database_url) as db:
        db.execute(text("UPDATE web_sessions SET last_seen_at = now() - make_interval(secs => :s)"),
                   {"s": web.settings.web_idle_s + 1})
    web.go("/app/sessions")
    assert "/app/sign-in" in web.page.url
    assert web.page.get_by_text("Your session ended after a period without activity").is_visible()


def test_a_wrong_token_does_not_sign_in(web: Web) -> None:
    """(An operations token signs in to the runs page alone: tests/browser/test_ops_page.py.)"""
    web.go("/app/sign-in")
    web.page.get_by_label("Your access token").fill("vbt_not-a-token")
    web.page.get_by_role("button", name="Sign in").click()
    assert web.page.get_by_text("That token is unknown, expired or revoked.").is_visible()
    assert web.cookie() is None


def test_form_post_without_a_session_goes_to_sign_in_unread(web: Web) -> None:
    answer = web.page.request.post(f"{web.url}/app/sign-out", form={"csrf_token": "x"}, max_redirects=0)
    assert answer.status == 303 and answer.headers["location"] == "/app/sign-in"


def test_another_therapists_session_is_a_404_page(web: Web, alice: str) -> None:
    assert web.settings.database_url
    bobs = publish_session(web.settings.database_url, therapist="Bob", clinic="North Clinic")
    web.sign_in(alice)
    answer = web.go(f"/app/sessions/{bobs}")
    assert answer.status == 404
    assert web.page.get_by_role("heading", name="Not found").is_visible()
    assert "client-a" not in web.page.content()
    web.shot("not-found")


def test_form_post_without_csrf_token_is_403(web: Web, alice: str) -> None:
    assert web.settings.database_url
    sid = published(web.settings.database_url)
    web.sign_in(alice)
    # The browser's own cookie goes with it (as a forged cross-site form would try), but no CSRF token.
    answer = web.page.request.post(f"{web.url}/app/sessions/{sid}/speakers",
                                   form={"speaker-S1": "client-a", "speaker-S2": "therapist"})
    assert answer.status == 403
    assert "CSRF" in answer.text()
    wrong = web.page.request.post(f"{web.url}/app/sessions/{sid}/speakers",
                                  form={"speaker-S1": "client-a", "csrf_token": "forged"})
    assert wrong.status == 403
    with db_session(web.settings.database_url) as db:
        assert db.execute(text("SELECT speaker_map FROM sessions WHERE id = :i"), {"i": sid}).scalar() is None


def test_script_in_a_segment_renders_as_text(web: Web, alice: str) -> None:
    assert web.settings.database_url
    hostile = "<script>window.pwned=1</script><img src=x onerror=window.pwned=2>"
    raw = [turn("S1", 0.0, 2.0, [word("hello", 0.1), punct(".", 0.4)]),
           turn("S2", 2.1, 4.0, [word(hostile, 2.2)])]
    sid = published(web.settings.database_url, raw, polish=False)
    web.sign_in(alice)
    web.go(f"/app/sessions/{sid}")
    assert web.page.get_by_text(hostile).first.is_visible()
    assert web.page.evaluate("window.pwned === undefined")
    web.shot("hostile-segment")


def test_bearer_token_still_needed_for_the_json_api(web: Web, alice: str) -> None:
    web.sign_in(alice)
    # A page session is not a bearer token: the JSON API does not open for the cookie alone.
    answer = web.page.request.get(f"{web.url}/v1/sessions")
    assert answer.status == 401
    other = token_for(web.settings, "Carol", "North Clinic")
    assert web.page.request.get(f"{web.url}/v1/sessions", headers={"authorization": f"Bearer {other}"}).ok
