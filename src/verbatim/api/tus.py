"""``/v1/uploads``: resumable uploads over tus 1.0.0 (core protocol + creation + expiration).

A phone on a bad network sends an hour of audio in pieces. ``POST /v1/uploads`` declares
the length (``Upload-Length``) and answers the upload's URL; ``PATCH`` appends bytes at
``Upload-Offset``; after a cut, ``HEAD`` tells how many bytes arrived and the client resumes
from there. A complete upload becomes a session through ``POST /v1/sessions`` with the JSON
body ``{"upload_id": …, "metadata": {…}}`` (see `claim`): the file is moved into the path a
multipart upload takes and meets the same checks.

Every request except OPTIONS needs ``Tus-Resumable: 1.0.0`` (412 otherwise) and a
therapist's bearer token; an upload is visible only to the therapist who created it (anyone
else gets 404). PATCH bytes go from ``request.stream()`` straight to the data file (memory
stays at one network chunk, ≤ 64 KiB) and are fsynced before the answer — or right after a
cut — so an offset the server once reported is never lost. Storage: `verbatim.resumable`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hashlib
import time
from email.utils import formatdate
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Header, Request, Response
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from verbatim import audit
from verbatim.api.deps import ActorDep, PrincipalDep, Services, ServicesDep
from verbatim.api.errors import ApiError
from verbatim.api.upload import Upload, require_space
from verbatim.auth import Principal
from verbatim.db.engine import db_session
from verbatim.errors import NotFound, SealedDataError, UploadBusy, UploadExpired
from verbatim.resumable import LockedUpload, ResumableUploads, UploadInfo
from verbatim.sealed import KeyRing, iter_plain

router = APIRouter(prefix="/v1/uploads", tags=["uploads"])

TUS_VERSION = "1.0.0"
TUS_EXTENSIONS = "creation,expiration"
OFFSET_OCTET_STREAM = "application/offset+octet-stream"
METADATA_HEADER_MAX = 4096
"""Longest ``Upload-Metadata`` header accepted (bytes): it holds a file name, not a recording."""
LOCK_WAIT_S = 5.0
"""How long HEAD, PATCH and finalize wait for another request to release an upload (seconds):
a PATCH cut a moment ago holds the lock until the server notices the cut and fsyncs."""
PATCH_IDLE_S = 30.0
"""A PATCH that receives nothing for this long is ended (bytes kept, fsynced, lock released),
so a phone that silently lost its connection cannot lock its own resume out for hours."""
HASH_CHUNK = 1024 * 1024


class UploadOut(BaseModel):
    """A resumable upload just created: its id, URL (``Location``), offset and length in bytes."""

    upload_id: str
    location: str
    offset: int
    length: int
    expires_at: str


def _tus(**extra: str) -> dict[str, str]:
    return {"Tus-Resumable": TUS_VERSION, **extra}


def _fail(status: int, code: str, detail: str, **headers: str) -> ApiError:
    """An ApiError that still carries ``Tus-Resumable`` (tus clients read it on every answer)."""
    return ApiError(status, code, detail, headers=_tus(**headers))


def _http_date(ts: float) -> str:
    return formatdate(ts, usegmt=True)


def _state_headers(info: UploadInfo, offset: int) -> dict[str, str]:
    headers = _tus(**{
        "Upload-Offset": str(offset), "Upload-Length": str(info.length),
        "Upload-Expires": _http_date(info.expires_at), "Cache-Control": "no-store",
    })
    if info.metadata:
        headers["Upload-Metadata"] = _encode_metadata(info.metadata)
    return headers


def _require_tus(request: Request) -> None:
    if request.headers.get("tus-resumable") != TUS_VERSION:
        raise _fail(412, "tus_version_unsupported", f"send Tus-Resumable: {TUS_VERSION}",
                    **{"Tus-Version": TUS_VERSION})


def _non_negative(raw: str | None, name: str) -> int:
    """Parse a byte-count header; 400 when missing or not a non-negative integer."""
    if raw is None:
        raise _fail(400, "missing_header", f"the {name} header is required")
    if not raw.isascii() or not raw.isdigit() or len(raw) > 19:
        raise _fail(400, "invalid_header", f"{name} must be a non-negative integer number of bytes")
    return int(raw)


def _decode_metadata(raw: str | None) -> dict[str, str | None]:
    """Parse ``Upload-Metadata`` (``key base64value`` pairs, comma-separated); 400 when malformed."""
    if raw is None or not raw.strip():
        return {}
    if len(raw) > METADATA_HEADER_MAX:
        raise _fail(400, "invalid_upload_metadata", f"Upload-Metadata must be at most {METADATA_HEADER_MAX} bytes")
    out: dict[str, str | None] = {}
    for pair in raw.split(","):
        key, _, value = pair.strip().partition(" ")
        if not key or not key.isascii() or key in out or " " in value.strip():
            raise _fail(400, "invalid_upload_metadata", "Upload-Metadata must be unique `key base64value` pairs")
        if not value.strip():
            out[key] = None
            continue
        try:
            out[key] = base64.b64decode(value.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise _fail(400, "invalid_upload_metadata",
                        f"Upload-Metadata value of {key!r} is not base64 UTF-8") from exc
    return out


def _encode_metadata(metadata: dict[str, str | None]) -> str:
    return ",".join(
        key if value is None else f"{key} {base64.b64encode(value.encode()).decode()}"
        for key, value in metadata.items()
    )


async def _acquire(store: ResumableUploads, upload_id: str, who: Principal) -> LockedUpload:
    """Lock the caller's upload, waiting up to LOCK_WAIT_S for another request to let go.

    Raises ApiError 404 (unknown, or not the caller's), 410 (expired; now deleted),
    423 (still locked after the wait).
    """
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            if who.scope != "therapist" or who.therapist_id is None:
                raise NotFound(f"no upload {upload_id[:64]}")
            return store.lock(upload_id, who.therapist_id)
        except NotFound as exc:
            raise _fail(404, "not_found", str(exc)) from exc
        except UploadExpired as exc:
            raise _fail(410, "upload_expired", str(exc)) from exc
        except UploadBusy as exc:
            if time.monotonic() >= deadline:
                raise _fail(423, "upload_locked", f"{exc}; retry in a moment") from exc
            await asyncio.sleep(0.05)


@router.options("", status_code=204, include_in_schema=False)
@router.options("/{upload_id}", status_code=204, include_in_schema=False)
def discover(svc: ServicesDep) -> Response:
    """tus discovery: protocol version, extensions and the largest upload accepted (bytes)."""
    return Response(status_code=204, headers=_tus(**{
        "Tus-Version": TUS_VERSION, "Tus-Extension": TUS_EXTENSIONS,
        "Tus-Max-Size": str(svc.settings.max_upload_bytes),
    }))


@router.post("", status_code=201, response_model=UploadOut)
def create_upload(
    request: Request,
    response: Response,
    svc: ServicesDep,
    who: PrincipalDep,
    actor: ActorDep,
    upload_length: Annotated[str | None, Header(description="Total size of the recording (bytes)")] = None,
    upload_metadata: Annotated[str | None, Header(description="tus metadata, e.g. `filename <base64>`")] = None,
) -> UploadOut:
    """Start a resumable upload of ``Upload-Length`` bytes; 201 with ``Location`` and ``Upload-Expires``.

    The upload expires ``tus_expiry_s`` (24 h) after creation. Errors: 412 wrong
    Tus-Resumable, 403 not a therapist token, 400 missing/invalid Upload-Length (deferred
    length is not supported), invalid Upload-Metadata or a body sent with the creation,
    413 Upload-Length above ``max_upload_bytes``.
    """
    _require_tus(request)
    if who.scope != "therapist" or who.therapist_id is None:
        raise _fail(403, "forbidden", "only a therapist token can upload recordings")
    if request.headers.get("upload-defer-length") is not None and upload_length is None:
        raise _fail(400, "defer_length_unsupported", "send Upload-Length: deferred lengths are not supported")
    length = _non_negative(upload_length, "Upload-Length")
    limit = svc.settings.max_upload_bytes
    if length > limit:
        raise _fail(413, "too_large", f"recording is larger than the limit of {limit} bytes",
                    **{"Tus-Max-Size": str(limit)})
    metadata = _decode_metadata(upload_metadata)
    sent = request.headers.get("content-length")
    if sent not in (None, "0"):
        raise _fail(400, "creation_with_upload_unsupported", "create the upload with an empty body, then PATCH")
    # Quotas before anything is written: a client cannot reserve the volume with declarations.
    count, declared = svc.uploads.open_for(who.therapist_id)
    if count >= svc.settings.max_open_uploads:
        raise _fail(429, "too_many_open_uploads",
                    f"you have {count} unfinished uploads open; finish or let them expire first")
    if declared + length > svc.settings.max_open_upload_bytes:
        raise _fail(413, "open_uploads_too_large",
                    f"your open uploads would declare {declared + length} bytes; the limit is "
                    f"{svc.settings.max_open_upload_bytes}")
    require_space(svc.settings, length)
    info = svc.uploads.create(who.therapist_id, length, metadata)
    with db_session(svc.repo.url) as db:
        audit.record(db, actor, "upload_created", None, {"upload_id": info.id, "length": length})
    location = f"{router.prefix}/{info.id}"
    response.headers.update(_tus(**{"Location": location, "Upload-Expires": _http_date(info.expires_at)}))
    return UploadOut(upload_id=info.id, location=location, offset=0, length=length,
                     expires_at=_http_date(info.expires_at))


@router.head("/{upload_id}", status_code=200, response_class=Response)
async def upload_offset(upload_id: str, request: Request, svc: ServicesDep, who: PrincipalDep) -> Response:
    """How many bytes of the upload arrived (``Upload-Offset``), of ``Upload-Length``; never cached.

    Errors: 412, 404 (unknown or another therapist's), 410 expired, 423 still being written.
    """
    _require_tus(request)
    with svc.upload_slots.hold(who.token_id), await _acquire(svc.uploads, upload_id, who) as locked:
        return Response(status_code=200, headers=_state_headers(locked.info, locked.offset))


class _TooLong(Exception):
    """The PATCH body runs past the upload's declared length."""


@router.patch("/{upload_id}", status_code=204, response_class=Response)
async def append(upload_id: str, request: Request, svc: ServicesDep, who: PrincipalDep) -> Response:
    """Append the body (``application/offset+octet-stream``) at ``Upload-Offset``; 204 with the new offset.

    The body is written as it arrives and fsynced before the answer. If the connection is
    cut, the bytes that arrived are kept (fsynced): HEAD, then resume. Errors: 412, 415
    wrong Content-Type, 400 missing/invalid Upload-Offset, 404, 410 expired, 423 locked,
    409 ``offset_conflict`` (Upload-Offset is not the current offset; the answer's
    Upload-Offset says what is), 413 ``exceeds_upload_length`` (the PATCH is undone),
    408 ``upload_idle`` (nothing received for PATCH_IDLE_S; bytes kept).
    """
    _require_tus(request)
    content_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if content_type != OFFSET_OCTET_STREAM:
        raise _fail(415, "unsupported_media_type", f"PATCH bodies must be sent as Content-Type: {OFFSET_OCTET_STREAM}")
    sent_offset = _non_negative(request.headers.get("upload-offset"), "Upload-Offset")
    sent_length = request.headers.get("content-length")
    body_length = _non_negative(sent_length, "Content-Length") if sent_length is not None else None
    with await _acquire(svc.uploads, upload_id, who) as locked:
        start, length = locked.offset, locked.info.length
        if sent_offset != start:
            raise _fail(409, "offset_conflict", f"Upload-Offset is {sent_offset} but the upload holds {start} bytes; "
                                                "resume from the offset HEAD reports", **{"Upload-Offset": str(start)})
        if body_length is not None and start + body_length > length:
            raise _fail(413, "exceeds_upload_length", f"{body_length} bytes at offset {start} would pass the "
                                                      f"declared Upload-Length of {length}")
        try:
            await _write_body(request, locked, length)
        except _TooLong as exc:
            # A body longer than declared is not the recording: undo this whole PATCH.
            locked.truncate(start)
            await run_in_threadpool(locked.sync)
            raise _fail(413, "exceeds_upload_length", f"the body runs past the declared Upload-Length of {length}; "
                                                      f"the upload stays at offset {start}") from exc
        except ClientDisconnect as exc:
            # What arrived is a correct prefix of the recording: keep it durably for the resume.
            await run_in_threadpool(locked.sync)
            raise _fail(400, "client_disconnected", f"the connection was cut at offset {locked.offset}; "
                                                    "HEAD and resume") from exc
        except TimeoutError as exc:
            await run_in_threadpool(locked.sync)
            raise _fail(408, "upload_idle", f"no data for {PATCH_IDLE_S:.0f} s; kept {locked.offset} bytes: "
                                            "HEAD and resume") from exc
        except BaseException:
            with contextlib.suppress(OSError):
                locked.sync()  # whatever went wrong (disk full, shutdown), keep what arrived
            raise
        await run_in_threadpool(locked.sync)
        return Response(status_code=204, headers=_state_headers(locked.info, locked.offset))


async def _write_body(request: Request, locked: LockedUpload, length: int) -> None:
    """Write the request body at the upload's end, chunk by chunk, without passing ``length`` bytes.

    Raises _TooLong past ``length``, ClientDisconnect on a cut, TimeoutError after
    PATCH_IDLE_S without data.
    """
    chunks = request.stream().__aiter__()
    while True:
        try:
            async with asyncio.timeout(PATCH_IDLE_S):
                chunk = await anext(chunks)
        except StopAsyncIteration:
            return
        if locked.offset + len(chunk) > length:
            raise _TooLong
        locked.write(chunk)


async def claim(svc: Services, who: Principal, upload_id: str, metadata: dict[str, Any], target: Path) -> Upload:
    """Take the caller's complete upload for a new session: move its data to ``target`` and hash it.

    ``target`` is a fresh path under ``incoming/``; the tus files are gone afterwards (the
    data moved, never copied). Returns the Upload the session path checks and commits.
    Raises ApiError 404 / 410 / 423 as for HEAD, and 409 ``upload_incomplete`` when fewer
    than Upload-Length bytes arrived (the upload is left as it is, to be resumed).
    """
    with await _acquire(svc.uploads, upload_id, who) as locked:
        info = locked.info
        if locked.offset != info.length:
            raise ApiError(409, "upload_incomplete", f"upload {upload_id} holds {locked.offset} of {info.length} "
                                                     "bytes; finish it with PATCH first")
        await run_in_threadpool(locked.move_to, target)
    try:
        size, digest = await run_in_threadpool(_sha256, target, svc.uploads.ring)
    except SealedDataError as exc:
        target.unlink(missing_ok=True)
        raise ApiError(422, "upload_corrupt", f"the stored upload failed its integrity check ({exc}); "
                                              "upload the recording again") from exc
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    return Upload(metadata=metadata, audio=target, size=size, sha256=digest, filename=info.metadata.get("filename"))


def _sha256(path: Path, ring: KeyRing) -> tuple[int, str]:
    """(plain size in bytes, hex SHA-256 of the plain text) of a sealed file, read in 1 MiB pieces."""
    digest = hashlib.sha256()
    size = 0
    for piece in iter_plain(path, ring, HASH_CHUNK):
        digest.update(piece)
        size += len(piece)
    return size, digest.hexdigest()
