"""The risk check run again on a note's text, as drafted and at each edit: what the note says is checked too.

The draft's risk flags come from the client's record (``verbatim.notes.risk.flags`` over its
sentences). A clinician who edits the note can add words about risk the record check never saw
("Client denies suicidal ideation"), and a draft may quote what the record's check let pass: the
draft and each edit run the same detector over the note's own
sentences and lists what it finds under ``note_mentions`` —
``[{category, section, sentence, denied}]`` (sentence: 0-based index in its section) — so the
risk box never says "none found" over a note that speaks of risk. The record's flags and
denials are kept as they were: an edit changes the note, not the record.

A note is written in the third person and in a clinician's shorthand ("Client denies SI/HI",
"Patient reports thoughts of killing himself"), which the speech detector was not built for:
``clinical_mentions`` reads that register beside it (terms per category, a denial cue earlier
in the same clause), and its reading of denied or not wins where both find a category.
``status`` is "found" whenever the record has a flag or the note a mention; ``checked`` (the
"nothing detected" sentence) is kept only when the box says so (``verbatim.notes.risk_box``).
"""

from __future__ import annotations

import re
from typing import Any

from verbatim.notes import risk_box
from verbatim.notes.evidence import CLIENT, Unit
from verbatim.notes.risk import NONE_FOUND, NOTHING_DETECTED, flags

FOUND = "found"

_I = re.IGNORECASE
_SELF = r"(?:him|her|them|my|your|one)sel(?:f|ves)"
_POSSESSIVE = r"(?:his|her|their|my|your|one's)"
#: clinical and plain wording of each category in a note's text; SI/HI/NSSI as capitals only
_TERMS: dict[str, list[re.Pattern[str]]] = {
    "suicide": [re.compile(p, _I) for p in (
        r"\bsuicid\w*", rf"\bkill(?:s|ed|ing)? {_SELF}", rf"\b(?:end|ending|ended|take|taking|took) {_POSSESSIVE} "
        r"(?:own )?life\b", r"\bdeath wish(?:es)?\b",
        r"\b(?:wish(?:es|ed)?|want(?:s|ed)?) to (?:die|be dead|not wake up)\b", r"\boverdos\w*",
        r"\bbetter off dead\b")] + [re.compile(r"\bSI\b")],
    "self_harm": [re.compile(p, _I) for p in (
        r"\bself[- ]?harm\w*", r"\bself[- ]?injur\w*", r"\bself[- ]?mutilat\w*",
        r"\bcutting\b(?! (?:back|down|out|off|up|it|the|costs?|hours|class(?:es)?))",
        rf"\b(?:cut|cuts|burn|burns|burned|hurt|hurts|hurting|harm|harms|harming) {_SELF}")]
    + [re.compile(r"\bNSSI\b")],
    "harm_to_others": [re.compile(p, _I) for p in (
        r"\bhomicid\w*", r"\b(?:harm|hurt|kill|attack)(?:s|ed|ing)? (?:to )?(?:others|someone|somebody|anyone|"
        r"anybody|other people|(?:his|her|their) (?:wife|husband|partner|child|children|kids?|boss|mother|father))\b",
        r"\bviolen\w* (?:toward|towards|to|against) others\b", r"\bthreat\w* to (?:harm|hurt|kill)\b")]
    + [re.compile(r"(?:\bSI/|\b)HI\b")],
    "abuse": [re.compile(p, _I) for p in (r"\babus\w*", r"\bassault\w*", r"\bmolest\w*", r"\brap(?:e|ed)\b",
                                           r"\bdomestic violence\b")],
    "neglect": [re.compile(r"\bneglect\w*", _I)],
}
#: words before a term that make it something else ("alcohol abuse" is a substance, not abuse)
_NOT_BEFORE = {"abuse": re.compile(r"\b(?:substance|alcohol|drug|opioid|opiate|cannabis|marijuana|polysubstance|"
                                   r"stimulant|cocaine|benzodiazepine|laxative|nicotine|tobacco)s? $", _I)}
#: a denial cue: the term it precedes in the same clause is denied
_DENIAL = re.compile(r"\b(?:denie[sd]|deny|denying|no|not|nor|never|negative for|without|absence of|free of|"
                     r"rules? out|ruled out|no longer|none)\b", _I)
#: where a clause ends: a cue before it does not reach a term after it
_CLAUSE = re.compile(r"[.;:!?]|\b(?:but|however|although|though|yet|except|reports|reported|endorses|endorsed|"
                     r"admits|admitted|describes|described|states|stated)\b", _I)


def clinical_mentions(text: str) -> dict[str, bool]:
    """The risk categories one sentence of a note names, each with whether it is denied.

    ``{"suicide": True}`` for "Client denies suicidal ideation." (denied); a category named both
    denied and not ("denies SI; reports self-harm urges, cut herself last week") reads not denied.
    Returns ``{}`` for a sentence that names none.
    """
    found: dict[str, bool] = {}
    for category, patterns in _TERMS.items():
        for pattern in patterns:
            for m in pattern.finditer(text):
                before = text[:m.start()]
                if category in _NOT_BEFORE and _NOT_BEFORE[category].search(before):
                    continue
                cut = [c.end() for c in _CLAUSE.finditer(before)]
                clause = before[cut[-1]:] if cut else before
                denied = bool(_DENIAL.search(clause))
                found[category] = found.get(category, True) and denied
    return found


def recheck(record_risk: dict[str, Any] | None, sections: list[dict[str, Any]]) -> dict[str, Any]:
    """The note's risk after an edit: the record's flags and denials, plus what the note's text mentions."""
    base = dict(record_risk or {"status": NONE_FOUND, "flags": [], "denials": []})
    units: list[Unit] = []
    where: dict[str, tuple[str, int]] = {}
    for s, part in enumerate(sections):
        for i, sentence in enumerate(part.get("sentences", [])):
            key = f"note-{s}-{i}"
            where[key] = (str(part["name"]), i)
            # Every sentence its own turn, two positions apart: no sentence reads as the answer to another.
            units.append(Unit(len(units), 2 * len(units), key, CLIENT, "note", 0.0, 0.0, str(sentence["text"]),
                              str(sentence["text"])))
    checked = flags(units, meaning=False)  # a note's register ("denies SI") is the rules' to read
    found: dict[tuple[str, int, str], bool] = {}
    for denied, entries in ((False, checked.get("flags", [])), (True, checked.get("denials", []))):
        for e in entries:
            section, index = where[str(e["segment_id"])]
            found[(section, index, str(e["category"]))] = denied
    for unit in units:
        section, index = where[unit.segment_id]
        for category, denied in clinical_mentions(unit.text).items():
            found[(section, index, category)] = denied  # the note's register: its reading wins
    order = list(where.values())
    mentions = [{"category": c, "section": s, "sentence": i, "denied": d}
                for (s, i, c), d in sorted(found.items(), key=lambda kv: (order.index(kv[0][:2]), kv[0][2]))]
    base["note_mentions"] = mentions
    base["status"] = FOUND if base.get("flags") or mentions else NONE_FOUND
    if risk_box.state(base) in (risk_box.FOUND, risk_box.NOTE_MENTIONS):
        base.pop("checked", None)
    else:
        base["checked"] = NOTHING_DETECTED
    return base
