"""The record rebuilt from one source: a pure function, so every door rebuilds it the same way.

The source of a session's record is:

- ``raw_turns`` — the checkpoint, exactly as the recognizer gave it (``words`` with their
  confidences and alternatives, any per-turn ``marks`` the recognizer adds);
- ``base_turns`` — the turns as the publish step rendered them, one per raw turn: the polished
  text, the speaker label and its ``role`` (therapist, a client id, unassigned);
- the suggestions (validated, auto-applied, pending, ignored) — a word, speaker or edit change
  of one turn;
- the clinicians' free-text corrections (``segment_edits``: the latest per turn wins);
- the clinician's speaker mapping (``speaker_map``), which overrides the published roles.

Per turn: the text is the base (polished) text, unless an *edit* suggestion exists for the turn
— then its suggested text while it is applied, the recognizer's text while it is not (reverted
or ignored) —, with applied word fixes laid on the matching words, then the clinician's latest
correction over all of it. The speaker label is an applied speaker suggestion's, else the raw
one. Roles come from the speaker map, else from the base roles, else (a record published before
roles were kept) from the rule-based guess. Every turn keeps its ``marks``.

Why our own code: the clinical rules (whose words a record may show) are what Verbatim is.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any, Protocol

from verbatim.polish.base import Turn
from verbatim.polish.rules import rule_therapist
from verbatim.polish.split import INAUDIBLE, UNASSIGNED, is_gap, speaker_roles, split_per_client

#: Suggestion kinds (``reliability_suggestions.kind``): one word, a turn's speaker label, a turn's text.
WORD, SPEAKER, EDIT = "word", "speaker", "edit"
#: Suggestion statuses whose change is in the record.
APPLIED_STATUSES = frozenset({"validated", "auto_applied"})


class Change(Protocol):
    """One suggestion as the record needs it (a ``ReliabilitySuggestion`` row or a spec)."""

    kind: Any
    turn_index: int
    word_index: int | None
    suggested: str | None


@dataclass(frozen=True)
class Source:
    """Everything a session's record is rebuilt from (see the module docstring).

    ``applied`` and ``unapplied`` are suggestions by status; ``corrections`` maps a turn index
    to the clinician's latest text for it.
    """

    raw_turns: list[Turn]
    base_turns: list[Turn] | None
    client_ids: list[str]
    session_type: str | None = None
    speaker_map: dict[str, str] | None = None
    applied: Sequence[Change] = ()
    unapplied: Sequence[Change] = ()
    corrections: dict[int, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Built:
    """A rebuilt record: ``shown`` (one turn per raw turn, with ``role`` and ``marks``) and
    ``records`` (client id → that client's segments, other participants as placeholders)."""

    shown: list[Turn]
    records: dict[str, list[dict[str, Any]]]
    roles: dict[str, str]


def base_from_raw(raw_turns: Sequence[Turn]) -> list[Turn]:
    """The base of a record whose publish kept no base: the recognizer's text and labels."""
    return [{k: t[k] for k in ("speaker", "start_s", "end_s", "text")} for t in raw_turns]


def turn_text(raw_turns: Sequence[Turn], base_turns: Sequence[Turn], applied: Iterable[Change],
              unapplied: Iterable[Change] = ()) -> list[Turn]:
    """``[{speaker, start_s, end_s, text}]``, one per raw turn: base text and labels with the suggestions.

    A word fix whose word an edit removed is skipped (revert the edit to apply it).
    """
    edits: dict[int, str] = {}
    speakers: dict[int, str] = {}
    words: dict[int, list[tuple[int, str]]] = defaultdict(list)
    # An edit suggestion not applied (reverted, ignored, pending) means: the recognizer's words.
    for s in unapplied:
        if str(getattr(s.kind, "value", s.kind)) == EDIT and 0 <= s.turn_index < len(raw_turns):
            edits[s.turn_index] = str(raw_turns[s.turn_index]["text"])
    for s in applied:
        if s.suggested is None or not 0 <= s.turn_index < len(raw_turns):
            continue
        kind = str(getattr(s.kind, "value", s.kind))
        if kind == EDIT:
            edits[s.turn_index] = s.suggested
        elif kind == SPEAKER:
            speakers[s.turn_index] = s.suggested
        elif s.word_index is not None:
            words[s.turn_index].append((s.word_index, s.suggested))
    out = []
    for i, raw in enumerate(raw_turns):
        base = base_turns[i] if i < len(base_turns) else raw
        text = str(edits.get(i, base["text"]))
        if words[i]:
            text = replace_words(raw, text, sorted(words[i]))
        out.append({"speaker": speakers.get(i, raw["speaker"]), "start_s": raw["start_s"], "end_s": raw["end_s"],
                    "text": text})
    return out


def build(src: Source) -> Built:
    """Rebuild a session's record from ``src`` (never mutates it)."""
    base = src.base_turns if src.base_turns and len(src.base_turns) == len(src.raw_turns) \
        else base_from_raw(src.raw_turns)
    turns = turn_text(src.raw_turns, base, src.applied, src.unapplied)
    for index, text in src.corrections.items():
        if 0 <= index < len(turns):
            turns[index]["text"] = text
    roles = _roles(turns, base, src)
    shown = []
    for raw, turn in zip(src.raw_turns, turns, strict=True):
        marks = raw.get("marks")
        shown.append({**turn, "role": roles.get(turn["speaker"], UNASSIGNED),
                      **({"marks": list(marks)} if marks else {})})
    return Built(shown, split_per_client(shown, src.client_ids, roles), roles)


def _roles(turns: list[Turn], base: list[Turn], src: Source) -> dict[str, str]:
    # A gap (speech nobody made out) is nobody's: the clinician's mapping never names it.
    gaps = {t["speaker"]: INAUDIBLE for t in turns if is_gap(t)}
    labels = list(dict.fromkeys(t["speaker"] for t in turns if not is_gap(t)))
    if src.speaker_map:
        return {**gaps, **{label: src.speaker_map.get(label, UNASSIGNED) for label in labels}}
    published = {t["speaker"]: t["role"] for t in base if t.get("role") and not is_gap(t)}
    if published:
        # A label only a speaker suggestion introduced has no published role: nobody's words yet.
        return {**gaps, **{label: published.get(label, UNASSIGNED) for label in labels}}
    speech = [t for t in turns if not is_gap(t)]
    return {**gaps, **speaker_roles(turns, src.client_ids, rule_therapist(speech), None, src.session_type)}


_CORE = re.compile(r"^(\W*)(.*?)(\W*)$", re.S)


def _norm(token: str) -> str:
    match = _CORE.match(token)
    return match.group(2).lower() if match else token.lower()


def replace_words(raw_turn: Turn, text: str, fixes: Sequence[tuple[int, str]]) -> str:
    """Replace words of ``raw_turn`` (by index into its ``words``) where they appear in ``text``.

    ``text`` is the raw text or a rewrite of it; its words are matched to the raw text's by
    an alignment of the two word sequences (case and punctuation ignored), so a fix lands on
    the same spoken word even after fillers were dropped. Surrounding punctuation and the
    capital of a sentence start are kept.
    """
    raw_tokens = [_norm(t) for t in str(raw_turn.get("text", "")).split()]
    tokens = text.split()
    matcher = SequenceMatcher(None, raw_tokens, [_norm(t) for t in tokens], autojunk=False)
    position = {a + k: b + k for a, b, size in matcher.get_matching_blocks() for k in range(size)}
    words = raw_turn.get("words") or []
    changed = False
    for word_index, replacement in fixes:
        if not 0 <= word_index < len(words):
            continue
        target = _norm(str(words[word_index].get("content", "")))
        # The n-th occurrence of this word among the turn's words is its n-th token in the text.
        nth = sum(1 for w in words[:word_index] if w.get("type", "word") == "word"
                  and _norm(str(w.get("content", ""))) == target)
        spots = [k for k, tok in enumerate(raw_tokens) if tok == target]
        if nth >= len(spots) or spots[nth] not in position:
            continue
        b = position[spots[nth]]
        match = _CORE.match(tokens[b])
        lead, core, trail = match.groups() if match else ("", tokens[b], "")
        word = replacement[:1].upper() + replacement[1:] if core[:1].isupper() else replacement
        tokens[b] = lead + word + trail
        changed = True
    return " ".join(tokens) if changed else text
