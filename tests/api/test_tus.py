"""Resumable uploads (tus 1.0.0 core + creation + expiration) and finalizing them into sessions."""

from __future__ import annotations

import base64
import hashlib
import os
import socket
import time
import uuid
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from tests.api.conftest import TUS, Api, LiveServer, good_metadata
from tests.conftest import SAMPLES
from verbatim.api import tus
from verbatim.db.engine import db_session
from verbatim.db.models import Session
from verbatim.pipeline.sweeps import SweepReport, delete_orphan_audio
from verbatim.runtime import build_context

JFK = SAMPLES / "jfk.wav"


def test_options_discovers_version_extensions_and_max_size(api: Api) -> None:
    r = api.client.options("/v1/uploads")
    assert r.status_code == 204
    assert r.headers["tus-version"] == "1.0.0" and r.headers["tus-resumable"] == "1.0.0"
    assert set(r.headers["tus-extension"].split(",")) == {
        "creation", "creation-defer-length", "creation-with-upload", "expiration", "checksum", "termination"}
    assert "sha256" in r.headers["tus-checksum-algorithm"].split(",")
    assert int(r.headers["tus-max-size"]) == api.settings.max_upload_bytes


def test_upload_in_pieces_then_finalize_moves_the_file_into_a_session(api: Api, alice: str) -> None:
    body = JFK.read_bytes()
    name = base64.b64encode(b"../../etc/passwd").decode()
    created = api.tus_create(alice, len(body), headers={"upload-metadata": f"filename {name},note"})
    assert created.status_code == 201, created.text
    upload_id = created.json()["upload_id"]
    assert created.headers["location"] == f"/v1/uploads/{upload_id}"
    expires = parsedate_to_datetime(created.headers["upload-expires"]).timestamp()
    assert abs(expires - (time.time() + api.settings.tus_expiry_s)) < 60
    assert sorted(p.name for p in api.files_on_volume()) == [f"{upload_id}.bin", f"{upload_id}.json"]

    offset = 0
    for size in (1000, 100_000, len(body)):  # three PATCHes of growing size
        piece = body[offset:size]
        r = api.tus_patch(alice, upload_id, offset, piece)
        assert r.status_code == 204, r.text
        offset = size
        assert int(r.headers["upload-offset"]) == offset and "upload-expires" in r.headers
    head = api.tus_head(alice, upload_id)
    assert head.status_code == 200
    assert (int(head.headers["upload-offset"]), int(head.headers["upload-length"])) == (len(body), len(body))
    assert head.headers["cache-control"] == "no-store"
    assert head.headers["upload-metadata"] == f"filename {name},note"
    assert api.enqueued() == 0

    done = api.finalize(alice, upload_id, headers={"x-content-sha256": hashlib.sha256(body).hexdigest()})
    assert done.status_code == 201, done.text
    sid = done.json()["id"]
    assert abs(done.json()["duration_s"] - 11.0) < 0.1
    assert [p.name for p in api.files_on_volume()] == [f"{sid}.audio"]  # tus files gone: moved, not copied
    assert api.enqueued() == 1
    with db_session(api.settings.database_url or "") as db:
        row = db.get(Session, uuid.UUID(sid))
        assert row is not None and row.audio_sha256 == hashlib.sha256(body).hexdigest()
    assert api.tus_head(alice, upload_id).status_code == 404


def test_finalize_retry_with_the_same_idempotency_key_returns_the_session(api: Api, alice: str) -> None:
    upload_id = api.tus_upload(alice, JFK)
    first = api.finalize(alice, upload_id, headers={"idempotency-key": "t1"})
    again = api.finalize(alice, upload_id, headers={"idempotency-key": "t1"})
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"]
    assert api.enqueued() == 1 and len(api.files_on_volume()) == 1


def test_same_recording_twice_with_one_key_keeps_one_copy(api: Api, alice: str) -> None:
    """A multipart upload and a tus upload of the same bytes under one key are one session."""
    first = api.upload(alice, JFK, headers={"idempotency-key": "k"})
    upload_id = api.tus_upload(alice, JFK)
    again = api.finalize(alice, upload_id, headers={"idempotency-key": "k"})
    assert (first.status_code, again.status_code) == (201, 200) and first.json()["id"] == again.json()["id"]
    assert [p.name for p in api.files_on_volume()] == [f"{first.json()['id']}.audio"]


def test_an_empty_patch_and_a_zero_length_upload_are_valid_tus(api: Api, alice: str) -> None:
    upload_id = api.tus_upload(alice, JFK, complete=False)
    offset = int(api.tus_head(alice, upload_id).headers["upload-offset"])
    r = api.tus_patch(alice, upload_id, offset, b"")
    assert r.status_code == 204 and int(r.headers["upload-offset"]) == offset
    empty = api.tus_create(alice, 0)
    assert empty.status_code == 201
    assert int(api.tus_head(alice, empty.json()["upload_id"]).headers["upload-offset"]) == 0


def _raw_patch_cut(server: LiveServer, token: str, upload_id: str, offset: int, declared: int, data: bytes) -> None:
    """Send a PATCH declaring ``declared`` bytes, send only ``data``, then close the socket."""
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(
            f"PATCH /v1/uploads/{upload_id} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
            f"Tus-Resumable: 1.0.0\r\nUpload-Offset: {offset}\r\nContent-Type: application/offset+octet-stream\r\n"
            f"Content-Length: {declared}\r\n\r\n".encode() + data
        )
        time.sleep(0.2)


def test_a_cut_patch_keeps_what_arrived_and_the_upload_resumes(live: Callable[..., LiveServer], alice: str) -> None:
    server = live()
    token = alice
    body = JFK.read_bytes()
    with httpx.Client(base_url=server.url, headers={"authorization": f"Bearer {token}", **TUS}) as http:
        upload_id = http.post("/v1/uploads", headers={"upload-length": str(len(body))}).json()["upload_id"]
        half = len(body) // 2
        _raw_patch_cut(server, token, upload_id, 0, len(body), body[:half])
        deadline = time.monotonic() + 10
        while True:  # the server notices the cut, fsyncs, releases the lock
            head = http.head(f"/v1/uploads/{upload_id}")
            if head.status_code == 200 and int(head.headers["upload-offset"]) == half:
                break
            assert time.monotonic() < deadline, (head.status_code, head.headers)
            time.sleep(0.05)
        r = http.patch(f"/v1/uploads/{upload_id}", content=body[half:],
                       headers={"upload-offset": str(half), "content-type": "application/offset+octet-stream"})
        assert r.status_code == 204 and int(r.headers["upload-offset"]) == len(body)
        done = http.post("/v1/sessions", json={"upload_id": upload_id, "metadata": good_metadata()},
                         headers={"x-content-sha256": hashlib.sha256(body).hexdigest()})
        assert done.status_code == 201, done.text


def test_expired_uploads_answer_410_and_the_sweep_deletes_the_rest(api_with: Callable[..., Api], alice: str) -> None:
    api = api_with(tus_expiry_s=0.5)
    headed, patched, untouched = (api.tus_upload(alice, JFK, complete=False) for _ in range(3))
    time.sleep(0.6)
    debris = api.settings.tus_dir / f"{'0' * 32}.bin"
    debris.write_bytes(b"no info file: a crash mid-create")  # younger than the expiry
    assert api.tus_head(alice, headed).status_code == 410  # HEAD answers carry no body
    r = api.tus_patch(alice, patched, 0, b"x")
    assert r.status_code == 410 and r.json()["error"] == "upload_expired"
    gone = api.finalize(alice, untouched)
    assert gone.status_code == 410 and gone.json()["error"] == "upload_expired"
    assert api.files_on_volume() == [debris]  # expired uploads are deleted when met
    untouched = api.tus_upload(alice, JFK, complete=False)
    time.sleep(0.6)
    ctx = build_context(api.settings)
    report = SweepReport()
    delete_orphan_audio(ctx, report)
    assert report.uploads_expired == 2  # the upload nobody came back to, and the now-old debris
    assert api.files_on_volume() == []
    delete_orphan_audio(ctx, report := SweepReport())
    assert report.uploads_expired == 0


def test_the_sweep_leaves_live_uploads_alone(api: Api, alice: str) -> None:
    upload_id = api.tus_upload(alice, JFK, complete=False)
    report = SweepReport()
    delete_orphan_audio(build_context(api.settings), report)
    assert report.uploads_expired == 0
    assert sorted(p.name for p in api.tus_files()) == [f"{upload_id}.bin", f"{upload_id}.json"]


def test_debris_older_than_the_expiry_is_swept(api: Api) -> None:
    stray = api.settings.tus_dir / f"{'a' * 32}.json.tmp"
    stray.write_bytes(b"{")
    old = time.time() - api.settings.tus_expiry_s - 10
    os.utime(stray, (old, old))
    report = SweepReport()
    delete_orphan_audio(build_context(api.settings), report)
    assert report.uploads_expired == 1 and api.files_on_volume() == []


def test_uploads_live_apart_from_finished_audio(api: Api, alice: str) -> None:
    upload_id = api.tus_upload(alice, JFK)
    tus_dir: Path = api.settings.tus_dir
    assert tus_dir == api.settings.data_dir / "tus"
    assert {p.parent for p in api.files_on_volume()} == {tus_dir}
    assert api.plain(tus_dir / f"{upload_id}.bin") == JFK.read_bytes()


def test_a_stalled_patch_is_ended_so_the_resume_is_not_locked_out(
    live: Callable[..., LiveServer], alice: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A phone that goes silent mid-PATCH (no FIN, no RST) must not hold the upload's lock for hours."""
    monkeypatch.setattr(tus, "PATCH_IDLE_S", 0.5)
    server = live()
    body = JFK.read_bytes()
    with httpx.Client(base_url=server.url, headers={"authorization": f"Bearer {alice}", **TUS}) as http:
        upload_id = http.post("/v1/uploads", headers={"upload-length": str(len(body))}).json()["upload_id"]
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(
                f"PATCH /v1/uploads/{upload_id} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {alice}\r\n"
                "Tus-Resumable: 1.0.0\r\nUpload-Offset: 0\r\nContent-Type: application/offset+octet-stream\r\n"
                f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:1000]
            )
            sock.settimeout(5)
            answer = b""
            while chunk := sock.recv(65536):  # we stay silent: only the idle limit ends it (and closes)
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 408") and b"upload_idle" in answer
        head = http.head(f"/v1/uploads/{upload_id}")
        assert head.status_code == 200 and head.headers["upload-offset"] == "1000"


def test_the_file_name_is_not_kept_past_the_upload(api: Api, alice: str, database_url: str) -> None:
    """A tus ``filename`` names the patient: gone from the volume and the database once finalized."""
    body = JFK.read_bytes()
    name = base64.b64encode(b"Jane Doe session.wav").decode()
    upload_id = api.tus_create(alice, len(body), headers={"upload-metadata": f"filename {name}"}).json()["upload_id"]
    assert api.tus_patch(alice, upload_id, 0, body).status_code == 204
    done = api.finalize(alice, upload_id)
    assert done.status_code == 201, done.text
    assert "Jane Doe" not in done.text
    for path in api.settings.data_dir.rglob("*"):
        if path.is_file():
            content = path.read_bytes()
            assert b"Jane Doe" not in content and name.encode() not in content, path
    with db_session(database_url) as db:
        tables = db.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")).scalars().all()
        for table in tables:
            hits = db.execute(text(f'SELECT count(*) FROM "{table}" t WHERE t::text LIKE :a OR t::text LIKE :b'),
                              {"a": "%Jane Doe%", "b": f"%{name}%"}).scalar_one()
            assert hits == 0, table
