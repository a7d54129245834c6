"""Key rotation never disturbs anything (issue 27, item 8): a live tus PATCH, a file deleted while
the rotation runs, the orphan sweep. Real files, real AES-GCM, the real renameat2 exchange; each
interleaving is forced at the one point where it matters."""

from __future__ import annotations

import fcntl
import os
import random
import types
import uuid
from pathlib import Path

import pytest

import verbatim.resumable as resumable
import verbatim.sealed.rotate as rotate_module
from verbatim.resumable import ResumableUploads
from verbatim.sealed import KeyRing, read_sealed, seal_file
from verbatim.sealed.ring import add_key, create_ring_file, read_ring_file
from verbatim.sealed.rotate import rotate, usage
from verbatim.sealed.stream import CHUNK_BYTES

DATA = random.Random(11).randbytes(2 * CHUNK_BYTES + 999)


def rings(tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "ring.json"
    create_ring_file(path)
    first = read_ring_file(path)
    # What a process that loaded the ring before the rotation seals with (not following the file).
    old = KeyRing(dict(first.keys), first.current, "before the rotation")
    add_key(path)
    return path, old, read_ring_file(path)


def test_a_patch_that_opened_the_upload_before_a_reseal_swapped_it_is_not_told_404(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, old, new = rings(tmp_path)
    owner = uuid.uuid4()
    uploads = ResumableUploads(tmp_path / "tus", 3600, old)
    info = uploads.create(owner, len(DATA), {})
    with uploads.lock(info.id, owner) as locked:
        locked.write(DATA[:50_000])
        locked.sync()
    # The interleaving: the PATCH has opened the data file; the rotation re-seals and swaps it in
    # (a new inode) before the PATCH takes its flock.
    swapped: list[int] = []

    def flock_after_a_rotation(fd: int, op: int) -> None:
        if not swapped:
            swapped.append(len(rotate([uploads.folder], new).resealed))
        fcntl.flock(fd, op)

    monkeypatch.setattr(resumable, "fcntl", types.SimpleNamespace(
        flock=flock_after_a_rotation, LOCK_EX=fcntl.LOCK_EX, LOCK_NB=fcntl.LOCK_NB, LOCK_UN=fcntl.LOCK_UN))
    with uploads.lock(info.id, owner) as locked:  # old main: NotFound, the tus PATCH answered 404
        assert swapped and swapped[0] >= 1  # the data file (and the info file) re-sealed
        assert locked.offset == 50_000
        locked.write(DATA[50_000:])
        locked.sync()
    assert read_sealed(uploads.data_path(info.id), new) == DATA
    assert usage([uploads.folder])[new.current] >= 1


def test_a_file_deleted_while_the_rotation_copies_it_ends_only_that_files_turn(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, old, new = rings(tmp_path)
    store = tmp_path / "audio"
    store.mkdir()
    doomed, kept = store / "a.audio", store / "b.audio"
    for path in (doomed, kept):
        seal_file(path, DATA, old)
    real_scan = rotate_module.scan

    seen: list[int] = []

    # The recognizer acknowledges `doomed` (its delete runs) right after the rotation opened and
    # locked it to copy it (its second look: the first reads its key ids).
    def delete_mid_copy(fh):  # type: ignore[no-untyped-def]
        layout = real_scan(fh)
        if doomed.exists() and _same_file(fh, doomed):
            seen.append(1)
            if len(seen) == 2:
                doomed.unlink()
        return layout

    monkeypatch.setattr(rotate_module, "scan", delete_mid_copy)
    done = rotate([store], new)  # old main: FileNotFoundError out of the rotation
    assert len(seen) == 2
    assert done.resealed == [kept] and done.skipped == [doomed] and done.unreadable == []
    assert not doomed.exists(), "a deleted recording was brought back"
    assert read_sealed(kept, new) == DATA
    assert sorted(p.name for p in store.iterdir()) == ["b.audio"]  # no copy left behind


def _same_file(fh, path: Path) -> bool:  # type: ignore[no-untyped-def]
    try:
        return os.fstat(fh.fileno()).st_ino == path.stat().st_ino
    except (OSError, ValueError):
        return False
