"""The clinician's endpoints: suggestions, their moves, progress — and who may see them."""

from __future__ import annotations

import redis
from fastapi.testclient import TestClient
from sqlalchemy import select

from tests.factories import token_for
from tests.reliability.conftest import analyse_now, bearer, publish_session, records_of, session_row
from verbatim.config import Settings
from verbatim.db.engine import db_session
from verbatim.db.models import AuditEntry
from verbatim.reliability.settings import ReliabilitySettings
from verbatim.reliability.streams import write_progress


def test_suggestions_are_listed_and_moved_by_the_sessions_therapist_only(
    database_url: str, api: TestClient, alice: str, bob: str, admin: str, app_settings: Settings,
) -> None:
    sid = publish_session(database_url, therapist="Alice", clinic="North Clinic")
    analyse_now(database_url, sid)
    listed = api.get(f"/v1/sessions/{sid}/suggestions", headers=bearer(alice))
    assert listed.status_code == 200
    items = listed.json()["suggestions"]
    assert [(i["kind"], i["turn_index"]) for i in items][:3] == [("edit", 0), ("word", 0), ("edit", 1)]
    assert {i["status"] for i in items} == {"pending", "auto_applied"}
    pending = api.get(f"/v1/sessions/{sid}/suggestions?status=pending", headers=bearer(alice)).json()
    assert len(pending["suggestions"]) == 4
    with db_session(database_url) as db:
        assert db.execute(select(AuditEntry.action).where(AuditEntry.session_id == sid,
                                                          AuditEntry.scope != "system")).scalars().all() == [
            "suggestions_read", "suggestions_read"]

    # Another therapist, even of the same clinic, a clinic admin, an admin: 404, as if nothing existed.
    clinic_admin = token_for(app_settings, "", "North Clinic", scope="clinic_admin")
    week = next(i for i in items if i["original"] == "week")
    for other in (bob, clinic_admin, admin):
        assert api.get(f"/v1/sessions/{sid}/suggestions", headers=bearer(other)).status_code == 404
        answer = api.post(f"/v1/suggestions/{week['id']}/validate", headers=bearer(other))
        assert answer.status_code == 404 and answer.json()["error"] == "not_found"
        assert api.get(f"/v1/reliability/transcripts/{sid}/progress", headers=bearer(other)).status_code == 404

    bad = api.post(f"/v1/suggestions/{week['id']}/validate", headers=bearer(alice), json={"choice": "squeak"})
    assert bad.status_code == 422 and bad.json()["error"] == "invalid_choice"
    ok = api.post(f"/v1/suggestions/{week['id']}/validate", headers=bearer(alice), json={"choice": "wake"})
    assert ok.status_code == 200 and (ok.json()["status"], ok.json()["suggested"]) == ("validated", "wake")
    assert records_of(database_url, sid)["client-a"][3]["text"] == "Wake at work."

    again = api.post(f"/v1/suggestions/{week['id']}/ignore", headers=bearer(alice))
    assert again.status_code == 409
    assert again.json() == {"error": "illegal_transition", "detail": "a suggestion cannot be ignored while validated"}
    assert api.post(f"/v1/suggestions/{week['id']}/revert", headers=bearer(alice)).json()["status"] == "pending"
    assert api.post(f"/v1/suggestions/{week['id']}/ignore", headers=bearer(alice)).json()["status"] == "ignored"
    for move in ("validate", "ignore", "revert"):
        assert api.post(f"/v1/suggestions/{week['id']}/{move}", headers=bearer(alice)).status_code == 409
    assert records_of(database_url, sid)["client-a"][3]["text"] == "Week at work."


def test_progress_comes_from_redis_and_falls_back_to_postgres(
    database_url: str, redis_url: str, api: TestClient, alice: str, rsettings: ReliabilitySettings,
) -> None:
    sid = publish_session(database_url, therapist="Alice", clinic="North Clinic")
    answer = api.get(f"/v1/reliability/transcripts/{sid}/progress", headers=bearer(alice)).json()
    assert (answer["status"], answer["source"]) == ("requested", "postgres")
    client = redis.Redis.from_url(redis_url)
    write_progress(client, sid, 60, status="running", retry_count=1, consumer="c1")
    answer = api.get(f"/v1/reliability/transcripts/{sid}/progress", headers=bearer(alice)).json()
    assert (answer["status"], answer["source"], answer["retry_count"], answer["consumer"]) == (
        "running", "redis", 1, "c1")
    assert 0 < client.ttl(f"reliability_progress:{sid}") <= 60
    client.delete(f"reliability_progress:{sid}")
    analyse_now(database_url, sid)
    answer = api.get(f"/v1/reliability/transcripts/{sid}/progress", headers=bearer(alice)).json()
    assert (answer["status"], answer["source"]) == ("done", "postgres") and answer["finished_at"] > 0
    client.close()


def test_a_reviewed_suggestion_keeps_the_speaker_roles_and_is_audited(database_url: str, api: TestClient,
                                                                      alice: str) -> None:
    sid = publish_session(database_url, therapist="Alice", clinic="North Clinic")
    analyse_now(database_url, sid)
    roles = {t["speaker"]: t["role"] for t in session_row(database_url, sid).published_turns or []}
    assert set(roles.values()) == {"therapist", "client-a"}
    items = api.get(f"/v1/sessions/{sid}/suggestions", headers=bearer(alice)).json()["suggestions"]
    week = next(i for i in items if i["original"] == "week")
    for move, body in (("validate", {"choice": "wake"}), ("revert", None), ("ignore", None)):
        r = api.post(f"/v1/suggestions/{week['id']}/{move}", headers=bearer(alice), json=body)
        assert r.status_code == 200, r.text
        # The speaker form shows the roles the record holds: still every voice's, never "Unassigned".
        after = {t["speaker"]: t.get("role") for t in session_row(database_url, sid).published_turns or []}
        assert after == roles
    # Saving the form as shown keeps the client's words in their record.
    assert api.put(f"/v1/sessions/{sid}/speakers", json={"speakers": roles}, headers=bearer(alice)).status_code == 200
    assert any(seg["speaker"] == "client-a" for seg in records_of(database_url, sid)["client-a"])
    with db_session(database_url) as db:
        reviewed = db.execute(select(AuditEntry.detail).where(AuditEntry.session_id == sid,
                                                              AuditEntry.action == "suggestion_reviewed",
                                                              AuditEntry.scope == "therapist")).scalars().all()
    assert [d["action"] for d in reviewed] == ["validated", "reverted", "ignored"]
