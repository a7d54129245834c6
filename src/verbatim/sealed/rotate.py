"""Re-sealing stored files under the ring's current key (``verbatim keys rotate``), losing nothing.

Each file whose segments use an older key is copied, a chunk at a time, into a new sealed file
beside it (``.<name>.rekey``), fsynced, and then *exchanged* with the original in one atomic
``renameat2(RENAME_EXCHANGE)``: the original is never deleted before its replacement is durable,
and a file deleted meanwhile (a recording the recognizer acknowledged) is not brought back —
the exchange fails when the original is gone, and the copy is dropped (the original is read
through the descriptor the rotation holds, so a delete mid-copy ends nothing but that file's
turn: the rotation goes on). A rotation killed at any
point leaves every original readable; the next run removes its leftover ``.rekey`` copies and
carries on. Old keys stay in the ring (a key in use is never retired): `usage` shows which files
still need one.

Why ctypes: Python's ``os`` has no ``renameat2``; a check-then-``os.replace`` would race a delete.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import fcntl
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from verbatim.errors import SealedDataError
from verbatim.sealed.ring import KeyRing
from verbatim.sealed.stream import is_sealed, iter_plain, scan, seal_file
from verbatim.storage import fsync_dir

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
ROTATION_SUFFIX = ".rekey"  #: a rotation's copy: ``.<name>.rekey`` beside its original
_SUFFIX = ROTATION_SUFFIX


@dataclass
class Rotation:
    """What a rotation did: files re-sealed, already current, skipped (busy or gone) and unreadable."""

    resealed: list[Path] = field(default_factory=list)
    current: int = 0
    skipped: list[Path] = field(default_factory=list)
    unreadable: list[tuple[Path, str]] = field(default_factory=list)


def sealed_files(folders: list[Path]) -> Iterator[Path]:
    """Every sealed file under ``folders`` (recursively), leftovers of a killed rotation excluded."""
    for folder in folders:
        if not folder.exists():
            continue
        # os.walk, not rglob: a folder deleted mid-walk (a recognizer job's) is passed over, never an error.
        found = [Path(root) / name for root, _, names in os.walk(folder) for name in names]
        for path in sorted(found):
            if not path.name.endswith(_SUFFIX) and path.is_file() and is_sealed(path):
                yield path


def usage(folders: list[Path]) -> dict[str, int]:
    """Key id → how many stored files have at least one segment sealed with it."""
    counts: dict[str, int] = {}
    for path in sealed_files(folders):
        for key_id in _key_ids(path):
            counts[key_id] = counts.get(key_id, 0) + 1
    return counts


def rotate(folders: list[Path], ring: KeyRing, after_each: Callable[[Path], None] = lambda _: None) -> Rotation:
    """Re-seal every file under ``folders`` that uses a key other than ``ring.current``.

    ``after_each`` is called after each re-sealed file (progress; fault tests kill the process there).
    """
    result = Rotation()
    for folder in folders:
        for root, _, names in os.walk(folder):
            for name in names:
                if name.endswith(_SUFFIX):
                    # Its original is intact: see the module docstring.
                    (Path(root) / name).unlink(missing_ok=True)
    for path in sealed_files(folders):
        try:
            keys = _key_ids(path)
        except FileNotFoundError:
            result.skipped.append(path)  # deleted since the listing (acknowledged by the recognizer)
            continue
        except (OSError, SealedDataError) as exc:
            result.unreadable.append((path, str(exc)))
            continue
        if keys <= {ring.current}:
            result.current += 1
            continue
        try:
            done = _reseal(path, ring)
        except SealedDataError as exc:
            result.unreadable.append((path, str(exc)))
            continue
        if done:
            result.resealed.append(path)
            after_each(path)
        else:
            result.skipped.append(path)
    return result


def _reseal(path: Path, ring: KeyRing) -> bool:
    """Re-seal one file under the current key; False when it is busy (an upload being written) or gone."""
    copy = path.with_name(f".{path.name}{_SUFFIX}")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return False
    try:
        try:
            # The same lock a tus PATCH takes: never re-seal an upload while bytes are being added.
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        with open(fd, "rb", closefd=False) as fh:
            if not scan(fh).complete:
                return False  # an upload whose last PATCH was cut: its next request repairs it first
        stat = os.fstat(fd)
        # Read through the descriptor we hold, not the name: a file deleted meanwhile is still
        # read to the end, and the exchange below then finds the name gone and drops the copy.
        seal_file(copy, iter_plain(f"/proc/self/fd/{fd}", ring), ring)
        # The orphan sweeps judge a file by its age: the copy keeps the original's.
        os.utime(copy, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        if not _exchange(copy, path):
            copy.unlink(missing_ok=True)
            return False
        copy.unlink()  # now the old, older-key bytes
        fsync_dir(path.parent)
        return True
    except BaseException:
        copy.unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths; False when ``b`` no longer exists."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if libc.renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err == errno.ENOENT:
        return False
    raise OSError(err, f"renameat2(RENAME_EXCHANGE) failed: {os.strerror(err)}", str(b))


def _key_ids(path: Path) -> set[str]:
    with open(path, "rb") as fh:
        return set(scan(fh).key_ids)
