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
immutable ``reliability_actions`` row, made through the record's one writer
(``verbatim.record.writer.change``): the session row locked first, the record rebuilt from its
one source (``verbatim.record.build``) with the applied suggestions, the audit row — one transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, cast

from sqlalchemy import Engine, Table, func, insert, select, update
from sqlalchemy.orm import Session as OrmSession

from verbatim import audit
from verbatim.db.models import Session
from verbatim.errors import IllegalTransition, NotFound, VerbatimError
from verbatim.polish.base import Turn
from verbatim.record import writer
from verbatim.record.build import Change, base_from_raw, turn_text
from verbatim.reliability.models import ReliabilityAction, ReliabilitySuggestion


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
    audited: audit.Actor | None = None,
) -> ReliabilitySuggestion:
    """Move one suggestion by ``action`` and rebuild the session's record, atomically (the record's one writer).

    ``owner``: when given, the suggestion must belong to a session of that therapist
    (NotFound otherwise, as for a suggestion that does not exist). ``choice``: for
    ``validated`` word suggestions, which of the recognizer's alternatives applies
    (InvalidChoice if it offered no such word). ``audited``: who the audit row names (None:
    Verbatim itself). Raises IllegalTransition for a move the state machine forbids,
    RecordUnavailable when the record can no longer change. Returns the row after the move (detached).
    """
    with OrmSession(engine, expire_on_commit=False) as db, db.begin():
        found = db.execute(
            select(Session.id, Session.therapist_id).join(ReliabilitySuggestion,
                                                         ReliabilitySuggestion.session_id == Session.id)
            .where(ReliabilitySuggestion.id == suggestion_id)
        ).one_or_none()
        if found is None or (owner is not None and found.therapist_id != owner):
            raise NotFound(f"no suggestion {suggestion_id}")
        moved: list[ReliabilitySuggestion] = []

        def move(db: OrmSession, session: Session) -> None:
            # Read under the session's lock: transitions of one session run one after the other.
            current = SuggestionStatus(db.execute(select(ReliabilitySuggestion.status)
                                                  .where(ReliabilitySuggestion.id == suggestion_id)).scalar_one())
            target = check_move(current, action)
            values: dict[str, Any] = {"status": target.value, "updated_at": func.now()}
            if choice is not None:
                values["suggested"] = _checked_choice(db, suggestion_id, action, choice)
            row = db.execute(
                update(ReliabilitySuggestion)
                .where(ReliabilitySuggestion.id == suggestion_id, ReliabilitySuggestion.status == current.value)
                .values(**values)
                .returning(ReliabilitySuggestion)
            ).scalar_one()
            _record(db, suggestion_id, session.id, action, current, target, actor)
            moved.append(row)

        writer.change(db, found.id, audited, "suggestion_reviewed",
                      {"suggestion_id": str(suggestion_id), "action": action.value}, move)
        db.refresh(moved[0])
        db.expunge(moved[0])
        return moved[0]


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


def suggested_turns(raw_turns: Sequence[Turn], applied: Iterable[Change]) -> list[Turn]:
    """Raw turns plus ``applied`` suggestions: ``[{speaker, start_s, end_s, text}]``, one per raw turn
    (the record's own rule, ``verbatim.record.build.turn_text``, over the recognizer's text)."""
    return turn_text(raw_turns, base_from_raw(raw_turns), applied)
