"""The key ring: AES-256 keys by id, the newest sealing new files, every older one still opening old ones.

Sources, in order:

1. ``VERBATIM_ENCRYPTION_KEYS`` — ``id:base64key[,id:base64key…]``, newest last (a secret store
   or orchestrator injects it; rotation means appending a key there, then ``verbatim keys rotate``).
2. ``VERBATIM_KEY_FILE`` — a JSON ring file (below); ``verbatim keys rotate`` adds a key to it.
3. Development mode only: ``<data_dir>/keys/ring.json``, generated on first use.

In production with neither 1 nor 2, processes refuse to start (`Settings.refuse_default_secrets`).

Ring file (mode 0600 in a 0700 folder)::

    {"version": 1, "current": "k2", "keys": {"k1": {"key": "<base64>", "created_at": "…"}, "k2": {…}}}

**A lost key loses every session sealed with it**, so nothing here removes a key: `add_key` and
`import_keys` only ever add, writing the whole ring to a temporary file, fsyncing it and renaming
it over the old one (a crash leaves the old ring or the new, never half of one). `export_ring`
writes the backup an operator keeps off the machine.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import secrets
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verbatim.errors import KeyMissing, KeyRingError

if TYPE_CHECKING:
    from verbatim.config import Settings

KEY_BYTES = 32
"""AES-256: every key is 32 bytes."""

KEY_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What a key id looks like (it is written, in ASCII, in every sealed segment's header)."""


@dataclass(frozen=True)
class KeyRing:
    """Keys by id (``bytes`` of length 32) and the id of the one that seals new data (``current``).

    A ring read from a file (``path``) follows that file: when ``verbatim keys rotate`` adds a key
    while processes run, `key` and `sealing_key` see it (one ``stat`` per call, a re-read when the
    file changed). So a running API seals new uploads under the new key at once, and a running
    recognizer opens the job files a rotation re-sealed — no process ever meets a key it lacks.
    """

    keys: Mapping[str, bytes]
    current: str
    source: str = field(default="", compare=False)
    path: Path | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.current not in self.keys:
            raise KeyRingError(f"the key ring's current key {self.current!r} is not in the ring")
        for key_id, key in self.keys.items():
            if not KEY_ID.fullmatch(key_id):
                raise KeyRingError(f"key id {key_id!r} must be 1–64 letters, digits, '-' or '_'")
            if len(key) != KEY_BYTES:
                raise KeyRingError(f"key {key_id!r} is {len(key)} bytes; AES-256 keys are {KEY_BYTES}")

    def latest(self) -> KeyRing:
        """This ring, or its file's newer content when the file changed since (keys are only ever added)."""
        if self.path is None:
            return self
        try:
            mtime = self.path.stat().st_mtime_ns
        except OSError:
            return self
        cached = _FOLLOWED.get(self.path)
        if cached is None or cached[0] != mtime:
            try:
                fresh = read_ring_file(self.path)
            except KeyRingError:
                return self  # mid-replace or damaged: keep what we had
            cached = _FOLLOWED[self.path] = (mtime, fresh)
        return cached[1]

    def sealing_key(self) -> tuple[str, bytes]:
        """(id, key) that seals new data now: the newest current key of the ring (file)."""
        ring = self.latest()
        return ring.current, ring.keys[ring.current]

    def key(self, key_id: str) -> bytes:
        """The key with this id; KeyMissing (a SealedDataError) when the ring lacks it (lost or not imported)."""
        if key_id in self.keys:
            return self.keys[key_id]
        try:
            return self.latest().keys[key_id]
        except KeyError:
            raise KeyMissing(f"this file is sealed with key {key_id!r}, which the key ring ({self.source}) "
                                  "does not hold: import it with `verbatim keys import`") from None

    @classmethod
    def generate(cls, key_id: str | None = None) -> KeyRing:
        """A ring of one fresh random key (tests, benchmarks, a first ring file)."""
        key_id = key_id or new_key_id()
        return cls({key_id: secrets.token_bytes(KEY_BYTES)}, key_id, "generated")


_FOLLOWED: dict[Path, tuple[int, KeyRing]] = {}
"""Ring files as last read, by path, with their mtime (ns): see `KeyRing.latest`."""


def new_key_id() -> str:
    """A key id that sorts by creation time: ``k`` + UTC timestamp + 4 random hex digits."""
    return "k" + datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + secrets.token_hex(2)


def parse_keys(value: str) -> KeyRing:
    """Parse ``id:base64[,id:base64…]`` (newest last) into a ring; KeyRingError when malformed."""
    keys: dict[str, bytes] = {}
    last = ""
    for item in filter(None, (part.strip() for part in value.split(","))):
        key_id, sep, encoded = item.partition(":")
        if not sep:
            raise KeyRingError("VERBATIM_ENCRYPTION_KEYS items must look like id:base64key")
        keys[key_id] = _decode(encoded, key_id)
        last = key_id
    if not keys:
        raise KeyRingError("VERBATIM_ENCRYPTION_KEYS is empty")
    return KeyRing(keys, last, "VERBATIM_ENCRYPTION_KEYS")


def read_ring_file(path: Path) -> KeyRing:
    """Load a ring file; KeyRingError when missing, unreadable or malformed."""
    try:
        raw: dict[str, Any] = json.loads(path.read_text())
        keys = {key_id: _decode(entry["key"], key_id) for key_id, entry in raw["keys"].items()}
        return KeyRing(keys, raw["current"], str(path), path)
    except FileNotFoundError:
        raise KeyRingError(f"no key ring file at {path}") from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise KeyRingError(f"key ring file {path} is unreadable: {exc}") from exc


def load_ring(settings: Settings) -> KeyRing:
    """The ring the settings name (see the module docstring); generates the development ring if needed."""
    if settings.encryption_keys is not None:
        return parse_keys(settings.encryption_keys.get_secret_value())
    if settings.key_file is not None:
        return read_ring_file(settings.key_file)
    if not settings.development:
        raise KeyRingError("no encryption key: set VERBATIM_KEY_FILE or VERBATIM_ENCRYPTION_KEYS "
                           "(or VERBATIM_MODE=development on a developer machine)")
    path = development_ring_path(settings)
    if not path.exists():
        create_ring_file(path)
    return read_ring_file(path)


def development_ring_path(settings: Settings) -> Path:
    """Where development mode keeps its generated ring: ``<data_dir>/keys/ring.json``."""
    return settings.data_dir / "keys" / "ring.json"


def ring_file_of(settings: Settings) -> Path | None:
    """The ring file the settings use (None when keys come from VERBATIM_ENCRYPTION_KEYS)."""
    if settings.encryption_keys is not None:
        return None
    return settings.key_file or development_ring_path(settings)


def add_key(path: Path) -> str:
    """Add a fresh key to the ring file and make it current; returns its id. Old keys stay."""
    ring = read_ring_file(path)
    key_id = new_key_id()
    while key_id in ring.keys:
        key_id = new_key_id()
    _write_ring(path, {**ring.keys, key_id: secrets.token_bytes(KEY_BYTES)}, key_id, _created(path))
    return key_id


def export_ring(path: Path) -> str:
    """The ring file's JSON, for a backup kept off this machine (it is the only way to read the data)."""
    read_ring_file(path)  # refuse to export something unreadable
    return path.read_text()


def import_keys(path: Path, backup: str) -> list[str]:
    """Merge a backup's keys into the ring file; returns the ids added. The current key is unchanged.

    Raises KeyRingError when the backup is malformed or holds a different key under an id the ring
    already has (importing must never replace a key that may have sealed data).
    """
    try:
        raw = json.loads(backup)
        incoming = {key_id: _decode(entry["key"], key_id) for key_id, entry in raw["keys"].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise KeyRingError(f"the backup is not a key ring: {exc}") from exc
    if path.exists():
        ring = read_ring_file(path)
        keys, current = dict(ring.keys), ring.current
    else:
        keys, current = {}, raw.get("current") or next(iter(incoming))
    added = []
    for key_id, key in incoming.items():
        if key_id in keys and keys[key_id] != key:
            raise KeyRingError(f"key {key_id!r} in the backup differs from the ring's key of that id: not imported")
        if key_id not in keys:
            keys[key_id] = key
            added.append(key_id)
    if added:
        _write_ring(path, keys, current, _created(path) | {k: _now() for k in added})
    return added


def create_ring_file(path: Path) -> None:
    key_id = new_key_id()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # FileExistsError: another process of this stack generated it first; use theirs.
    with contextlib.suppress(FileExistsError):
        _write_ring(path, {key_id: secrets.token_bytes(KEY_BYTES)}, key_id, {key_id: _now()}, exclusive=True)


def _write_ring(path: Path, keys: Mapping[str, bytes], current: str, created: dict[str, str],
                *, exclusive: bool = False) -> None:
    body = {
        "version": 1, "current": current,
        "keys": {k: {"key": base64.b64encode(v).decode(), "created_at": created.get(k, _now())}
                 for k, v in keys.items()},
    }
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".ring.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(body, fh, indent=1)
            fh.flush()
            os.fsync(fh.fileno())
        if exclusive:
            # link() fails when the name exists: two processes generating at once keep one ring.
            os.link(tmp, path)
        else:
            os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _created(path: Path) -> dict[str, str]:
    try:
        raw = json.loads(path.read_text())
        return {k: str(v.get("created_at", "")) for k, v in raw["keys"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def _decode(encoded: str, key_id: str) -> bytes:
    try:
        key = base64.b64decode(encoded.strip(), validate=True)
    except ValueError as exc:
        raise KeyRingError(f"key {key_id!r} is not base64") from exc
    if len(key) != KEY_BYTES:
        raise KeyRingError(f"key {key_id!r} is {len(key)} bytes; AES-256 keys are {KEY_BYTES}")
    return key


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
