"""What a signature waits on: every sentence the verifier doubts is removed or confirmed first.

A sentence is *flagged* when the verifier labels it ``unsupported`` or ``contradicted``, or when
it cites nothing. Signing a note with flagged sentences is refused until the clinician has
decided each one: remove it, or confirm it as written. A confirmation is kept on the sentence
in the version the note is signed at (``confirmed: {"by": therapist id, "at": ISO time}``);
exports never print it (``verbatim.notes.render.plain_text(..., export=True)``).

Sentences are named by their section and their index in it (0-based), as the note shows them.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from verbatim.notes.verifier import SUPPORTED

NO_EVIDENCE = "No evidence for this section in the transcript."


@dataclass(frozen=True)
class Flag:
    """A sentence a signature waits on: where it is and why (``unsupported``, ``contradicted``, ``uncited``)."""

    section: str
    sentence: int
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"section": self.section, "sentence": self.sentence, "reason": self.reason}


class ReviewInvalid(ValueError):
    """A review names a sentence that is not flagged (or not there): the caller's view of the note is stale."""


def _reason(sentence: dict[str, Any]) -> str | None:
    if sentence.get("confirmed"):
        return None
    if not sentence.get("citations"):
        return "uncited"
    label = str(sentence.get("label", SUPPORTED))
    return None if label == SUPPORTED else label


def flagged(body: dict[str, Any]) -> list[Flag]:
    """The sentences of ``body`` not yet confirmed that the verifier doubts or that cite nothing, in note order."""
    out = []
    for section in body.get("sections", []):
        for i, sentence in enumerate(section.get("sentences", [])):
            reason = _reason(sentence)
            if reason is not None:
                out.append(Flag(str(section["name"]), i, reason))
    return out


def apply(body: dict[str, Any], confirm: set[tuple[str, int]], remove: set[tuple[str, int]],
          by: uuid.UUID, at: datetime) -> dict[str, Any]:
    """A copy of ``body`` with the ``remove``d sentences gone and the ``confirm``ed ones marked.

    Each pair is (section name, sentence index) of a flagged sentence; raises ReviewInvalid for a
    pair that names no flagged sentence, or one named in both sets.
    """
    wanted = {(f.section, f.sentence) for f in flagged(body)}
    unknown = (confirm | remove) - wanted
    if unknown or confirm & remove:
        raise ReviewInvalid("each sentence named must be one of the flagged sentences, kept or removed (not both)")
    out = copy.deepcopy(body)
    for section in out.get("sections", []):
        kept = []
        for i, sentence in enumerate(section.get("sentences", [])):
            key = (str(section["name"]), i)
            if key in remove:
                continue
            if key in confirm:
                sentence["confirmed"] = {"by": str(by), "at": at.isoformat()}
            kept.append(sentence)
        section["sentences"] = kept
        if not kept:
            section.setdefault("empty", NO_EVIDENCE)
    return out
