"""A signed note as the record it leaves Verbatim as: who, for whom, when, what, and every amendment.

The API gathers these facts (``verbatim.api.notes``); the PDF (``verbatim.notes.pdf``) and the
FHIR Bundle (``verbatim.notes.fhir``) are both built from one ``SignedRecord``, so the two
exports always say the same. Times are aware datetimes (UTC in the database); ``local`` prints
them in the clinic's time zone.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo


@dataclass(frozen=True)
class Party:
    """A clinician or a client as an export names them: ``display`` for people, (system, value) for systems."""

    display: str
    system: str
    value: str
    credentials: str | None = None

    @property
    def signed_name(self) -> str:
        """ "Dana Reyes, LCSW" (or the display name alone)."""
        return f"{self.display}, {self.credentials}" if self.credentials else self.display


@dataclass(frozen=True)
class Change:
    """One amendment: the version it made, when, why, by whom, and the sentences it removed and added
    ("Section: sentence", ``changed_sentences``)."""

    version: int
    at: datetime
    reason: str
    by: Party
    removed: list[str]
    added: list[str]


@dataclass(frozen=True)
class SignedRecord:
    """Everything an export of a signed note says (see the module docstring)."""

    note_id: str
    version: int  #: the current version (the one exported)
    format_name: str  #: "SOAP", "DAP", … or the template's name
    clinic: str
    time_zone: str  #: IANA name; "UTC" when the clinic set none
    clinician: Party
    client: Party
    ehr_client: bool  #: whether ``client`` is the EHR's identifier (mapped by the clinic)
    session_start: datetime
    duration_s: float
    session_type: str
    signed_at: datetime
    body: dict[str, Any]
    cosigner: Party | None = None
    cosigned_at: datetime | None = None
    amendments: list[Change] = field(default_factory=list)

    @property
    def session_end(self) -> datetime:
        return self.session_start + timedelta(seconds=self.duration_s)

    @property
    def status(self) -> str:
        return "amended" if self.amendments else "final"

    def local(self, when: datetime) -> datetime:
        """``when`` in the clinic's time zone."""
        return when.astimezone(ZoneInfo(self.time_zone))


def changed_sentences(before: dict[str, Any], after: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(removed, added) sentences between two versions' bodies, each as "Section: sentence".

    Only the note's words: no verifier labels, citations, segment ids or risk lines, so an
    amendment prints what the clinician changed and nothing internal. A sentence moved to
    another section reads removed from one and added to the other.
    """
    def flat(body: dict[str, Any]) -> list[str]:
        return [f"{section['name']}: {str(s['text']).strip()}" for section in body.get("sections", [])
                for s in section.get("sentences", []) if str(s.get("text", "")).strip()]

    old, new = flat(before), flat(after)
    removed: list[str] = []
    added: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if op in ("replace", "delete"):
            removed += old[i1:i2]
        if op in ("replace", "insert"):
            added += new[j1:j2]
    return removed, added
