"""Recordings that stop arriving (issue 26, item 2): finished with what arrived, labelled partial.

A phone recording through a deferred-length upload may never send its end: the phone died, the
browser was never reopened, the clinic's network stayed down. What arrived is never discarded
because the end did not. It becomes a session, processed like any other and labelled
``partial_recording`` (how much it holds, when its last byte arrived), in one of two ways:

* the therapist chooses "finish with what arrived": ``POST /v1/uploads/{upload_id}/finish``
  (the recorder page lists the unfinished recordings from ``GET /v1/uploads``);
* no byte arrived for ``recording_stall_s`` (2 h): the sweep process's upload step calls
  `finish_stalled` before the expiry sweep runs (which never deletes such an upload).

Both take the same path a phone's own finish takes, and nothing beside it: each part's length
is declared as what it holds (`LockedUpload.finish_with_what_arrived`), then the parts are
claimed in order (`verbatim.api.tus.claim`) and the session is checked, committed and queued
(`verbatim.api.sessions._create_from_upload`), under the recorder's own ``Idempotency-Key``
(``recorder-<recording id>``) — so a phone that comes back later and finishes the same recording
gets this session, not a second one.

The session's metadata (consent, client ids) is what the recorder sent at creation in the
upload's ``Upload-Metadata`` under ``session`` (JSON), the parts are tied by ``recording`` (the
recorder's id for the whole recording) and ordered by ``part`` (0, 1, …). An upload without
``session`` (another app's) cannot become a session by itself: the sweep declares its length and
keeps it for another ``tus_expiry_s``, for its app to finish with ``POST /v1/sessions``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, TypeVar

import structlog
from fastapi import APIRouter, Response
from pydantic import BaseModel
from sqlalchemy import select
from starlette.concurrency import run_in_threadpool

from verbatim.api.deps import ActorDep, PrincipalDep, Services, ServicesDep
from verbatim.api.errors import ApiError
from verbatim.api.guessing import Guessing
from verbatim.api.session_metadata import validate_metadata
from verbatim.api.sessions import SessionOut, _by_idempotency, _create_from_upload, _out
from verbatim.api.tus import claim, discard_parts
from verbatim.api.upload_slots import UploadSlots
from verbatim.audit import Actor
from verbatim.auth import Principal
from verbatim.context import ProcessContext
from verbatim.db.engine import db_session
from verbatim.db.models import Therapist
from verbatim.errors import NotFound, UploadBusy
from verbatim.resumable import SESSION_METADATA_KEY, ResumableUploads, UploadInfo

T = TypeVar("T")
log = structlog.get_logger("verbatim.recordings")
router = APIRouter(prefix="/v1/uploads", tags=["uploads"])

RECORDING_KEY = "recording"
"""``Upload-Metadata`` key tying the parts of one recording (the recorder's id for it)."""
PART_KEY = "part"
"""``Upload-Metadata`` key of a part's place in its recording (0, 1, …)."""
SYSTEM_TOKEN = uuid.UUID(int=0)
"""The token id of the sweep's acts (audited as scope ``system``, which carries no token)."""


class OpenUpload(BaseModel):
    """One of the caller's unfinished uploads: a recording (part) the server holds bytes of.

    ``received_bytes`` arrived so far (of ``length``, null while deferred); ``recording`` and
    ``part`` as the recorder declared them (null for other apps' uploads); times are ISO 8601 UTC.
    """

    upload_id: str
    recording: str | None
    part: int | None
    received_bytes: int
    length: int | None
    created_at: datetime
    last_byte_at: datetime
    expires_at: datetime
    finishable: bool  #: it carries session metadata: ``POST …/finish`` makes it a session


def _at(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


def _part(info: UploadInfo) -> int:
    raw = info.metadata.get(PART_KEY)
    return int(raw) if raw is not None and raw.isdigit() else 0


@router.get("", response_model=list[OpenUpload])
def open_uploads(svc: ServicesDep, who: PrincipalDep) -> list[OpenUpload]:
    """The caller's unfinished uploads, oldest first (no patient data: ids, byte counts and times).

    The recorder page shows those of its recordings that stopped arriving, each with "finish
    with what arrived". Errors: 403 not a therapist token.
    """
    if who.scope != "therapist" or who.therapist_id is None:
        raise ApiError(403, "forbidden", "only a therapist has uploads")
    store = svc.uploads
    return [
        OpenUpload(upload_id=info.id, recording=info.metadata.get(RECORDING_KEY), part=_part(info),
                   received_bytes=store.received(info.id), length=info.length, created_at=_at(info.created_at),
                   last_byte_at=_at(store.last_byte_at(info.id)), expires_at=_at(info.expires_at),
                   finishable=SESSION_METADATA_KEY in info.metadata)
        for info in store.of(who.therapist_id)
    ]


@router.post("/{upload_id}/finish", status_code=201, response_model=SessionOut,
             responses={200: {"model": SessionOut}})
async def finish(upload_id: str, response: Response, svc: ServicesDep, who: PrincipalDep,
                 actor: ActorDep) -> SessionOut:
    """Finish the recording this upload belongs to with what arrived; 201 with the session (partial).

    Every part of the recording (uploads of the same ``recording``) is finished at the bytes it
    holds and the parts are joined in order; the session is labelled ``partial_recording``
    (``reason: finished``). 200 with the existing session when the recording was already made
    into one (by its phone, or by the sweep). Errors: 403 not a therapist token, 404 unknown
    upload (or another therapist's), 409 ``no_session_metadata`` (not a recorder's upload:
    declare its length with PATCH and create the session with ``POST /v1/sessions``), 409
    ``nothing_arrived``, 423 a part is being written right now (retry), 422 / 413 as for
    ``POST /v1/sessions``.
    """
    if who.scope != "therapist" or who.therapist_id is None:
        raise ApiError(403, "forbidden", "only a therapist can finish a recording")
    session, created = await finish_recording(svc, actor, upload_id, "finished")
    if not created:
        response.status_code = 200
    return session


def parts_of(store: ResumableUploads, owner: uuid.UUID, upload_id: str) -> list[UploadInfo]:
    """The uploads of the recording ``upload_id`` belongs to, in part order; NotFound when not the owner's."""
    info = store.info(upload_id)
    if info is None or info.owner != owner:
        raise NotFound(f"no upload {upload_id[:64]}")
    recording = info.metadata.get(RECORDING_KEY)
    if recording is None:
        return [info]
    parts = [i for i in store.of(owner) if i.metadata.get(RECORDING_KEY) == recording]
    return sorted(parts, key=_part)


async def finish_recording(svc: Services, actor: Actor, upload_id: str, reason: str) -> tuple[SessionOut, bool]:
    """Finish ``upload_id``'s recording with what arrived: (the session, whether it was made now).

    Raises ApiError as `finish` documents. ``reason``: ``finished`` or ``stalled``.
    """
    who = actor.principal
    assert who.therapist_id is not None
    store = svc.uploads
    try:
        parts = parts_of(store, who.therapist_id, upload_id)
    except NotFound as exc:
        raise ApiError(404, "not_found", str(exc)) from exc
    raw = parts[0].metadata.get(SESSION_METADATA_KEY)
    if raw is None:
        raise ApiError(409, "no_session_metadata", f"upload {upload_id} carries no session metadata; declare its "
                                                   "length (PATCH with Upload-Length) and create the session with "
                                                   "POST /v1/sessions")
    try:
        metadata: Any = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ApiError(422, "invalid_metadata", "the upload's session metadata is not JSON") from exc
    if not isinstance(metadata, dict):
        raise ApiError(422, "invalid_metadata", "the upload's session metadata must be a JSON object")
    validate_metadata(metadata)
    recording = parts[0].metadata.get(RECORDING_KEY)
    key = f"recorder-{recording}" if recording else f"finish-{upload_id}"
    existing = await run_in_threadpool(_by_idempotency, svc, who, key)
    if existing is not None:
        # Its session committed but the finish stopped before the parts went: they go now.
        await discard_parts(svc, who, [p.id for p in parts])
        return _out(svc, existing), False
    last = max(store.last_byte_at(p.id) for p in parts)
    held = await run_in_threadpool(_finish_parts, store, who.therapist_id, parts)
    if not held:
        raise ApiError(409, "nothing_arrived", "no audio of this recording reached the server; nothing to finish")
    partial = {"reason": reason, "last_byte_at": _at(last).isoformat()}
    # The parts are the only copy (the phone deleted what the server confirmed): they stay until a
    # session holding their audio commits. Remuxing also makes a file cut off mid-way (a WAV whose
    # header promised more) whole up to where it ends.
    upload = await claim(svc, who, held, metadata, svc.volume.new_incoming(), keep_parts=True)
    try:
        made = await run_in_threadpool(_create_from_upload, svc, actor, upload, key, None, partial)
    except ApiError as exc:
        raise ApiError(exc.status, exc.code, f"{exc.detail}; what arrived is kept on the server "
                                             "(GET /v1/uploads lists it)", headers=exc.headers) from exc
    await discard_parts(svc, who, held)
    return made


def _finish_parts(store: ResumableUploads, owner: uuid.UUID, parts: list[UploadInfo]) -> list[str]:
    """Declare each part's length as what it holds; returns the ids of the parts that hold bytes, in order."""
    held = []
    for info in parts:
        try:
            with store.lock(info.id, owner, expired_ok=True) as locked:
                size = locked.finish_with_what_arrived()
        except UploadBusy as exc:
            raise ApiError(423, "upload_locked", f"{exc}; retry in a moment") from exc
        except NotFound:
            continue  # claimed or removed meanwhile
        if size > 0:
            held.append(info.id)
    return held


def finish_stalled(ctx: ProcessContext) -> int:
    """The sweep's step: finish every recording that received no byte for ``recording_stall_s``; returns how many.

    Recordings are finished one at a time, each failure logged (error code, upload id) and left
    for the next sweep: their bytes stay. An upload without session metadata has its length
    declared and is kept another ``tus_expiry_s`` (its app can still finish it).
    """
    s = ctx.settings
    store = ResumableUploads(s.tus_dir, s.tus_expiry_s, ctx.volume.ring)
    svc = Services(settings=s, repo=ctx.repo, redis=ctx.redis, queue=ctx.queue, volume=ctx.volume, uploads=store,
                   cleanup=ctx.cleanup, upload_slots=UploadSlots(1),
                   guessing=Guessing(ctx.redis, s.auth_failures_per_min, ctx.repo.url))
    done = 0
    seen: set[tuple[uuid.UUID, str]] = set()
    for info in store.stalled(s.recording_stall_s):
        group = (info.owner, info.metadata.get(RECORDING_KEY) or info.id)
        if group in seen:
            continue
        seen.add(group)
        if SESSION_METADATA_KEY not in info.metadata:
            with contextlib.suppress(NotFound, UploadBusy), store.lock(info.id, info.owner, expired_ok=True) as locked:
                locked.finish_with_what_arrived()
            continue
        try:
            actor = Actor(_system_principal(ctx, info.owner))
            _, created = _run(finish_recording(svc, actor, info.id, "stalled"))
        except ApiError as exc:
            log.warning("stalled_recording_not_finished", upload_id=info.id, error=exc.code, status=exc.status)
            continue
        if created:
            done += 1
            log.info("stalled_recording_finished", upload_id=info.id,
                     idle_s=round(time.time() - store.last_byte_at(info.id), 1))
    return done


def _run(work: Coroutine[Any, Any, T]) -> T:
    """Run the finisher's coroutine from the sweep's plain thread.

    The sweep process has no event loop; a caller that has one running in this thread (a test
    beside a browser driver, an embedding host) gets the coroutine run on a loop of its own thread.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, work).result()


def _system_principal(ctx: ProcessContext, therapist_id: uuid.UUID) -> Principal:
    """The sweep acting for the upload's therapist (scope ``system``: audited as Verbatim's own act)."""
    with db_session(ctx.repo.url) as db:
        clinic = db.execute(select(Therapist.clinic_id).where(Therapist.id == therapist_id)).scalar_one_or_none()
    if clinic is None:
        raise ApiError(404, "not_found", "the upload's therapist is gone")
    return Principal(token_id=SYSTEM_TOKEN, scope="system", therapist_id=therapist_id, clinic_id=clinic)
