"""What a signature waits on: every sentence the verifier doubts is removed or confirmed first.

A sentence is *flagged* when the verifier labels it ``unsupported`` or ``contradicted``, or when
it cites nothing. Signing a note with flagged sentences is refused until the clinician has
decided each one: remove it, or confirm it as written. A confirmation is kept on the sentence
in the version the note is signed at (``confirmed: {"by": therapist id, "at": ISO time}``);
exports never print it (``verbatim.notes.render.plain_text(..., export=True)``).

Sentences are named by their section and their index in it (0-based), as the note shows them.

An amendment changes a record already signed, so it is held to the same rule on the sentences it
changes (``changed``): each changed sentence the verifier doubts is removed or confirmed. It also
waits on one more decision: an amendment that changes or takes out a sentence about risk — one whose
words name a risk, or one repeating a statement the record's check flagged (``risk_removed``) — is
saved only once the clinician acknowledges each such sentence.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from verbatim.notes import text as tx
from verbatim.notes.note_risk import recheck
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


def changed(before: dict[str, Any], after: dict[str, Any]) -> set[tuple[str, int]]:
    """The sentences of ``after`` that ``before`` does not hold word for word in the same-named section."""
    had = {(str(s["name"]), str(x["text"])) for s in before.get("sections", []) for x in s.get("sentences", [])}
    return {(str(s["name"]), i) for s in after.get("sections", []) for i, x in enumerate(s.get("sentences", []))
            if (str(s["name"]), str(x["text"])) not in had}


@dataclass(frozen=True)
class RiskLoss:
    """A sentence about risk an amendment takes out: where it was in the signed version, its category,
    and whether it said the risk was denied. Never its words (this goes into error bodies and audit)."""

    section: str
    sentence: int
    category: str
    denied: bool

    def to_dict(self) -> dict[str, Any]:
        return {"section": self.section, "sentence": self.sentence, "category": self.category,
                "denied": self.denied}


#: share of a flagged statement's content words a sentence citing it repeats to be about that statement
QUOTES_FLAG = 0.5


def _risk_sentences(body: dict[str, Any]) -> dict[tuple[str, int], set[tuple[str, bool]]]:
    """Each sentence of ``body`` about risk → its (category, denied) readings.

    A sentence is about risk when its own words name a category (the risk box's ``note_mentions``,
    denied or not), or when it cites a statement the record's check flagged and repeats most of that
    statement's words (``QUOTES_FLAG``: "Client reports that they stopped seeing friends" cites the
    turn that also says "I think about killing myself", and is not about it). Its own words' reading
    wins over the flag it cites: "Client denies suicidal ideation." is a denial whatever it cites.
    """
    # The mentions are read again from the text (a note stored before drafts were checked carries none).
    risk = recheck(body.get("risk"), body.get("sections", []))
    out: dict[tuple[str, int], set[tuple[str, bool]]] = {}
    for m in risk.get("note_mentions", []):
        out.setdefault((str(m["section"]), int(m["sentence"])), set()).add((str(m["category"]), bool(m["denied"])))
    flags: dict[str, list[tuple[str, set[str]]]] = {}
    for f in risk.get("flags", []):
        flags.setdefault(str(f.get("segment_id")), []).append((str(f["category"]), tx.content(str(f.get("quote", "")))))
    for section in body.get("sections", []):
        for i, sentence in enumerate(section.get("sentences", [])):
            where = (str(section["name"]), i)
            said = tx.content(str(sentence["text"]))
            named = {c for c, _ in out.get(where, set())}
            for c in sentence.get("citations", []):
                for category, quoted in flags.get(str(c.get("segment_id")), []):
                    if category not in named and quoted and len(quoted & said) >= QUOTES_FLAG * len(quoted):
                        out.setdefault(where, set()).add((category, False))
    return out


def risk_removed(before: dict[str, Any], after: dict[str, Any]) -> list[RiskLoss]:
    """The sentences about risk of ``before`` (a signed version) that ``after`` no longer holds word for
    word, in note order, one per (sentence, category).

    Any change counts, a rewording too: whether "SI denied.", "Client no longer reports SI." or "Client's
    aunt died by suicide." still says what the signed sentence said is a clinical reading, and this is
    the one place a signed statement about risk can leave the record, so the clinician says it is meant.
    A sentence moved word for word to another section is kept."""
    texts = {str(x["text"]) for s in after.get("sections", []) for x in s.get("sentences", [])}
    sentences = {(str(s["name"]), i): str(x["text"]) for s in before.get("sections", [])
                 for i, x in enumerate(s.get("sentences", []))}
    about = _risk_sentences(before)
    return [RiskLoss(where[0], where[1], c, d) for where, text in sentences.items()
            if where in about and text not in texts for c, d in sorted(about[where])]


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
    if remove:
        # The risk box names sentences by index: read the note's text again once sentences are gone.
        out["risk"] = recheck(out.get("risk"), out.get("sections", []))
    return out
