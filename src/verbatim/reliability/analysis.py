"""The offline analysis: pure functions from a session's speaker turns to suggestion specs.

Input: the checkpoint (``sessions.raw_turns``: ``[{speaker, start_s, end_s, text, words:
[{type, content, start_s, end_s, confidence, alternatives}]}]``, exactly as the recognizer
gave it) and the published turns (``sessions.published_turns``: same length and order,
polished text). Times are seconds from the start of the recording. No I/O, no model.

Three rules:

- **low-confidence words** — a word the recognizer heard with confidence below the
  threshold, or marked ``meaning_flip`` by it (a doubtful can/can't, number, time or name,
  whatever its confidence) → ``pending`` word suggestion carrying the recognizer's alternatives;
- **doubtful speaker attributions** → ``pending`` speaker suggestions: a turn the recognizer
  marked ``speaker_uncertain`` (it could not tell the voice apart), a very short turn
  between two turns of one other speaker (``short_interjection``), and a speaker change in
  the middle of a sentence (``mid_sentence_change``: the previous turn does not end a
  sentence and the next starts right after — judged only when the recognizer punctuates);
- **the polish pass's edits** — every turn whose published text differs from the raw text
  → ``auto_applied`` edit suggestion, so the clinician sees exactly what the model changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from verbatim.polish.base import Turn
from verbatim.polish.split import is_gap
from verbatim.recognizer.turns import MEANING_FLIP, SPEAKER_UNCERTAIN
from verbatim.reliability.suggestions import SuggestionKind, SuggestionSpec, SuggestionStatus

SENTENCE_END = frozenset(".?!")
PUNCTUATION = frozenset(".?!,;:")


def analyse(
    raw_turns: Sequence[Turn],
    published: Sequence[Turn] | None,
    *,
    confidence_threshold: float = 0.25,
    short_turn_max_s: float = 1.0,
    mid_sentence_gap_s: float = 0.5,
) -> list[SuggestionSpec]:
    """Every suggestion for one session, in turn order within each rule."""
    return [
        *low_confidence_words(raw_turns, confidence_threshold),
        *doubtful_speakers(raw_turns, short_turn_max_s, mid_sentence_gap_s),
        *polish_edits(raw_turns, published),
    ]


def low_confidence_words(raw_turns: Sequence[Turn], threshold: float) -> list[SuggestionSpec]:
    """Words (not punctuation) with ``confidence < threshold``, and every word the recognizer marked
    ``meaning_flip`` (a doubtful negation, number, time or name: doubtful whatever the threshold,
    reason ``meaning_flip``); ``suggested`` is the first alternative (a negation's rival reading)."""
    found = []
    for i, turn in enumerate(raw_turns):
        for j, word in enumerate(turn.get("words") or []):
            confidence = word.get("confidence")
            flip = MEANING_FLIP in (word.get("marks") or ())
            if word.get("type", "word") != "word" or confidence is None or (
                    float(confidence) >= threshold and not flip):
                continue
            content = str(word.get("content", ""))
            alternatives = _alternatives(word.get("alternatives"), content)
            found.append(
                SuggestionSpec(
                    kind=SuggestionKind.WORD, reason="meaning_flip" if flip else "low_confidence",
                    status=SuggestionStatus.PENDING,
                    turn_index=i, word_index=j, start_s=float(word.get("start_s", turn["start_s"])),
                    end_s=float(word.get("end_s", turn["end_s"])), original=content,
                    suggested=alternatives[0] if alternatives else None, alternatives=alternatives,
                    confidence=float(confidence),
                )
            )
    return found


def _alternatives(values: Any, content: str) -> list[str]:
    """The recognizer's other candidates for a word, distinct, without the word itself."""
    out: list[str] = []
    for value in values or []:
        text = value.get("content") if isinstance(value, dict) else value
        if isinstance(text, str) and text.strip() and text != content and text not in out:
            out.append(text)
    return out


def doubtful_speakers(raw_turns: Sequence[Turn], short_turn_max_s: float, gap_s: float) -> list[SuggestionSpec]:
    """Turns whose speaker label is doubtful; ``suggested`` is the label of the turn before."""
    found = []
    punctuated = any(ch in PUNCTUATION for t in raw_turns for ch in str(t.get("text", "")))
    for i in range(len(raw_turns)):
        cur = raw_turns[i]
        prev = raw_turns[i - 1] if i else cur
        nxt = raw_turns[i + 1] if i + 1 < len(raw_turns) else None
        reason = None
        suggested = str(prev["speaker"])
        if SPEAKER_UNCERTAIN in (cur.get("marks") or ()):
            reason = "speaker_uncertain"  # the recognizer could not tell whose voice this was
            # The nearest other voice before it (or after it) is the likeliest other reading.
            others = [str(t["speaker"]) for t in [*raw_turns[:i][::-1], *raw_turns[i + 1:]]
                      if t["speaker"] != cur["speaker"] and not is_gap(t)]
            suggested = others[0] if others else str(cur["speaker"])
        elif i == 0 or cur["speaker"] == prev["speaker"] or is_gap(cur) or is_gap(prev):
            continue
        elif (
            nxt is not None
            and nxt["speaker"] == prev["speaker"]
            and float(cur["end_s"]) - float(cur["start_s"]) <= short_turn_max_s
        ):
            reason = "short_interjection"
        elif (
            punctuated
            and str(prev.get("text", "")).rstrip()[-1:] not in SENTENCE_END
            and float(cur["start_s"]) - float(prev["end_s"]) <= gap_s
        ):
            reason = "mid_sentence_change"
        if reason is not None:
            found.append(
                SuggestionSpec(
                    kind=SuggestionKind.SPEAKER, reason=reason, status=SuggestionStatus.PENDING, turn_index=i,
                    start_s=float(cur["start_s"]), end_s=float(cur["end_s"]), original=str(cur["speaker"]),
                    suggested=suggested,
                )
            )
    return found


def polish_edits(raw_turns: Sequence[Turn], published: Sequence[Turn] | None) -> list[SuggestionSpec]:
    """One ``auto_applied`` edit per turn whose published text differs from the raw text.

    Same index = same turn (the polish pass never adds, drops or reorders turns); when the
    lengths differ the pairing is unknown and no edit is reported.
    """
    if not published or len(published) != len(raw_turns):
        return []
    return [
        SuggestionSpec(
            kind=SuggestionKind.EDIT, reason="polish", status=SuggestionStatus.AUTO_APPLIED, turn_index=i,
            start_s=float(raw["start_s"]), end_s=float(raw["end_s"]), original=str(raw.get("text", "")),
            suggested=str(shown.get("text", "")),
        )
        for i, (raw, shown) in enumerate(zip(raw_turns, published, strict=True))
        if shown.get("text") != raw.get("text")
    ]
