"""A signed note as FHIR R4 (``fhir.resources`` R4B models, validated on build): a Bundle of the note's
``DocumentReference`` and the ``Provenance`` of its signature.

DocumentReference:

- type: LOINC 34904-3 "Mental health Progress note"; category: ``clinical-note`` (US Core);
- masterIdentifier: this version of the note (``urn:verbatim:note-version``, ``{note id}/v{n}``);
  identifier: the note across its versions (``urn:verbatim:note``);
- docStatus ``final``, or ``amended`` with ``relatesTo`` ``replaces`` the version it amends; status ``current``;
- subject: a ``Patient`` reference by identifier: the EHR's when the clinic maps the client
  (``ehr_identifiers``), else the client id in the clinic's namespace (``urn:verbatim:clinic:{id}:client``);
- author and authenticator: a ``Practitioner`` reference with the clinician's display name and
  identifier (the EHR's when mapped; else ``urn:verbatim:clinic:{id}:practitioner``);
- context.period: the session's start and end; description: the session type;
- content: the PDF and the text (base64 attachments).

Provenance: target the DocumentReference, ``recorded`` the signature's time, agents the author
(and the supervisor as verifier), a ``signature`` of each (ASTM E1762 author's / verification
signature), activity CREATE, or UPDATE for an amendment.

Bundle type ``transaction`` (each entry a POST to its resource type): an EHR's FHIR endpoint
takes it as it is, resolving the Provenance's ``urn:uuid`` target to the stored document.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any

from fhir.resources.R4B.bundle import Bundle

from verbatim.notes.record import Party, SignedRecord

LOINC = "http://loinc.org"
CATEGORY = "http://hl7.org/fhir/us/core/CodeSystem/us-core-documentreference-category"
SIGNATURE_TYPE = "urn:iso-astm:E1762-95:2013"
AUTHOR_SIGNATURE = ("1.2.840.10065.1.12.1.1", "Author's Signature")
VERIFICATION_SIGNATURE = ("1.2.840.10065.1.12.1.5", "Verification Signature")
AGENT_TYPE = "http://terminology.hl7.org/CodeSystem/provenance-participant-type"
DATA_OPERATION = "http://terminology.hl7.org/CodeSystem/v3-DataOperation"
NOTE_VERSION = "urn:verbatim:note-version"


def _practitioner(p: Party) -> dict[str, Any]:
    return {"type": "Practitioner", "identifier": {"system": p.system, "value": p.value}, "display": p.signed_name}


def _signature(kind: tuple[str, str], when: str, who: Party) -> dict[str, Any]:
    # A signature without ``data``: the act is recorded (who, when, as what); the bytes signed are the PDF.
    return {"type": [{"system": SIGNATURE_TYPE, "code": kind[0], "display": kind[1]}], "when": when,
            "who": _practitioner(who)}


def bundle(record: SignedRecord, text: str, pdf: bytes) -> dict[str, Any]:
    """The Bundle (DocumentReference + Provenance) as a JSON-ready dict; raises on an invalid build."""
    doc_url, prov_url = f"urn:uuid:{uuid.uuid4()}", f"urn:uuid:{uuid.uuid4()}"
    last = record.amendments[-1] if record.amendments else None
    dated = (last.at if last else record.signed_at).isoformat()
    doc: dict[str, Any] = {
        "resourceType": "DocumentReference",
        "masterIdentifier": {"system": NOTE_VERSION, "value": f"{record.note_id}/v{record.version}"},
        "identifier": [{"system": "urn:verbatim:note", "value": record.note_id}],
        "status": "current",
        "docStatus": record.status,
        "type": {"coding": [{"system": LOINC, "code": "34904-3", "display": "Mental health Progress note"}]},
        "category": [{"coding": [{"system": CATEGORY, "code": "clinical-note", "display": "Clinical Note"}]}],
        "subject": {"type": "Patient", "identifier": {"system": record.client.system, "value": record.client.value}},
        "date": dated,
        "author": [_practitioner(record.clinician)],
        "authenticator": _practitioner(record.cosigner or record.clinician),
        "custodian": {"display": record.clinic},
        "description": f"{record.format_name} note, {record.session_type} session",
        "content": [
            {"attachment": {"contentType": "application/pdf", "language": "en", "title": "Clinical note (PDF)",
                            "creation": dated, "data": base64.b64encode(pdf).decode()}},
            {"attachment": {"contentType": "text/plain; charset=utf-8", "language": "en", "title": "Clinical note",
                            "creation": dated, "data": base64.b64encode(text.encode()).decode()}},
        ],
        "context": {"period": {"start": record.session_start.isoformat(), "end": record.session_end.isoformat()}},
    }
    if last is not None:
        doc["relatesTo"] = [{"code": "replaces", "target": {
            "type": "DocumentReference", "identifier": {"system": NOTE_VERSION,
                                                        "value": f"{record.note_id}/v{last.version - 1}"}}}]
    agents = [{"type": {"coding": [{"system": AGENT_TYPE, "code": "author", "display": "Author"}]},
               "who": _practitioner(record.clinician)}]
    signatures = [_signature(AUTHOR_SIGNATURE, record.signed_at.isoformat(), record.clinician)]
    if record.cosigner is not None and record.cosigned_at is not None:
        agents.append({"type": {"coding": [{"system": AGENT_TYPE, "code": "verifier", "display": "Verifier"}]},
                       "who": _practitioner(record.cosigner)})
        signatures.append(_signature(VERIFICATION_SIGNATURE, record.cosigned_at.isoformat(), record.cosigner))
    if last is not None:
        signatures.append(_signature(AUTHOR_SIGNATURE, last.at.isoformat(), last.by))
    provenance = {
        "resourceType": "Provenance",
        "target": [{"reference": doc_url, "type": "DocumentReference"}],
        "recorded": dated,
        "activity": {"coding": [{"system": DATA_OPERATION, "code": "UPDATE" if last else "CREATE"}]},
        "agent": agents,
        "signature": signatures,
    }
    raw = {"resourceType": "Bundle", "type": "transaction", "timestamp": dated, "entry": [
        {"fullUrl": doc_url, "resource": doc, "request": {"method": "POST", "url": "DocumentReference"}},
        {"fullUrl": prov_url, "resource": provenance, "request": {"method": "POST", "url": "Provenance"}},
    ]}
    return Bundle.model_validate(raw).model_dump(mode="json", exclude_none=True)
