"""Exports an EHR takes (issue 23, items 5 and 6): the signed PDF names who, for whom, when and what, with a
signature line and each amendment, and no internal ids; FHIR R4 as a Bundle of a DocumentReference and the
Provenance of its signatures, validated with fhir.resources' R4B models."""

from __future__ import annotations

import base64
import re
import uuid
from datetime import UTC, datetime

from fhir.resources.R4B.bundle import Bundle
from fhir.resources.R4B.documentreference import DocumentReference
from fhir.resources.R4B.provenance import Provenance
from sqlalchemy import select, update
from sqlalchemy.dialects.postgresql import insert

from tests.api.conftest import Api
from tests.api.test_notes_api import DIALOGUE, H, drafted, sign_all
from tests.factories import ready_session, token_for
from tests.pdfs import text_of
from verbatim.config import Settings
from verbatim.db.engine import db_session
from verbatim.db.models import Clinic, EhrIdentifier, Session, Therapist


def _cosigned_again(api: Api, settings: Settings, alice: str, note_id: str) -> None:
    """An amendment of a trainee's note waits for the supervisor: not exported until Carol co-signs it again."""
    assert api.client.get(f"/v1/notes/{note_id}/pdf", headers=H(alice)).json()["error"] == "awaiting_cosign"
    carol = token_for(settings, "Carol", "North Clinic")
    assert api.client.post(f"/v1/notes/{note_id}/cosign", headers=H(carol)).status_code == 200


def _setup(api: Api, settings: Settings, alice: str) -> tuple[str, str, dict[str, str]]:
    carol = token_for(settings, "Carol", "North Clinic")
    admin = token_for(settings, "", "North Clinic", scope="clinic_admin")
    staff = {t["name"]: t["id"] for t in api.client.get("/v1/clinic/therapists", headers=H(admin)).json()}
    for who, body in (("Alice", {"display_name": "Alice Moreno", "credentials": "LCSW",
                                 "supervisor_id": staff["Carol"]}),
                      ("Carol", {"display_name": "Carol Diaz", "credentials": "PhD"})):
        assert api.client.patch(f"/v1/clinic/therapists/{staff[who]}", json=body, headers=H(admin)).status_code == 200
    assert api.client.patch("/v1/clinic", json={"time_zone": "America/Chicago"}, headers=H(admin)).status_code == 200
    sid = ready_session(settings, DIALOGUE, therapist="Alice", clinic="North Clinic")
    with db_session(settings.database_url or "") as db:
        # 15:00 UTC on 2 March is 09:00 in Chicago (CST): the export prints the clinic's time.
        db.execute(update(Session).where(Session.id == sid).values(
            recorded_at=datetime(2026, 3, 2, 15, 0, tzinfo=UTC), audio_duration_s=50 * 60.0))
        clinic_id = db.execute(select(Clinic.id).where(Clinic.name == "North Clinic")).scalar_one()
        db.execute(insert(EhrIdentifier).values(clinic_id=clinic_id, kind="client", local_id="client",
                                                system="https://ehr.example/mrn", value="MRN-20431"))
        db.execute(insert(EhrIdentifier).values(clinic_id=clinic_id, kind="practitioner", local_id=staff["Alice"],
                                                system="http://hl7.org/fhir/sid/us-npi", value="1234567893"))
    note_id = drafted(api, settings, alice, sid)
    sign_all(api, alice, note_id)
    assert api.client.post(f"/v1/notes/{note_id}/cosign", headers=H(carol)).status_code == 200
    return note_id, str(sid), staff


def test_the_signed_pdf_names_who_for_whom_when_and_carries_no_internal_ids(api: Api, settings: Settings,
                                                                           alice: str) -> None:
    note_id, sid, staff = _setup(api, settings, alice)
    pdf = api.client.get(f"/v1/notes/{note_id}/pdf", headers=H(alice))
    assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF")
    text = text_of(pdf.content)
    for want in ("Clinic: North Clinic", "Clinician: Alice Moreno, LCSW", "Client: MRN-20431",
                 "Date of service: 2026-03-02, 09:00-09:50 CST (America/Chicago)", "Session: individual, 50 min",
                 "Electronically signed by Alice Moreno, LCSW on", "Co-signed by Carol Diaz, PhD (supervisor) on",
                 "SUBJECTIVE"):
        assert want in text, (want, text[:600])
    for internal in (note_id, sid, staff["Alice"], "seg-", "[UNSUPPORTED]", "[CONTRADICTED]", "offline-drafter"):
        assert internal not in text and internal.encode() not in pdf.content
    assert "APPENDIX" not in text
    appendix = text_of(api.client.get(f"/v1/notes/{note_id}/pdf?evidence=true", headers=H(alice)).content)
    assert "APPENDIX: EVIDENCE" in appendix and "seg-" not in appendix and re.search(r"client \d\d:\d\d-", appendix)

    # An amendment shows what changed, why and by whom.
    note = api.client.get(f"/v1/notes/{note_id}", headers=H(alice)).json()
    sections = [{"name": s["name"], "sentences": [x["text"] for x in s["sentences"]]} for s in note["sections"]]
    old = sections[0]["sentences"][0]
    sections[0]["sentences"][0] = "Client reports that they fall asleep around one in the morning."
    r = api.client.post(f"/v1/notes/{note_id}/amend", json={"sections": sections, "reason": "Corrected the time"},
                        headers=H(alice))
    assert r.status_code == 200, r.text
    _cosigned_again(api, settings, alice, note_id)
    text = text_of(api.client.get(f"/v1/notes/{note_id}/pdf", headers=H(alice)).content)
    assert "Status: amended" in text and "Amended by Alice Moreno, LCSW on 20" in text
    assert "Reason: Corrected the time" in text and f"Removed from {sections[0]['name']}: {old}"[:60] in text
    assert f"Added to {sections[0]['name']}: Client reports that they fall asleep around one in the morning." in text
    assert "[UNSUPPORTED]" not in text and "UNSUPPORTED" not in text and "seg-" not in text


def test_fhir_is_a_validated_bundle_of_the_document_and_the_provenance_of_its_signatures(
        api: Api, settings: Settings, alice: str) -> None:
    note_id, _, staff = _setup(api, settings, alice)
    raw = api.client.get(f"/v1/notes/{note_id}/fhir", headers=H(alice)).json()
    bundle = Bundle.model_validate(raw)
    assert bundle.type == "transaction" and len(bundle.entry) == 2
    doc_entry, prov_entry = bundle.entry
    doc = DocumentReference.model_validate(raw["entry"][0]["resource"])
    prov = Provenance.model_validate(raw["entry"][1]["resource"])
    assert doc_entry.request.method == "POST" and doc_entry.request.url == "DocumentReference"
    assert doc.type.coding[0].system == "http://loinc.org" and doc.type.coding[0].code == "34904-3"
    assert doc.docStatus == "final" and not doc.relatesTo
    assert doc.author[0].type == "Practitioner" and doc.author[0].display == "Alice Moreno, LCSW"
    assert (doc.author[0].identifier.system, doc.author[0].identifier.value) == (
        "http://hl7.org/fhir/sid/us-npi", "1234567893")
    assert doc.authenticator.display == "Carol Diaz, PhD" and doc.authenticator.identifier.value == staff["Carol"]
    assert doc.subject.type == "Patient" and doc.subject.identifier.value == "MRN-20431"
    assert doc.context.period.start.isoformat().startswith("2026-03-02T15:00:00")
    assert doc.context.period.end.isoformat().startswith("2026-03-02T15:50:00")
    kinds = [c.attachment.contentType for c in doc.content]
    assert kinds == ["application/pdf", "text/plain; charset=utf-8"]
    assert base64.b64decode(raw["entry"][0]["resource"]["content"][0]["attachment"]["data"]).startswith(b"%PDF")
    assert prov.target[0].reference == doc_entry.fullUrl
    codes = [s.type[0].code for s in prov.signature]
    assert codes == ["1.2.840.10065.1.12.1.1", "1.2.840.10065.1.12.1.5"]
    assert [a.type.coding[0].code for a in prov.agent] == ["author", "verifier"]
    assert prov.activity.coding[0].code == "CREATE"

    note = api.client.get(f"/v1/notes/{note_id}", headers=H(alice)).json()
    signed_version = note["version"]
    sections = [{"name": s["name"], "sentences": [x["text"] for x in s["sentences"]]} for s in note["sections"]]
    sections[-1]["sentences"].append("Next session in two weeks.")
    added = {"section": sections[-1]["name"], "sentence": len(sections[-1]["sentences"]) - 1}
    r = api.client.post(f"/v1/notes/{note_id}/amend", json={"sections": sections, "reason": "Added the follow-up",
                                                             "confirm": [added]}, headers=H(alice))
    assert r.status_code == 200, r.text
    _cosigned_again(api, settings, alice, note_id)
    raw = api.client.get(f"/v1/notes/{note_id}/fhir", headers=H(alice)).json()
    Bundle.model_validate(raw)
    doc = DocumentReference.model_validate(raw["entry"][0]["resource"])
    prov = Provenance.model_validate(raw["entry"][1]["resource"])
    assert doc.docStatus == "amended" and doc.relatesTo[0].code == "replaces"
    assert doc.relatesTo[0].target.identifier.value == f"{note_id}/v{signed_version}"
    assert doc.masterIdentifier.value == f"{note_id}/v{signed_version + 1}"
    assert prov.activity.coding[0].code == "UPDATE" and len(prov.signature) == 3
    with db_session(settings.database_url or "") as db:
        assert db.execute(select(Therapist.credentials).where(Therapist.name == "Alice")).scalar_one() == "LCSW"
    assert uuid.UUID(note_id)
