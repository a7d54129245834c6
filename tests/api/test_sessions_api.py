"""The /v1 API: upload, list, read, transcript, speakers, delete — and who may see what."""

from __future__ import annotations

import uuid

import httpx
import pytest
from sqlalchemy import select, update

from tests.api.conftest import Api, good_metadata
from tests.conftest import SAMPLES
from tests.factories import ring_setting, token_for
from verbatim.db.engine import db_session
from verbatim.db.models import AuditEntry, Session, Transcript

JFK = SAMPLES / "jfk.wav"


def test_upload_creates_a_queued_session_and_enqueues_it(api: Api, alice: str) -> None:
    r = api.upload(alice, JFK)
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["status"] == "queued" and body["runs"] == 0 and abs(body["duration_s"] - 11.0) < 0.1
    assert body["run_state"] == "due"  # the core's one run state: waiting for its run (due if its message is lost)
    assert api.enqueued() == 1
    assert [p.name for p in api.files_on_volume()] == [f"{body['id']}.audio"]
    assert api.client.get(f"/v1/sessions/{body['id']}", headers=api.headers(alice)).json()["id"] == body["id"]


def test_idempotent_retry_returns_the_same_session(api: Api, alice: str) -> None:
    first = api.upload(alice, JFK, headers={"idempotency-key": "k1"})
    again = api.upload(alice, JFK, headers={"idempotency-key": "k1"})
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"]
    other = api.upload(alice, SAMPLES / "nada_lily_02_haggard_0216.wav", headers={"idempotency-key": "k1"})
    assert other.status_code == 409 and other.json()["error"] == "idempotency_conflict"
    assert api.enqueued() == 1
    assert len(api.files_on_volume()) == 1


def test_list_is_newest_first_paginated_and_filtered(api: Api, alice: str) -> None:
    ids = [api.upload(alice, JFK).json()["id"] for _ in range(3)]
    page = api.client.get("/v1/sessions?limit=2", headers=api.headers(alice)).json()
    assert [s["id"] for s in page["items"]] == ids[::-1][:2] and page["next_offset"] == 2
    rest = api.client.get("/v1/sessions?limit=2&offset=2", headers=api.headers(alice)).json()
    assert [s["id"] for s in rest["items"]] == [ids[0]] and rest["next_offset"] is None
    assert api.client.get("/v1/sessions?status=ready", headers=api.headers(alice)).json()["items"] == []
    bad = api.client.get("/v1/sessions?status=bogus", headers=api.headers(alice))
    assert bad.status_code == 422 and bad.json()["error"] == "invalid_request"
    huge = api.client.get("/v1/sessions?offset=9223372036854775808", headers=api.headers(alice))
    assert huge.status_code == 422 and huge.json()["error"] == "invalid_request"


def test_transcript_before_ready_is_409(api: Api, alice: str) -> None:
    sid = api.upload(alice, JFK).json()["id"]
    r = api.client.get(f"/v1/sessions/{sid}/transcript", headers=api.headers(alice))
    assert r.status_code == 409 and r.json()["error"] == "not_ready"


def _publish_fake(api: Api, sid: str) -> None:
    """Mark a session ready with a two-speaker transcript (as a capture run would)."""
    turns = [{"speaker": "S1", "start_s": 0.0, "end_s": 1.0, "text": "How are you?"},
             {"speaker": "S2", "start_s": 1.0, "end_s": 2.0, "text": "Fine."}]
    segs = [{"speaker": "therapist", "speaker_label": "S1", "start_s": 0.0, "end_s": 1.0, "text": "How are you?"},
            {"speaker": "client-a", "speaker_label": "S2", "start_s": 1.0, "end_s": 2.0, "text": "Fine."}]
    with db_session(api.settings.database_url or "") as db:
        db.execute(update(Session).where(Session.id == uuid.UUID(sid)).values(
            status="ready", polished=True, published_turns=turns, raw_turns=turns))
        db.add(Transcript(session_id=uuid.UUID(sid), client_id="client-a", segments=segs, polished=True))


def test_transcript_read_is_audited_and_speakers_can_be_corrected(api: Api, alice: str) -> None:
    sid = api.upload(alice, JFK).json()["id"]
    _publish_fake(api, sid)
    r = api.client.get(f"/v1/sessions/{sid}/transcript", headers=api.headers(alice))
    assert r.status_code == 200
    segs = r.json()["transcripts"][0]["segments"]
    assert [s["speaker"] for s in segs] == ["therapist", "client-a"]
    with db_session(api.settings.database_url or "") as db:
        actions = list(db.execute(select(AuditEntry.action).where(AuditEntry.session_id == uuid.UUID(sid))).scalars())
    assert actions == ["session_created", "transcript_read"]
    fixed = api.client.put(f"/v1/sessions/{sid}/speakers", json={"speakers": {"S1": "client-a", "S2": "therapist"}},
                           headers=api.headers(alice))
    assert fixed.status_code == 200, fixed.text
    again = api.client.get(f"/v1/sessions/{sid}/transcript", headers=api.headers(alice)).json()
    assert [s["speaker"] for s in again["transcripts"][0]["segments"]] == ["client-a", "therapist"]
    wrong = api.client.put(f"/v1/sessions/{sid}/speakers", json={"speakers": {"S1": "mallory", "S2": "therapist"}},
                           headers=api.headers(alice))
    assert wrong.status_code == 422 and wrong.json()["error"] == "unknown_role"
    extra = api.client.put(f"/v1/sessions/{sid}/speakers",
                           json={"speakers": {"S1": "client-a", "S2": "therapist", "S9": "therapist"}},
                           headers=api.headers(alice))
    assert extra.status_code == 422 and extra.json()["error"] == "unknown_speaker"


def test_delete_withdraws_the_session(api: Api, alice: str) -> None:
    sid = api.upload(alice, JFK).json()["id"]
    assert api.client.delete(f"/v1/sessions/{sid}", headers=api.headers(alice)).status_code == 204
    assert api.files_on_volume() == []
    assert api.client.get(f"/v1/sessions/{sid}", headers=api.headers(alice)).json()["status"] == "deleted"
    with db_session(api.settings.database_url or "") as db:
        assert db.execute(select(AuditEntry.action).where(AuditEntry.action == "session_deleted")).first()


ENDPOINTS = [
    ("get", "/v1/sessions/{sid}", None),
    ("get", "/v1/sessions/{sid}/transcript", None),
    ("put", "/v1/sessions/{sid}/speakers", {"speakers": {"S1": "therapist"}}),
    ("delete", "/v1/sessions/{sid}", None),
]


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
def test_another_therapists_session_is_404(api: Api, alice: str, bob: str, method: str, path: str,
                                           body: object) -> None:
    sid = api.upload(alice, JFK).json()["id"]
    _publish_fake(api, sid)
    r = api.client.request(method, path.format(sid=sid), json=body, headers=api.headers(bob))
    assert r.status_code == 404 and r.json()["error"] == "not_found"
    assert api.client.get(f"/v1/sessions/{sid}", headers=api.headers(alice)).json()["status"] == "ready"
    assert api.client.get("/v1/sessions", headers=api.headers(bob)).json()["items"] == []


def test_clinic_admin_sees_the_clinics_metadata_only(api: Api, alice: str, bob: str) -> None:
    sid = api.upload(alice, JFK).json()["id"]
    _publish_fake(api, sid)
    north = token_for(api.settings, "", "North Clinic", scope="clinic_admin")
    south = token_for(api.settings, "", "South Clinic", scope="clinic_admin")
    shown = api.client.get(f"/v1/sessions/{sid}", headers=api.headers(north))
    assert shown.status_code == 200 and shown.json()["client_ids"] == []
    assert [s["client_ids"] for s in api.client.get("/v1/sessions", headers=api.headers(north)).json()["items"]] \
        == [[]]
    assert api.client.get(f"/v1/sessions/{sid}", headers=api.headers(south)).status_code == 404
    # Reading another therapist's transcript or editing it is not a clinic admin's (break-glass is separate).
    h = api.headers(north)
    assert api.client.get(f"/v1/sessions/{sid}/transcript", headers=h).status_code == 404
    assert api.client.put(f"/v1/sessions/{sid}/speakers", json={"speakers": {"S1": "therapist", "S2": "client-a"}},
                          headers=h).status_code == 404
    assert api.client.delete(f"/v1/sessions/{sid}", headers=h).status_code == 404
    assert api.client.get(f"/v1/sessions/{sid}", headers=api.headers(alice)).json()["status"] == "ready"


def test_the_admin_scope_sees_no_patient_data(api: Api, alice: str) -> None:
    """Admin is for operations: no session list, no transcript, no delete, no client ids anywhere."""
    sid = api.upload(alice, JFK).json()["id"]
    _publish_fake(api, sid)
    h = api.headers(token_for(api.settings, "", "South Clinic", scope="admin"))
    assert api.client.get("/v1/sessions", headers=h).json()["items"] == []
    for path in (f"/v1/sessions/{sid}", f"/v1/sessions/{sid}/transcript", f"/v1/sessions/{sid}/suggestions"):
        assert api.client.get(path, headers=h).status_code == 404, path
    assert api.client.delete(f"/v1/sessions/{sid}", headers=h).status_code == 404
    listed = api.client.get("/v1/admin/sessions?status=ready", headers=h).json()["items"]
    assert [(s["id"], s["client_ids"]) for s in listed] == [(sid, [])]


@pytest.mark.parametrize("header", [None, "Bearer nope", "Basic abc", "Bearer "])
def test_missing_or_bad_token_is_401(api: Api, header: str | None) -> None:
    headers = {"authorization": header} if header else {}
    r = api.client.get("/v1/sessions", headers=headers)
    assert r.status_code == 401 and r.json()["error"] == "unauthorized"


def test_revoked_token_is_401(api: Api, alice: str) -> None:
    from verbatim.auth import revoke, token_id

    revoke(api.settings.database_url or "", token_id(api.settings.database_url or "", alice))
    assert api.client.get("/v1/sessions", headers=api.headers(alice)).status_code == 401


def test_health_and_docs(api: Api) -> None:
    assert api.client.get("/healthz").json() == {"status": "ok"}
    assert api.client.get("/readyz").json() == {"postgres": "ok", "redis": "ok"}
    assert "/v1/sessions" in api.client.get("/openapi.json").json()["paths"]
    assert api.client.get("/docs").status_code == 200
    exported = api.client.get("/metrics").content
    assert b"outbox_attempts_total" in exported
    assert b"session_runs_total" not in exported  # a worker counter: always 0 in the API, so not shown there


@pytest.mark.parametrize(
    ("mutate", "status", "code"),
    [
        (lambda m: m.pop("client_ids"), 422, "invalid_metadata"),
        (lambda m: m.update(client_ids=[]), 422, "invalid_metadata"),
        (lambda m: m.update(extra="x"), 422, "invalid_metadata"),
        (lambda m: m.pop("consent"), 422, "missing_consent"),
        (lambda m: m["consent"].update(obtained=False), 422, "missing_consent"),
        (lambda m: m.update(session_type="party"), 422, "invalid_metadata"),
        (lambda m: m.update(recorded_at="yesterday"), 422, "invalid_metadata"),
        (lambda m: m.update(recorded_at="0001-01-01T00:00:00+14:00"), 422, "invalid_metadata"),
        (lambda m: m.update(recorded_at="9999-12-31T23:59:59-14:00"), 422, "invalid_metadata"),
        (lambda m: m.update(recorded_at="2026-01-01T10:00:00"), 422, "invalid_metadata"),
        (lambda m: m.update(client_ids=["a\u0000b"]), 422, "invalid_metadata"),
        (lambda m: m.update(client_ids=["a", "a"]), 422, "invalid_metadata"),
        (lambda m: m.update(client_ids=["therapist"]), 422, "invalid_metadata"),
    ],
)
def test_bad_metadata_leaves_nothing(api: Api, alice: str, mutate, status: int, code: str) -> None:  # type: ignore[no-untyped-def]
    meta = good_metadata()
    mutate(meta)
    r = api.upload(alice, JFK, meta)
    assert (r.status_code, r.json()["error"]) == (status, code), r.text
    assert api.files_on_volume() == [] and api.enqueued() == 0


TUS_ENDPOINTS = ["head", "patch", "finalize"]


def _call_tus(api: Api, who: str, endpoint: str, upload_id: str, offset: int) -> httpx.Response:
    if endpoint == "head":
        return api.tus_head(who, upload_id)
    if endpoint == "patch":
        return api.tus_patch(who, upload_id, offset, JFK.read_bytes()[offset:])
    return api.finalize(who, upload_id)


@pytest.mark.parametrize("endpoint", TUS_ENDPOINTS)
@pytest.mark.parametrize("intruder", ["bob", "north_admin", "admin"])
def test_another_therapists_upload_is_404(api: Api, alice: str, bob: str, endpoint: str, intruder: str) -> None:
    """A tus upload is its creator's alone: another therapist, even the clinic's admin, gets 404."""
    tokens = {"bob": bob, "north_admin": token_for(api.settings, "", "North Clinic", scope="clinic_admin"),
              "admin": token_for(api.settings, "", "North Clinic", scope="admin")}
    upload_id = api.tus_upload(alice, JFK, complete=False)
    offset = JFK.stat().st_size // 2
    r = _call_tus(api, tokens[intruder], endpoint, upload_id, offset)
    assert r.status_code == (403 if endpoint == "finalize" and intruder != "bob" else 404), r.text
    if endpoint != "head":
        assert r.json()["error"] == ("forbidden" if r.status_code == 403 else "not_found")
    head = api.tus_head(alice, upload_id)
    assert head.status_code == 200 and int(head.headers["upload-offset"]) == offset
    assert api.tus_patch(alice, upload_id, offset, JFK.read_bytes()[offset:]).status_code == 204
    assert api.finalize(alice, upload_id).status_code == 201
    assert api.client.get("/v1/sessions", headers=api.headers(bob)).json()["items"] == []


def test_tus_endpoints_need_a_token_but_discovery_does_not(api: Api, alice: str) -> None:
    upload_id = api.tus_upload(alice, JFK, complete=False)
    assert api.client.post("/v1/uploads", headers={"tus-resumable": "1.0.0", "upload-length": "10"}).status_code == 401
    assert api.client.head(f"/v1/uploads/{upload_id}", headers={"tus-resumable": "1.0.0"}).status_code == 401
    r = api.client.patch(f"/v1/uploads/{upload_id}", content=b"x", headers={
        "tus-resumable": "1.0.0", "upload-offset": "0", "content-type": "application/offset+octet-stream"})
    assert r.status_code == 401 and r.json()["error"] == "unauthorized"
    assert api.client.options(f"/v1/uploads/{upload_id}").status_code == 204


def test_admin_lists_blocked_sessions_and_retries_one(api: Api, alice: str) -> None:
    sid = api.upload(alice, JFK).json()["id"]
    with db_session(api.settings.database_url or "") as db:
        db.execute(update(Session).where(Session.id == uuid.UUID(sid)).values(status="blocked",
                                                                              failure_code="recognizer_auth"))
    admin = token_for(api.settings, "", "HQ", scope="admin")
    assert api.client.get("/v1/admin/sessions?status=blocked", headers=api.headers(alice)).status_code == 403
    listed = api.client.get("/v1/admin/sessions?status=blocked", headers=api.headers(admin)).json()["items"]
    assert [s["id"] for s in listed] == [sid]
    before = api.enqueued()
    r = api.client.post(f"/v1/admin/sessions/{sid}/retry", headers=api.headers(admin))
    assert r.status_code == 200 and r.json()["status"] == "queued" and r.json()["failure_code"] is None
    assert api.enqueued() == before + 1
    again = api.client.post(f"/v1/admin/sessions/{sid}/retry", headers=api.headers(admin))
    assert again.status_code == 409 and again.json()["error"] == "illegal_transition"
    events = api.client.get(f"/v1/admin/sessions/{sid}", headers=api.headers(admin)).json()
    assert events["status"] == "queued" and "client_ids" not in events


def test_a_withdrawn_session_keeps_only_what_the_audit_needs(api: Api, alice: str) -> None:
    from verbatim.reliability.streams import progress_key

    sid = api.upload(alice, JFK, headers={"Idempotency-Key": "k-1"}).json()["id"]
    api.redis.hset(progress_key(sid), mapping={"stage": "analysing"})
    assert api.client.delete(f"/v1/sessions/{sid}", headers=api.headers(alice)).status_code == 204
    shown = api.client.get(f"/v1/sessions/{sid}", headers=api.headers(alice)).json()
    assert (shown["status"], shown["client_ids"]) == ("deleted", [])
    with db_session(api.settings.database_url or "") as db:
        row = db.get(Session, uuid.UUID(sid))
        assert row is not None
        assert (row.client_ids, row.consent, row.idempotency_key, row.audio_sha256, row.speaker_map) == (
            [], None, None, "", None)
        assert row.therapist_id is not None and row.created_at is not None
    assert not api.redis.exists(progress_key(sid))


def test_production_hides_docs_and_guards_metrics(api_with, alice: str) -> None:  # type: ignore[no-untyped-def]
    prod = api_with(mode="production", recognizer_api_key="k", encryption_keys=ring_setting())
    for path in ("/docs", "/openapi.json", "/metrics"):
        assert prod.client.get(path).status_code == 404, path
    guarded = api_with(mode="production", recognizer_api_key="k", metrics_token="m-secret",
                       encryption_keys=ring_setting())
    assert guarded.client.get("/metrics").status_code == 401
    assert guarded.client.get("/metrics", headers={"authorization": "Bearer m-secret"}).status_code == 200


def test_answers_with_patient_data_are_never_cached_or_sniffed(api: Api, alice: str) -> None:
    r = api.client.get("/v1/sessions", headers=api.headers(alice))
    assert (r.headers["cache-control"], r.headers["x-content-type-options"]) == ("no-store", "nosniff")
    assert "strict-transport-security" not in r.headers  # plain HTTP here; HSTS only over TLS
    assert api.client.get("/healthz").headers["x-content-type-options"] == "nosniff"


def test_answers_over_tls_carry_hsts(api: Api, alice: str) -> None:
    """Served over TLS (the ASGI scheme is https, e.g. behind ``--proxy-headers``): browsers keep to HTTPS."""
    r = api.client.get("https://testserver/v1/sessions", headers=api.headers(alice))
    assert r.status_code == 200
    assert r.headers["strict-transport-security"].startswith("max-age=")
