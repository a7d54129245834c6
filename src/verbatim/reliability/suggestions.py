"""The suggestion state machine, and the published transcript it implies.

A suggestion is created ``pending`` (a doubtful word or speaker attribution, for the
clinician to decide) or ``auto_applied`` (an edit the polish pass already made, shown so
the clinician can see exactly what the model changed). The clinician validates, ignores
or reverts::

    pending ──validated──▶ validated ──reverted──▶ pending
    pending ──ignored────▶ ignored (terminal)
    auto_applied ──reverted──▶ pending
    auto_applied ──validated──▶ validated   (the clinician confirms the model's edit)

Every transition is one guarded UPDATE (``… WHERE id = :id AND status = :current``) plus one
immutable ``reliability_actions`` row, in one transaction that also rewrites the published
transcript: **raw turns plus the applied suggestions (validated or auto_applied)**, split
again per client. The session row is locked first (``SELECT … FOR UPDATE``), so two
transitions on one session never publish over each other.
"""

from __future__ import annotations

import re
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from enum import StrEnum
from typing import Any, Protocol, cast

from sqlalchemy import Engine, Table, func, insert, select, update
from sqlalchemy.orm import Session as OrmSession

from verbatim.db.models import SegmentEdit, Session, Transcript
from verbatim.errors import IllegalTransition, NotFound, VerbatimError
from verbatim.polish.base import Turn
from verbatim.polish.rules import rule_therapist
from verbatim.polish.split import THERAPIST, speaker_roles, split_per_client
from verbatim.reliability.models import ReliabilityAction, ReliabilitySuggestion
from verbatim.states import SessionStatus


class SuggestionStatus(StrEnum):
    """Where a suggestion is. Stored in PostgreSQL (a CHECK constraint lists these) and shown by the API."""

    PENDING = "pending"  #: awaiting the clinician; not applied to the published transcript
    VALIDATED = "validated"  #: accepted by the clinician; applied
    AUTO_APPLIED = "auto_applied"  #: applied by the polish pass, shown for review; revertible
    IGNORED = "ignored"  #: rejected by the clinician; never applied. Terminal


class SuggestionKind(StrEnum):
    """What a suggestion changes when applied."""

    WORD = "word"  #: one word of a turn → ``suggested`` (an alternative the recognizer offered)
    SPEAKER = "speaker"  #: the speaker label of a turn → ``suggested``
    EDIT = "edit"  #: the whole text of a turn → ``suggested`` (the polish pass's rewrite)


class Action(StrEnum):
    """What a ``reliability_actions`` row records."""

    CREATED = "created"  #: the analysis created the suggestion (from_status is None)
    VALIDATED = "validated"
    IGNORED = "ignored"
    REVERTED = "reverted"


S = SuggestionStatus
#: action → (statuses it may start from, the status it leads to). ``created`` is not a move.
MOVES: dict[Action, tuple[frozenset[SuggestionStatus], SuggestionStatus]] = {
    Action.VALIDATED: (frozenset({S.PENDING, S.AUTO_APPLIED}), S.VALIDATED),
    Action.IGNORED: (frozenset({S.PENDING}), S.IGNORED),
    Action.REVERTED: (frozenset({S.VALIDATED, S.AUTO_APPLIED}), S.PENDING),
}
#: Statuses whose change is in the published transcript.
APPLIED: frozenset[SuggestionStatus] = frozenset({S.VALIDATED, S.AUTO_APPLIED})
#: Statuses a suggestion never leaves.
TERMINAL: frozenset[SuggestionStatus] = frozenset({S.IGNORED})


class InvalidChoice(VerbatimError):
    """Raised when a validation picks a replacement word the recognizer did not offer."""


def check_move(current: SuggestionStatus, action: Action) -> SuggestionStatus:
    """The status ``action`` leads to from ``current``; raises IllegalTransition when it may not."""
    if action not in MOVES:
        raise IllegalTransition(f"{action.value} is not a transition")
    sources, target = MOVES[action]
    if current not in sources:
        raise IllegalTransition(f"a suggestion cannot be {action.value} while {current.value}")
    return target


@dataclass(frozen=True)
class SuggestionSpec:
    """A suggestion as the analysis finds it, before it is stored.

    ``turn_index`` indexes ``sessions.raw_turns``; ``word_index`` the turn's ``words`` (word
    suggestions only). ``start_s``/``end_s``: seconds from the start of the recording.
    ``original``: the word, speaker label or text as heard; ``suggested``: what applies
    (None: nothing to replace, e.g. a doubtful word with no alternative — validating it
    confirms it as heard). ``confidence``: the recognizer's, in [0, 1], for words.
    """

    kind: SuggestionKind
    reason: str
    status: SuggestionStatus
    turn_index: int
    start_s: float
    end_s: float
    original: str
    suggested: str | None
    word_index: int | None = None
    alternatives: list[str] = field(default_factory=list)
    confidence: float | None = None


@dataclass(frozen=True)
class Actor:
    """Who moves a suggestion: the analysis, or a therapist (with the token used)."""

    kind: str
    therapist_id: uuid.UUID | None = None
    token_id: uuid.UUID | None = None


ANALYSIS = Actor("analysis")


# --- creating ------------------------------------------------------------------------------------


def create_suggestions(db: OrmSession, session_id: uuid.UUID, specs: Sequence[SuggestionSpec]) -> int:
    """Insert the analysis's suggestions and their ``created`` action rows (in the caller's transaction).

    Two multi-row INSERTs whatever the count: a long session has hundreds of suggestions.
    """
    if not specs:
        return 0
    rows = [
        {"id": uuid.uuid4(), "session_id": session_id, "kind": spec.kind.value, "reason": spec.reason,
         "status": spec.status.value, "turn_index": spec.turn_index, "word_index": spec.word_index,
         "start_s": spec.start_s, "end_s": spec.end_s, "original": spec.original, "suggested": spec.suggested,
         "alternatives": list(spec.alternatives), "confidence": spec.confidence}
        for spec in specs
    ]
    # Core INSERTs, not the ORM's bulk path: a quarter less CPU per analysis, same statements.
    db.execute(insert(cast(Table, ReliabilitySuggestion.__table__)), rows)
    db.execute(
        insert(cast(Table, ReliabilityAction.__table__)),
        [{"suggestion_id": r["id"], "session_id": session_id, "action": Action.CREATED.value, "from_status": None,
          "to_status": r["status"], "actor": ANALYSIS.kind, "therapist_id": None, "token_id": None} for r in rows],
    )
    return len(rows)


def _record(
    db: OrmSession, suggestion_id: uuid.UUID, session_id: uuid.UUID, action: Action,
    source: SuggestionStatus | None, target: SuggestionStatus, actor: Actor,
) -> None:
    db.execute(
        insert(ReliabilityAction).values(
            suggestion_id=suggestion_id, session_id=session_id, action=action.value,
            from_status=source.value if source else None, to_status=target.value, actor=actor.kind,
            therapist_id=actor.therapist_id, token_id=actor.token_id,
        )
    )


# --- moving ---------------------------------------------------------------------------------------


def transition(
    engine: Engine,
    suggestion_id: uuid.UUID,
    action: Action,
    actor: Actor,
    *,
    owner: uuid.UUID | None = None,
    choice: str | None = None,
) -> ReliabilitySuggestion:
    """Move one suggestion by ``action`` and republish the session's transcript, atomically.

    ``owner``: when given, the suggestion must belong to a session of that therapist
    (NotFound otherwise, as for a suggestion that does not exist). ``choice``: for
    ``validated`` word suggestions, which of the recognizer's alternatives applies
    (InvalidChoice if it offered no such word). Raises IllegalTransition for a move the
    state machine forbids or when the session is no longer published. Returns the row
    after the move (detached).
    """
    with OrmSession(engine, expire_on_commit=False) as db, db.begin():
        # The session row first: transitions of one session run one after the other, so each
        # republishes from every change committed before it.
        found = db.execute(
            select(Session, ReliabilitySuggestion.status)
            .join(ReliabilitySuggestion, ReliabilitySuggestion.session_id == Session.id)
            .where(ReliabilitySuggestion.id == suggestion_id)
            .with_for_update(of=Session)
        ).one_or_none()
        if found is None or (owner is not None and found[0].therapist_id != owner):
            raise NotFound(f"no suggestion {suggestion_id}")
        session: Session = found[0]
        current = SuggestionStatus(found[1])
        target = check_move(current, action)
        if session.status != SessionStatus.READY or session.raw_turns is None:
            raise IllegalTransition(f"the session is {session.status}: its transcript can no longer change")
        values: dict[str, Any] = {"status": target.value, "updated_at": func.now()}
        if choice is not None:
            values["suggested"] = _checked_choice(db, suggestion_id, action, choice)
        row = db.execute(
            update(ReliabilitySuggestion)
            .where(ReliabilitySuggestion.id == suggestion_id, ReliabilitySuggestion.status == current.value)
            .values(**values)
            .returning(ReliabilitySuggestion)
        ).scalar_one_or_none()
        if row is None:  # cannot happen while the session row is locked; refuse rather than guess
            raise IllegalTransition(f"suggestion {suggestion_id} moved on concurrently")
        _record(db, suggestion_id, session.id, action, current, target, actor)
        republish(db, session)
        db.expunge(row)
        return row


def _checked_choice(db: OrmSession, suggestion_id: uuid.UUID, action: Action, choice: str) -> str:
    kind, alternatives = db.execute(
        select(ReliabilitySuggestion.kind, ReliabilitySuggestion.alternatives)
        .where(ReliabilitySuggestion.id == suggestion_id)
    ).one()
    if action is not Action.VALIDATED or kind != SuggestionKind.WORD:
        raise InvalidChoice("a choice can only be given when validating a word suggestion")
    if choice not in alternatives:
        raise InvalidChoice(f"choose one of the recognizer's alternatives: {alternatives}")
    return choice


# --- the published transcript -------------------------------------------------------------------


class Applied(Protocol):
    """What applying a suggestion needs (a ReliabilitySuggestion row or a SuggestionSpec)."""

    kind: Any
    turn_index: int
    word_index: int | None
    suggested: str | None


def published_turns(raw_turns: Sequence[Turn], applied: Iterable[Applied]) -> list[Turn]:
    """Raw turns plus ``applied`` suggestions: ``[{speaker, start_s, end_s, text}]``, one per raw turn.

    Order of application within a turn: the edit (the polish pass's text) replaces the raw
    text, then word fixes land on the matching words of that text, then the speaker
    changes. A word fix whose word the edit removed is skipped (revert the edit to apply it).
    """
    edits: dict[int, str] = {}
    speakers: dict[int, str] = {}
    words: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for s in applied:
        if s.suggested is None or not 0 <= s.turn_index < len(raw_turns):
            continue
        kind = SuggestionKind(s.kind)
        if kind is SuggestionKind.EDIT:
            edits[s.turn_index] = s.suggested
        elif kind is SuggestionKind.SPEAKER:
            speakers[s.turn_index] = s.suggested
        elif s.word_index is not None:
            words[s.turn_index].append((s.word_index, s.suggested))
    out = []
    for i, raw in enumerate(raw_turns):
        text = str(edits.get(i, raw["text"]))
        if words[i]:
            text = replace_words(raw, text, sorted(words[i]))
        turn = {"speaker": speakers.get(i, raw["speaker"]), "start_s": raw["start_s"], "end_s": raw["end_s"],
                "text": text}
        if raw.get("marks"):
            turn["marks"] = list(raw["marks"])  # the recognizer's marks (speaker doubt, gaps) survive a republish
        out.append(turn)
    return out


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


def current_roles(db: OrmSession, session: Session) -> dict[str, str] | None:
    """Speaker label → role as published now: the clinician's speaker_map, else the roles the
    current per-client records show (each record shows its own client and the therapist)."""
    if session.speaker_map:
        return dict(session.speaker_map)
    roles: dict[str, str] = {}
    for client_id, segments in db.execute(
        select(Transcript.client_id, Transcript.segments).where(Transcript.session_id == session.id)
    ):
        for seg in segments:
            if seg.get("speaker") in (THERAPIST, client_id):
                roles[seg["speaker_label"]] = seg["speaker"]
    return roles or None


def republish(db: OrmSession, session: Session) -> list[Turn]:
    """Rewrite ``sessions.published_turns`` and the per-client transcripts from raw turns plus
    the applied suggestions (in the caller's transaction). Returns the published turns.

    Raises IllegalTransition when the session stopped being ready meanwhile.
    """
    assert session.raw_turns is not None
    applied = db.execute(
        select(ReliabilitySuggestion).where(
            ReliabilitySuggestion.session_id == session.id,
            ReliabilitySuggestion.status.in_([s.value for s in APPLIED]),
        )
    ).scalars()
    turns = published_turns(session.raw_turns, applied)
    # A clinician's free-text correction is the last word on its turn: laid over the suggestions.
    for index, text_ in db.execute(select(SegmentEdit.turn_index, SegmentEdit.text)
                                   .where(SegmentEdit.session_id == session.id).order_by(SegmentEdit.id)):
        if 0 <= index < len(turns):
            turns[index]["text"] = text_
    roles = current_roles(db, session)
    therapist = None if roles else rule_therapist(turns)
    records = split_per_client(
        turns, session.client_ids, speaker_roles(turns, session.client_ids, therapist, roles, session.session_type))
    done = db.execute(
        update(Session)
        .where(Session.id == session.id, Session.status == SessionStatus.READY.value)
        .values(published_turns=turns, updated_at=func.now())
        .returning(Session.id)
    ).one_or_none()
    if done is None:
        raise IllegalTransition(f"session {session.id} is no longer ready")
    for client_id, segments in records.items():
        db.execute(
            update(Transcript)
            .where(Transcript.session_id == session.id, Transcript.client_id == client_id)
            .values(segments=segments, version=Transcript.version + 1)
        )
    return turns
