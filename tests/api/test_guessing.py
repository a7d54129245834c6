"""Guessing leaves a trace and hits a wall (issue 24 items 4 and 6), against a real uvicorn server:
failed bearer tokens, sign-ins and link codes are counted per client address, audited and
throttled (429 + Retry-After from the limit on, even for a right token); the client address is
the connection's unless the proxy that sent ``X-Forwarded-For`` is trusted."""

from __future__ import annotations

import secrets
from collections.abc import Callable

import httpx
from prometheus_client import REGISTRY
from sqlalchemy import text

from tests.api.conftest import LiveServer
from tests.factories import token_for
from verbatim.db.engine import db_session


def H(token: str) -> dict[str, str]:  # noqa: N802 - reads like a header
    return {"authorization": f"Bearer {token}"}


def wrong() -> str:
    return "vbt_" + secrets.token_urlsafe(32)


def audit_rows(server: LiveServer, action: str) -> list[tuple[str | None, str | None, dict | None]]:  # type: ignore[type-arg]
    with db_session(server.settings.database_url or "") as db:
        return [(r.scope, r.remote_addr, r.detail) for r in db.execute(text(
            "SELECT scope, remote_addr, detail FROM audit_log WHERE action = :a ORDER BY id"), {"a": action})]


def failures(kind: str) -> float:
    return REGISTRY.get_sample_value("auth_failures_total", {"kind": kind}) or 0.0


def test_ten_wrong_tokens_a_minute_then_429_even_for_the_right_one(live: Callable[..., LiveServer]) -> None:
    server = live(auth_failures_per_min=10)
    alice = token_for(server.settings, "Alice", "North Clinic")
    before = failures("bearer")
    with httpx.Client(base_url=server.url, timeout=30) as client:
        assert client.get("/v1/sessions", headers=H(alice)).status_code == 200
        for _ in range(10):
            assert client.get("/v1/sessions", headers=H(wrong())).status_code == 401
        for request in (lambda: client.get("/v1/sessions", headers=H(wrong())),
                        lambda: client.get("/v1/sessions", headers=H(alice)),  # a right guess reveals nothing
                        lambda: client.put(f"/v1/sessions/{secrets.token_hex(4)}/speakers", headers=H(wrong()),
                                           json={"speakers": {"S1": "therapist"}})):  # the body gate too
            r = request()
            assert r.status_code == 429, r.text
            assert r.json()["error"] == "too_many_failures"
            assert 1 <= int(r.headers["retry-after"]) <= 60
    assert failures("bearer") - before == 10
    throttled = audit_rows(server, "auth_throttled")
    assert [(scope, addr) for scope, addr, _ in throttled] == [("anonymous", "127.0.0.1")]


def test_failed_sign_ins_are_audited_and_throttled(live: Callable[..., LiveServer]) -> None:
    server = live(auth_failures_per_min=3)
    with httpx.Client(base_url=server.url, timeout=30) as client:
        csrf = "pre-" + secrets.token_hex(8)
        client.cookies.set("verbatim_pre_csrf", csrf)
        form = {"csrf_token": csrf, "token": wrong(), "next": "/app/sessions"}
        assert client.post("/app/sign-in", data=form).status_code == 401
        assert client.get("/app/sign-in/link", params={"code": wrong()}).status_code == 401
        assert client.post("/app/sign-in/link", data={"csrf_token": csrf, "code": wrong()}).status_code == 401
        r = client.post("/app/sign-in", data=form)
        assert r.status_code == 429 and r.headers["retry-after"].isdigit()
        assert "too many failed sign-ins" in r.text
    rows = audit_rows(server, "sign_in_failed")
    assert [(scope, addr, detail["via"] if detail else None) for scope, addr, detail in rows] == [
        ("anonymous", "127.0.0.1", "web"), ("anonymous", "127.0.0.1", "link"), ("anonymous", "127.0.0.1", "link")]
    with db_session(server.settings.database_url or "") as db:
        assert db.execute(text("SELECT count(*) FROM web_sessions")).scalar_one() == 0


def test_x_forwarded_for_is_believed_only_from_a_trusted_proxy(live: Callable[..., LiveServer]) -> None:
    forged = {"x-forwarded-for": "203.0.113.7"}
    untrusting = live()  # the default: no trusted proxy (uvicorn's own default trusts 127.0.0.1)
    alice = token_for(untrusting.settings, "Alice", "North Clinic")
    assert httpx.get(untrusting.url + "/v1/sessions", headers={**H(alice), **forged}).status_code == 200
    assert audit_rows(untrusting, "sessions_listed")[-1][1] == "127.0.0.1"
    # Rotating forged addresses does not escape the throttle either.
    for _ in range(10):
        httpx.get(untrusting.url + "/v1/sessions", headers={**H(wrong()), "x-forwarded-for": f"198.51.100.{_ + 1}"})
    assert httpx.get(untrusting.url + "/v1/sessions", headers={**H(wrong()), **forged}).status_code == 429
    untrusting.stop()

    trusting = live(trusted_proxies="127.0.0.1")  # e.g. the Ingress controller's address
    assert httpx.get(trusting.url + "/v1/sessions", headers={**H(alice), **forged}).status_code == 200
    assert audit_rows(trusting, "sessions_listed")[-1][1] == "203.0.113.7"
