"""``/v1/sessions``: upload, list, read, transcript, speaker correction, withdrawal."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

import structlog
from fastapi import APIRouter, Header, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import func, insert, select, update

from verbatim import audio
from verbatim.api.deps import PrincipalDep, ServicesDep
from verbatim.api.errors import ApiError
from verbatim.api.upload import receive
from verbatim.auth import Principal
from verbatim.db.engine import db_session
from verbatim.db.models import AuditEntry, Session, Transcript
from verbatim.errors import AudioUnreadable, NotFound
from verbatim.polish.split import THERAPIST
from verbatim.states import SessionStatus

log = structlog.get_logger("verbatim.api")
router = APIRouter(prefix="/v1/sessions", tags=["sessions"])


class Consent(BaseModel):
    """The client's consent to recording, attested by the therapist."""

    model_config = ConfigDict(extra="forbid")
    obtained: Literal[True]
    method: Literal["verbal", "written", "electronic"]
    obtained_at: datetime


class SessionMetadata(BaseModel):
    """The ``metadata`` part of an upload."""

    model_config = ConfigDict(extra="forbid")
    client_ids: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(min_length=1, max_length=12)
    recorded_at: datetime
    session_type: Literal["individual", "couples", "family", "group"]
    consent: Consent


class SessionOut(BaseModel):
    id: uuid.UUID
    status: str
    runs: int
    polished: bool | None
    failure_code: str | None
    client_ids: list[str]
    session_type: str
    recorded_at: datetime
    duration_s: float
    created_at: datetime
    updated_at: datetime


class SessionPage(BaseModel):
    items: list[SessionOut]
    next_offset: int | None


class Segment(BaseModel):
    speaker: str
    speaker_label: str
    start_s: float
    end_s: float
    text: str


class ClientTranscript(BaseModel):
    client_id: str
    polished: bool
    segments: list[Segment]


class TranscriptOut(BaseModel):
    session_id: uuid.UUID
    transcripts: list[ClientTranscript]


class SpeakerMap(BaseModel):
    """Speaker label (``S1``…) → ``"therapist"`` or one of the session's client ids."""

    model_config = ConfigDict(extra="forbid")
    speakers: dict[str, str] = Field(min_length=1)


def _out(row: Session) -> SessionOut:
    return SessionOut(
        id=row.id, status=row.status, runs=row.runs, polished=row.polished, failure_code=row.failure_code,
        client_ids=row.client_ids, session_type=row.session_type, recorded_at=row.recorded_at,
        duration_s=row.audio_duration_s, created_at=row.created_at, updated_at=row.updated_at,
    )


def visible(who: Principal) -> Any:
    """The WHERE clause of sessions this principal may see (others answer 404, never 403)."""
    if who.scope == "therapist":
        return Session.therapist_id == who.therapist_id
    if who.scope == "clinic_admin":
        return Session.clinic_id == who.clinic_id
    return Session.id.is_not(None)  # admin


def _load(svc: ServicesDep, who: Principal, session_id: uuid.UUID) -> Session:
    with db_session(svc.repo.url) as db:
        row = db.execute(select(Session).where(Session.id == session_id, visible(who))).scalar_one_or_none()
    if row is None:
        raise NotFound(f"no session {session_id}")
    return row


def audit(svc: ServicesDep, who: Principal, action: str, session_id: uuid.UUID, request: Request) -> None:
    """Append an audit row (who, what, when, from where)."""
    with db_session(svc.repo.url) as db:
        db.execute(
            insert(AuditEntry).values(
                token_id=who.token_id, therapist_id=who.therapist_id, action=action, session_id=session_id,
                remote_addr=request.client.host if request.client else None,
            )
        )


@router.post("", status_code=201, response_model=SessionOut, responses={200: {"model": SessionOut}})
async def create_session(
    request: Request,
    response: Response,
    svc: ServicesDep,
    who: PrincipalDep,
    idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
) -> SessionOut:
    """Upload a recording (multipart ``audio`` + ``metadata`` JSON); 201 with the new session.

    The audio is streamed to disk, checked by content, fsynced and renamed; then the session
    row is committed; then a capture run is queued (if the queue is down, the sweep queues it).
    Errors: 415 not multipart, 413 too large/long, 422 bad metadata or not audio,
    409 Idempotency-Key reused with different audio, 400 malformed or cut-off body.
    """
    if who.scope != "therapist" or who.therapist_id is None:
        raise ApiError(403, "forbidden", "only a therapist token can upload sessions")
    settings = svc.settings
    incoming = svc.volume.new_incoming()
    upload = await receive(request, incoming, settings.max_upload_bytes)
    session_id = uuid.uuid4()
    try:
        try:
            meta = SessionMetadata.model_validate(upload.metadata)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            code = "missing_consent" if where.startswith("consent") else "invalid_metadata"
            raise ApiError(422, code, f"metadata.{where}: {first['msg']}") from exc
        if upload.size == 0:
            raise ApiError(422, "empty_audio", "the audio part is empty")
        sent_digest = request.headers.get("x-content-sha256") or request.headers.get("digest-sha256")
        if sent_digest and sent_digest.lower() != upload.sha256:
            raise ApiError(422, "digest_mismatch", "the audio does not match the SHA-256 the client sent")
        if idempotency_key:
            existing = _by_idempotency(svc, who, idempotency_key)
            if existing is not None:
                if existing.audio_sha256 != upload.sha256:
                    raise ApiError(409, "idempotency_conflict",
                                   "this Idempotency-Key was used for a different recording")
                # A retried upload: the first copy is the session's; this one goes.
                upload.audio.unlink(missing_ok=True)
                response.status_code = 200
                return _out(existing)
        try:
            info = audio.probe(upload.audio)
        except AudioUnreadable as exc:
            raise ApiError(422, "unreadable_audio", str(exc)) from exc
        if info.duration_s > settings.max_duration_s:
            raise ApiError(413, "too_long", f"recording is {info.duration_s:.0f} s; the limit is "
                                            f"{settings.max_duration_s:.0f} s")
        final = svc.volume.commit(upload.audio, session_id)
    except BaseException:
        upload.audio.unlink(missing_ok=True)
        raise
    row = Session(
        id=session_id, therapist_id=who.therapist_id, clinic_id=who.clinic_id, status="queued",
        client_ids=meta.client_ids, recorded_at=meta.recorded_at, session_type=meta.session_type,
        consent=meta.consent.model_dump(mode="json"), idempotency_key=idempotency_key, audio_path=str(final),
        audio_sha256=upload.sha256, audio_bytes=upload.size, audio_duration_s=info.duration_s,
        audio_format=info.container,
    )
    try:
        with db_session(svc.repo.url) as db:
            db.add(row)
    except Exception:
        # The row never committed: the file has no owner. (A crash right here is the orphan sweep's.)
        svc.volume.delete(final)
        existing = _by_idempotency(svc, who, idempotency_key) if idempotency_key else None
        if existing is not None and existing.audio_sha256 == upload.sha256:
            response.status_code = 200
            return _out(existing)
        raise
    try:
        svc.queue.enqueue(session_id)
    except Exception as exc:  # noqa: BLE001 - the row is committed: the sweep will queue it
        log.warning("enqueue_failed", session_id=str(session_id), error=type(exc).__name__)
    return _out(svc.repo.get(session_id))


def _by_idempotency(svc: ServicesDep, who: Principal, key: str) -> Session | None:
    with db_session(svc.repo.url) as db:
        return db.execute(
            select(Session).where(Session.therapist_id == who.therapist_id, Session.idempotency_key == key)
        ).scalar_one_or_none()


@router.get("", response_model=SessionPage)
def list_sessions(
    svc: ServicesDep,
    who: PrincipalDep,
    status: SessionStatus | None = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> SessionPage:
    """The caller's sessions, newest first; ``status`` filters, ``limit``/``offset`` paginate."""
    stmt = select(Session).where(visible(who))
    if status is not None:
        stmt = stmt.where(Session.status == status.value)
    stmt = stmt.order_by(Session.created_at.desc(), Session.id).limit(limit + 1).offset(offset)
    with db_session(svc.repo.url) as db:
        rows = list(db.execute(stmt).scalars())
    more = len(rows) > limit
    return SessionPage(items=[_out(r) for r in rows[:limit]], next_offset=offset + limit if more else None)


@router.get("/{session_id}", response_model=SessionOut)
def get_session(session_id: uuid.UUID, svc: ServicesDep, who: PrincipalDep) -> SessionOut:
    """Status, runs, polished and failure_code of one session (404 if not the caller's)."""
    return _out(_load(svc, who, session_id))


@router.get("/{session_id}/transcript", response_model=TranscriptOut)
def get_transcript(session_id: uuid.UUID, request: Request, svc: ServicesDep, who: PrincipalDep) -> TranscriptOut:
    """The published transcript: one record per client id; 409 while not ready. Audited."""
    row = _load(svc, who, session_id)
    if row.status != SessionStatus.READY:
        raise ApiError(409, "not_ready", f"the transcript is not published yet (status {row.status})")
    audit(svc, who, "transcript_read", session_id, request)
    with db_session(svc.repo.url) as db:
        records = list(
            db.execute(select(Transcript).where(Transcript.session_id == session_id).order_by(Transcript.client_id))
            .scalars()
        )
    order = {c: i for i, c in enumerate(row.client_ids)}
    records.sort(key=lambda t: order.get(t.client_id, len(order)))
    return TranscriptOut(
        session_id=session_id,
        transcripts=[ClientTranscript(client_id=t.client_id, polished=t.polished,
                                      segments=[Segment(**s) for s in t.segments]) for t in records],
    )


@router.put("/{session_id}/speakers", response_model=SessionOut)
def put_speakers(session_id: uuid.UUID, body: SpeakerMap, svc: ServicesDep, who: PrincipalDep) -> SessionOut:
    """Correct which speaker label is the therapist or which client, and republish the split."""
    from verbatim.polish.split import split_per_client

    row = _load(svc, who, session_id)
    allowed = {THERAPIST, *row.client_ids}
    bad = {v for v in body.speakers.values() if v not in allowed}
    if bad:
        raise ApiError(422, "unknown_role", f"speakers must map to 'therapist' or a client id, not {sorted(bad)}")
    if row.status != SessionStatus.READY or row.published_turns is None:
        raise ApiError(409, "not_ready", "speakers can be corrected once the transcript is published")
    missing = {t["speaker"] for t in row.published_turns} - body.speakers.keys()
    if missing:
        raise ApiError(422, "incomplete_mapping", f"map every speaker label; missing {sorted(missing)}")
    records = split_per_client(row.published_turns, row.client_ids, body.speakers)
    with db_session(svc.repo.url) as db:
        db.execute(
            update(Session).where(Session.id == session_id).values(speaker_map=body.speakers, updated_at=func.now())
        )
        for client_id, segments in records.items():
            db.execute(
                update(Transcript)
                .where(Transcript.session_id == session_id, Transcript.client_id == client_id)
                .values(segments=segments)
            )
    return _out(_load(svc, who, session_id))


@router.delete("/{session_id}", status_code=204)
def delete_session(session_id: uuid.UUID, request: Request, svc: ServicesDep, who: PrincipalDep) -> Response:
    """Withdraw a session: a fenced write marks it deleted, then audio, vendor job, checkpoint and
    transcripts are deleted. Audited."""
    from verbatim.pipeline.withdraw import withdraw

    _load(svc, who, session_id)
    withdraw(svc.repo, svc.volume, svc.settings, session_id)
    audit(svc, who, "session_deleted", session_id, request)
    return Response(status_code=204)

