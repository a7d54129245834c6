"""Free-text correction of a transcript segment over the real API (PostgreSQL, Redis)."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select, update

from tests.api.conftest import Api
from tests.conftest import SAMPLES
from tests.factories import ready_session
from verbatim.config import Settings
from verbatim.db.engine import db_session
from verbatim.db.models import AuditEntry, SegmentEdit, Session, Transcript
from verbatim.notes.run import run_note
from verbatim.runtime import build_context

DIALOGUE = SAMPLES / "therapy_dialogue.json"
COUPLE = SAMPLES / "notes" / "couple_money.json"


def H(token: str) -> dict[str, str]:  # noqa: N802 - reads like a header
    return {"authorization": f"Bearer {token}"}


def record(settings: Settings, sid: uuid.UUID, client: str = "client") -> tuple[list[dict[str, object]], int]:
    with db_session(settings.database_url or "") as db:
        row = db.execute(select(Transcript).where(Transcript.session_id == sid, Transcript.client_id == client)
                         ).scalar_one()
        return list(row.segments), row.version


def edits_and_audit(settings: Settings, sid: uuid.UUID) -> tuple[int, list[str]]:
    with db_session(settings.database_url or "") as db:
        edits = len(db.execute(select(SegmentEdit.id).where(SegmentEdit.session_id == sid)).all())
        actions = list(db.execute(select(AuditEntry.action).where(AuditEntry.session_id == sid)).scalars())
        return edits, actions


def test_correction_makes_a_new_version_keeps_ids_original_and_citations(api: Api, settings: Settings,
                                                                          alice: str) -> None:
    sid = ready_session(settings, DIALOGUE, therapist="Alice", clinic="North Clinic")
    r = api.client.post(f"/v1/sessions/{sid}/notes", json={"format": "soap"}, headers=H(alice))
    note_id = r.json()["note_id"]
    run_note(build_context(settings), uuid.UUID(note_id))
    cited = api.client.get(f"/v1/notes/{note_id}", headers=H(alice)).json()["sections"][0]["sentences"][0]
    cite = cited["citations"][0]
    before, version = record(settings, sid)
    target = next(s for s in before if s["id"] == cite["segment_id"])

    fixed = "I fall asleep around one in the morning, and wake at four thinking about my job."
    r = api.client.put(f"/v1/sessions/{sid}/segments/{target['id']}", json={"text": f"  {fixed} ",
                                                                           "client_id": "client"},
                       headers=H(alice))
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["text"] == fixed and out["original"] == target["text"] and out["corrected"] is True
    assert out["transcript_versions"] == {"client": version + 1}
    after, new_version = record(settings, sid)
    assert new_version == version + 1
    assert [s["id"] for s in after] == [s["id"] for s in before]  # ids stable
    assert next(s for s in after if s["id"] == target["id"])["text"] == fixed
    assert [s["text"] for s in after if s["id"] != target["id"]] == [s["text"] for s in before
                                                                     if s["id"] != target["id"]]
    # The note's citation still names the segment and keeps its own quote snapshot.
    again = api.client.get(f"/v1/notes/{note_id}", headers=H(alice)).json()["sections"][0]["sentences"][0]
    assert again["citations"][0] == cite
    # The original is shown on request; a second correction keeps the first original.
    api.client.put(f"/v1/sessions/{sid}/segments/{target['id']}", json={"text": "Second try."}, headers=H(alice))
    history = api.client.get(f"/v1/sessions/{sid}/segments/{target['id']}", headers=H(alice)).json()
    assert history["original"] == target["text"] and history["text"] == "Second try."
    assert [e["original"] for e in history["edits"]] == [target["text"], fixed]
    edits, actions = edits_and_audit(settings, sid)
    assert edits == 2 and actions.count("segment_corrected") == 2 and "segment_history_read" in actions


@pytest.mark.parametrize(("segment", "body", "status", "code"), [
    ("seg-999", {"text": "x"}, 404, "not_found"),
    ("nonsense", {"text": "x"}, 404, "not_found"),
    ("seg-1", {"text": "   "}, 422, None),
    ("seg-1", {"text": "a" * 4001}, 422, None),
    ("seg-1", {"text": "x", "extra": 1}, 422, None),
    ("seg-1", {"text": "x", "client_id": "nobody"}, 422, "client_not_in_session"),
])
def test_bad_corrections_change_nothing(api: Api, settings: Settings, alice: str, segment: str,
                                        body: dict[str, object], status: int, code: str | None) -> None:
    sid = ready_session(settings, DIALOGUE, therapist="Alice", clinic="North Clinic")
    before = record(settings, sid)
    r = api.client.put(f"/v1/sessions/{sid}/segments/{segment}", json=body, headers=H(alice))
    assert r.status_code == status, r.text
    if code:
        assert r.json()["error"] == code
    assert record(settings, sid) == before
    edits, actions = edits_and_audit(settings, sid)
    assert edits == 0 and "segment_corrected" not in actions


def test_unchanged_text_and_another_participants_turn_are_refused(api: Api, settings: Settings, alice: str) -> None:
    sid = ready_session(settings, DIALOGUE, therapist="Alice", clinic="North Clinic")
    segments, _ = record(settings, sid)
    r = api.client.put(f"/v1/sessions/{sid}/segments/seg-1", json={"text": segments[1]["text"]}, headers=H(alice))
    assert (r.status_code, r.json()["error"]) == (422, "unchanged")
    couple = ready_session(settings, COUPLE, therapist="Alice", clinic="North Clinic")
    alex, _ = record(settings, couple, "alex")
    other = next(s for s in alex if s["speaker"] == "other participant")
    r = api.client.put(f"/v1/sessions/{couple}/segments/{other['id']}", json={"text": "x", "client_id": "alex"},
                       headers=H(alice))
    assert (r.status_code, r.json()["error"]) == (422, "not_in_record")
    assert edits_and_audit(settings, couple)[0] == 0


def test_another_therapists_session_is_404_and_not_ready_is_409(api: Api, settings: Settings, alice: str,
                                                                bob: str) -> None:
    sid = ready_session(settings, DIALOGUE, therapist="Alice", clinic="North Clinic")
    before = record(settings, sid)
    r = api.client.put(f"/v1/sessions/{sid}/segments/seg-1", json={"text": "mine now"}, headers=H(bob))
    assert r.status_code == 404
    assert api.client.get(f"/v1/sessions/{sid}/segments/seg-1", headers=H(bob)).status_code == 404
    assert record(settings, sid) == before
    with db_session(settings.database_url or "") as db:
        db.execute(update(Session).where(Session.id == sid).values(status="publishing"))
    r = api.client.put(f"/v1/sessions/{sid}/segments/seg-1", json={"text": "too early"}, headers=H(alice))
    assert (r.status_code, r.json()["error"]) == (409, "not_ready")
    assert record(settings, sid) == before


def test_withdrawing_the_session_deletes_its_corrections(api: Api, settings: Settings, alice: str) -> None:
    sid = ready_session(settings, DIALOGUE, therapist="Alice", clinic="North Clinic")
    assert api.client.put(f"/v1/sessions/{sid}/segments/seg-1", json={"text": "Private words."},
                          headers=H(alice)).status_code == 200
    assert edits_and_audit(settings, sid)[0] == 1
    assert api.client.delete(f"/v1/sessions/{sid}", headers=H(alice)).status_code == 204
    assert edits_and_audit(settings, sid)[0] == 0
