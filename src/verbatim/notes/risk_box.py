"""What a note's risk box says: exactly one state, from the record's check and the note's own text.

A note's ``risk`` (``verbatim.notes.risk.flags``, re-run on the note's text by
``verbatim.notes.note_risk.recheck``) holds the record's ``flags``, ``denials`` and
``family_history`` and the note's own ``note_mentions``. The box is in one state, first that applies:

* ``found`` — the record has a flag: "N statement(s) about risk found in the transcript";
* ``note_mentions`` — no flag, but the note's text speaks of risk (mentioned or denied): the
  clinician checks it against the record; never "nothing detected";
* ``denied`` — no flag, no mention in the note, the client denied a risk topic when asked;
* ``nothing_detected`` — none of these: what was checked (``NOTHING_DETECTED``), never an assessment.

Denials and family history are listed in every state; they never make "nothing detected" false
and never count as a flag.
"""

from __future__ import annotations

from typing import Any

from verbatim.notes.risk import NOTHING_DETECTED

FOUND = "found"
NOTE_MENTIONS = "note_mentions"
DENIED = "denied"
NOTHING = "nothing_detected"
STATES = (FOUND, NOTE_MENTIONS, DENIED, NOTHING)


def state(risk: dict[str, Any] | None) -> str:
    """The box's one state (``STATES``) for a note's ``risk`` (None: nothing was checked → ``nothing_detected``)."""
    risk = risk or {}
    if risk.get("flags"):
        return FOUND
    if risk.get("note_mentions"):
        return NOTE_MENTIONS
    if risk.get("denials"):
        return DENIED
    return NOTHING


def headline(risk: dict[str, Any] | None) -> str:
    """The box's first line, for its state."""
    risk = risk or {}
    box = state(risk)
    if box == FOUND:
        n = len(risk["flags"])
        many = n != 1
        return (f"{n} statement{'s' if many else ''} about risk found in the transcript: "
                f"review {'them' if many else 'it'}.")
    if box == NOTE_MENTIONS:
        return ("The note's text speaks of risk (nothing was found in the transcript itself): "
                "check it against the record.")
    if box == DENIED:
        return ("No risk statement detected by the automatic check; the client denied a risk topic when asked "
                "(below). This is not a risk assessment.")
    return str(risk.get("checked") or NOTHING_DETECTED)


def lines(risk: dict[str, Any] | None) -> list[str]:
    """The box as text lines (headline, then each flag, mention, denial, family history): no ids, no tags."""
    risk = risk or {}
    out = [headline(risk)]
    for f in risk.get("flags", []):
        kind = f" ({f['kind']})" if f.get("kind") else ""
        out.append(f'{_name(f["category"])}{kind}: {_who(f)} at {_clock(f["start_s"])}: '
                   f'"{f["quote"]}"{_asked(f)}')
    for m in risk.get("note_mentions", []):
        said = "denied" if m.get("denied") else "mentioned"
        out.append(f'{_name(m["category"])} {said} in the note ({m["section"]}, sentence {m["sentence"] + 1})')
    for d in risk.get("denials", []):
        out.append(f'Denied when asked, {_name(d["category"]).lower()}: {_who(d)} at {_clock(d["start_s"])}: '
                   f'"{d["quote"]}"{_asked(d)}')
    for h in risk.get("family_history", []):
        out.append(f"Family or others' history (not the client's own risk), {_name(h['category']).lower()}: "
                   f'{_who(h)} at {_clock(h["start_s"])}: "{h["quote"]}"')
    return out


def _who(entry: dict[str, Any]) -> str:
    """The speaker, and a caution when the recognizer could not tell whose voice it was."""
    doubt = " (speaker uncertain: check who said it)" if entry.get("speaker_uncertain") else ""
    return f'{entry["speaker"]}{doubt}'


def _name(category: str) -> str:
    return category.replace("_", " ").capitalize()


def _asked(entry: dict[str, Any]) -> str:
    q = entry.get("question")
    return f' (asked: "{q["quote"]}")' if q else ""


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m:02d}:{s:02d}"
