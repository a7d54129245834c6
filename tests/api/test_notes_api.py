"""Notes over the real API (PostgreSQL, Redis): request, draft, read, edit, sign, co-sign, amend, export."""

from __future__ import annotations

import base64
import uuid

import pytest
from fhir.resources.R4B.documentreference import DocumentReference
from sqlalchemy import select, update

from tests.api.conftest import Api
from tests.conftest import SAMPLES
from tests.factories import ready_session, token_for
from tests.pdfs import text_of
from verbatim.config import Settings
from verbatim.db.engine import db_session
from verbatim.db.models import AuditEntry, Note, Therapist
from verbatim.notes.run import run_note
from verbatim.runtime import build_context

DIALOGUE = SAMPLES / "therapy_dialogue.json"
COUPLE = SAMPLES / "notes" / "couple_money.json"


def H(token: str) -> dict[str, str]:  # noqa: N802 - reads like a header
    return {"authorization": f"Bearer {token}"}


def notes_in_queue(api: Api) -> int:
    return api.enqueued()


def drafted(api: Api, settings: Settings, token: str, sid: uuid.UUID, **body: object) -> str:
    """Request a note over the API and run its note run in-process; returns the note id."""
    r = api.client.post(f"/v1/sessions/{sid}/notes", json={"format": "soap", **body}, headers=H(token))
    assert r.status_code == 202, r.text
    note_id = r.json()["note_id"]
    run_note(build_context(settings), uuid.UUID(note_id))
    return str(note_id)


def document_of(bundle: dict[str, object]) -> dict[str, object]:
    """The DocumentReference of an exported note's Bundle."""
    assert bundle["resourceType"] == "Bundle"
    return next(e["resource"] for e in bundle["entry"]  # type: ignore[attr-defined]
                if e["resource"]["resourceType"] == "DocumentReference")


def sign_all(api: Api, token: str, note_id: str) -> dict[str, object]:
    """Sign, confirming every flagged sentence the first attempt lists (as a clinician who reviewed each)."""
    r = api.client.post(f"/v1/notes/{note_id}/sign", headers=H(token))
    if r.status_code == 409 and r.json()["error"] == "needs_review":
        keep = [{"section": f["section"], "sentence": f["sentence"]} for f in r.json()["flagged"]]
        r = api.client.post(f"/v1/notes/{note_id}/sign", json={"confirm": keep}, headers=H(token))
    assert r.status_code == 200, r.text
    return dict(r.json())


def audit_actions(settings: Settings) -> list[str]:
    with db_session(settings.database_url or "") as db:
        return list(db.execute(select(AuditEntry.action).order_by(AuditEntry.id)).scalars())


def test_request_draft_read_edit_sign_export(api: Api, settings: Settings, alice: str) -> None:
    sid = ready_session(settings, DIALOGUE, therapist="Alice", clinic="North Clinic")
    before = notes_in_queue(api)
    r = api.client.post(f"/v1/sessions/{sid}/notes", json={"format": "soap"}, headers=H(alice))
    assert r.status_code == 202 and r.json()["status"] == "queued" and r.json()["client_id"] == "client"
    assert notes_in_queue(api) == before + 1
    note_id = r.json()["note_id"]
    # The core's one run state: queued and due (in case its message is lost), then no run outstanding.
    assert api.client.get(f"/v1/notes/{note_id}", headers=H(alice)).json()["run_state"] == "due"
    run_note(build_context(settings), uuid.UUID(note_id))

    note = api.client.get(f"/v1/notes/{note_id}", headers=H(alice)).json()
    assert note["status"] == "draft" and note["version"] == 1 and note["risk"]["status"] == "none found"
    assert note["run_state"] is None
    assert [s["name"] for s in note["sections"]] == ["Subjective", "Objective", "Assessment", "Plan"]
    first = note["sections"][0]["sentences"][0]
    assert first["citations"][0]["segment_id"].startswith("seg-") and first["label"] == "supported"

    # Drafts are never exported.
    assert api.client.get(f"/v1/notes/{note_id}/fhir", headers=H(alice)).status_code == 409
    assert api.client.get(f"/v1/notes/{note_id}/pdf", headers=H(alice)).status_code == 409

    sections = [{"name": s["name"], "sentences": [x["text"] for x in s["sentences"]]} for s in note["sections"]]
    sections[0]["sentences"][0] = "Client reports that they fall asleep around three in the morning."
    edited = api.client.put(f"/v1/notes/{note_id}", json={"sections": sections}, headers=H(alice)).json()
    assert edited["version"] == 2
    changed = edited["sections"][0]["sentences"][0]
    assert changed["label"] == "contradicted" and changed["citations"] == first["citations"]
    versions = api.client.get(f"/v1/notes/{note_id}/versions", headers=H(alice)).json()
    assert [v["kind"] for v in versions] == ["draft", "edit"]
    assert "+  Client reports that they fall asleep around three" in versions[1]["diff"]

    # The contradicted sentence waits on the clinician's decision before the note signs.
    asked = api.client.post(f"/v1/notes/{note_id}/sign", headers=H(alice))
    assert asked.status_code == 409 and asked.json()["error"] == "needs_review"
    assert {"section": "Subjective", "sentence": 0, "reason": "contradicted"} in asked.json()["flagged"]
    decision = {"confirm": [{"section": f["section"], "sentence": f["sentence"]} for f in asked.json()["flagged"]]}
    signed = api.client.post(f"/v1/notes/{note_id}/sign", json=decision, headers=H(alice)).json()
    assert signed["status"] == "signed" and signed["signed_at"] and signed["signed_by"]
    assert api.client.put(f"/v1/notes/{note_id}", json={"sections": sections}, headers=H(alice)).status_code == 409
    assert api.client.post(f"/v1/notes/{note_id}/sign", headers=H(alice)).status_code == 409

    fhir = document_of(api.client.get(f"/v1/notes/{note_id}/fhir", headers=H(alice)).json())
    doc = DocumentReference.model_validate(fhir)
    assert doc.docStatus == "final" and doc.type.coding[0].code == "34904-3"
    assert doc.category[0].coding[0].code == "clinical-note"
    assert doc.subject.identifier.value == "client" and doc.author[0].type == "Practitioner"
    kinds = [c.attachment.contentType for c in doc.content]
    assert kinds[1].startswith("text/plain") and kinds[0] == "application/pdf"
    assert base64.b64decode(fhir["content"][0]["attachment"]["data"]).startswith(b"%PDF")
    assert "fall asleep around three" in base64.b64decode(fhir["content"][1]["attachment"]["data"]).decode()
    pdf = api.client.get(f"/v1/notes/{note_id}/pdf", headers=H(alice))
    assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF")

    # A later change is an amendment, with a reason.
    no_reason = api.client.post(f"/v1/notes/{note_id}/amend", json={"sections": sections}, headers=H(alice))
    assert no_reason.status_code == 422
    sections[0]["sentences"][0] = "Client reports that they fall asleep around one in the morning."
    amended = api.client.post(f"/v1/notes/{note_id}/amend", json={"sections": sections,
                                                                  "reason": "corrected the time"}, headers=H(alice))
    assert amended.status_code == 200 and amended.json()["amended"] is True and amended.json()["version"] == 4
    assert DocumentReference.model_validate(document_of(
        api.client.get(f"/v1/notes/{note_id}/fhir", headers=H(alice)).json())).docStatus == "amended"
    actions = audit_actions(settings)
    for action in ("note_requested", "note_read", "note_edited", "note_signed", "note_amended", "note_exported"):
        assert action in actions


@pytest.mark.parametrize(("body", "status", "code"), [
    ({"format": "soapy", "client_id": "alex"}, 422, "unknown_format"),
    ({"format": "soap", "client_id": "nobody"}, 422, "client_not_in_session"),
    ({"format": "soap"}, 422, "client_not_in_session"),
])
def test_bad_requests_are_refused_and_nothing_is_enqueued(api: Api, settings: Settings, alice: str,
                                                          body: dict[str, str], status: int, code: str) -> None:
    sid = ready_session(settings, COUPLE, therapist="Alice", clinic="North Clinic")
    before = notes_in_queue(api)
    r = api.client.post(f"/v1/sessions/{sid}/notes", json=body, headers=H(alice))
    assert (r.status_code, r.json()["error"]) == (status, code), r.text
    assert notes_in_queue(api) == before
    with db_session(settings.database_url or "") as db:
        assert db.execute(select(Note.id)).first() is None


def test_a_session_not_ready_or_of_another_therapist_is_refused(api: Api, settings: Settings, alice: str,
                                                                bob: str) -> None:
    sid = ready_session(settings, DIALOGUE, therapist="Alice", clinic="North Clinic", status="recognizing")
    before = notes_in_queue(api)
    r = api.client.post(f"/v1/sessions/{sid}/notes", json={"format": "soap"}, headers=H(alice))
    assert (r.status_code, r.json()["error"]) == (409, "not_ready")
    other = ready_session(settings, DIALOGUE, therapist="Alice", clinic="North Clinic")
    assert api.client.post(f"/v1/sessions/{other}/notes", json={"format": "soap"}, headers=H(bob)).status_code == 404
    assert notes_in_queue(api) == before
    note_id = drafted(api, settings, alice, other)
    for path in ("", "/versions", "/fhir", "/pdf"):
        assert api.client.get(f"/v1/notes/{note_id}{path}", headers=H(bob)).status_code == 404
    assert api.client.post(f"/v1/notes/{note_id}/sign", headers=H(bob)).status_code == 404


def test_one_note_per_client_and_none_holds_the_other_clients_words(api: Api, settings: Settings,
                                                                    alice: str) -> None:
    import json

    sid = ready_session(settings, COUPLE, therapist="Alice", clinic="North Clinic")
    turns = json.loads(COUPLE.read_text())
    for me, other in (("alex", "sam"), ("sam", "alex")):
        note = api.client.get(f"/v1/notes/{drafted(api, settings, alice, sid, client_id=me)}",
                              headers=H(alice)).json()
        assert note["client_id"] == me
        text = json.dumps(note["sections"])
        assert all(t["text"] not in text for t in turns if t["speaker"] == other)
        speakers = {c["speaker"] for s in note["sections"] for x in s["sentences"] for c in x["citations"]}
        assert speakers <= {"therapist", me} and me in speakers


def test_a_trainees_note_needs_a_cosignature_before_export(api: Api, settings: Settings, alice: str) -> None:
    sid = ready_session(settings, DIALOGUE, therapist="Alice", clinic="North Clinic")
    with db_session(settings.database_url or "") as db:
        db.execute(update(Therapist).where(Therapist.name == "Alice").values(requires_cosign=True))
    note_id = drafted(api, settings, alice, sid)
    sign_all(api, alice, note_id)
    assert api.client.get(f"/v1/notes/{note_id}/fhir", headers=H(alice)).json()["error"] == "awaiting_cosign"
    assert api.client.post(f"/v1/notes/{note_id}/cosign", headers=H(alice)).status_code == 409
    carol = token_for(settings, "Carol", "North Clinic")
    admin = token_for(settings, "", "North Clinic", scope="clinic_admin")
    staff = {t["name"]: t["id"] for t in api.client.get("/v1/clinic/therapists", headers=H(admin)).json()}
    assert api.client.patch(f"/v1/clinic/therapists/{staff['Alice']}", json={"supervisor_id": staff["Carol"]},
                            headers=H(admin)).status_code == 200
    done = api.client.post(f"/v1/notes/{note_id}/cosign", headers=H(carol)).json()
    assert done["cosigned_by"] and done["cosigned_at"]
    assert api.client.get(f"/v1/notes/{note_id}/fhir", headers=H(alice)).status_code == 200


def test_templates_and_a_batch_with_progress(api: Api, settings: Settings, alice: str) -> None:
    t = api.client.post("/v1/templates", json={"name": "Short", "sections": [
        {"name": "Presenting problem", "instruction": "Why the client came."},
        {"name": "Plan", "instruction": "Next steps.", "example": "Client will practise breathing."}]},
        headers=H(alice))
    assert t.status_code == 201
    bad = api.client.post("/v1/templates", json={"name": "x", "sections": []}, headers=H(alice))
    assert bad.status_code == 422
    one = ready_session(settings, DIALOGUE, therapist="Alice", clinic="North Clinic")
    two = ready_session(settings, COUPLE, therapist="Alice", clinic="North Clinic")
    before = notes_in_queue(api)
    b = api.client.post("/v1/notes/batch", json={"format": t.json()["id"], "session_ids": [str(one), str(two)]},
                        headers=H(alice))
    assert b.status_code == 202, b.text
    assert len(b.json()["notes"]) == 3 and b.json()["progress"] == {"queued": 3}
    assert notes_in_queue(api) == before + 3
    ctx = build_context(settings)
    for n in b.json()["notes"]:
        run_note(ctx, uuid.UUID(n["note_id"]))
    progress = api.client.get(f"/v1/notes/batch/{b.json()['batch_id']}", headers=H(alice)).json()
    assert progress["progress"] == {"draft": 3} and all(n["sections_done"] == 2 for n in progress["notes"])
    today = api.client.post("/v1/notes/batch", json={"format": "dap", "ready_today": True}, headers=H(alice))
    assert today.status_code == 202 and len(today.json()["notes"]) == 3


def test_a_signed_note_outlives_the_transcript_and_a_withdrawal_needs_an_amendment(
        api: Api, settings: Settings, alice: str) -> None:
    from datetime import UTC, datetime, timedelta

    from verbatim.db.models import Session as SessionRow
    from verbatim.notes.retention import expire_signed_notes
    from verbatim.pipeline.retention import expire_transcripts
    from verbatim.pipeline.sweeps import SweepReport

    sid = ready_session(settings, COUPLE, therapist="Alice", clinic="North Clinic")
    signed = drafted(api, settings, alice, sid, client_id="alex")
    draft_only = drafted(api, settings, alice, sid, client_id="sam")
    sign_all(api, alice, signed)

    # The right-of-access PDF: alex's record and signed note, none of sam's words.
    pdf = api.client.get(f"/v1/sessions/{sid}/clients/alex/record.pdf", headers=H(alice))
    assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF")
    text = text_of(pdf.content)
    assert "anxious every time the bills come" in text and "defensive" not in text
    assert "SIGNED NOTE" in text and "[UNSUPPORTED]" not in text

    # The transcript's retention passes: the draft goes with it, the signed note stays (quote snapshots).
    ctx = build_context(settings)
    with db_session(settings.database_url or "") as db:
        db.execute(update(SessionRow).where(SessionRow.id == sid)
                   .values(finished_at=datetime.now(UTC) - timedelta(days=400)))
    expire_transcripts(ctx, SweepReport())
    assert api.client.get(f"/v1/notes/{draft_only}", headers=H(alice)).status_code == 404
    kept = api.client.get(f"/v1/notes/{signed}", headers=H(alice)).json()
    quotes = [c["quote"] for s in kept["sections"] for x in s["sentences"] for c in x["citations"]]
    assert kept["status"] == "signed" and any("bills" in q for q in quotes)

    # Withdrawing the session needs an amendment of the signed note first.
    refused = api.client.delete(f"/v1/sessions/{sid}", headers=H(alice))
    assert (refused.status_code, refused.json()["error"]) == (409, "signed_note")
    body = {"sections": [{"name": s["name"], "sentences": [x["text"] for x in s["sentences"]]}
                         for s in kept["sections"]], "reason": "the client withdrew consent to the recording"}
    assert api.client.post(f"/v1/notes/{signed}/amend", json=body, headers=H(alice)).status_code == 200
    assert api.client.delete(f"/v1/sessions/{sid}", headers=H(alice)).status_code == 204
    assert api.client.get(f"/v1/notes/{signed}", headers=H(alice)).json()["amended"] is True

    # Past its own retention the signed note goes, audited as Verbatim's act.
    with db_session(settings.database_url or "") as db:
        db.execute(update(Note).where(Note.id == uuid.UUID(signed))
                   .values(retain_until=datetime.now(UTC) - timedelta(seconds=1)))
    expire_signed_notes(ctx, SweepReport())
    assert api.client.get(f"/v1/notes/{signed}", headers=H(alice)).status_code == 404
    assert "note_expired" in audit_actions(settings) and "client_record_exported" in audit_actions(settings)


def test_fhir_subject_and_author_use_the_clinics_ehr_mapping(api: Api, settings: Settings, alice: str) -> None:
    from sqlalchemy import insert

    from verbatim.db.models import EhrIdentifier

    sid = ready_session(settings, DIALOGUE, therapist="Alice", clinic="North Clinic")
    note_id = drafted(api, settings, alice, sid)
    sign_all(api, alice, note_id)
    plain = DocumentReference.model_validate(document_of(api.client.get(f"/v1/notes/{note_id}/fhir",
                                                                       headers=H(alice)).json()))
    assert plain.subject.identifier.value == "client" and ":client" in plain.subject.identifier.system
    with db_session(settings.database_url or "") as db:
        note = db.get(Note, uuid.UUID(note_id))
        assert note is not None
        db.execute(insert(EhrIdentifier).values(clinic_id=note.clinic_id, kind="client", local_id="client",
                                                system="https://ehr.example/mrn", value="MRN-0042"))
    mapped = DocumentReference.model_validate(document_of(api.client.get(f"/v1/notes/{note_id}/fhir",
                                                                       headers=H(alice)).json()))
    assert (mapped.subject.identifier.system, mapped.subject.identifier.value) == ("https://ehr.example/mrn",
                                                                                   "MRN-0042")


def test_a_record_with_none_of_the_clients_words_is_refused_not_drafted(api: Api, settings: Settings,
                                                                        alice: str) -> None:
    from verbatim.db.models import Transcript

    sid = ready_session(settings, DIALOGUE, therapist="Alice", clinic="North Clinic")
    with db_session(settings.database_url or "") as db:  # as when the single voice is still unassigned
        row = db.execute(select(Transcript).where(Transcript.session_id == sid)).scalar_one()
        client = row.client_id
        row.segments = [{**seg, "speaker": "other participant"} if seg["speaker"] == client else seg
                        for seg in row.segments]
    before = notes_in_queue(api)
    r = api.client.post(f"/v1/sessions/{sid}/notes", json={"format": "soap"}, headers=H(alice))
    assert (r.status_code, r.json()["error"]) == (409, "no_client_speech"), r.text
    assert "name the speakers" in r.json()["detail"]
    assert notes_in_queue(api) == before
    with db_session(settings.database_url or "") as db:
        assert db.execute(select(Note.id)).first() is None
