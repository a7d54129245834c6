"""Sealed files: AES-256-GCM in fixed-size chunks, appendable, readable at any offset, constant memory.

Why a format of our own: `cryptography` gives the cipher (AESGCM), not a file format, and the
streaming formats that exist (Tink's streaming AEAD, age's STREAM) are written once, front to back.
Verbatim appends to files across requests — every tus PATCH adds bytes to an upload that may stay
open for a day — and PyAV seeks inside a recording while probing it. So a file here is a series
of independently sealed *segments* (one per multipart upload, one per PATCH), each a series of
chunks decrypted on demand::

    file    := segment+
    segment := header chunk+                   the last chunk carries the FINAL flag
    header  := b"VBSEAL1" | u8 n | key id (n ASCII bytes) | 8-byte random nonce prefix
    chunk   := u32 length | u8 flags | ciphertext (length bytes) | 16-byte GCM tag

A chunk's nonce is the segment's prefix followed by the chunk's index in the segment (u32, big
endian); its associated data binds the segment header, the index, the length and the flags. So a
changed byte, a reordered or dropped chunk, a chunk moved from another file or a segment cut short
all fail authentication — `SealedDataError`, never partial data. Each segment takes a fresh random
prefix, so a PATCH that is undone (truncated) and re-sent never reuses a nonce. Plain text never
reaches the disk: the writer holds at most one chunk (``CHUNK_BYTES``) in memory.
"""

from __future__ import annotations

import io
import os
import secrets
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from verbatim.errors import SealedDataError
from verbatim.sealed.ring import KeyRing

MAGIC = b"VBSEAL1"
CHUNK_BYTES = 64 * 1024
"""Plain-text bytes per chunk (the last chunk of a segment may be shorter)."""

TAG_BYTES = 16
_CHUNK_HEAD = struct.Struct(">IB")  # length, flags
_FINAL = 0x01
_PREFIX_BYTES = 8


def _aad(header: bytes, index: int, length: int, flags: int) -> bytes:
    return header + struct.pack(">IIB", index, length, flags)


def _nonce(prefix: bytes, index: int) -> bytes:
    return prefix + struct.pack(">I", index)


class Sink(Protocol):
    """Where a SegmentWriter writes: anything with ``write(bytes)`` (a binary file, an appender)."""

    def write(self, data: bytes, /) -> object: ...


class SegmentWriter:
    """Seal bytes into one new segment at the end of an open binary file (``fh``, positioned at its end).

    `write` seals each full chunk as it fills; `finish` seals the rest as the FINAL chunk. Until
    `finish`, the segment is incomplete and a reader refuses the file: callers finish in a
    ``finally`` (a PATCH cut off keeps what arrived) or, after a crash, cut the file back to the
    segment's start (`scan` tells where it is).
    """

    def __init__(self, fh: Sink, ring: KeyRing, chunk_bytes: int = CHUNK_BYTES):
        current, key = ring.sealing_key()
        key_id = current.encode("ascii")
        self._fh = fh
        self._aead = AESGCM(key)
        self._prefix = secrets.token_bytes(_PREFIX_BYTES)
        self._header = MAGIC + bytes([len(key_id)]) + key_id + self._prefix
        self._chunk_bytes = chunk_bytes
        self._buffer = bytearray()
        self._index = 0
        self._started = False
        self.plain_bytes = 0
        """Plain-text bytes accepted so far (sealed or buffered)."""

    def write(self, data: bytes | memoryview) -> None:
        """Add ``data`` to the segment; full chunks are sealed and written at once."""
        self.plain_bytes += len(data)
        self._buffer += data
        while len(self._buffer) > self._chunk_bytes:
            # ">" not ">=": a full chunk may turn out to be the last one, sealed FINAL by finish().
            self._seal(bytes(self._buffer[: self._chunk_bytes]), final=False)
            del self._buffer[: self._chunk_bytes]

    def finish(self) -> None:
        """Seal what is buffered as the FINAL chunk. A segment that received nothing writes nothing."""
        if not self._started and not self._buffer:
            return
        self._seal(bytes(self._buffer), final=True)
        self._buffer.clear()

    def _seal(self, plain: bytes, *, final: bool) -> None:
        if not self._started:
            self._fh.write(self._header)
            self._started = True
        flags = _FINAL if final else 0
        sealed = self._aead.encrypt(_nonce(self._prefix, self._index),
                                    plain, _aad(self._header, self._index, len(plain), flags))
        self._fh.write(_CHUNK_HEAD.pack(len(plain), flags) + sealed)
        self._index += 1


@dataclass(frozen=True)
class _Chunk:
    plain_start: int  # offset of this chunk's first byte in the file's plain text
    length: int  # plain bytes
    file_pos: int  # where its ciphertext starts in the file
    header: bytes  # its segment's header
    index: int  # its index in the segment
    flags: int


@dataclass(frozen=True)
class Layout:
    """What `scan` found: the chunks, the plain size, the key ids used and where complete data ends.

    ``complete_end`` is the file offset after the last FINAL chunk: everything past it is an
    unfinished segment (a writer killed mid-segment), which a reader refuses and a resumable upload
    cuts away. ``plain_size`` counts complete segments only.
    """

    chunks: tuple[_Chunk, ...]
    plain_size: int
    key_ids: frozenset[str]
    complete_end: int
    file_size: int

    @property
    def complete(self) -> bool:
        return self.complete_end == self.file_size


def scan(fh: BinaryIO) -> Layout:
    """Read a sealed file's structure (headers only: one small read per chunk, no decryption).

    Raises SealedDataError when the bytes are not a sealed file at all (bad magic at a segment start).
    """
    fh.seek(0, os.SEEK_END)
    size = fh.tell()
    chunks: list[_Chunk] = []
    key_ids: set[str] = set()
    pos = plain = complete_end = complete_plain = 0
    pending: list[_Chunk] = []
    while pos < size:
        fh.seek(pos)
        head = fh.read(len(MAGIC) + 1)
        if len(head) < len(MAGIC) + 1:
            break  # a header cut short: an unfinished segment
        if head[: len(MAGIC)] != MAGIC:
            raise SealedDataError(f"not a sealed file, or corrupt at byte {pos}")
        n = head[-1]
        rest = fh.read(n + _PREFIX_BYTES)
        if len(rest) < n + _PREFIX_BYTES:
            break
        header = head + rest
        key_id = rest[:n].decode("ascii", "replace")
        pos += len(header)
        index = 0
        finished = False
        while pos < size:
            fh.seek(pos)
            raw = fh.read(_CHUNK_HEAD.size)
            if len(raw) < _CHUNK_HEAD.size:
                break
            length, flags = _CHUNK_HEAD.unpack(raw)
            end = pos + _CHUNK_HEAD.size + length + TAG_BYTES
            if end > size:
                break
            pending.append(_Chunk(plain, length, pos + _CHUNK_HEAD.size, header, index, flags))
            plain += length
            pos = end
            index += 1
            if flags & _FINAL:
                finished = True
                break
        if not finished:
            break
        chunks.extend(pending)
        pending.clear()
        key_ids.add(key_id)
        complete_end, complete_plain = pos, plain
    return Layout(tuple(chunks), complete_plain, frozenset(key_ids), complete_end, size)


class SealedReader(io.RawIOBase):
    """A sealed file read as its plain text: readable, seekable, one chunk decrypted at a time.

    Raises SealedDataError at open when the file is incomplete or not sealed, and on read when a
    chunk fails authentication (tampered, corrupt, or sealed with a key the ring lacks).
    """

    def __init__(self, path: str | os.PathLike[str], ring: KeyRing):
        super().__init__()
        self.name = os.fspath(path)
        self._fh = open(path, "rb")  # noqa: SIM115 - closed by close()
        try:
            self._layout = scan(self._fh)
            if not self._layout.complete:
                raise SealedDataError(f"{self.name} is cut short (an unfinished segment at byte "
                                      f"{self._layout.complete_end} of {self._layout.file_size})")
        except BaseException:
            self._fh.close()
            raise
        self._ring = ring
        self._pos = 0
        self._cached: tuple[int, bytes] | None = None
        self._aeads: dict[bytes, AESGCM] = {}

    @property
    def size(self) -> int:
        """Plain-text size in bytes."""
        return self._layout.plain_size

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._pos, os.SEEK_END: self.size}[whence]
        self._pos = max(base + offset, 0)
        return self._pos

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        done = 0
        while done < len(view) and self._pos < self.size:
            i = self._chunk_at(self._pos)
            chunk = self._layout.chunks[i]
            plain = self._decrypt(i)
            start = self._pos - chunk.plain_start
            take = min(len(view) - done, chunk.length - start)
            view[done : done + take] = plain[start : start + take]
            done += take
            self._pos += take
        return done

    def close(self) -> None:
        if not self.closed:
            self._fh.close()
        super().close()

    def _chunk_at(self, pos: int) -> int:
        chunks = self._layout.chunks
        lo, hi = 0, len(chunks) - 1
        while lo < hi:  # the last chunk whose start is <= pos (chunks are in plain-text order)
            mid = (lo + hi + 1) // 2
            if chunks[mid].plain_start <= pos:
                lo = mid
            else:
                hi = mid - 1
        # Empty FINAL chunks share their start with the next chunk: step to one that holds pos.
        while chunks[lo].length == 0 or pos >= chunks[lo].plain_start + chunks[lo].length:
            lo += 1
        return lo

    def _decrypt(self, i: int) -> bytes:
        if self._cached is not None and self._cached[0] == i:
            return self._cached[1]
        c = self._layout.chunks[i]
        aead = self._aeads.get(c.header)
        if aead is None:
            n = c.header[len(MAGIC)]
            key_id = c.header[len(MAGIC) + 1 : len(MAGIC) + 1 + n].decode("ascii", "replace")
            aead = self._aeads[c.header] = AESGCM(self._ring.key(key_id))
        self._fh.seek(c.file_pos)
        sealed = self._fh.read(c.length + TAG_BYTES)
        prefix = c.header[-_PREFIX_BYTES:]
        try:
            plain = aead.decrypt(_nonce(prefix, c.index), sealed, _aad(c.header, c.index, c.length, c.flags))
        except InvalidTag:
            raise SealedDataError(f"{self.name}: chunk {c.index} of a segment failed authentication "
                                  "(the file was changed or is corrupt)") from None
        self._cached = (i, plain)
        return plain


def is_sealed(path: str | os.PathLike[str]) -> bool:
    """Whether the file starts like a sealed file (False for a missing or empty file)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(MAGIC)) == MAGIC
    except FileNotFoundError:
        return False


def open_plain(path: str | os.PathLike[str], ring: KeyRing | None) -> BinaryIO:
    """Open a file for reading its plain text: sealed files through `SealedReader`, others as they are.

    Clear files are still read (a recording on a user's own disk, a benchmark clip); what
    Verbatim stores is always sealed. SealedDataError for a sealed file without a ring.
    """
    if is_sealed(path):
        if ring is None:
            raise SealedDataError(f"{os.fspath(path)} is sealed and no key ring was given")
        return io.BufferedReader(SealedReader(path, ring), buffer_size=CHUNK_BYTES)
    return open(path, "rb")  # noqa: SIM115 - the caller closes it


def seal_file(path: Path, chunks: Iterator[bytes] | bytes, ring: KeyRing) -> None:
    """Write ``chunks`` as a new sealed file at ``path`` (created 0600; must not exist), fsynced."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as fh:
        writer = SegmentWriter(fh, ring)
        for chunk in [chunks] if isinstance(chunks, bytes) else chunks:
            writer.write(chunk)
        writer.finish()
        fh.flush()
        os.fsync(fh.fileno())


def write_sealed_atomic(path: Path, data: bytes, ring: KeyRing) -> None:
    """Replace ``path`` with a sealed copy of ``data``: written to a temporary name, fsynced, renamed."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        seal_file(tmp, data, ring)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def read_sealed(path: Path, ring: KeyRing | None) -> bytes:
    """The whole plain text of a (small) file, sealed or not."""
    with open_plain(path, ring) as fh:
        return fh.read()


def iter_plain(path: str | os.PathLike[str], ring: KeyRing | None, size: int = 1024 * 1024) -> Iterator[bytes]:
    """Yield a file's plain text in pieces of up to ``size`` bytes (constant memory)."""
    with open_plain(path, ring) as fh:
        while piece := fh.read(size):
            yield piece
