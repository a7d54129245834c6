"""The session state machine: an explicit enum and the moves it allows.

Every transition is one guarded UPDATE (see ``verbatim.db.repo``):
``… WHERE id = :id AND fence = :token AND status IN (<allowed predecessors>)``.
An illegal move raises IllegalTransition; it never silently succeeds.
"""

from __future__ import annotations

from enum import StrEnum

from verbatim.durable.subjects import RunPhase, Subjects
from verbatim.errors import IllegalTransition


class SessionStatus(StrEnum):
    """Where a session is. Values are stored in PostgreSQL and shown by the API."""

    QUEUED = "queued"  #: recording stored and committed; waiting for a capture run
    RECOGNIZING = "recognizing"  #: a run submitted the audio (or is about to) and waits for the recognizer
    CHECKPOINTED = "checkpointed"  #: raw speaker turns saved in PostgreSQL; vendor copy may be deleted
    PUBLISHING = "publishing"  #: polish passes and the per-client split are being written
    READY = "ready"  #: transcript published (one record per client); audio and vendor copy gone
    BLOCKED = "blocked"  #: configuration fault (e.g. bad recognizer key); audio kept for an admin retry
    FAILED = "failed"  #: terminal failure with a failure_code; the therapist has been told
    DELETED = "deleted"  #: withdrawn by the therapist; audio, vendor job and transcripts deleted


S = SessionStatus

#: status → the statuses it may move to. A run that resumes re-enters its own status.
TRANSITIONS: dict[SessionStatus, frozenset[SessionStatus]] = {
    S.QUEUED: frozenset({S.RECOGNIZING, S.BLOCKED, S.FAILED, S.DELETED}),
    S.RECOGNIZING: frozenset({S.RECOGNIZING, S.CHECKPOINTED, S.BLOCKED, S.FAILED, S.DELETED}),
    S.CHECKPOINTED: frozenset({S.PUBLISHING, S.FAILED, S.DELETED}),
    S.PUBLISHING: frozenset({S.PUBLISHING, S.READY, S.FAILED, S.DELETED}),
    S.READY: frozenset({S.READY, S.DELETED}),
    S.BLOCKED: frozenset({S.QUEUED, S.FAILED, S.DELETED}),
    S.FAILED: frozenset({S.DELETED}),
    S.DELETED: frozenset(),
}

#: Statuses with work outstanding: the stalled-session sweep looks only at these.
ACTIVE: frozenset[SessionStatus] = frozenset({S.QUEUED, S.RECOGNIZING, S.CHECKPOINTED, S.PUBLISHING})
#: Statuses a session never leaves on its own.
TERMINAL: frozenset[SessionStatus] = frozenset({S.READY, S.FAILED, S.DELETED})


def predecessors(target: SessionStatus) -> frozenset[SessionStatus]:
    """Every status from which ``target`` may be entered."""
    return frozenset(src for src, dsts in TRANSITIONS.items() if target in dsts)


def check_transition(current: SessionStatus, target: SessionStatus) -> None:
    """Raise IllegalTransition unless ``current → target`` is an allowed move."""
    if target not in TRANSITIONS[current]:
        raise IllegalTransition(f"session cannot move from {current.value} to {target.value}")


#: the capture run's subjects, for the durable-run core's stall net and run states
CAPTURE_SUBJECTS = Subjects("capture", "sessions", live=tuple(s.value for s in S if s in ACTIVE),
                            blocked=(S.BLOCKED.value,), cancelled=(S.DELETED.value,))


#: what a list shows besides the stored statuses: a live session whose capture run is parked (waiting
#: on the recognizer without a worker) reads ``parked`` — derived from the core's run state, never stored
PARKED = RunPhase.PARKED.value
#: every status a session list shows and filters by (the stored ones, and ``parked``)
DISPLAY_STATUSES: tuple[str, ...] = (*(s.value for s in SessionStatus), PARKED)


def display_status(status: str, phase: RunPhase | str | None) -> str:
    """The status a list shows: ``parked`` while the capture run is parked (``phase``, from
    ``CAPTURE_SUBJECTS.phases``), else the stored ``status``."""
    return PARKED if phase == RunPhase.PARKED else status
