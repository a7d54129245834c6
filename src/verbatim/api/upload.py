"""Streaming multipart upload: parse the body as it arrives, write audio to disk in chunks.

Starlette's ``request.form()`` spools the whole body before any limit is checked; here
python-multipart's streaming parser runs over ``request.stream()``, the audio part goes
straight to ``incoming/<random>.part``, sealed chunk by chunk (constant memory, SHA-256 and
size of the plain audio computed on the way) and the size limit answers 413 the moment it is
passed. Whatever goes wrong, the partial file is removed before the error is returned. The file is fsynced by
``AudioVolume.commit``, off the event loop, not here: an fsync of a 1 GiB file on the loop
would stall every other request for seconds.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import Request
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, MultipartState, parse_options_header
from starlette.requests import ClientDisconnect

from verbatim.api.errors import ApiError
from verbatim.config import Settings
from verbatim.sealed import KeyRing, SegmentWriter

METADATA_MAX_BYTES = 64 * 1024


@dataclass
class Upload:
    """A fully received recording, from either upload path, before any check.

    ``metadata`` is the client's JSON object (not yet validated); ``audio`` a file under
    ``incoming/`` that the caller must commit or delete; ``size`` its length in bytes;
    ``sha256`` its hex digest; ``filename`` the client's name for it — informational only,
    never used as a path.
    """

    metadata: dict[str, Any]
    audio: Path
    size: int
    sha256: str
    filename: str | None


class _Receiver:
    """Callbacks for MultipartParser: routes the ``audio`` part to disk, ``metadata`` to memory."""

    def __init__(self, target: Path, max_bytes: int, ring: KeyRing, parts: tuple[str, str]):
        self.target = target
        self.file_part, self.json_part = parts
        self.ring = ring
        self.sealer: Any = None
        self.max_bytes = max_bytes
        self.header_field = b""
        self.header_value = b""
        self.headers: dict[bytes, bytes] = {}
        self.part: str | None = None
        self.filename: str | None = None
        self.metadata = bytearray()
        self.metadata_seen = False
        self.audio_file: Any = None
        self.audio_seen = False
        self.size = 0
        self.digest = hashlib.sha256()

    def callbacks(self) -> dict[str, Any]:
        return {
            "on_part_begin": self.on_part_begin,
            "on_header_field": lambda d, s, e: setattr(self, "header_field", self.header_field + d[s:e]),
            "on_header_value": lambda d, s, e: setattr(self, "header_value", self.header_value + d[s:e]),
            "on_header_end": self.on_header_end,
            "on_headers_finished": self.on_headers_finished,
            "on_part_data": self.on_part_data,
            "on_part_end": self.on_part_end,
        }

    def on_part_begin(self) -> None:
        self.headers = {}
        self.part = None

    def on_header_end(self) -> None:
        self.headers[self.header_field.lower()] = self.header_value
        self.header_field = self.header_value = b""

    def on_headers_finished(self) -> None:
        _, options = parse_options_header(self.headers.get(b"content-disposition", b""))
        name = options.get(b"name", b"").decode("utf-8", "replace")
        if name == self.file_part:
            if self.audio_seen:
                raise ApiError(400, f"duplicate_{name}", f"send exactly one `{name}` part")
            self.audio_seen = True
            raw = options.get(b"filename")
            self.filename = raw.decode("utf-8", "replace") if raw is not None else None
            # O_EXCL on a random name: never follows a link, never overwrites anything.
            fd = os.open(self.target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            self.audio_file = os.fdopen(fd, "wb")
            self.sealer = SegmentWriter(self.audio_file, self.ring)
        elif name == self.json_part:
            if self.metadata_seen:
                raise ApiError(400, f"duplicate_{name}", f"send exactly one `{name}` part")
            self.metadata_seen = True
        else:
            raise ApiError(400, "unexpected_part",
                           f"unexpected form part {name!r}: send `{self.file_part}` and `{self.json_part}`")
        self.part = name

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        chunk = data[start:end]
        if self.part == self.file_part:
            self.size += len(chunk)
            if self.size > self.max_bytes:
                raise ApiError(413, "too_large", f"recording is larger than the limit of {self.max_bytes} bytes")
            self.digest.update(chunk)
            self.sealer.write(chunk)
        elif self.part == self.json_part:
            self.metadata += chunk
            if len(self.metadata) > METADATA_MAX_BYTES:
                raise ApiError(413, "metadata_too_large", "metadata must be at most 64 KiB")

    def on_part_end(self) -> None:
        if self.part == self.file_part and self.audio_file is not None:
            self.sealer.finish()
            self.audio_file.close()
            self.audio_file = None
        self.part = None

    def close(self) -> None:
        if self.audio_file is not None:
            self.audio_file.close()
            self.audio_file = None


async def receive(request: Request, target: Path, max_bytes: int, ring: KeyRing, idle_s: float = 30.0,
                  parts: tuple[str, str] = ("audio", "metadata")) -> Upload:
    """Stream a ``multipart/form-data`` body with parts ``audio`` (file) and ``metadata`` (JSON).

    ``parts`` renames the two (the local recognizer takes Speechmatics' ``data_file`` and ``config``).

    Returns the Upload with the audio at ``target``, sealed with ``ring`` (written, not yet fsynced). Raises
    ApiError — 415 (not multipart), 413 (too large), 400 (malformed, missing or duplicate
    part, body cut short, client disconnected), 408 (no data for ``idle_s`` seconds: a client
    that declared 100 MB and went silent does not hold the connection and its file), 422
    (metadata missing or not a JSON object) — and then no file is left at ``target``.
    """
    content_type, options = parse_options_header(request.headers.get("content-type", ""))
    if content_type != b"multipart/form-data" or not options.get(b"boundary"):
        raise ApiError(415, "unsupported_media_type", "send multipart/form-data with `audio` and `metadata` parts")
    length = request.headers.get("content-length")
    if length and length.isdigit() and int(length) > max_bytes + METADATA_MAX_BYTES + 65536:
        raise ApiError(413, "too_large", f"request body is larger than the limit of {max_bytes} bytes")
    receiver = _Receiver(target, max_bytes, ring, parts)
    try:
        parser = MultipartParser(options[b"boundary"], receiver.callbacks())  # type: ignore[arg-type]
        chunks = request.stream().__aiter__()
        while True:
            try:
                async with asyncio.timeout(idle_s):
                    chunk = await anext(chunks)
            except StopAsyncIteration:
                break
            except TimeoutError as exc:
                raise ApiError(408, "upload_idle", f"no data for {idle_s:.0f} s; send the upload again") from exc
            parser.write(chunk)
        parser.finalize()
        receiver.close()
        if not receiver.audio_seen:
            raise ApiError(400, f"missing_{parts[0]}", f"the form has no `{parts[0]}` file part")
        # python-multipart's finalize() does not check for the closing boundary: a body that
        # stops between parts or inside one would otherwise pass as complete.
        if receiver.part is not None or parser.state != MultipartState.END:
            raise ApiError(400, "truncated_body", "the multipart body ended before its closing boundary")
        metadata = _parse_metadata(bytes(receiver.metadata), parts[1])
    except ClientDisconnect as exc:
        _discard(receiver, target)
        raise ApiError(400, "client_disconnected", "the upload was cut off before it finished; retry it") from exc
    except FormParserError as exc:  # MultipartParseError, a boundary over 256 bytes, …
        _discard(receiver, target)
        raise ApiError(400, "malformed_multipart", f"the multipart body could not be parsed: {exc}") from exc
    except BaseException:
        _discard(receiver, target)
        raise
    return Upload(metadata, target, receiver.size, receiver.digest.hexdigest(), receiver.filename)


def require_space(settings: Settings, incoming_bytes: int) -> None:
    """ApiError 507 unless the audio volume can take ``incoming_bytes`` and keep ``min_free_bytes`` free."""
    free = shutil.disk_usage(settings.data_dir).free
    if free - incoming_bytes < settings.min_free_bytes:
        raise ApiError(507, "insufficient_storage",
                       "the server has no room for this recording right now; try again later")


def _parse_metadata(raw: bytes, name: str) -> dict[str, Any]:
    if not raw.strip():
        raise ApiError(422, f"missing_{name}", f"the form needs a `{name}` part holding JSON")
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ApiError(422, f"{name}_not_json", f"{name} is not valid JSON: {exc}") from exc
    except RecursionError as exc:  # "[" × 60 000: nested past what any metadata needs
        raise ApiError(422, f"{name}_not_json", f"{name} is nested too deeply") from exc
    if not isinstance(value, dict):
        raise ApiError(422, f"{name}_not_object", f"{name} must be a JSON object")
    return value


def _discard(receiver: _Receiver, target: Path) -> None:
    receiver.close()
    target.unlink(missing_ok=True)
