"""Retention windows: transcripts past their clinic's retention are deleted by the sweep, audited
(security issue, item 14)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy import select, text, update

from tests.api.conftest import Api
from tests.api.test_sessions_api import _publish_fake
from tests.conftest import SAMPLES
from verbatim.db.engine import db_session
from verbatim.db.models import AuditEntry, Clinic, Session, SessionEvent, Transcript
from verbatim.pipeline.sweeps import tick
from verbatim.runtime import build_context

JFK = SAMPLES / "jfk.wav"


def ready_days_ago(api: Api, sid: str, days: float) -> None:
    _publish_fake(api, sid)
    with db_session(api.settings.database_url or "") as db:
        db.execute(update(Session).where(Session.id == uuid.UUID(sid))
                   .values(finished_at=text(f"now() - interval '{days} days'")))


def test_a_transcript_past_its_clinics_retention_is_deleted_and_audited(api: Api, alice: str) -> None:
    old = api.upload(alice, JFK).json()["id"]
    fresh = api.upload(alice, SAMPLES / "nada_lily_02_haggard_0216.wav").json()["id"]
    ready_days_ago(api, old, 10)
    ready_days_ago(api, fresh, 1)
    with db_session(api.settings.database_url or "") as db:
        db.execute(update(Clinic).where(Clinic.name == "North Clinic").values(transcript_retention_days=5))
    shown = api.client.get(f"/v1/sessions/{fresh}", headers=api.headers(alice)).json()
    delete_after = datetime.fromisoformat(shown["transcript_delete_after"])
    assert timedelta(days=3.9) < delete_after - datetime.fromisoformat(shown["updated_at"]) < timedelta(days=4.1)

    ctx = build_context(api.settings)
    with db_session(ctx.repo.url) as db:
        db.execute(text("DELETE FROM sweep_schedule"))  # every periodic sweep due now
    report = tick(ctx)
    assert report.transcripts_expired == 1 and report.steps["retention"] == "done"

    gone = api.client.get(f"/v1/sessions/{old}/transcript", headers=api.headers(alice))
    assert (gone.status_code, gone.json()["error"]) == (410, "transcript_expired")
    assert api.client.get(f"/v1/sessions/{fresh}/transcript", headers=api.headers(alice)).status_code == 200
    with db_session(ctx.repo.url) as db:
        row = db.get(Session, uuid.UUID(old))
        assert row is not None and row.raw_turns is None and row.published_turns is None
        assert row.transcript_expired_at is not None
        assert db.execute(select(Transcript).where(Transcript.session_id == uuid.UUID(old))).first() is None
        assert "transcript_expired" in db.execute(
            select(SessionEvent.kind).where(SessionEvent.session_id == uuid.UUID(old))).scalars().all()
        entry = db.execute(select(AuditEntry).where(AuditEntry.action == "transcript_expired")).scalar_one()
        assert (str(entry.session_id), entry.scope, entry.clinic_id) == (old, "system", row.clinic_id)
    assert tick(ctx).transcripts_expired == 0  # idempotent
    ctx.recognizer.close()
