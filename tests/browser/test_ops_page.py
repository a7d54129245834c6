"""The operations page (`/app/ops`): every unfinished run for an operations token, filtered, metadata
only; an operations token opens no clinician's page, and a clinician does not open it."""

from __future__ import annotations

import re
import uuid

import redis
from sqlalchemy import text

from tests.browser.conftest import Web, axe_violations
from tests.conftest import SAMPLES
from tests.factories import new_session, token_for
from verbatim import keys
from verbatim.db.engine import db_session

JFK = SAMPLES / "jfk.wav"


def _run(url: str, sid: uuid.UUID, **values: str) -> None:
    sets = ", ".join(f"{k} = {v}" for k, v in values.items())
    with db_session(url) as db:
        db.execute(text(f"UPDATE durable_runs SET {sets} WHERE kind = 'capture' AND subject_id = :sid"), {"sid": sid})


def test_an_operations_token_sees_every_unfinished_run_and_nothing_of_a_clinic(web: Web) -> None:
    url, settings = web.settings.database_url or "", web.settings
    parked = new_session(settings, JFK, client_ids=["client-secret-id"], clinic="North Clinic")
    running = new_session(settings, JFK, client_ids=["client-secret-id"], clinic="South Clinic")
    blocked = new_session(settings, JFK, clinic="North Clinic")
    _run(url, parked, parked_at="now()", runs="2")
    _run(url, running, holder="'capture-1@host-a'", due_at="now() + interval '1 minute'", runs="1")
    redis.Redis.from_url(settings.redis_url or "").set(keys.lease(running), "token", px=60_000)
    with db_session(url) as db:
        db.execute(text("UPDATE sessions SET status = 'blocked', failure_code = 'recognizer_auth' WHERE id = :i"),
                   {"i": blocked})

    ops = token_for(settings, "", "HQ", scope="admin")
    web.sign_in(ops, then="/app/ops")
    page = web.page
    page.wait_for_url(re.compile(r".*/app/ops$"))
    page.get_by_role("heading", name="Unfinished runs").wait_for()
    rows = page.locator("table.runs tbody tr")
    assert rows.count() == 3

    def cells(sid: uuid.UUID) -> list[str]:  # kind, state, holder, since, next due, deadline, runs, fault, subject
        return page.locator(f'tr[data-subject="{sid}"] td').all_inner_texts()

    assert [cells(parked)[i] for i in (0, 1, 2, 6, 8)] == ["capture", "parked", "", "2", str(parked)]
    assert [cells(running)[i] for i in (1, 2, 6)] == ["running", "capture-1@host-a", "1"]
    assert cells(running)[4].startswith("20")  # its next look: the lease's expiry
    assert [cells(blocked)[i] for i in (1, 7)] == ["blocked", "recognizer_auth"]
    assert "client-secret-id" not in page.content()  # metadata only, every clinic's runs
    web.shot("ops-runs")
    assert not axe_violations(web)

    page.get_by_label("State").select_option("parked")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r".*state=parked.*"))
    assert [r.get_attribute("data-subject") for r in rows.all()] == [str(parked)]
    assert page.get_by_label("State").input_value() == "parked"
    assert web.go("/app/ops?state=sleeping").status == 422

    # An operations token opens the runs page alone: no clinic list, audit log or session.
    for path in ("/app/clinic", "/app/audit", "/app/sessions", f"/app/sessions/{parked}", "/app/upload"):
        answer = web.go(path)
        assert answer.status == 403, path
    assert "runs page only" in page.content()
    web.go("/app")
    assert page.url.endswith("/app/ops")
    with db_session(url) as db:
        listed = db.execute(text("SELECT count(*) FROM audit_log WHERE action = 'admin_runs_listed' "
                                 "AND scope = 'admin'")).scalar_one()
    assert listed >= 3


def test_a_clinician_does_not_open_the_operations_page(web: Web, alice: str) -> None:
    web.sign_in(alice)
    assert web.go("/app/ops").status == 403
    assert web.page.get_by_text("This page is for operations").is_visible()
