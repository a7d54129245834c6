"""A signed note as a FHIR R4 ``DocumentReference`` (``fhir.resources`` R4B models, validated on build).

- type: LOINC 34904-3 "Mental health Progress note"; category: ``clinical-note`` (US Core);
- docStatus: ``final``, or ``amended`` once an amendment was made; status ``current``;
- subject: the client id as an identifier in the clinic's namespace
  (``urn:verbatim:clinic:{clinic id}:client``), or the EHR's identifier when the clinic maps it
  (``ehr_identifiers``);
- author: the therapist as a Practitioner identifier (``urn:verbatim:clinic:{clinic id}:practitioner``);
- content: the note as text/plain and as PDF (base64 attachments).
"""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Any

from fhir.resources.R4B.documentreference import DocumentReference

LOINC = "http://loinc.org"
CATEGORY = "http://hl7.org/fhir/us/core/CodeSystem/us-core-documentreference-category"


def document_reference(*, note_id: str, clinic_id: str, client_id: str, therapist_id: str, signed_at: datetime,
                       amended: bool, text: str, pdf: bytes, session_recorded_at: datetime | None = None,
                       ehr_patient: tuple[str, str] | None = None,
                       ehr_practitioner: tuple[str, str] | None = None) -> dict[str, Any]:
    """The DocumentReference as a JSON-ready dict (validated by the R4B model; raises on an invalid build).

    ``ehr_patient`` / ``ehr_practitioner``: (system, value) from the clinic's EHR mapping, when set.
    """
    ns = f"urn:verbatim:clinic:{clinic_id}"
    subject = ehr_patient or (f"{ns}:client", client_id)
    author = ehr_practitioner or (f"{ns}:practitioner", therapist_id)
    resource: dict[str, Any] = {
        "resourceType": "DocumentReference",
        "identifier": [{"system": "urn:verbatim:note", "value": note_id}],
        "status": "current",
        "docStatus": "amended" if amended else "final",
        "type": {"coding": [{"system": LOINC, "code": "34904-3", "display": "Mental health Progress note"}]},
        "category": [{"coding": [{"system": CATEGORY, "code": "clinical-note", "display": "Clinical Note"}]}],
        "subject": {"identifier": {"system": subject[0], "value": subject[1]}},
        "author": [{"type": "Practitioner", "identifier": {"system": author[0], "value": author[1]}}],
        "date": signed_at.isoformat(),
        "content": [
            {"attachment": {"contentType": "text/plain; charset=utf-8", "title": "Clinical note",
                            "data": base64.b64encode(text.encode()).decode()}},
            {"attachment": {"contentType": "application/pdf", "title": "Clinical note (PDF)",
                            "data": base64.b64encode(pdf).decode()}},
        ],
    }
    if session_recorded_at is not None:
        resource["context"] = {"period": {"start": session_recorded_at.isoformat()}}
    return DocumentReference.model_validate(resource).model_dump(mode="json", exclude_none=True)
