"""`GET /v1/admin/runs` and `verbatim runs list`: every unfinished run with the state an operator needs."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from datetime import UTC, datetime

from sqlalchemy import text, update

from tests.api.conftest import Api
from tests.conftest import SAMPLES, settings_env
from tests.factories import token_for
from verbatim import keys
from verbatim.db.engine import db_session
from verbatim.db.models import AuditEntry, Session

JFK = SAMPLES / "jfk.wav"
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _set_run(api: Api, sid: str, **values: object) -> None:
    sets = ", ".join(f"{k} = {v}" for k, v in values.items())
    with db_session(api.settings.database_url or "") as db:
        db.execute(text(f"UPDATE durable_runs SET {sets} WHERE kind = 'capture' AND subject_id = :sid"),
                   {"sid": uuid.UUID(sid)})


def _status(api: Api, sid: str, status: str, failure_code: str | None = None) -> None:
    with db_session(api.settings.database_url or "") as db:
        db.execute(update(Session).where(Session.id == uuid.UUID(sid)).values(status=status,
                                                                              failure_code=failure_code))


def test_admin_runs_shows_every_unfinished_run_with_its_state_and_no_patient_data(api: Api, alice: str) -> None:
    ids = {name: api.upload(alice, JFK).json()["id"] for name in
           ("running", "parked", "overdue", "blocked", "cancelled", "due", "ready")}
    api.redis.set(keys.lease(ids["running"]), "token", px=60_000)
    _set_run(api, ids["running"], holder="'capture-1@host-a'", due_at="now() + interval '1 minute'")
    _set_run(api, ids["parked"], parked_at="now()")
    # Overdue: work outstanding and nobody looking (its due time long past: no sweep is running).
    _set_run(api, ids["overdue"], due_at="now() - interval '5 minutes'")
    _set_run(api, ids["due"], due_at="now() + interval '10 minutes'")  # however slow the uploads were
    _status(api, ids["blocked"], "blocked", "recognizer_auth")
    _status(api, ids["cancelled"], "deleted")
    _status(api, ids["ready"], "ready")
    _set_run(api, ids["ready"], due_at="NULL")

    admin = token_for(api.settings, "", "HQ", scope="admin")
    assert api.client.get("/v1/admin/runs", headers=api.headers(alice)).status_code == 403
    r = api.client.get("/v1/admin/runs", headers=api.headers(admin))
    assert r.status_code == 200, r.text
    items = {i["subject_id"]: i for i in r.json()["items"]}
    assert {name: items[sid]["state"] for name, sid in ids.items() if sid in items} == {
        "running": "running", "parked": "parked", "overdue": "overdue", "blocked": "blocked",
        "cancelled": "cancelled", "due": "due"}  # the ready session's run is finished: not listed
    running = items[ids["running"]]
    assert running["holder"] == "capture-1@host-a" and running["kind"] == "capture" and running["runs"] == 0
    assert items[ids["blocked"]]["last_fault_code"] == "recognizer_auth"
    assert items[ids["due"]]["next_due_at"] and items[ids["due"]]["holder"] is None
    assert "client" not in r.text.replace("client_ids", "")  # no client ids, no words: metadata only

    parked = api.client.get("/v1/admin/runs?state=parked&kind=capture", headers=api.headers(admin)).json()
    assert [i["subject_id"] for i in parked["items"]] == [ids["parked"]]
    bad = api.client.get("/v1/admin/runs?state=sleeping", headers=api.headers(admin))
    assert bad.status_code == 422
    bad = api.client.get("/v1/admin/runs?kind=bogus", headers=api.headers(admin))  # was 200 and no rows
    assert bad.status_code == 422 and bad.json()["error"] == "unknown_kind" and "capture" in bad.json()["detail"]
    with db_session(api.settings.database_url or "") as db:
        actions = db.query(AuditEntry.action).filter(AuditEntry.action == "admin_runs_listed").count()
    assert actions == 2


def test_runs_list_on_the_command_line(api: Api, alice: str) -> None:
    sid = api.upload(alice, JFK).json()["id"]
    _set_run(api, sid, parked_at="now()")
    env = settings_env(api.settings)
    done = subprocess.run([sys.executable, "-m", "verbatim.cli", "runs", "list", "--json", "--state", "parked"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["subject_id"], r["state"]) for r in rows] == [(sid, "parked")]
    shown = subprocess.run([sys.executable, "-m", "verbatim.cli", "runs", "show", sid], env=env,
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0 and json.loads(shown.stdout)["state"] == "parked"
    bad = subprocess.run([sys.executable, "-m", "verbatim.cli", "runs", "list", "--state", "sleeping"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "running, parked" in bad.stdout + bad.stderr


def test_a_parked_session_reads_parked_in_the_admin_list_and_on_the_command_line(api: Api, alice: str) -> None:
    parked, waiting = (api.upload(alice, JFK).json()["id"] for _ in range(2))
    _set_run(api, parked, parked_at="now()")
    admin = token_for(api.settings, "", "HQ", scope="admin")

    def listed(status: str) -> dict[str, dict[str, object]]:
        r = api.client.get(f"/v1/admin/sessions?status={status}", headers=api.headers(admin))
        assert r.status_code == 200, r.text
        return {i["id"]: i for i in r.json()["items"]}

    found = listed("parked")
    assert list(found) == [parked]
    # Derived from the capture run's state, never stored: the row keeps its own status.
    assert found[parked]["display_status"] == "parked" and found[parked]["status"] == "queued"
    assert found[parked]["run_state"] == "parked"
    assert list(listed("queued")) == [waiting]  # each session under the one status a list shows for it
    assert listed("queued")[waiting]["display_status"] == "queued"
    with db_session(api.settings.database_url or "") as db:
        assert db.execute(text("SELECT status FROM sessions WHERE id = :i"), {"i": uuid.UUID(parked)}).scalar() \
            == "queued"
    assert api.client.get("/v1/admin/sessions?status=sleeping", headers=api.headers(admin)).status_code == 422

    env = settings_env(api.settings)
    done = subprocess.run([sys.executable, "-m", "verbatim.cli", "sessions", "list", "--status", "parked"],
                          env={**env, "COLUMNS": "200"}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if parked in line]
    assert len(lines) == 1 and "parked" in lines[0] and waiting not in done.stdout
    every = subprocess.run([sys.executable, "-m", "verbatim.cli", "sessions", "list"], env={**env, "COLUMNS": "200"},
                           capture_output=True, text=True, timeout=120)
    assert every.returncode == 0, every.stderr
    assert "parked" in next(line for line in every.stdout.splitlines() if parked in line)
    assert "queued" in next(line for line in every.stdout.splitlines() if waiting in line)
    # On an 80-column terminal each session is two short lines, its whole id and status on the first.
    narrow = subprocess.run([sys.executable, "-m", "verbatim.cli", "sessions", "list"], env={**env, "COLUMNS": "80"},
                            capture_output=True, text=True, timeout=120)
    assert narrow.returncode == 0, narrow.stderr
    assert all(len(line) <= 80 for line in narrow.stdout.splitlines()), narrow.stdout
    assert next(line for line in narrow.stdout.splitlines() if parked in line).split()[:2] == [parked, "parked"]
    bad = subprocess.run([sys.executable, "-m", "verbatim.cli", "sessions", "list", "--status", "sleeping"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "parked" in bad.stdout + bad.stderr
