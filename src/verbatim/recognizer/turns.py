"""json-v2 results → speaker turns.

A speaker turn is consecutive words of one speaker: ``{"speaker", "start_s", "end_s",
"text", "words"}``. Punctuation is attached the way the API marks it: ``attaches_to``
``previous`` (no space before), ``next`` (no space after), ``both`` (no space either
side), ``none`` (spaced). Each word keeps its confidence and alternatives so later
analysis can find doubtful words. Times are seconds from the start of the recording.
"""

from __future__ import annotations

from typing import Any

UNKNOWN_SPEAKER = "UU"


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
    for item in results:
        alternatives = item.get("alternatives") or []
        if not alternatives or item.get("type") not in ("word", "punctuation"):
            continue
        best = alternatives[0]
        speaker = best.get("speaker") or UNKNOWN_SPEAKER
        is_punct = item["type"] == "punctuation"
        attaches = item.get("attaches_to", "previous" if is_punct else "none")
        # Punctuation never opens a turn: it belongs to the words it attaches to.
        if not turns or (speaker != turns[-1]["speaker"] and not is_punct):
            turns.append(
                {"speaker": speaker, "start_s": float(item["start_time"]), "end_s": float(item["end_time"]),
                 "words": []}
            )
            pieces.append([])
        turn = turns[-1]
        turn["end_s"] = max(turn["end_s"], float(item["end_time"]))
        turn["words"].append(
            {
                "type": item["type"],
                "content": best["content"],
                "start_s": float(item["start_time"]),
                "end_s": float(item["end_time"]),
                "confidence": float(best.get("confidence", 1.0)),
                "alternatives": [a["content"] for a in alternatives[1:]],
            }
        )
        pieces[-1].append((best["content"], attaches))
    for turn, parts in zip(turns, pieces, strict=True):
        turn["text"] = _join(parts)
    return turns
