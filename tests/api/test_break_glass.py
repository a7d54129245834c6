"""Break-glass: a colleague of the same clinic reads a transcript only with a reason, for a while,
audited and shown to the therapist (security issue, item 2)."""

from __future__ import annotations

import uuid

from sqlalchemy import select, update

from tests.api.conftest import Api
from tests.api.test_sessions_api import _publish_fake
from tests.conftest import SAMPLES
from tests.factories import token_for
from verbatim.db.engine import db_session
from verbatim.db.models import AuditEntry, BreakGlassGrant

JFK = SAMPLES / "jfk.wav"
REASON = {"reason": "client in crisis, Dr Alice away until Monday"}


def test_a_colleague_reads_only_after_break_glass_and_the_therapist_sees_it(api: Api, alice: str) -> None:
    sid = api.upload(alice, JFK).json()["id"]
    _publish_fake(api, sid)
    covering = token_for(api.settings, "Carol", "North Clinic")
    h = api.headers(covering)
    assert api.client.get(f"/v1/sessions/{sid}/transcript", headers=h).status_code == 404
    assert api.client.post(f"/v1/sessions/{sid}/break-glass", json={"reason": "need"}, headers=h).status_code == 422
    opened = api.client.post(f"/v1/sessions/{sid}/break-glass", json=REASON, headers=h)
    assert opened.status_code == 201, opened.text
    read = api.client.get(f"/v1/sessions/{sid}/transcript", headers=h)
    assert read.status_code == 200 and read.json()["transcripts"][0]["client_id"] == "client-a"
    shown = api.client.get(f"/v1/sessions/{sid}/break-glass", headers=api.headers(alice)).json()
    assert [g["reason"] for g in shown] == [REASON["reason"]]
    with db_session(api.settings.database_url or "") as db:
        actions = list(db.execute(select(AuditEntry.action).where(AuditEntry.session_id == uuid.UUID(sid))
                                  .order_by(AuditEntry.id)).scalars())
    assert actions[-3:] == ["break_glass_opened", "transcript_read_break_glass", "break_glass_listed"]
    # Expired: the grant no longer opens anything.
    with db_session(api.settings.database_url or "") as db:
        db.execute(update(BreakGlassGrant).values(expires_at=BreakGlassGrant.created_at))
    assert api.client.get(f"/v1/sessions/{sid}/transcript", headers=h).status_code == 404


def test_break_glass_never_crosses_clinics_nor_serves_the_admin_scope(api: Api, alice: str, bob: str) -> None:
    sid = api.upload(alice, JFK).json()["id"]
    _publish_fake(api, sid)
    south_admin = token_for(api.settings, "", "South Clinic", scope="clinic_admin")
    assert api.client.post(f"/v1/sessions/{sid}/break-glass", json=REASON,
                           headers=api.headers(south_admin)).status_code == 404
    assert api.client.post(f"/v1/sessions/{sid}/break-glass", json=REASON, headers=api.headers(bob)).status_code == 404
    ops = token_for(api.settings, "", "North Clinic", scope="admin")
    assert api.client.post(f"/v1/sessions/{sid}/break-glass", json=REASON, headers=api.headers(ops)).status_code == 403
    assert api.client.post(f"/v1/sessions/{sid}/break-glass", json=REASON,
                           headers=api.headers(alice)).status_code == 409  # her own: no grant needed
    north_admin = token_for(api.settings, "", "North Clinic", scope="clinic_admin")
    assert api.client.post(f"/v1/sessions/{sid}/break-glass", json=REASON,
                           headers=api.headers(north_admin)).status_code == 201
    assert api.client.get(f"/v1/sessions/{sid}/transcript", headers=api.headers(north_admin)).status_code == 200
    assert api.client.get(f"/v1/sessions/{sid}/transcript", headers=api.headers(bob)).status_code == 404
