"""Sealed files and the key ring (security issue, item 13): no servers, real AES-GCM, real files."""

from __future__ import annotations

import json
import os
import random
import time
import uuid
from pathlib import Path

import pytest

from verbatim.errors import KeyRingError, SealedDataError
from verbatim.resumable import ResumableUploads
from verbatim.sealed import KeyRing, SegmentWriter, is_sealed, open_plain, read_sealed, seal_file
from verbatim.sealed.ring import add_key, create_ring_file, export_ring, import_keys, parse_keys, read_ring_file
from verbatim.sealed.rotate import _exchange, rotate, usage
from verbatim.sealed.stream import CHUNK_BYTES, scan

DATA = random.Random(7).randbytes(3 * CHUNK_BYTES + 12345)


def _sealed(path: Path, ring: KeyRing, pieces: list[bytes], chunk: int = 4096) -> Path:
    """One segment per piece, as successive PATCHes write them."""
    with open(path, "wb") as fh:
        for piece in pieces:
            writer = SegmentWriter(fh, ring, chunk)
            for i in range(0, len(piece), 1000):
                writer.write(piece[i : i + 1000])
            writer.finish()
    return path


def test_round_trip_across_segments_and_random_reads(tmp_path: Path) -> None:
    ring = KeyRing.generate()
    path = _sealed(tmp_path / "f", ring, [DATA[:5000], DATA[5000:5001], DATA[5001:]])
    raw = path.read_bytes()
    assert is_sealed(path) and DATA[100:164] not in raw  # nothing of the plain text on disk
    with open_plain(path, ring) as fh:
        assert fh.read() == DATA
        rng = random.Random(1)
        for _ in range(300):
            start, n = rng.randrange(len(DATA)), rng.randrange(20_000)
            fh.seek(start)
            assert fh.read(n) == DATA[start : start + n]
        assert fh.seek(0, os.SEEK_END) == len(DATA)


def test_a_changed_byte_fails_loudly(tmp_path: Path) -> None:
    ring = KeyRing.generate()
    path = _sealed(tmp_path / "f", ring, [DATA])
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    path.write_bytes(bytes(raw))
    with pytest.raises(SealedDataError, match="failed authentication"), open_plain(path, ring) as fh:
        fh.read()


def test_chunks_swapped_or_cut_short_fail(tmp_path: Path) -> None:
    ring = KeyRing.generate()
    path = _sealed(tmp_path / "f", ring, [DATA[:8192 * 3]], chunk=8192)
    with open(path, "rb") as fh:
        layout = scan(fh)
    c0, c1 = layout.chunks[0], layout.chunks[1]
    raw = path.read_bytes()
    size = 5 + 8192 + 16
    a, b = c0.file_pos - 5, c1.file_pos - 5
    swapped = raw[:a] + raw[b : b + size] + raw[a : a + size] + raw[b + size :]
    path.write_bytes(swapped)
    with pytest.raises(SealedDataError), open_plain(path, ring) as fh:
        fh.read()
    path.write_bytes(raw[:-1])  # the FINAL chunk cut short: the file is incomplete
    with pytest.raises(SealedDataError, match="cut short"):
        open_plain(path, ring)


def test_a_key_the_ring_lacks_is_named(tmp_path: Path) -> None:
    path = _sealed(tmp_path / "f", KeyRing.generate("old"), [b"hello"])
    with pytest.raises(SealedDataError, match="'old'.*verbatim keys import"):
        read_sealed(path, KeyRing.generate("new"))


def test_ring_file_only_ever_grows(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "ring.json"
    create_ring_file(path)
    first = read_ring_file(path)
    assert oct(path.stat().st_mode & 0o777) == "0o600" and oct(path.parent.stat().st_mode & 0o777) == "0o700"
    new = add_key(path)
    ring = read_ring_file(path)
    assert ring.current == new and ring.keys[first.current] == first.keys[first.current]
    # export → import into an empty place restores both keys; a conflicting key is refused
    restored = tmp_path / "restored.json"
    assert sorted(import_keys(restored, export_ring(path))) == sorted(ring.keys)
    bad = json.loads(export_ring(path))
    bad["keys"][new]["key"] = bad["keys"][first.current]["key"]
    with pytest.raises(KeyRingError, match="differs"):
        import_keys(restored, json.dumps(bad))
    assert read_ring_file(restored).keys == ring.keys


def test_key_setting_is_parsed_and_checked() -> None:
    ring = parse_keys("a:" + "A" * 43 + "=,b:" + "B" * 43 + "=")
    assert ring.current == "b" and set(ring.keys) == {"a", "b"}
    for bad in ("", "nocolon", "a:bm90IDMyIGJ5dGVz", "a:!!!"):
        with pytest.raises(KeyRingError):
            parse_keys(bad)


def test_rotation_reseals_under_the_newest_key_and_keeps_every_byte(tmp_path: Path) -> None:
    ring_path = tmp_path / "ring.json"
    create_ring_file(ring_path)
    old = read_ring_file(ring_path)
    store = tmp_path / "audio"
    store.mkdir()
    files = {store / f"{i}.audio": DATA[: 1000 * (i + 1)] for i in range(4)}
    for path, plain in files.items():
        seal_file(path, plain, old)
    add_key(ring_path)
    ring = read_ring_file(ring_path)
    assert usage([store]) == {old.current: 4}
    done = rotate([store], ring)
    assert len(done.resealed) == 4 and usage([store]) == {ring.current: 4}
    assert all(read_sealed(p, ring) == plain for p, plain in files.items())
    assert rotate([store], ring).current == 4  # a second run has nothing to do


def test_the_exchange_never_resurrects_a_deleted_file(tmp_path: Path) -> None:
    copy, gone = tmp_path / "copy", tmp_path / "gone"
    copy.write_bytes(b"x")
    assert _exchange(copy, gone) is False and not gone.exists()


def test_a_patch_killed_mid_segment_is_cut_back_to_the_last_complete_one(tmp_path: Path) -> None:
    ring = KeyRing.generate()
    owner = uuid.uuid4()
    uploads = ResumableUploads(tmp_path / "tus", 3600, ring)
    info = uploads.create(owner, len(DATA), {"filename": "Jane Doe.wav"})
    assert b"Jane" not in uploads.info_path(info.id).read_bytes()  # the info file is sealed too
    with uploads.lock(info.id, owner) as locked:
        locked.write(DATA[:10_000])
        locked.sync()
        locked.write(DATA[10_000:200_000])  # sealed chunks on disk, segment never finished: killed
        os.fsync(locked._require_fd())
    with uploads.lock(info.id, owner) as locked:
        assert locked.offset == 10_000
    assert read_sealed(uploads.data_path(info.id), ring) == DATA[:10_000]


def test_a_running_process_follows_its_ring_file_through_a_rotation(tmp_path: Path) -> None:
    path = tmp_path / "ring.json"
    create_ring_file(path)
    running = read_ring_file(path)  # what a long-running process loaded at start
    old_file = tmp_path / "old"
    seal_file(old_file, b"before", running)
    new = add_key(path)  # `verbatim keys rotate` in another process
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 1_000_000))  # a distinct mtime, however fast
    assert running.sealing_key()[0] == new  # new files are sealed under the new key at once
    other = tmp_path / "new"
    seal_file(other, b"after", running)
    rotate([tmp_path], read_ring_file(path))
    assert read_sealed(old_file, running) == b"before" and read_sealed(other, running) == b"after"
    assert usage([tmp_path]) == {new: 2}
