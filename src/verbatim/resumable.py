"""Resumable (tus) uploads in progress: kept apart from finished audio until a session claims them.

Layout under ``settings.tus_dir`` (never ``incoming/`` or ``audio/``)::

    <id>.json   owner (therapist id), declared length (bytes, or null while deferred), tus
                metadata, created and expiry times (Unix seconds); sealed. Written atomically
                before the data file, and once more when a deferred length is declared.
    <id>.bin    the bytes received so far, sealed (`verbatim.sealed`): each PATCH appends its own
                segments (a new one every SEGMENT_BYTES), so no received byte is ever on disk in
                clear, and the plain size of its complete segments *is* the upload offset.

A deferred-length upload (tus ``creation-defer-length``: a phone still recording) grows the
same way; its length is declared by a later PATCH, under the upload's lock.

A PATCH whose process was killed mid-segment leaves an unfinished segment: the next request
that takes the lock cuts the file back to its last complete segment (the client's HEAD then
reports that offset and it resumes from there; what was cut was never acknowledged).

The id is 32 random hex digits chosen here, and a path is only ever built from a string
that matched that pattern: nothing a client sends becomes a path. An exclusive ``flock`` on
the data file serialises writers (PATCH), readers that need a settled offset (HEAD), the
finalize that moves the file away and the sweep that deletes it. ``flock`` locks belong to
the open file description, so they exclude other coroutines of this process as well as
other API processes. An upload that has been claimed leaves by ``rename`` into
``incoming/`` (same volume): moved, never copied.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from verbatim.errors import NotFound, SealedDataError, UploadBusy, UploadExpired
from verbatim.sealed import KeyRing, SegmentWriter, read_sealed, write_sealed_atomic
from verbatim.sealed.stream import scan
from verbatim.storage import fsync_dir, private_dir

SEGMENT_BYTES = 8 * 1024 * 1024
"""A long PATCH closes a segment every this many bytes: a killed process loses at most this much."""

SESSION_METADATA_KEY = "session"
"""``Upload-Metadata`` key of the session's metadata (JSON: consent, client ids), sent at creation by a
recorder so that a recording that stops arriving can still become a session."""

UPLOAD_ID = re.compile(r"[0-9a-f]{32}")
"""What an upload id looks like (``secrets.token_hex(16)``); anything else is unknown."""


@dataclass(frozen=True)
class UploadInfo:
    """What was declared when an upload was created (and, once, its deferred length).

    ``length`` is the declared total size in bytes, or None while deferred (the client
    declares it in a later PATCH; it never changes once set); ``metadata`` the decoded tus
    ``Upload-Metadata`` pairs (value None for a key sent without one); ``created_at`` and
    ``expires_at`` are Unix times in seconds.
    """

    id: str
    owner: uuid.UUID
    length: int | None
    metadata: dict[str, str | None]
    created_at: float
    expires_at: float

    @property
    def deferred(self) -> bool:
        """Whether the total length is still unknown (a recording still being made)."""
        return self.length is None

    @property
    def finished_when_stalled(self) -> bool:
        """Whether this upload, holding bytes, is finished with what arrived rather than deleted when it
        stops arriving: a deferred length (a phone still recording), or a recorder's part (its
        ``Upload-Metadata`` carries the session's metadata under ``session``)."""
        return self.deferred or SESSION_METADATA_KEY in self.metadata

    def expired(self, now: float | None = None) -> bool:
        """Whether the upload is past its expiry time (``now`` defaults to the current time)."""
        return (time.time() if now is None else now) >= self.expires_at


class _Appender:
    """Writes at the end of a file descriptor (what SegmentWriter writes into)."""

    def __init__(self, fd: int, end: int):
        self.fd = fd
        self.end = end

    def write(self, data: bytes) -> int:
        view = memoryview(data)
        while view:
            written = os.pwrite(self.fd, view, self.end)
            self.end += written
            view = view[written:]
        return len(data)


class LockedUpload:
    """An upload whose lock this object holds; use as a context manager (the lock goes on exit).

    Bytes are sealed and appended at the end of the data file, so the offset only ever grows by
    what was received in order — except `truncate`, used to undo a rejected PATCH.
    """

    def __init__(self, store: ResumableUploads, info: UploadInfo, fd: int):
        self.store = store
        self.info = info
        self._fd: int | None = fd
        with open(fd, "rb", closefd=False) as fh:
            layout = scan(fh)
        if not layout.complete:
            # A PATCH killed mid-segment: what it wrote was never acknowledged, so it goes.
            os.ftruncate(fd, layout.complete_end)
            os.fsync(fd)
        self._out = _Appender(fd, layout.complete_end)
        self._sealed_plain = layout.plain_size  # plain bytes in finished segments
        self._writer: SegmentWriter | None = None
        self._undo: tuple[int, int] | None = None  # (file end, plain size) when this PATCH began

    @property
    def offset(self) -> int:
        """Bytes received so far (plain text, sealed or about to be)."""
        return self._sealed_plain + (self._writer.plain_bytes if self._writer is not None else 0)

    def write(self, data: bytes) -> None:
        """Append ``data`` at the current offset, sealed (not yet durable: call `sync`)."""
        self._require_fd()
        if self._undo is None:
            self._undo = (self._out.end, self._sealed_plain)
        if self._writer is None:
            self._writer = SegmentWriter(self._out, self.store.ring)
        self._writer.write(data)
        if self._writer.plain_bytes >= SEGMENT_BYTES:
            self._finish_segment()

    def truncate(self, size: int) -> None:
        """Undo this request's writes, back to ``size`` (the offset when it began)."""
        end, plain = self._undo if self._undo is not None else (self._out.end, self._sealed_plain)
        if size != plain:
            raise ValueError(f"can only undo back to offset {plain}, not {size}")
        self._writer = None
        os.ftruncate(self._require_fd(), end)
        self._out.end, self._sealed_plain = end, plain

    def sync(self) -> None:
        """Seal what is buffered and fsync: every byte counted in `offset` survives a crash from here on."""
        self._finish_segment()
        os.fsync(self._require_fd())

    def _finish_segment(self) -> None:
        if self._writer is not None:
            self._writer.finish()
            self._sealed_plain += self._writer.plain_bytes
            self._writer = None

    def declare_length(self, length: int) -> None:
        """Fix a deferred upload's total length (bytes, ≥ the offset); written durably before returning.

        Raises ValueError when the length is already declared (as another value) or is below
        the bytes already received.
        """
        self._require_fd()
        if self.info.length is not None:
            if self.info.length != length:
                raise ValueError(f"the upload's length is already {self.info.length}")
            return
        if length < self.offset:
            raise ValueError(f"the upload already holds {self.offset} bytes")
        info = replace(self.info, length=length)
        self.store.write_info(info)
        self.info = info

    def finish_with_what_arrived(self) -> int:
        """Declare a deferred upload's length as the bytes it holds (durably); returns the bytes held.

        The upload is then complete (a declared one keeps its length): a recording that stopped
        arriving is finalized from what arrived, never deleted because its end did not. Its expiry
        moves to at least ``expiry_s`` from now, so that it can still be claimed.
        """
        self.sync()
        # Finished now: it may be claimed for another expiry period (by the finisher, or an app itself).
        info = replace(self.info, length=self.offset if self.info.length is None else self.info.length,
                       expires_at=max(self.info.expires_at, time.time() + self.store.expiry_s))
        if info != self.info:
            self.store.write_info(info)
            self.info = info
        return self.offset

    def move_to(self, target: Path) -> None:
        """fsync, then rename the data file to ``target`` (same volume) and drop the info file.

        ``target`` must not exist (it is a fresh ``incoming/`` name). The rename and both
        folders are fsynced before the info file goes, so a crash leaves either the upload or
        the moved file, and at worst an info file the expiry sweep removes.
        """
        self.sync()
        os.replace(self.store.data_path(self.info.id), target)
        # rename keeps the last PATCH's mtime: the orphan sweep's grace must count from now.
        os.utime(target)
        fsync_dir(target.parent)
        fsync_dir(self.store.folder)
        self.store.info_path(self.info.id).unlink(missing_ok=True)
        fsync_dir(self.store.folder)

    def discard(self) -> None:
        """Delete the upload's data and info files."""
        self._writer = None
        self.store.data_path(self.info.id).unlink(missing_ok=True)
        self.store.info_path(self.info.id).unlink(missing_ok=True)
        fsync_dir(self.store.folder)

    def close(self) -> None:
        """Release the lock (closing the descriptor releases the flock)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _require_fd(self) -> int:
        if self._fd is None:
            raise ValueError("the upload's lock was released")
        return self._fd

    def __enter__(self) -> LockedUpload:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: how many times ``lock`` follows a data file swapped under it (a key rotation re-sealing it) before answering busy
LOCK_SWAPS = 5


class ResumableUploads:
    """The store of resumable uploads under ``folder``; each expires ``expiry_s`` seconds after creation."""

    def __init__(self, folder: Path, expiry_s: float, ring: KeyRing):
        self.folder = folder
        self.expiry_s = expiry_s
        self.ring = ring
        private_dir(folder)

    def data_path(self, upload_id: str) -> Path:
        return self.folder / f"{upload_id}.bin"

    def info_path(self, upload_id: str) -> Path:
        return self.folder / f"{upload_id}.json"

    def create(self, owner: uuid.UUID, length: int | None, metadata: dict[str, str | None]) -> UploadInfo:
        """Register a new upload of ``length`` bytes (None: deferred) for ``owner``; returns its info (offset 0).

        The info file is written and fsynced before the empty data file exists, so an upload
        is never visible without knowing whose it is.
        """
        now = time.time()
        info = UploadInfo(secrets.token_hex(16), owner, length, dict(metadata), now, now + self.expiry_s)
        self.write_info(info)
        fd = os.open(self.data_path(info.id), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        os.close(fd)
        fsync_dir(self.folder)
        return info

    def write_info(self, info: UploadInfo) -> None:
        """Write (or replace) the upload's info file atomically, sealed, fsynced."""
        record = asdict(info) | {"owner": str(info.owner)}
        # Sealed: the metadata may name the client or the file.
        write_sealed_atomic(self.info_path(info.id), json.dumps(record).encode(), self.ring)

    def open_for(self, owner: uuid.UUID, *, besides: str | None = None) -> tuple[int, int]:
        """(how many unexpired uploads ``owner`` has open, the bytes they count for in total).

        A declared upload counts for its declared length; a deferred one for the bytes it
        received so far (so a recording in progress reserves nothing it has not sent).
        ``besides``: an upload id left out of both figures (the one the caller holds locked).
        """
        count = counted = 0
        now = time.time()
        for path in self.folder.glob("*.json"):
            if path.stem == besides:
                continue
            info = self.info(path.stem)
            if info is not None and info.owner == owner and not info.expired(now):
                count += 1
                counted += info.length if info.length is not None else self.received(info.id)
        return count, counted

    def received(self, upload_id: str) -> int:
        """Bytes an upload holds in finished segments, read without its lock (headers only).

        A PATCH writing meanwhile may add more; a file that cannot be read counts its size on
        disk (an upper bound: sealing only adds bytes).
        """
        path = self.data_path(upload_id)
        try:
            with open(path, "rb") as fh:
                return scan(fh).plain_size
        except SealedDataError:
            return _size(path)
        except OSError:
            return 0

    def of(self, owner: uuid.UUID) -> list[UploadInfo]:
        """Every upload of ``owner`` still held (expired ones too, until the sweep removes them), oldest first."""
        found = [info for info in (self.info(p.stem) for p in self.folder.glob("*.json"))
                 if info is not None and info.owner == owner]
        return sorted(found, key=lambda i: i.created_at)

    def last_byte_at(self, upload_id: str) -> float:
        """When the upload last received a byte (Unix seconds: its data file's mtime; 0 when gone)."""
        return _mtime(self.data_path(upload_id))

    def stalled(self, stall_s: float, now: float | None = None) -> list[UploadInfo]:
        """Uploads `finished_when_stalled` holding bytes that received none for ``stall_s`` seconds, or expired.

        These are recordings that stopped arriving (a phone that died, a browser never reopened):
        the caller finishes them with what arrived. Oldest first by creation.
        """
        now = time.time() if now is None else now
        found = []
        for path in self.folder.glob("*.json"):
            info = self.info(path.stem)
            if info is None or not info.finished_when_stalled or self.received(info.id) == 0:
                continue
            if self.last_byte_at(info.id) <= now - stall_s or info.expired(now):
                found.append(info)
        return sorted(found, key=lambda i: i.created_at)

    def info(self, upload_id: str) -> UploadInfo | None:
        """The upload's info, or None when the id is malformed, unknown or its info unreadable."""
        if not UPLOAD_ID.fullmatch(upload_id):
            return None
        try:
            raw: dict[str, Any] = json.loads(read_sealed(self.info_path(upload_id), self.ring))
            return UploadInfo(
                id=upload_id, owner=uuid.UUID(raw["owner"]),
                length=None if raw["length"] is None else int(raw["length"]),
                metadata=dict(raw["metadata"]), created_at=float(raw["created_at"]),
                expires_at=float(raw["expires_at"]),
            )
        except (OSError, ValueError, KeyError, TypeError, SealedDataError):
            return None

    def lock(self, upload_id: str, owner: uuid.UUID, *, expired_ok: bool = False) -> LockedUpload:
        """Take the upload's lock without waiting; returns the LockedUpload.

        ``expired_ok``: lock an expired upload too (to finish a recording that stopped arriving).

        Raises NotFound (unknown id, or another therapist's upload — the two are not told
        apart), UploadBusy (another request holds the lock), UploadExpired (past its expiry:
        the upload is deleted first).
        """
        info = self.info(upload_id)
        if info is None or info.owner != owner:
            raise NotFound(f"no upload {upload_id[:64]}")
        path = self.data_path(upload_id)
        for _ in range(LOCK_SWAPS):
            try:
                fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
            except FileNotFoundError as exc:
                raise NotFound(f"no upload {upload_id}") from exc
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                os.close(fd)
                raise UploadBusy(f"upload {upload_id} is in use by another request") from exc
            locked = LockedUpload(self, info, fd)
            # The file may have been claimed or deleted between our open and our flock: then the
            # descriptor points at a file that is no longer this upload's. Or a key rotation
            # swapped a re-sealed copy in (same upload, new inode): then lock that one instead.
            try:
                same = os.stat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                locked.close()
                raise NotFound(f"no upload {upload_id}") from None
            if same:
                break
            locked.close()
        else:
            raise UploadBusy(f"upload {upload_id} is being re-sealed; try again")
        if info.expired() and not expired_ok:
            if info.finished_when_stalled and locked.offset > 0:
                # A recording that stopped arriving: finished with what arrived, never deleted.
                locked.close()
                raise UploadExpired(f"upload {upload_id} expired; what arrived is finished as a partial recording")
            locked.discard()
            locked.close()
            raise UploadExpired(f"upload {upload_id} expired; start a new one")
        return locked

    def delete_expired(self, now: float | None = None) -> int:
        """Delete expired uploads and debris; returns how many uploads were removed.

        Expired: past the info's expiry time. Debris (files whose info is missing or
        unreadable, left by a crash mid-create or mid-finalize) goes once every file of it is
        older than ``expiry_s``. An upload whose lock is held is left for the next sweep. A
        deferred-length upload (or a recorder's part) that holds bytes is never deleted here
        (write before delete): it is a recording that stopped arriving, which `stalled` hands on
        to be finished.
        """
        now = time.time() if now is None else now
        groups: dict[str, list[Path]] = defaultdict(list)
        for entry in self.folder.iterdir():
            if entry.is_file():
                groups[entry.name.split(".", 1)[0]].append(entry)
        removed = 0
        for stem, paths in groups.items():
            info = self.info(stem)
            stale = all(_mtime(p) < now - self.expiry_s for p in paths)
            expired = info.expired(now) if info is not None else stale
            if not expired or (info is not None and info.finished_when_stalled and self.received(stem) > 0):
                continue
            with self._try_flock(self.data_path(stem)) as free:
                if not free:
                    continue
                for path in paths:
                    path.unlink(missing_ok=True)
            removed += 1
        if removed:
            fsync_dir(self.folder)
        return removed

    @contextlib.contextmanager
    def _try_flock(self, path: Path) -> Iterator[bool]:
        """Yield True holding the file's lock (or when there is no such file), False when it is busy."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            yield True
            return
        except OSError:  # e.g. a symlink someone planted: not ours to follow, but ours to delete
            yield True
            return
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            yield True
        finally:
            os.close(fd)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return 0.0
