"""The risk check run again on a note's edited text: what the clinician wrote is checked too.

The draft's risk flags come from the client's record (``verbatim.notes.risk.flags`` over its
sentences). A clinician who edits the note can add words about risk the record check never saw
("Client denies suicidal ideation"): each edit runs the same detector over the note's own
sentences and lists what it finds under ``note_mentions`` —
``[{category, section, sentence, denied}]`` (sentence: 0-based index in its section) — so the
risk box never says "none found" over a note that speaks of risk. The record's flags and
denials are kept as they were: an edit changes the note, not the record.
"""

from __future__ import annotations

from typing import Any

from verbatim.notes.evidence import CLIENT, Unit
from verbatim.notes.risk import NONE_FOUND, flags

FOUND = "found"


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
    checked = flags(units)
    mentions: list[dict[str, Any]] = []
    for denied, entries in ((False, checked.get("flags", [])), (True, checked.get("denials", []))):
        for e in entries:
            section, index = where[str(e["segment_id"])]
            mentions.append({"category": e["category"], "section": section, "sentence": index, "denied": denied})
    mentions.sort(key=lambda m: (list(where.values()).index((m["section"], m["sentence"])), m["category"]))
    base["note_mentions"] = mentions
    base["status"] = FOUND if base.get("flags") or mentions else NONE_FOUND
    return base
