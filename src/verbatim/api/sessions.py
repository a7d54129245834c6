"""``/v1/sessions``: upload, list, read, transcript, speaker correction, withdrawal."""

from __future__ import annotations

import contextlib
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

import structlog
from fastapi import APIRouter, Header, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field
from python_multipart.multipart import parse_options_header
from sqlalchemy import false, select, update
from sqlalchemy.orm import Session as OrmSession
from sqlalchemy.orm import defer
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from verbatim import audit
from verbatim.api.break_glass import active_grant
from verbatim.api.deps import ActorDep, PrincipalDep, Services, ServicesDep
from verbatim.api.errors import ApiError
from verbatim.api.session_metadata import SessionMetadata, validate_metadata
from verbatim.api.tus import claim
from verbatim.api.upload import METADATA_MAX_BYTES, Upload, receive, require_space
from verbatim.audit import Actor
from verbatim.auth import Principal
from verbatim.confined import probe_confined
from verbatim.db.engine import db_session
from verbatim.db.models import Clinic, Session, Transcript
from verbatim.errors import AudioTooLong, AudioUnreadable, NotFound, SignedNotesBlock
from verbatim.polish.split import THERAPIST, UNASSIGNED, is_gap, unassigned_turns
from verbatim.record import writer
from verbatim.states import CAPTURE_SUBJECTS, SessionStatus, display_status

log = structlog.get_logger("verbatim.api")
router = APIRouter(prefix="/v1/sessions", tags=["sessions"])

class PartialRecording(BaseModel):
    """A session made from a recording that stopped arriving: what arrived, finished without its end.

    ``reason``: ``stalled`` (no byte for ``recording_stall_s``) or ``finished`` (the therapist
    chose "finish with what arrived"); ``held_s``: seconds of audio the session holds (the
    recording ends there); ``last_byte_at``: when its last byte reached the server.
    """

    reason: Literal["stalled", "finished"]
    held_s: float
    last_byte_at: datetime


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
    #: when the retention sweep deletes the transcript (its clinic's retention after it was ready)
    transcript_delete_after: datetime | None = None
    #: when it did
    transcript_expired_at: datetime | None = None
    #: the capture run's state (``verbatim.durable.subjects``): running, parked, due, overdue, blocked,
    #: cancelled; None when no run is outstanding
    run_state: str | None = None
    #: the status a list shows (``verbatim.states.display_status``): ``status``, or ``parked`` while the
    #: capture run waits on the recognizer without a worker (derived, never stored)
    display_status: str
    #: set when the recording stopped arriving and the session holds only what arrived
    partial_recording: PartialRecording | None = None


class SessionPage(BaseModel):
    items: list[SessionOut]
    next_offset: int | None


class Segment(BaseModel):
    #: stable across corrections (``seg-{n}``: the n-th recognized turn); None for transcripts published before ids
    id: str | None = None
    speaker: str
    speaker_label: str
    start_s: float
    end_s: float
    text: str
    #: the recognizer's doubts about this turn: ``speaker_uncertain``, ``meaning_flip``, ``inaudible`` (a gap)
    marks: list[str] = []


class ClientTranscript(BaseModel):
    client_id: str
    polished: bool
    #: 1 at the first publish, +1 at each correction (a note records the version it was drafted from)
    version: int = 1
    segments: list[Segment]


class TranscriptOut(BaseModel):
    session_id: uuid.UUID
    transcripts: list[ClientTranscript]
    #: turns no speaker role claims yet (several clients, voices not told apart): never part of a
    #: client's record; the therapist names their speaker with PUT /speakers
    unassigned: list[Segment] = Field(default_factory=list)


class SpeakerMap(BaseModel):
    """Speaker label (``S1``…) → ``"therapist"`` or one of the session's client ids."""

    model_config = ConfigDict(extra="forbid")
    speakers: dict[str, str] = Field(min_length=1)


def _outs(svc: Services, rows: list[Session], *, redact: bool = False) -> list[SessionOut]:
    """The API view of sessions, with their capture-run counts (one query for all of them).

    ``redact``: without client ids (a clinic admin or an ops admin sees metadata only).
    """
    if not rows:
        return []
    runs = svc.repo.runs.counts([r.id for r in rows])
    with db_session(svc.repo.url) as db:
        retention: dict[uuid.UUID, int | None] = dict(db.execute(
            select(Clinic.id, Clinic.transcript_retention_days).where(Clinic.id.in_({r.clinic_id for r in rows}))
        ).all())
        phases = CAPTURE_SUBJECTS.phases(db, [r.id for r in rows])
    default_days = svc.settings.transcript_retention_days

    def delete_after(row: Session) -> datetime | None:
        if row.status != SessionStatus.READY or row.finished_at is None or row.transcript_expired_at is not None:
            return None
        return row.finished_at + timedelta(days=retention.get(row.clinic_id) or default_days)

    return [
        SessionOut(
            id=row.id, status=row.status, runs=runs.get(row.id, 0), polished=row.polished,
            failure_code=row.failure_code, client_ids=[] if redact else row.client_ids,
            session_type=row.session_type,
            recorded_at=row.recorded_at, duration_s=row.audio_duration_s, created_at=row.created_at,
            updated_at=row.updated_at, transcript_delete_after=delete_after(row),
            transcript_expired_at=row.transcript_expired_at, run_state=phases.get(row.id),
            display_status=display_status(row.status, phases.get(row.id)),
            partial_recording=(PartialRecording.model_validate(row.partial_recording)
                               if row.partial_recording else None),
        )
        for row in rows
    ]


def _out(svc: Services, row: Session, *, redact: bool = False) -> SessionOut:
    return _outs(svc, [row], redact=redact)[0]


def visible(who: Principal) -> Any:
    """The WHERE clause of sessions this principal may list (others answer 404, never 403).

    A therapist: their own. A clinic admin: their clinic's, as metadata (no client ids, no
    transcript). The ``admin`` scope is for operations (``/v1/admin``): no session here.
    """
    if who.scope == "therapist":
        return Session.therapist_id == who.therapist_id
    if who.scope == "clinic_admin":
        return Session.clinic_id == who.clinic_id
    return false()


def _redacted(who: Principal) -> bool:
    """Whether this principal sees session metadata only (no client ids)."""
    return who.scope != "therapist"


#: Load options for a list of sessions: their speaker turns (checkpoint and published) stay unloaded.
WITHOUT_TURNS = (defer(Session.raw_turns, raiseload=True), defer(Session.published_turns, raiseload=True),
                 defer(Session.polished_turns, raiseload=True))


def _load(svc: ServicesDep, who: Principal, session_id: uuid.UUID) -> Session:
    """The session row if ``who`` may see it (NotFound otherwise), without its checkpoint.

    ``raw_turns`` (the recognizer's words, megabytes for an hour) is left unloaded: no reader
    here needs it, and loading it was most of the time of a transcript read.
    """
    with db_session(svc.repo.url) as db:
        row = db.execute(select(Session).options(defer(Session.raw_turns, raiseload=True))
                         .where(Session.id == session_id, visible(who))).scalar_one_or_none()
    if row is None:
        raise NotFound(f"no session {session_id}")
    return row


def _load_own(svc: ServicesDep, who: Principal, session_id: uuid.UUID) -> Session:
    """The session if it is the calling therapist's own: transcripts and clinical edits are theirs alone.

    Anyone else (another therapist, the clinic's admin, an ops admin) gets 404.
    """
    if who.scope != "therapist":
        raise NotFound(f"no session {session_id}")
    return _load(svc, who, session_id)


MAX_PARTS = 50
"""Most parts one recording may be joined from (each part is one restart of a phone's recorder)."""

_UPLOAD_BODIES: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {"schema": {
                "type": "object", "required": ["audio", "metadata"],
                "properties": {"audio": {"type": "string", "format": "binary"},
                               "metadata": {"$ref": "#/components/schemas/SessionMetadata"}},
            }, "encoding": {"metadata": {"contentType": "application/json"}}},
            "application/json": {"schema": {
                "type": "object", "required": ["metadata"], "additionalProperties": False,
                "properties": {
                    "upload_id": {"type": "string", "description": "id of a complete /v1/uploads upload"},
                    "upload_ids": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                                   "maxItems": MAX_PARTS,
                                   "description": "instead of upload_id: the parts of one recording, in order "
                                                  "(a recorder restarted mid-session); joined into one recording"},
                    "metadata": {"$ref": "#/components/schemas/SessionMetadata"}},
            }},
        },
    }
}


@router.post("", status_code=201, response_model=SessionOut, responses={200: {"model": SessionOut}},
             openapi_extra=_UPLOAD_BODIES)
async def create_session(
    request: Request,
    response: Response,
    svc: ServicesDep,
    who: PrincipalDep,
    actor: ActorDep,
    idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
) -> SessionOut:
    """Create a session from a recording; 201 with the new session (200 for an idempotent retry).

    Two bodies, one path. ``multipart/form-data`` with parts ``audio`` (the file, streamed to
    disk) and ``metadata`` (JSON); or ``application/json`` ``{"upload_id", "metadata"}`` (or
    ``{"upload_ids": [...], "metadata"}``: the parts of one recording, joined in order)
    finalizing a complete resumable upload from ``/v1/uploads`` (its file is moved, not
    copied). Either becomes an `Upload`, which is then checked by content, fsynced and
    renamed; then the session row is committed; then a capture run is queued (if the queue
    is down, the sweep queues it). ``X-Content-SHA256`` (hex), when sent, must match the audio.
    Errors: 415 neither body type, 413 too large/long, 422 bad metadata, not audio or digest
    mismatch, 409 Idempotency-Key reused with different audio or upload incomplete,
    404 unknown upload, 400 malformed or cut-off body.
    """
    if who.scope != "therapist" or who.therapist_id is None:
        raise ApiError(403, "forbidden", "only a therapist token can upload sessions")
    content_type, _ = parse_options_header(request.headers.get("content-type", ""))
    if content_type == b"application/json":
        claimed = await _claim_resumable(request, svc, who, idempotency_key)
        if isinstance(claimed, Session):
            response.status_code = 200
            return _out(svc, claimed)
        upload = claimed
    else:
        declared = request.headers.get("content-length", "")
        if declared.isdigit():
            require_space(svc.settings, int(declared))  # 507 before a byte is written
        with svc.upload_slots.hold(who.token_id):
            upload = await receive(request, svc.volume.new_incoming(), svc.settings.max_upload_bytes,
                                   svc.volume.ring, svc.settings.upload_idle_s)
    sent_digest = request.headers.get("x-content-sha256") or request.headers.get("digest-sha256")
    # Probing, fsync, PostgreSQL and Redis all block: keep them off the event loop.
    session, created = await run_in_threadpool(_create_from_upload, svc, actor, upload, idempotency_key, sent_digest)
    if not created:
        response.status_code = 200
    return session




async def _claim_resumable(request: Request, svc: ServicesDep, who: Principal,
                           idempotency_key: str | None) -> Upload | Session:
    """Parse ``{"upload_id" | "upload_ids", "metadata"}`` and claim those tus uploads: an Upload in ``incoming/``.

    Returns the existing Session instead when this is a retry whose first attempt already
    consumed the upload (same Idempotency-Key, upload gone). Errors: 413 body over 64 KiB,
    422 body or metadata invalid, and `tus.claim`'s 404 / 409 / 410 / 423.
    """
    body = await _read_small_body(request)
    try:
        value = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ApiError(422, "body_not_json", f"the body is not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise ApiError(422, "body_not_json", "the body is nested too deeply") from exc
    if not isinstance(value, dict):
        raise ApiError(422, "invalid_body", 'send {"upload_id": "...", "metadata": {...}}')
    unknown = sorted(value.keys() - {"upload_id", "upload_ids", "metadata"})
    if unknown:
        raise ApiError(422, "invalid_body", f"unknown fields {unknown}: send only upload_id (or upload_ids) and "
                                            "metadata")
    upload_ids = _upload_ids(value)
    upload_id = upload_ids[0]
    if "metadata" not in value:
        raise ApiError(422, "missing_metadata", "the body needs `metadata`")
    if not isinstance(value["metadata"], dict):
        raise ApiError(422, "metadata_not_object", "metadata must be a JSON object")
    metadata: dict[str, Any] = value["metadata"]
    # Checked before the claim, because a claim consumes the upload: a typo in the metadata
    # must not cost the therapist an hour of audio sent over a phone network.
    validate_metadata(metadata)
    if idempotency_key:
        existing = await run_in_threadpool(_by_idempotency, svc, who, idempotency_key)
        info = svc.uploads.info(upload_id)
        if existing is not None and (info is None or info.owner != who.therapist_id):
            return existing  # a retry: the first attempt consumed the upload and made this session
    return await claim(svc, who, upload_ids, metadata, svc.volume.new_incoming())


def _upload_ids(value: dict[str, Any]) -> list[str]:
    """The body's ``upload_id`` as a list of one, or its ``upload_ids`` (distinct, ≤ MAX_PARTS); 422 otherwise."""
    if ("upload_id" in value) == ("upload_ids" in value):
        raise ApiError(422, "invalid_body", "send upload_id (one upload) or upload_ids (the parts of one "
                                            "recording, in order), not both or neither")
    if "upload_id" in value:
        if not isinstance(value["upload_id"], str):
            raise ApiError(422, "invalid_body", "upload_id must be the id of a /v1/uploads upload")
        return [value["upload_id"]]
    ids = value["upload_ids"]
    if (not isinstance(ids, list) or not ids or len(ids) > MAX_PARTS or not all(isinstance(i, str) for i in ids)
            or len(set(ids)) != len(ids)):
        raise ApiError(422, "invalid_body", f"upload_ids must be 1 to {MAX_PARTS} distinct upload ids, in order")
    return list(ids)


async def _read_small_body(request: Request) -> bytes:
    """The whole (JSON) body, refused with 413 past METADATA_MAX_BYTES + 1 KiB; 400 on a cut."""
    limit = METADATA_MAX_BYTES + 1024
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise ApiError(413, "body_too_large", f"the JSON body must be at most {limit} bytes")
    except ClientDisconnect as exc:
        raise ApiError(400, "client_disconnected", "the request was cut off before it finished; retry it") from exc
    return bytes(body)


def _create_from_upload(svc: Services, actor: Actor, upload: Upload, idempotency_key: str | None,
                        sent_digest: str | None, partial: dict[str, Any] | None = None) -> tuple[SessionOut, bool]:
    """Check, commit and enqueue a received Upload; returns (session, created).

    ``created`` is False for an idempotent retry (the existing session is returned and this
    copy of the audio deleted). Whatever is refused, ``upload.audio`` is deleted first.
    The session row commits with its audit row (a ``system`` actor — the sweep finishing a
    recording that stopped arriving — is audited as Verbatim's own act). ``partial``: the
    ``reason`` and ``last_byte_at`` of a recording finished with what arrived
    (`verbatim.api.recordings`); ``held_s`` is added from the probed duration.
    """
    who = actor.principal
    assert who.therapist_id is not None
    settings = svc.settings
    session_id = uuid.uuid4()
    try:
        meta = validate_metadata(upload.metadata)
        if upload.size == 0:
            raise ApiError(422, "empty_audio", "the audio part is empty")
        if sent_digest and sent_digest.strip().lower() != upload.sha256:
            raise ApiError(422, "digest_mismatch", "the audio does not match the SHA-256 the client sent")
        if idempotency_key:
            existing = _by_idempotency(svc, who, idempotency_key)
            if existing is not None:
                if existing.audio_sha256 != upload.sha256:
                    raise ApiError(409, "idempotency_conflict",
                                   "this Idempotency-Key was used for a different recording")
                if _parameters(existing) != _parameters(meta):
                    # As payment APIs do: a retry must repeat the request, not change it quietly.
                    raise ApiError(422, "idempotency_key_reused",
                                   "this Idempotency-Key was used with different metadata; send the first "
                                   "request's metadata again, or use a new key for a new session")
                # A retried upload: the first copy is the session's; this one goes.
                upload.audio.unlink(missing_ok=True)
                return _out(svc, existing), False
        try:
            # In a confined child (CPU, memory, wall clock); decoding (for a file that states no
            # length) stops at the limit and a bomb of tiny packets is refused by bytes per second.
            info = probe_confined(upload.audio, svc.volume.ring, settings, max_duration_s=settings.max_duration_s)
        except AudioUnreadable as exc:
            raise ApiError(422, "unreadable_audio", str(exc)) from exc
        except AudioTooLong as exc:
            raise ApiError(413, "too_long", str(exc)) from exc
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
        partial_recording=None if partial is None else {**partial, "held_s": round(info.duration_s, 1)},
    )
    try:
        with db_session(svc.repo.url) as db:
            db.add(row)
            db.flush()
            # Due after the stall window: if the message sent below is lost (Redis flushed or
            # down), the sweep process sends it again then.
            svc.repo.runs.ensure(db, session_id, settings.session_deadline_s, settings.stall_s)
            if who.scope == "system":
                audit.record_system(db, "session_created", session_id, who.clinic_id, {"partial": True})
            else:
                audit.record(db, actor, "session_created", session_id)
    except Exception:
        # A failed COMMIT may still have committed (the connection dropped after the server
        # applied it): the file may only go once we know that no row owns it.
        owned = _row_exists(svc, session_id)
        if owned is None:
            raise  # unknown: the orphan sweep deletes the file later only if no live session owns it
        if not owned:
            svc.volume.delete(final)
            existing = _by_idempotency(svc, who, idempotency_key) if idempotency_key else None
            if existing is not None and existing.audio_sha256 == upload.sha256:
                return _out(svc, existing), False  # a concurrent retry with the same key won the race
            raise
    try:
        svc.queue.enqueue(session_id)
    except Exception as exc:  # noqa: BLE001 - the row is committed: the sweep will queue it
        log.warning("enqueue_failed", session_id=str(session_id), error=type(exc).__name__)
        # Due now: the sweep process sends it within a tick once the broker is back.
        with contextlib.suppress(Exception):
            svc.repo.runs.hasten(session_id, 0.0)
    return _out(svc, svc.repo.get(session_id)), True


def _parameters(source: Session | SessionMetadata) -> tuple[Any, ...]:
    """What makes two uploads the same request (besides the audio): clients, type, recording time."""
    recorded = source.recorded_at.astimezone(UTC)
    return (list(source.client_ids), source.session_type, recorded)


def _row_exists(svc: ServicesDep, session_id: uuid.UUID) -> bool | None:
    """Whether the session row exists; None when PostgreSQL cannot say."""
    try:
        with db_session(svc.repo.url) as db:
            return db.execute(select(Session.id).where(Session.id == session_id)).first() is not None
    except Exception:  # noqa: BLE001 - "cannot tell" is an answer here
        return None


def _by_idempotency(svc: ServicesDep, who: Principal, key: str) -> Session | None:
    with db_session(svc.repo.url) as db:
        return db.execute(
            select(Session).where(Session.therapist_id == who.therapist_id, Session.idempotency_key == key)
        ).scalar_one_or_none()


@router.get("", response_model=SessionPage)
def list_sessions(
    svc: ServicesDep,
    who: PrincipalDep,
    actor: ActorDep,
    status: SessionStatus | None = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> SessionPage:
    """The caller's sessions, newest first; ``status`` filters, ``limit``/``offset`` paginate. Audited
    (the list shows client ids)."""
    stmt = select(Session).options(*WITHOUT_TURNS).where(visible(who))
    if status is not None:
        stmt = stmt.where(Session.status == status.value)
    stmt = stmt.order_by(Session.created_at.desc(), Session.id).limit(limit + 1).offset(offset)
    with db_session(svc.repo.url) as db:
        rows = list(db.execute(stmt).scalars())
        audit.record(db, actor, "sessions_listed", None, {"count": min(len(rows), limit), "offset": offset})
    more = len(rows) > limit
    return SessionPage(items=_outs(svc, rows[:limit], redact=_redacted(who)),
                       next_offset=offset + limit if more else None)


@router.get("/{session_id}", response_model=SessionOut)
def get_session(session_id: uuid.UUID, svc: ServicesDep, who: PrincipalDep, actor: ActorDep) -> SessionOut:
    """Status, runs, polished and failure_code of one session (404 if not the caller's). Audited."""
    row = _load(svc, who, session_id)
    with db_session(svc.repo.url) as db:
        audit.record(db, actor, "session_read", session_id)
    return _out(svc, row, redact=_redacted(who))


@router.get("/{session_id}/transcript", response_model=TranscriptOut)
def get_transcript(session_id: uuid.UUID, svc: ServicesDep, who: PrincipalDep, actor: ActorDep) -> TranscriptOut:
    """The published transcript: one record per client id; 409 while not ready. Audited.

    The therapist's own sessions only (404 for anyone else) — or a colleague of the same clinic
    holding an open break-glass grant (``POST …/break-glass``), each such read audited as such.
    """
    action = "transcript_read"
    try:
        row = _load_own(svc, who, session_id)
    except NotFound:
        if not active_grant(svc.repo.url, who, session_id):
            raise
        with db_session(svc.repo.url) as db:
            found = db.execute(select(Session).where(Session.id == session_id, Session.clinic_id == who.clinic_id)
                               ).scalar_one_or_none()
        if found is None:
            raise
        row, action = found, "transcript_read_break_glass"
    if row.status == SessionStatus.DELETED:
        raise ApiError(410, "session_withdrawn", "the session was withdrawn: its transcript is gone")
    if row.transcript_expired_at is not None:
        raise ApiError(410, "transcript_expired",
                       f"the transcript was deleted on {row.transcript_expired_at:%Y-%m-%d}: its clinic's retention "
                       "window had passed")
    if row.status != SessionStatus.READY:
        raise ApiError(409, "not_ready", f"the transcript is not published yet (status {row.status})")
    with db_session(svc.repo.url) as db:
        audit.record(db, actor, action, session_id)
        records = list(
            db.execute(select(Transcript).where(Transcript.session_id == session_id).order_by(Transcript.client_id))
            .scalars()
        )
    order = {c: i for i, c in enumerate(row.client_ids)}
    records.sort(key=lambda t: order.get(t.client_id, len(order)))
    turns = row.published_turns or []
    roles = {t["speaker"]: t.get("role", "") for t in turns}  # turns published before roles were kept: none
    return TranscriptOut(
        session_id=session_id,
        transcripts=[ClientTranscript(client_id=t.client_id, polished=t.polished, version=t.version,
                                      segments=[Segment(**s) for s in t.segments]) for t in records],
        unassigned=[Segment(**s) for s in unassigned_turns(turns, roles)],
    )


@router.put("/{session_id}/speakers", response_model=SessionOut)
def put_speakers(session_id: uuid.UUID, body: SpeakerMap, svc: ServicesDep, who: PrincipalDep,
                 actor: ActorDep) -> SessionOut:
    """Correct which speaker label is the therapist, which client, or unassigned; republish the split.

    The therapist's own sessions only (404 for anyone else). Through the record's one writer:
    409 ``not_ready``, 410 ``session_withdrawn`` / ``transcript_expired``; 422 for a mapping that
    names an unknown role or label or leaves a label out. Nothing is written when refused."""
    _load_own(svc, who, session_id)

    def remap(db: OrmSession, row: Session) -> None:
        # Checked under the session's lock, against the labels the record holds now.
        allowed = {THERAPIST, UNASSIGNED, *row.client_ids}
        bad = {v for v in body.speakers.values() if v not in allowed}
        if bad:
            # The values are not echoed: a mistyped role may be a client's name.
            raise ApiError(422, "unknown_role", f"speakers must map to 'therapist', 'unassigned' or one of this "
                                                f"session's client ids; {len(bad)} value(s) are none of these")
        labels = {t["speaker"] for t in row.published_turns or [] if not is_gap(t)}
        missing = labels - body.speakers.keys()
        if missing:
            raise ApiError(422, "incomplete_mapping", f"map every speaker label; missing {sorted(missing)}")
        unknown = body.speakers.keys() - labels
        if unknown:
            raise ApiError(422, "unknown_speaker", f"these labels are not in the transcript: {sorted(unknown)}")
        db.execute(update(Session).where(Session.id == row.id).values(speaker_map=body.speakers))
        row.speaker_map = body.speakers

    with db_session(svc.repo.url) as db:
        writer.change(db, session_id, actor, "speakers_corrected", None, remap)
    return _out(svc, _load(svc, who, session_id))


@router.delete("/{session_id}", status_code=204)
def delete_session(session_id: uuid.UUID, svc: ServicesDep, who: PrincipalDep, actor: ActorDep) -> Response:
    """Withdraw a session: a fenced write marks it deleted — with its audit row, in one transaction —
    and queues the delete of its audio and vendor jobs; checkpoint, transcripts and drafts go at once.

    409 ``signed_note`` while a signed note that is not amended quotes it (nothing written)."""
    from verbatim.pipeline.withdraw import withdraw

    _load_own(svc, who, session_id)
    try:
        withdraw(svc.repo, svc.cleanup, session_id, actor)
    except SignedNotesBlock as exc:
        raise ApiError(409, "signed_note", str(exc)) from exc
    return Response(status_code=204)
