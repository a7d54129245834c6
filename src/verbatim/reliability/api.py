"""HTTP endpoints of the reliability analysis (included by ``verbatim.api.app``).

Clinician side (therapist tokens; a session of another therapist answers 404, not 403):
``GET /v1/sessions/{id}/suggestions``, ``POST /v1/suggestions/{id}/validate|ignore|revert``
(an illegal move answers 409 ``illegal_transition``), and
``GET /v1/reliability/transcripts/{id}/progress``.

Admin side (admin scope): ``GET /v1/reliability/dlq/list``, ``GET /v1/reliability/dlq/stats``,
``POST /v1/reliability/dlq/reprocess``.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field, model_validator
from sqlalchemy import select

from verbatim import audit
from verbatim.api.deps import ActorDep, AdminDep, PrincipalDep, ServicesDep
from verbatim.api.errors import ApiError
from verbatim.auth import Principal
from verbatim.db.engine import db_session, engine
from verbatim.db.models import Session
from verbatim.errors import NotFound
from verbatim.free_text import ONE_LINE
from verbatim.reliability.models import ReliabilityAnalysis, ReliabilitySuggestion
from verbatim.reliability.settings import ReliabilitySettings, get_reliability_settings
from verbatim.reliability.streams import Streams, public_fields, read_progress
from verbatim.reliability.suggestions import Action, Actor, InvalidChoice, SuggestionStatus, transition
from verbatim.reliability.sweep import mark_emitted

router = APIRouter(tags=["reliability"])
ReliabilitySettingsDep = Annotated[ReliabilitySettings, Depends(get_reliability_settings)]


class SuggestionOut(BaseModel):
    """One suggestion. Times in seconds from the start of the recording; ``turn_index`` indexes
    the session's speaker turns, ``word_index`` the turn's recognised words (word suggestions)."""

    id: uuid.UUID
    session_id: uuid.UUID
    kind: str
    reason: str
    status: SuggestionStatus
    turn_index: int
    word_index: int | None
    start_s: float
    end_s: float
    original: str
    suggested: str | None
    alternatives: list[str]
    confidence: float | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: ReliabilitySuggestion) -> SuggestionOut:
        return cls.model_validate({c: getattr(row, c) for c in cls.model_fields})


class SuggestionList(BaseModel):
    session_id: uuid.UUID
    suggestions: list[SuggestionOut]


class ValidateBody(BaseModel):
    """Optional: which of the recognizer's alternatives to apply (word suggestions)."""

    model_config = ConfigDict(extra="forbid")
    choice: Annotated[str, ONE_LINE] | None = Field(None, min_length=1, max_length=200)


class ProgressOut(BaseModel):
    """Where the analysis of one transcript is. ``source``: ``redis`` (the live progress hash)
    or ``postgres`` (the hash expired or was lost; the status comes from the request ledger).
    Timestamps are unix seconds."""

    transcript_id: uuid.UUID
    status: str
    source: str
    retry_count: int | None = None
    suggestions: int | None = None
    error: str | None = None
    consumer: str | None = None
    updated_at: float | None = None
    finished_at: float | None = None


class DeadLetter(BaseModel):
    id: str
    fields: dict[str, Any]


class DeadLetterList(BaseModel):
    messages: list[DeadLetter]
    count: int = Field(description="Messages in this answer (the stream's total is in /stats)")


class DeadLetterStats(BaseModel):
    count: int
    stream: str
    oldest_id: str | None
    newest_id: str | None


class ReprocessBody(BaseModel):
    """Either ``message_ids`` (dead-letter stream ids) or ``all: true``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    message_ids: list[Annotated[str, Field(pattern=r"^\d+-\d+$")]] | None = Field(None, max_length=5000)
    all_: bool = Field(False, alias="all")

    @model_validator(mode="after")
    def _one_of(self) -> ReprocessBody:
        if (self.message_ids is None) == (not self.all_):
            raise ValueError('send either "message_ids" or "all": true')
        return self


class Reprocessed(BaseModel):
    reprocessed: int


# --- clinician side ------------------------------------------------------------------------------


def _therapist(who: Principal) -> uuid.UUID:
    """Suggestions are the session's own therapist's alone: any other caller finds nothing (404)."""
    if who.scope != "therapist" or who.therapist_id is None:
        raise NotFound("no such session")
    return who.therapist_id


def _own_session(svc: ServicesDep, who: Principal, session_id: uuid.UUID) -> None:
    """NotFound unless ``session_id`` is a session of the calling therapist."""
    therapist_id = _therapist(who)
    with db_session(svc.repo.url) as db:
        found = db.execute(
            select(Session.id).where(Session.id == session_id, Session.therapist_id == therapist_id)
        ).scalar_one_or_none()
    if found is None:
        raise NotFound(f"no session {session_id}")


@router.get("/v1/sessions/{session_id}/suggestions", response_model=SuggestionList)
def list_suggestions(
    session_id: uuid.UUID, svc: ServicesDep, who: PrincipalDep, actor: ActorDep,
    status: SuggestionStatus | None = None,
) -> SuggestionList:
    """The session's suggestions in transcript order (``status`` filters). Audited: they quote the transcript."""
    _own_session(svc, who, session_id)
    stmt = select(ReliabilitySuggestion).where(ReliabilitySuggestion.session_id == session_id)
    if status is not None:
        stmt = stmt.where(ReliabilitySuggestion.status == status.value)
    stmt = stmt.order_by(ReliabilitySuggestion.turn_index, ReliabilitySuggestion.start_s, ReliabilitySuggestion.kind)
    with db_session(svc.repo.url) as db:
        audit.record(db, actor, "suggestions_read", session_id)
        rows = list(db.execute(stmt).scalars())
    return SuggestionList(session_id=session_id, suggestions=[SuggestionOut.of(r) for r in rows])


def _move(svc: ServicesDep, who: Principal, actor: audit.Actor, suggestion_id: uuid.UUID, action: Action,
          choice: str | None = None) -> SuggestionOut:
    therapist_id = _therapist(who)
    try:
        row = transition(engine(svc.repo.url), suggestion_id, action, Actor("therapist", therapist_id, who.token_id),
                         owner=therapist_id, choice=choice, audited=actor)
    except InvalidChoice as exc:
        raise ApiError(422, "invalid_choice", str(exc)) from exc
    return SuggestionOut.of(row)


@router.post("/v1/suggestions/{suggestion_id}/validate", response_model=SuggestionOut)
def validate(
    suggestion_id: uuid.UUID, svc: ServicesDep, who: PrincipalDep, actor: ActorDep,
    body: ValidateBody | None = None,
) -> SuggestionOut:
    """Accept a suggestion (pending or auto_applied → validated) and republish the transcript.

    For a word suggestion, ``{"choice": …}`` picks one of its ``alternatives`` (422 otherwise).
    409 ``illegal_transition`` from any other status.
    """
    return _move(svc, who, actor, suggestion_id, Action.VALIDATED, body.choice if body else None)


@router.post("/v1/suggestions/{suggestion_id}/ignore", response_model=SuggestionOut)
def ignore(suggestion_id: uuid.UUID, svc: ServicesDep, who: PrincipalDep, actor: ActorDep) -> SuggestionOut:
    """Reject a pending suggestion for good (→ ignored, terminal). 409 from any other status."""
    return _move(svc, who, actor, suggestion_id, Action.IGNORED)


@router.post("/v1/suggestions/{suggestion_id}/revert", response_model=SuggestionOut)
def revert(suggestion_id: uuid.UUID, svc: ServicesDep, who: PrincipalDep, actor: ActorDep) -> SuggestionOut:
    """Take an applied suggestion back out of the transcript (validated or auto_applied → pending). 409 otherwise."""
    return _move(svc, who, actor, suggestion_id, Action.REVERTED)


@router.get("/v1/reliability/transcripts/{transcript_id}/progress", response_model=ProgressOut)
def progress(transcript_id: uuid.UUID, svc: ServicesDep, who: PrincipalDep) -> ProgressOut:
    """Progress of the session's analysis (transcript id = session id). 404 unless the caller's own session."""
    _own_session(svc, who, transcript_id)
    live = read_progress(svc.redis, transcript_id)
    if live.get("status"):
        def num(key: str, kind: type = float) -> Any:
            try:
                return kind(live[key]) if live.get(key) else None
            except ValueError:
                return None

        return ProgressOut(
            transcript_id=transcript_id, status=live["status"], source="redis", retry_count=num("retry_count", int),
            suggestions=num("suggestions", int), error=live.get("error") or None,
            consumer=live.get("consumer") or None, updated_at=num("updated_at"), finished_at=num("finished_at"),
        )
    with db_session(svc.repo.url) as db:
        row = db.get(ReliabilityAnalysis, transcript_id)
    if row is None:
        status = "not_requested"
    elif row.completed_at is not None:
        status = "done"
    elif row.dead_lettered_at is not None:
        status = "dead_lettered"
    else:
        status = "requested"
    return ProgressOut(transcript_id=transcript_id, status=status, source="postgres",
                       finished_at=row.completed_at.timestamp() if row and row.completed_at else None)


# --- admin side ----------------------------------------------------------------------------------


@router.get("/v1/reliability/dlq/list", response_model=DeadLetterList)
def dlq_list(
    svc: ServicesDep, _: AdminDep, rs: ReliabilitySettingsDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
) -> DeadLetterList:
    """Dead letters, oldest first: each the event plus ``error`` and ``failed_at`` (unix seconds)."""
    entries = Streams(svc.redis, rs).dlq_list(limit)
    messages = [DeadLetter(id=i, fields=public_fields(f)) for i, f in entries]
    return DeadLetterList(messages=messages, count=len(messages))


@router.get("/v1/reliability/dlq/stats", response_model=DeadLetterStats)
def dlq_stats(svc: ServicesDep, _: AdminDep, rs: ReliabilitySettingsDep) -> DeadLetterStats:
    """How many dead letters there are, and the oldest and newest stream ids."""
    return DeadLetterStats(**Streams(svc.redis, rs).dlq_stats())


@router.post("/v1/reliability/dlq/reprocess", response_model=Reprocessed)
def dlq_reprocess(
    body: ReprocessBody, svc: ServicesDep, _: AdminDep, actor: ActorDep, rs: ReliabilitySettingsDep,
) -> Reprocessed:
    """Re-inject dead letters onto the main stream with retry_count 0 and delete them from the
    dead-letter stream. Unknown ids are skipped (not counted). Audited."""
    tids = Streams(svc.redis, rs).dlq_reinject(None if body.all_ else body.message_ids)
    session_ids = []
    for tid in tids:
        try:
            session_ids.append(uuid.UUID(tid))
        except ValueError:
            continue  # an unreadable dead letter: re-injected as it was, nothing to note
    mark_emitted(engine(svc.repo.url), session_ids)
    with db_session(svc.repo.url) as db:
        audit.record(db, actor, "dlq_reprocess", None, {"reprocessed": len(tids)})
    return Reprocessed(reprocessed=len(tids))
