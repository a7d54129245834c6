"""Every access to patient data is audited in the same transaction; clinic admins read their log
(security issue, item 10)."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select

from tests.api.conftest import Api
from tests.conftest import SAMPLES
from tests.factories import token_for
from verbatim.config import Settings
from verbatim.db.engine import db_session
from verbatim.db.models import AuditEntry, Session


def rows(settings: Settings) -> list[AuditEntry]:
    with db_session(settings.database_url or "") as db:
        return list(db.execute(select(AuditEntry).order_by(AuditEntry.id)).scalars())


def test_each_access_writes_one_row_with_who_what_where_and_the_request_id(api: Api, alice: str) -> None:
    r = api.upload(alice, SAMPLES / "jfk.wav")
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    h = api.headers(alice)
    assert api.client.get("/v1/sessions", headers=h).status_code == 200
    shown = api.client.get(f"/v1/sessions/{sid}", headers={**h, "X-Request-ID": "req-42"})
    assert shown.headers["x-request-id"] == "req-42"
    assert api.client.post("/v1/uploads", headers={**h, "Tus-Resumable": "1.0.0", "Upload-Length": "10"}
                           ).status_code == 201
    assert api.client.delete(f"/v1/sessions/{sid}", headers=h).status_code == 204
    log = rows(api.settings)
    assert [e.action for e in log] == ["session_created", "sessions_listed", "session_read", "upload_created",
                                       "session_deleted"]
    read = log[2]
    assert (str(read.session_id), read.request_id, read.scope, read.remote_addr) == (sid, "req-42", "therapist",
                                                                                     "testclient")
    assert all(e.clinic_id is not None and e.token_id is not None for e in log)
    assert all(e.request_id for e in log)  # a fresh id where the client sent none


def test_a_hostile_request_id_is_replaced(api: Api, alice: str) -> None:
    r = api.client.get("/v1/sessions", headers={**api.headers(alice), "X-Request-ID": "x" * 65})
    assert r.headers["x-request-id"] != "x" * 65
    assert rows(api.settings)[-1].request_id == r.headers["x-request-id"]


def test_a_withdrawal_never_commits_without_its_audit_row(
    api: Api, alice: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = api.upload(alice, SAMPLES / "jfk.wav").json()["id"]
    import verbatim.audit

    real = verbatim.audit.record

    def failing(db, actor, action, *args, **kwargs):  # type: ignore[no-untyped-def]
        if action == "session_deleted":
            raise RuntimeError("audit insert failed")
        return real(db, actor, action, *args, **kwargs)

    monkeypatch.setattr(verbatim.audit, "record", failing)
    assert api.client.delete(f"/v1/sessions/{sid}", headers=api.headers(alice)).status_code == 500
    with db_session(api.settings.database_url or "") as db:
        assert db.get(Session, uuid.UUID(sid)).status == "queued"  # type: ignore[union-attr]
    assert "session_deleted" not in [e.action for e in rows(api.settings)]


def test_a_clinic_admin_reads_its_own_clinics_log_only(api: Api, alice: str, bob: str) -> None:
    api.upload(alice, SAMPLES / "jfk.wav")  # North
    api.upload(bob, SAMPLES / "jfk.wav")  # South
    north_admin = token_for(api.settings, "Admin", "North Clinic", scope="clinic_admin")
    page = api.client.get("/v1/audit", headers=api.headers(north_admin))
    assert page.status_code == 200, page.text
    actions = [item["action"] for item in page.json()["items"]]
    assert actions == ["session_created"]  # Alice's upload; Bob's is South's
    assert api.client.get("/v1/audit", headers=api.headers(alice)).status_code == 403
    assert rows(api.settings)[-1].action == "audit_read"  # reading the log is audited too
    older = api.client.get("/v1/audit", headers=api.headers(north_admin), params={"limit": 1})
    assert older.json()["next_before_id"] is not None
