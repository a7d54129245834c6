"""json-v2 results → speaker turns.

A speaker turn is consecutive words of one speaker: ``{"speaker", "start_s", "end_s",
"text", "words"}``. A long stretch of one voice is not one turn: a new turn starts after a
sentence end (``is_eos``) followed by a pause of at least ``TURN_PAUSE_S``, or after any
sentence end once the turn has lasted ``MAX_TURN_S`` — so a clinician reads (and corrects)
paragraphs, not a monologue of minutes. Punctuation is attached the way the API marks it: ``attaches_to``
``previous`` (no space before), ``next`` (no space after), ``both`` (no space either
side), ``none`` (spaced). Each word keeps its confidence and alternatives so later
analysis can find doubtful words. Times are seconds from the start of the recording.

Marks: what the recognizer doubts travels as json-v2 ``tags`` on an item's first alternative
(the only free-form field the Speechmatics SDK's result model keeps) and lands here as a
``marks`` list (present only when not empty):

- a word tagged ``meaning_flip`` (`MEANING_FLIP`: a negation, number, time or name heard with
  doubt — its rival reading, e.g. "can't" for "can", is among its ``alternatives``) keeps the
  mark on the word: ``{"content": "can", ..., "alternatives": ["can't"], "marks": ["meaning_flip"]}``;
- a turn any of whose words is tagged ``speaker_uncertain`` (`SPEAKER_UNCERTAIN`: the
  recognizer could not tell whose voice it was) carries ``"marks": ["speaker_uncertain"]``;
- a ``gap`` item (speech in which no word could be recognised) is a turn of its own with no
  voice: ``{"speaker": NO_SPEAKER, "start_s", "end_s", "text": "[inaudible 9.5 s]",
  "words": [], "marks": ["inaudible"]}`` (`INAUDIBLE`), between the turns around it.
"""

from __future__ import annotations

from typing import Any

UNKNOWN_SPEAKER = "UU"
NO_SPEAKER = "-"
"""Speaker label of a gap turn: speech nobody is known to have said (shown in every client's record)."""
INAUDIBLE = "inaudible"
"""Mark of a gap turn."""
SPEAKER_UNCERTAIN = "speaker_uncertain"
"""Mark of a turn whose voice the recognizer could not tell apart."""
MEANING_FLIP = "meaning_flip"
"""Mark of a word whose doubtful hearing could flip the meaning (can/can't, a number, a time, a name)."""
TURN_PAUSE_S = 1.0
"""A pause (seconds) after a sentence end at which one speaker's turn is split."""
MAX_TURN_S = 20.0
"""Seconds after which one speaker's turn is split at the next sentence end."""


def _join(parts: list[tuple[str, str]]) -> str:
    """Join (content, attaches_to) pieces into text with API-correct spacing."""
    out = ""
    glue_next = False
    for content, attaches in parts:
        no_space = not out or glue_next or attaches in ("previous", "both")
        out += content if no_space else " " + content
        glue_next = attaches in ("next", "both")
    return out


def results_to_turns(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Group json-v2 ``results`` (word/punctuation items) into speaker turns, in time order."""
    turns: list[dict[str, Any]] = []
    pieces: list[list[tuple[str, str]]] = []
    eos_end: float | None = None  # end time of the sentence end that closed the last item, if it did
    for item in results:
        alternatives = item.get("alternatives") or []
        if item.get("type") == "gap" and alternatives:
            turns.append({"speaker": NO_SPEAKER, "start_s": float(item["start_time"]),
                          "end_s": float(item["end_time"]), "words": [], "marks": [INAUDIBLE]})
            pieces.append([(str(alternatives[0].get("content") or "[inaudible]"), "none")])
            eos_end = None
            continue
        if not alternatives or item.get("type") not in ("word", "punctuation"):
            continue
        best = alternatives[0]
        speaker = best.get("speaker") or UNKNOWN_SPEAKER
        is_punct = item["type"] == "punctuation"
        attaches = item.get("attaches_to", "previous" if is_punct else "none")
        start = float(item["start_time"])
        # Punctuation never opens a turn: it belongs to the words it attaches to.
        paragraph = (not is_punct and turns and eos_end is not None
                     and (start - eos_end >= TURN_PAUSE_S or start - turns[-1]["start_s"] >= MAX_TURN_S))
        eos_end = float(item["end_time"]) if is_punct and item.get("is_eos") else None
        if not turns or (speaker != turns[-1]["speaker"] and not is_punct) or paragraph:
            turns.append(
                {"speaker": speaker, "start_s": float(item["start_time"]), "end_s": float(item["end_time"]),
                 "words": []}
            )
            pieces.append([])
        turn = turns[-1]
        turn["end_s"] = max(turn["end_s"], float(item["end_time"]))
        word: dict[str, Any] = {
            "type": item["type"],
            "content": best["content"],
            "start_s": float(item["start_time"]),
            "end_s": float(item["end_time"]),
            "confidence": float(best.get("confidence", 1.0)),
            "alternatives": [a["content"] for a in alternatives[1:]],
        }
        tags = [t for t in best.get("tags") or [] if isinstance(t, str)]
        if MEANING_FLIP in tags:
            word["marks"] = [MEANING_FLIP]
        if SPEAKER_UNCERTAIN in tags and SPEAKER_UNCERTAIN not in turn.get("marks", ()):
            turn.setdefault("marks", []).append(SPEAKER_UNCERTAIN)
        turn["words"].append(word)
        pieces[-1].append((best["content"], attaches))
    for turn, parts in zip(turns, pieces, strict=True):
        turn["text"] = _join(parts)
    return turns
