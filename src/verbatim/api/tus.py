"""``/v1/uploads``: resumable uploads over tus 1.0.0 — core protocol plus the extensions
creation, creation-defer-length, creation-with-upload, expiration, checksum and termination.

A phone on a bad network sends an hour of audio in pieces. ``POST /v1/uploads`` declares
the length (``Upload-Length``) — or, for a phone still recording, defers it
(``Upload-Defer-Length: 1``) — and answers the upload's URL; it may carry the first bytes
(``Content-Type: application/offset+octet-stream``). ``PATCH`` appends bytes at
``Upload-Offset``, optionally verified (``Upload-Checksum: sha256 <base64>``: a mismatch is
460 and the PATCH is undone); the PATCH that carries ``Upload-Length`` declares a deferred
length. After a cut, ``HEAD`` tells how many bytes arrived and the client resumes from there;
``DELETE`` abandons an upload. A complete upload (length declared, every byte arrived)
becomes a session through ``POST /v1/sessions`` with the JSON body
``{"upload_id": …, "metadata": {…}}`` (see `claim`): the file is moved into the path a
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
import hmac
import json
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
from verbatim.api.session_metadata import validate_metadata
from verbatim.api.upload import Upload, require_space
from verbatim.assemble import assemble
from verbatim.audit import Actor
from verbatim.auth import Principal
from verbatim.db.engine import db_session
from verbatim.errors import AudioUnreadable, NotFound, SealedDataError, UploadBusy, UploadExpired
from verbatim.resumable import SESSION_METADATA_KEY, LockedUpload, ResumableUploads, UploadInfo
from verbatim.sealed import KeyRing, iter_plain
from verbatim.storage import fsync_dir

router = APIRouter(prefix="/v1/uploads", tags=["uploads"])

OPENAPI_TAG = {"name": "uploads", "description": """\
Resumable uploads (tus 1.0.0): creation, creation-defer-length, creation-with-upload,
expiration, checksum (sha1, sha256) and termination. `OPTIONS /v1/uploads` lists them.

**Uploading while recording** (a phone app): the length is not known until the session ends.

1. `POST /v1/uploads` with `Tus-Resumable: 1.0.0`, `Upload-Defer-Length: 1` and, optionally,
   the first second of audio as the body (`Content-Type: application/offset+octet-stream`,
   `Upload-Checksum: sha256 <base64>`). 201; keep `Location` (e.g. `/v1/uploads/3f…`).
2. Each second (or whatever has piled up while offline), `PATCH <Location>` with
   `Upload-Offset: <bytes the server holds>`, `Content-Type: application/offset+octet-stream`,
   `Upload-Checksum: sha256 <base64 of this body>` and the next bytes. 204 with the new
   `Upload-Offset`: everything before it is fsynced and sealed — only now may the phone delete
   those bytes from its own storage. 460: the body was damaged on the way; nothing of it was
   kept, send it again. 409: the answer's `Upload-Offset` is what the server holds; send from there.
3. After a cut, a crash or a server restart: `HEAD <Location>` → `Upload-Offset`, resume from it.
4. When the recording ends, the last `PATCH` also carries `Upload-Length: <total bytes>` (it
   may have an empty body: `Upload-Length` equal to the offset finishes with what arrived).
5. `POST /v1/sessions` with `{"upload_id": "<id>", "metadata": {…}}` (consent, client ids) and
   an `Idempotency-Key`: the session is created and processed like any upload. Before the
   length is declared this is 409 `upload_length_unknown`.

`DELETE <Location>` abandons an upload (204; its bytes are deleted). A deferred-length upload
counts against the therapist's open-upload byte limit by the bytes received so far; a declared
one by its length. Uploads expire `VERBATIM_TUS_EXPIRY_S` after creation (24 h by default).

```
POST /v1/uploads            Upload-Defer-Length: 1             → 201 Location: /v1/uploads/ab12…
PATCH /v1/uploads/ab12…     Upload-Offset: 0      (16 KiB)     → 204 Upload-Offset: 16384
PATCH /v1/uploads/ab12…     Upload-Offset: 16384  (16 KiB)     → 204 Upload-Offset: 32768
HEAD  /v1/uploads/ab12…     (after a network cut)              → 200 Upload-Offset: 32768
PATCH /v1/uploads/ab12…     Upload-Offset: 32768  Upload-Length: 40000  (7232 B) → 204
POST  /v1/sessions          {"upload_id": "ab12…", "metadata": {…}}     → 201 session
```
"""}
"""The OpenAPI description of the uploads tag: the client flow for phone developers."""

TUS_VERSION = "1.0.0"
TUS_EXTENSIONS = "creation,creation-defer-length,creation-with-upload,expiration,checksum,termination"
CHECKSUM_ALGORITHMS = {"sha1": hashlib.sha1, "sha256": hashlib.sha256}
"""``Upload-Checksum`` algorithms accepted (tus requires sha1; phones should send sha256)."""
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
    """A resumable upload just created: its id, URL (``Location``), offset and length in bytes.

    ``length`` is null for a deferred-length upload; ``offset`` is what a creation-with-upload
    body already delivered (0 otherwise).
    """

    upload_id: str
    location: str
    offset: int
    length: int | None
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
        "Upload-Offset": str(offset), "Upload-Expires": _http_date(info.expires_at), "Cache-Control": "no-store",
    })
    if info.length is None:
        headers["Upload-Defer-Length"] = "1"
    else:
        headers["Upload-Length"] = str(info.length)
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


class _Checksum:
    """An ``Upload-Checksum`` (``<algorithm> <base64 digest>``) and the running hash of the body."""

    def __init__(self, raw: str):
        name, _, encoded = raw.strip().partition(" ")
        factory = CHECKSUM_ALGORITHMS.get(name.lower())
        if factory is None:
            raise _fail(400, "checksum_algorithm_unsupported",
                        f"Upload-Checksum algorithm {name[:32]!r} is not supported; use one of "
                        f"{','.join(CHECKSUM_ALGORITHMS)}", **{"Tus-Checksum-Algorithm": ",".join(CHECKSUM_ALGORITHMS)})
        self.hash = factory()
        try:
            self.expected = base64.b64decode(encoded.strip(), validate=True)
        except binascii.Error as exc:
            raise _fail(400, "invalid_checksum", "Upload-Checksum must be `<algorithm> <base64 digest>`") from exc
        if len(self.expected) != self.hash.digest_size:
            raise _fail(400, "invalid_checksum", f"a {name} digest is {self.hash.digest_size} bytes, "
                                                 f"not {len(self.expected)}")

    def matches(self) -> bool:
        return hmac.compare_digest(self.hash.digest(), self.expected)


def _checksum(request: Request) -> _Checksum | None:
    raw = request.headers.get("upload-checksum")
    return None if raw is None else _Checksum(raw)


async def _acquire(store: ResumableUploads, upload_id: str, who: Principal) -> LockedUpload:
    """Lock the caller's upload, waiting up to LOCK_WAIT_S for another request to let go.

    Raises ApiError 404 (unknown, or not the caller's), 410 (expired; now deleted),
    423 (still locked after the wait).
    """
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            # "system": the sweep finishing a recording that stopped arriving (`verbatim.api.recordings`).
            if who.scope not in ("therapist", "system") or who.therapist_id is None:
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
    """tus discovery: protocol version, extensions, checksum algorithms and the largest upload accepted (bytes)."""
    return Response(status_code=204, headers=_tus(**{
        "Tus-Version": TUS_VERSION, "Tus-Extension": TUS_EXTENSIONS,
        "Tus-Max-Size": str(svc.settings.max_upload_bytes),
        "Tus-Checksum-Algorithm": ",".join(CHECKSUM_ALGORITHMS),
    }))


def _declared_length(request: Request, limit: int) -> int | None:
    """The creation's ``Upload-Length``, or None for ``Upload-Defer-Length: 1``; 400 / 413 otherwise."""
    raw, defer = request.headers.get("upload-length"), request.headers.get("upload-defer-length")
    if defer is not None:
        if raw is not None:
            raise _fail(400, "invalid_header", "send either Upload-Length or Upload-Defer-Length: 1, not both")
        if defer.strip() != "1":
            raise _fail(400, "invalid_header", "Upload-Defer-Length must be 1")
        return None
    length = _non_negative(raw, "Upload-Length")
    if length > limit:
        raise _fail(413, "too_large", f"recording is larger than the limit of {limit} bytes",
                    **{"Tus-Max-Size": str(limit)})
    return length


def _room(svc: Services, owner: Any, locked: LockedUpload) -> int:
    """The most bytes this upload may hold in total now: its declared length, or for a deferred
    upload what ``max_upload_bytes`` and the therapist's open-upload byte limit leave."""
    if locked.info.length is not None:
        return locked.info.length
    _, others = svc.uploads.open_for(owner, besides=locked.info.id)
    return min(svc.settings.max_upload_bytes, svc.settings.max_open_upload_bytes - others)


@router.post(
    "", status_code=201, response_model=UploadOut,
    openapi_extra={"requestBody": {"required": False, "content": {OFFSET_OCTET_STREAM: {
        "schema": {"type": "string", "format": "binary"}}}}},
)
async def create_upload(
    request: Request,
    response: Response,
    svc: ServicesDep,
    who: PrincipalDep,
    actor: ActorDep,
    upload_length: Annotated[str | None, Header(description="Total size of the recording (bytes)")] = None,
    upload_defer_length: Annotated[str | None, Header(
        description="`1`: the length is not known yet (a recording still being made); declare it in a later "
                    "PATCH with `Upload-Length`")] = None,
    upload_metadata: Annotated[str | None, Header(description="tus metadata, e.g. `filename <base64>`")] = None,
    upload_checksum: Annotated[str | None, Header(
        description="`sha256 <base64 digest>` of the body, when the creation carries one")] = None,
) -> UploadOut:
    """Start a resumable upload; 201 with ``Location``, ``Upload-Expires`` and ``Upload-Offset``.

    ``Upload-Length`` declares the total size in bytes, or ``Upload-Defer-Length: 1`` leaves
    it to a later PATCH (a phone that uploads while it records). A body sent as
    ``application/offset+octet-stream`` is the upload's first bytes (creation-with-upload):
    the answer's ``Upload-Offset`` says how many were kept. The upload expires
    ``tus_expiry_s`` (24 h) after creation. Errors: 412 wrong Tus-Resumable, 403 not a
    therapist token, 400 missing/invalid Upload-Length or Upload-Defer-Length, invalid
    Upload-Metadata or Upload-Checksum, or a body of another Content-Type, 413 Upload-Length
    above ``max_upload_bytes``, 413/429 the therapist's open-upload limits (declared lengths,
    and the bytes received by deferred uploads), 460 checksum mismatch (the upload exists
    at offset 0: its ``Location`` is in the answer), 507 no room on the volume.
    """
    _require_tus(request)
    if who.scope != "therapist" or who.therapist_id is None:
        raise _fail(403, "forbidden", "only a therapist token can upload recordings")
    limit = svc.settings.max_upload_bytes
    length = _declared_length(request, limit)
    metadata = _decode_metadata(upload_metadata)
    session_metadata = metadata.get(SESSION_METADATA_KEY)
    if session_metadata is not None:  # the recorder's: checked now, while the phone can still fix it
        _check_session_metadata(session_metadata)
    sent = request.headers.get("content-length")
    with_body = sent not in (None, "0") or "chunked" in request.headers.get("transfer-encoding", "").lower()
    if with_body and _content_type(request) != OFFSET_OCTET_STREAM:
        raise _fail(400, "invalid_creation_body", f"a body sent with the creation must be {OFFSET_OCTET_STREAM}")
    body_length = _non_negative(sent, "Content-Length") if with_body and sent is not None else None
    checksum = _checksum(request) if with_body else None
    # Quotas before anything is written: a client cannot reserve the volume with declarations.
    count, counted = svc.uploads.open_for(who.therapist_id)
    if count >= svc.settings.max_open_uploads:
        raise _fail(429, "too_many_open_uploads",
                    f"you have {count} unfinished uploads open; finish or let them expire first")
    wanted = length if length is not None else (body_length or 0)
    if counted + wanted > svc.settings.max_open_upload_bytes:
        raise _fail(413, "open_uploads_too_large",
                    f"your open uploads would hold {counted + wanted} bytes; the limit is "
                    f"{svc.settings.max_open_upload_bytes}")
    if length is not None and body_length is not None and body_length > length:
        raise _fail(413, "exceeds_upload_length", f"the body of {body_length} bytes is longer than the "
                                                  f"declared Upload-Length of {length}")
    require_space(svc.settings, wanted)
    info = await run_in_threadpool(svc.uploads.create, who.therapist_id, length, metadata)
    await run_in_threadpool(_audit, svc, actor, "upload_created", {"upload_id": info.id, "length": length})
    location = f"{router.prefix}/{info.id}"
    where = {"Location": location, "Upload-Expires": _http_date(info.expires_at)}
    offset = 0
    if with_body:
        with await _acquire(svc.uploads, info.id, who) as locked:
            try:
                await _receive(request, svc, who, locked, body_length, checksum)
            except ApiError as exc:
                # The upload exists: the client resumes it (HEAD) instead of creating another.
                exc.headers = {**(exc.headers or {}), **where}
                raise
            offset = locked.offset
    response.headers.update(_tus(**where, **{"Upload-Offset": str(offset)}))
    return UploadOut(upload_id=info.id, location=location, offset=offset, length=length,
                     expires_at=_http_date(info.expires_at))


def _content_type(request: Request) -> str:
    return request.headers.get("content-type", "").partition(";")[0].strip().lower()


@router.head("/{upload_id}", status_code=200, response_class=Response)
async def upload_offset(upload_id: str, request: Request, svc: ServicesDep, who: PrincipalDep) -> Response:
    """How many bytes of the upload arrived (``Upload-Offset``), of ``Upload-Length`` (or
    ``Upload-Defer-Length: 1`` while the length is deferred); never cached.

    Errors: 412, 404 (unknown or another therapist's), 410 expired, 423 still being written.
    """
    _require_tus(request)
    with svc.upload_slots.hold(who.token_id), await _acquire(svc.uploads, upload_id, who) as locked:
        return Response(status_code=200, headers=_state_headers(locked.info, locked.offset))


class _TooLong(Exception):
    """The PATCH body runs past the upload's declared length (or a deferred upload's room)."""


@router.patch("/{upload_id}", status_code=204, response_class=Response)
async def append(
    upload_id: str,
    request: Request,
    svc: ServicesDep,
    who: PrincipalDep,
    upload_offset: Annotated[str | None, Header(description="Bytes the upload holds before this body")] = None,
    upload_length: Annotated[str | None, Header(
        description="Declares a deferred upload's total length (bytes); once set it cannot change")] = None,
    upload_checksum: Annotated[str | None, Header(
        description="`sha256 <base64 digest>` of this body; a mismatch is 460 and the body is discarded")] = None,
) -> Response:
    """Append the body (``application/offset+octet-stream``) at ``Upload-Offset``; 204 with the new offset.

    The body is written as it arrives and fsynced before the answer. If the connection is
    cut, the bytes that arrived are kept (fsynced): HEAD, then resume — unless the PATCH
    carried ``Upload-Checksum``, whose bytes are kept only when they match. ``Upload-Length``
    declares a deferred upload's length (at least the offset after this body). Errors: 412,
    415 wrong Content-Type, 400 missing/invalid Upload-Offset, Upload-Length or
    Upload-Checksum, 400 ``upload_length_fixed`` (a different length than declared), 404,
    410 expired, 423 locked, 409 ``offset_conflict`` (Upload-Offset is not the current
    offset; the answer's Upload-Offset says what is), 413 ``exceeds_upload_length`` (past the
    declared length, ``max_upload_bytes`` or, for a deferred upload, the therapist's
    open-upload bytes; the PATCH is undone), 408 ``upload_idle`` (nothing received for
    PATCH_IDLE_S; bytes kept), 460 ``checksum_mismatch`` (the PATCH is undone), 507.
    """
    _require_tus(request)
    if _content_type(request) != OFFSET_OCTET_STREAM:
        raise _fail(415, "unsupported_media_type", f"PATCH bodies must be sent as Content-Type: {OFFSET_OCTET_STREAM}")
    sent_offset = _non_negative(upload_offset, "Upload-Offset")
    sent_length = request.headers.get("content-length")
    body_length = _non_negative(sent_length, "Content-Length") if sent_length is not None else None
    new_length = _non_negative(upload_length, "Upload-Length") if upload_length is not None else None
    checksum = _checksum(request)
    with await _acquire(svc.uploads, upload_id, who) as locked:
        start = locked.offset
        if sent_offset != start:
            raise _fail(409, "offset_conflict", f"Upload-Offset is {sent_offset} but the upload holds {start} bytes; "
                                                "resume from the offset HEAD reports", **{"Upload-Offset": str(start)})
        if new_length is not None:
            _declare(svc, locked, new_length, start + (body_length or 0))
        elif locked.info.length is None:
            require_space(svc.settings, body_length or 0)
        await _receive(request, svc, who, locked, body_length, checksum)
        return Response(status_code=204, headers=_state_headers(locked.info, locked.offset))


def _declare(svc: Services, locked: LockedUpload, length: int, at_least: int) -> None:
    """Fix the upload's length from a PATCH's ``Upload-Length``; ApiError 400 / 413 when it cannot be."""
    info = locked.info
    if info.length is not None:
        if info.length != length:
            raise _fail(400, "upload_length_fixed", f"the upload's length is already {info.length} bytes and "
                                                    "cannot change")
        return
    if length < at_least:
        raise _fail(400, "invalid_header", f"Upload-Length {length} is shorter than the {at_least} bytes the "
                                           "upload would hold after this PATCH")
    limit = svc.settings.max_upload_bytes
    if length > limit:
        raise _fail(413, "too_large", f"recording is larger than the limit of {limit} bytes",
                    **{"Tus-Max-Size": str(limit)})
    if length > _room(svc, info.owner, locked):
        raise _fail(413, "open_uploads_too_large", f"your open uploads would hold more than "
                                                   f"{svc.settings.max_open_upload_bytes} bytes")
    require_space(svc.settings, length - locked.offset)
    locked.declare_length(length)


async def _receive(request: Request, svc: Services, who: Principal, locked: LockedUpload,
                   body_length: int | None, checksum: _Checksum | None) -> None:
    """Append the request body to the locked upload and fsync; ApiError for every way it can fail.

    A body that would pass the upload's room is refused (413) before a byte is written when
    its length is declared, and undone when it is not; a checksum mismatch (460) is undone; a
    cut or an idle body keeps what arrived (fsynced), unless it carried a checksum.
    """
    start = locked.offset
    assert who.therapist_id is not None
    room = _room(svc, who.therapist_id, locked)
    what = "declared Upload-Length" if locked.info.length is not None else "room your open uploads have left"
    if body_length is not None and start + body_length > room:
        raise _fail(413, "exceeds_upload_length", f"{body_length} bytes at offset {start} would pass the "
                                                  f"{what} ({room} bytes)")

    def undo() -> None:
        locked.truncate(start)
        locked.sync()

    try:
        await _write_body(request, locked, room, checksum)
    except _TooLong as exc:
        # A body longer than declared is not the recording: undo this whole PATCH.
        await run_in_threadpool(undo)
        raise _fail(413, "exceeds_upload_length", f"the body runs past the {what} ({room} bytes); "
                                                  f"the upload stays at offset {start}") from exc
    except (ClientDisconnect, TimeoutError) as exc:
        # What arrived is a correct prefix of the recording: keep it durably for the resume —
        # unless the client asked for it to be verified, which a part cannot be.
        await run_in_threadpool(undo if checksum is not None else locked.sync)
        if isinstance(exc, TimeoutError):
            raise _fail(408, "upload_idle", f"no data for {PATCH_IDLE_S:.0f} s; kept {locked.offset} bytes: "
                                            "HEAD and resume") from exc
        raise _fail(400, "client_disconnected", f"the connection was cut at offset {locked.offset}; "
                                                "HEAD and resume") from exc
    except BaseException:
        with contextlib.suppress(OSError):
            locked.sync()  # whatever went wrong (disk full, shutdown), keep what arrived
        raise
    if checksum is not None and not checksum.matches():
        await run_in_threadpool(undo)
        raise _fail(460, "checksum_mismatch", f"the body does not match its Upload-Checksum; the upload stays at "
                                              f"offset {start}: send the same bytes again")
    await run_in_threadpool(locked.sync)


async def _write_body(request: Request, locked: LockedUpload, room: int, checksum: _Checksum | None) -> None:
    """Write the request body at the upload's end, chunk by chunk, without passing ``room`` bytes.

    Raises _TooLong past ``room``, ClientDisconnect on a cut, TimeoutError after
    PATCH_IDLE_S without data.
    """
    chunks = request.stream().__aiter__()
    while True:
        try:
            async with asyncio.timeout(PATCH_IDLE_S):
                chunk = await anext(chunks)
        except StopAsyncIteration:
            return
        if locked.offset + len(chunk) > room:
            raise _TooLong
        if checksum is not None:
            checksum.hash.update(chunk)
        locked.write(chunk)


@router.delete("/{upload_id}", status_code=204, response_class=Response)
async def terminate(upload_id: str, request: Request, svc: ServicesDep, who: PrincipalDep,
                    actor: ActorDep) -> Response:
    """Abandon an unfinished upload (tus termination): its bytes are deleted; 204.

    Later requests for it answer 404. Errors: 412, 404 (unknown or another therapist's),
    410 expired, 423 still being written.
    """
    _require_tus(request)
    with await _acquire(svc.uploads, upload_id, who) as locked:
        await run_in_threadpool(locked.discard)
    await run_in_threadpool(_audit, svc, actor, "upload_terminated", {"upload_id": upload_id})
    return Response(status_code=204, headers=_tus())


def _audit(svc: Services, actor: Actor, action: str, detail: dict[str, Any]) -> None:
    with db_session(svc.repo.url) as db:
        audit.record(db, actor, action, None, detail)


async def claim(svc: Services, who: Principal, upload_ids: list[str], metadata: dict[str, Any],
                target: Path, keep_parts: bool = False) -> Upload:
    """Take the caller's complete upload(s) for a new session: one recording at ``target``, hashed.

    ``target`` is a fresh path under ``incoming/``. One upload is moved there (never copied).
    Several are the parts of one recording (a phone's recorder restarted mid-session), joined
    in the order given (`verbatim.assemble`: remuxed, timestamps running on) while every part is
    still held; the parts are deleted only after the joined file is durable. The tus files are
    gone afterwards. Returns the Upload the session path checks and commits. Raises ApiError
    404 / 410 / 423 as for HEAD, 409 ``upload_incomplete`` when fewer than Upload-Length bytes
    arrived or ``upload_length_unknown`` when a deferred length was never declared (the
    uploads are left as they are, to be resumed), 422 ``upload_corrupt`` / ``parts_unreadable``.

    ``keep_parts``: the recording is remuxed into ``target`` (one part too) and the uploads stay;
    the caller discards them (`discard_parts`) once a session holding the audio has committed —
    for a recording finished with what arrived, whose parts are the only copy (the phone deleted
    what the server confirmed).
    """
    with contextlib.ExitStack() as held:
        parts = [held.enter_context(await _acquire(svc.uploads, upload_id, who)) for upload_id in upload_ids]
        for locked in parts:
            _require_complete(locked)
        first = parts[0].info
        if len(parts) == 1 and not keep_parts:
            await run_in_threadpool(parts[0].move_to, target)
        else:
            paths = [svc.uploads.data_path(locked.info.id) for locked in parts]
            try:
                await run_in_threadpool(assemble, paths, target, svc.uploads.ring)
            except (AudioUnreadable, SealedDataError) as exc:
                raise ApiError(422, "parts_unreadable", f"the parts of the recording cannot be joined ({exc}); "
                                                        "they are kept: send them again or one at a time") from exc
            fsync_dir(target.parent)
            # The joined recording is durable: only now do its parts go (or later, by the caller).
            for locked in parts if not keep_parts else []:
                await run_in_threadpool(locked.discard)
    try:
        size, digest = await run_in_threadpool(_sha256, target, svc.uploads.ring)
    except SealedDataError as exc:
        target.unlink(missing_ok=True)
        raise ApiError(422, "upload_corrupt", f"the stored upload failed its integrity check ({exc}); "
                                              "upload the recording again") from exc
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    return Upload(metadata=metadata, audio=target, size=size, sha256=digest, filename=first.metadata.get("filename"))


async def discard_parts(svc: Services, who: Principal, upload_ids: list[str]) -> None:
    """Delete uploads whose audio a committed session now holds (`claim` with ``keep_parts``).

    One already gone is skipped. Raises ApiError 423 when one is still locked after the wait
    (it stays; the stall sweep, or a second finish, deletes it once its session is found).
    """
    for upload_id in upload_ids:
        try:
            locked = await _acquire(svc.uploads, upload_id, who)
        except ApiError as exc:
            if exc.status in (404, 410):
                continue
            raise
        with locked:
            await run_in_threadpool(locked.discard)


def _check_session_metadata(raw: str) -> None:
    """ApiError 422 (``invalid_metadata`` / ``missing_consent``) unless ``raw`` is a valid session metadata object."""
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise _fail(422, "invalid_metadata", "Upload-Metadata 'session' is not JSON") from exc
    if not isinstance(value, dict):
        raise _fail(422, "invalid_metadata", "Upload-Metadata 'session' must be a JSON object")
    try:
        validate_metadata(value)
    except ApiError as exc:
        raise _fail(exc.status, exc.code, f"Upload-Metadata 'session': {exc.detail}") from exc


def _require_complete(locked: LockedUpload) -> None:
    """ApiError 409 unless the upload's length is declared and every byte of it arrived."""
    info = locked.info
    if info.length is None:
        raise ApiError(409, "upload_length_unknown",
                       f"upload {info.id} holds {locked.offset} bytes but its length was deferred and never "
                       "declared; send a PATCH with Upload-Length (the offset, to finish with what arrived) first")
    if locked.offset != info.length:
        raise ApiError(409, "upload_incomplete", f"upload {info.id} holds {locked.offset} of {info.length} "
                                                 "bytes; finish it with PATCH first")


def _sha256(path: Path, ring: KeyRing) -> tuple[int, str]:
    """(plain size in bytes, hex SHA-256 of the plain text) of a sealed file, read in 1 MiB pieces."""
    digest = hashlib.sha256()
    size = 0
    for piece in iter_plain(path, ring, HASH_CHUNK):
        digest.update(piece)
        size += len(piece)
    return size, digest.hexdigest()
