"""Uploading while recording (issue 26, item 1): tus creation-defer-length, creation-with-upload,
checksum and termination over the real API, PostgreSQL and Redis, and a real `verbatim keys
rotate` process run in the middle of a growing upload."""

from __future__ import annotations

import base64
import hashlib
import socket
import subprocess
import sys
import time
from collections.abc import Callable

import httpx
from sqlalchemy import select

from tests.api.conftest import TUS, Api, LiveServer, good_metadata
from tests.conftest import SAMPLES, settings_env
from verbatim.db.engine import db_session
from verbatim.db.models import AuditEntry
from verbatim.sealed.ring import read_ring_file
from verbatim.sealed.rotate import usage

JFK = SAMPLES / "jfk.wav"


def _deferred(api: Api, token: str, **headers: str) -> str:
    r = api.client.post("/v1/uploads", headers=api.headers(token, **TUS, **{"upload-defer-length": "1"}, **headers))
    assert r.status_code == 201, r.text
    assert r.json()["length"] is None and r.json()["offset"] == 0
    return str(r.json()["upload_id"])


def _sum(data: bytes, algorithm: str = "sha256") -> str:
    return f"{algorithm} {base64.b64encode(hashlib.new(algorithm, data).digest()).decode()}"


def _offset(api: Api, token: str, upload_id: str) -> int:
    head = api.tus_head(token, upload_id)
    assert head.status_code == 200, head.status_code
    return int(head.headers["upload-offset"])


def test_a_growing_upload_is_sealed_declared_at_the_end_and_finalized(api: Api, alice: str) -> None:
    body = JFK.read_bytes()
    upload_id = _deferred(api, alice)
    head = api.tus_head(alice, upload_id)
    assert head.headers["upload-defer-length"] == "1" and "upload-length" not in head.headers
    pieces = [body[i : i + 40_000] for i in range(0, len(body), 40_000)]
    offset = 0
    for piece in pieces[:-1]:  # a phone sending each second's audio as it is recorded
        r = api.tus_patch(alice, upload_id, offset, piece, headers={"upload-checksum": _sum(piece)})
        assert r.status_code == 204, r.text
        offset += len(piece)
        assert int(r.headers["upload-offset"]) == offset and r.headers["upload-defer-length"] == "1"
    data_file = api.settings.tus_dir / f"{upload_id}.bin"
    assert api.plain(data_file) == body[:offset]  # sealed at rest while it grows
    assert body[1000:5000] not in data_file.read_bytes()
    early = api.finalize(alice, upload_id)
    assert (early.status_code, early.json()["error"]) == (409, "upload_length_unknown")
    assert _offset(api, alice, upload_id) == offset  # refused, nothing lost
    # The last PATCH carries the length: the upload is complete when it is declared and every byte arrived.
    r = api.tus_patch(alice, upload_id, offset, pieces[-1], headers={"upload-length": str(len(body))})
    assert r.status_code == 204, r.text
    assert r.headers["upload-length"] == str(len(body)) and "upload-defer-length" not in r.headers
    done = api.finalize(alice, upload_id, headers={"x-content-sha256": hashlib.sha256(body).hexdigest()})
    assert done.status_code == 201, done.text
    assert abs(done.json()["duration_s"] - 11.0) < 0.1
    assert api.tus_files() == []


def test_declaring_the_length_of_what_arrived_finishes_an_upload(api: Api, alice: str) -> None:
    """"Finish with what arrived": an empty PATCH declaring the offset as the length."""
    body = JFK.read_bytes()
    upload_id = _deferred(api, alice)
    assert api.tus_patch(alice, upload_id, 0, body).status_code == 204
    short = api.tus_patch(alice, upload_id, len(body), b"", headers={"upload-length": str(len(body) - 1)})
    assert (short.status_code, short.json()["error"]) == (400, "invalid_header")
    r = api.tus_patch(alice, upload_id, len(body), b"", headers={"upload-length": str(len(body))})
    assert r.status_code == 204 and r.headers["upload-length"] == str(len(body))
    again = api.tus_patch(alice, upload_id, len(body), b"", headers={"upload-length": str(len(body) + 5)})
    assert (again.status_code, again.json()["error"]) == (400, "upload_length_fixed")
    past = api.tus_patch(alice, upload_id, len(body), b"x")
    assert (past.status_code, past.json()["error"]) == (413, "exceeds_upload_length")
    assert api.finalize(alice, upload_id).status_code == 201


def test_creation_with_upload_keeps_the_first_bytes(api: Api, alice: str) -> None:
    body = JFK.read_bytes()
    first = body[:50_000]
    r = api.client.post("/v1/uploads", content=first, headers=api.headers(alice, **TUS, **{
        "upload-defer-length": "1", "content-type": "application/offset+octet-stream",
        "upload-checksum": _sum(first)}))
    assert r.status_code == 201, r.text
    assert r.headers["upload-offset"] == str(len(first)) and r.json()["offset"] == len(first)
    upload_id = r.json()["upload_id"]
    rest = api.tus_patch(alice, upload_id, len(first), body[len(first):], headers={"upload-length": str(len(body))})
    assert rest.status_code == 204, rest.text
    assert api.finalize(alice, upload_id).status_code == 201
    # A declared length with its whole body in the creation: complete at once.
    whole = api.client.post("/v1/uploads", content=body, headers=api.headers(alice, **TUS, **{
        "upload-length": str(len(body)), "content-type": "application/offset+octet-stream"}))
    assert whole.status_code == 201 and whole.json()["offset"] == len(body)
    assert api.finalize(alice, whole.json()["upload_id"]).status_code == 201


def test_a_creation_whose_body_fails_its_checksum_leaves_an_empty_upload_to_resume(api: Api, alice: str) -> None:
    first = JFK.read_bytes()[:10_000]
    r = api.client.post("/v1/uploads", content=first, headers=api.headers(alice, **TUS, **{
        "upload-defer-length": "1", "content-type": "application/offset+octet-stream",
        "upload-checksum": _sum(first[:-1])}))
    assert (r.status_code, r.json()["error"]) == (460, "checksum_mismatch")
    upload_id = r.headers["location"].rsplit("/", 1)[1]
    assert _offset(api, alice, upload_id) == 0
    assert api.tus_patch(alice, upload_id, 0, first, headers={"upload-checksum": _sum(first)}).status_code == 204


def test_a_patch_that_fails_its_checksum_is_undone(api: Api, alice: str) -> None:
    body = JFK.read_bytes()
    upload_id = _deferred(api, alice)
    assert api.tus_patch(alice, upload_id, 0, body[:1000], headers={"upload-checksum": _sum(body[:1000], "sha1")}
                         ).status_code == 204
    forged = body[1000:3000].replace(b"\x00", b"\x01")
    r = api.tus_patch(alice, upload_id, 1000, forged, headers={"upload-checksum": _sum(body[1000:3000])})
    assert (r.status_code, r.json()["error"]) == (460, "checksum_mismatch")
    assert r.headers["tus-resumable"] == "1.0.0"
    assert _offset(api, alice, upload_id) == 1000
    assert api.plain(api.settings.tus_dir / f"{upload_id}.bin") == body[:1000]
    md5 = "md5 " + base64.b64encode(hashlib.md5(b"x").digest()).decode()
    short = "sha256 " + base64.b64encode(b"short").decode()
    for bad, code in ((md5, "checksum_algorithm_unsupported"), ("sha256 not-base64!", "invalid_checksum"),
                      (short, "invalid_checksum")):
        r = api.tus_patch(alice, upload_id, 1000, body[1000:3000], headers={"upload-checksum": bad})
        assert (r.status_code, r.json()["error"]) == (400, code), bad
    assert _offset(api, alice, upload_id) == 1000


def test_a_cut_patch_with_a_checksum_keeps_nothing_of_it(live: Callable[..., LiveServer], alice: str) -> None:
    """Bytes that cannot be verified are not kept (tus checksum): the client resends the whole piece."""
    server = live()
    body = JFK.read_bytes()
    with httpx.Client(base_url=server.url, headers={"authorization": f"Bearer {alice}", **TUS}) as http:
        upload_id = http.post("/v1/uploads", headers={"upload-defer-length": "1"}).json()["upload_id"]
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(
                f"PATCH /v1/uploads/{upload_id} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {alice}\r\n"
                f"Tus-Resumable: 1.0.0\r\nUpload-Offset: 0\r\nContent-Type: application/offset+octet-stream\r\n"
                f"Upload-Checksum: {_sum(body)}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body[:100_000])
            time.sleep(0.2)
        deadline = time.monotonic() + 10
        while True:  # the server notices the cut and undoes the unverifiable part
            head = http.head(f"/v1/uploads/{upload_id}")
            if head.status_code == 200:
                break
            assert time.monotonic() < deadline, head.status_code
            time.sleep(0.05)
        assert head.headers["upload-offset"] == "0"


def test_termination_deletes_the_upload(api: Api, alice: str, bob: str) -> None:
    upload_id = _deferred(api, alice)
    assert api.tus_patch(alice, upload_id, 0, b"abc").status_code == 204
    delete = {**TUS}
    assert api.client.delete(f"/v1/uploads/{upload_id}", headers=api.headers(bob, **delete)).status_code == 404
    assert len(api.tus_files()) == 2
    r = api.client.delete(f"/v1/uploads/{upload_id}", headers=api.headers(alice, **delete))
    assert r.status_code == 204 and r.headers["tus-resumable"] == "1.0.0"
    assert api.tus_files() == []
    assert api.tus_head(alice, upload_id).status_code == 404
    assert api.tus_patch(alice, upload_id, 3, b"d").status_code == 404
    assert api.client.delete(f"/v1/uploads/{upload_id}", headers=api.headers(alice)).status_code == 412
    with db_session(api.settings.database_url or "") as db:
        actions = db.execute(select(AuditEntry.action).order_by(AuditEntry.id)).scalars().all()
    assert actions.count("upload_terminated") == 1


def test_deferred_uploads_count_against_the_open_upload_limit_by_bytes_received(
    api_with: Callable[..., Api], alice: str
) -> None:
    api = api_with(max_open_upload_bytes=100_000)
    growing = _deferred(api, alice)
    assert api.tus_patch(alice, growing, 0, b"a" * 60_000).status_code == 204
    # A declared upload still counts by its declaration; the deferred one by its 60 000 bytes.
    r = api.tus_create(alice, 50_000)
    assert (r.status_code, r.json()["error"]) == (413, "open_uploads_too_large")
    assert api.tus_create(alice, 30_000).status_code == 201  # 90 000 counted now
    other = _deferred(api, alice)  # holds nothing, so it counts nothing
    r = api.tus_patch(alice, other, 0, b"b" * 20_000)
    assert (r.status_code, r.json()["error"]) == (413, "exceeds_upload_length")
    assert _offset(api, alice, other) == 0
    assert api.tus_patch(alice, other, 0, b"b" * 10_000).status_code == 204
    # A chunked body (no Content-Length) that runs past the room is undone as it passes it.
    r = api.tus_patch(alice, other, 10_000, iter([b"c" * 4096] * 3))
    assert (r.status_code, r.json()["error"]) == (413, "exceeds_upload_length")
    assert _offset(api, alice, other) == 10_000
    # Declaring a length past the room is refused too.
    r = api.tus_patch(alice, growing, 60_000, b"", headers={"upload-length": "70001"})
    assert (r.status_code, r.json()["error"]) == (413, "open_uploads_too_large")
    assert api.tus_patch(alice, growing, 60_000, b"", headers={"upload-length": "60000"}).status_code == 204


def test_a_key_rotation_during_a_growing_upload_disturbs_nothing(api: Api, alice: str) -> None:
    body = JFK.read_bytes()
    third = len(body) // 3
    upload_id = _deferred(api, alice)
    assert api.tus_patch(alice, upload_id, 0, body[:third]).status_code == 204
    data_file = api.settings.tus_dir / f"{upload_id}.bin"
    before = usage([api.settings.tus_dir])
    rotate = [sys.executable, "-m", "verbatim.cli", "keys", "rotate"]
    done = subprocess.run(rotate, env=settings_env(api.settings), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    ring = read_ring_file(api.settings.data_dir / "keys" / "ring.json")
    assert ring.current not in before and usage([api.settings.tus_dir]) == {ring.current: 2}
    # The next PATCH seals under the new key, at the offset the upload held before the rotation.
    assert _offset(api, alice, upload_id) == third
    r = api.tus_patch(alice, upload_id, third, body[third : 2 * third], headers={"upload-checksum": _sum(
        body[third : 2 * third])})
    assert r.status_code == 204, r.text
    done = subprocess.run(rotate, env=settings_env(api.settings), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    r = api.tus_patch(alice, upload_id, 2 * third, body[2 * third :], headers={"upload-length": str(len(body))})
    assert r.status_code == 204, r.text
    assert api.plain(data_file) == body
    finished = api.finalize(alice, upload_id, headers={"x-content-sha256": hashlib.sha256(body).hexdigest()})
    assert finished.status_code == 201, finished.text


def test_the_openapi_description_shows_phone_developers_the_flow(api: Api) -> None:
    spec = api.client.get("/openapi.json").json()
    tag = next(t for t in spec["tags"] if t["name"] == "uploads")
    for words in ("Upload-Defer-Length: 1", "Upload-Checksum: sha256", "Upload-Length", "HEAD", "/v1/sessions"):
        assert words in tag["description"], words
    create = spec["paths"]["/v1/uploads"]["post"]
    assert {p["name"] for p in create["parameters"]} >= {"upload-defer-length", "upload-checksum"}
    assert "application/offset+octet-stream" in create["requestBody"]["content"]
    assert "delete" in spec["paths"]["/v1/uploads/{upload_id}"]


def _webm(seconds: float, freq: float) -> bytes:
    """A WebM/Opus stream as a browser's MediaRecorder makes one (written live: no stated duration)."""
    import io

    import av
    import numpy as np

    class Live(io.RawIOBase):
        def __init__(self) -> None:
            self.data = bytearray()

        def writable(self) -> bool:
            return True

        def seekable(self) -> bool:
            return False

        def write(self, b: bytes) -> int:  # type: ignore[override]
            self.data += b
            return len(b)

    sink = Live()
    out = av.open(sink, "w", format="webm")
    stream = out.add_stream("libopus", rate=48000)
    stream.layout = "mono"  # type: ignore[union-attr]
    t = np.arange(int(48000 * seconds)) / 48000
    x = (0.3 * np.sin(2 * np.pi * freq * t) * 32767).astype(np.int16)
    for i in range(0, len(x), 960):
        frame = av.AudioFrame.from_ndarray(x[i : i + 960].reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate, frame.pts = 48000, i
        for packet in stream.encode(frame):  # type: ignore[union-attr]
            out.mux(packet)
    for packet in stream.encode(None):  # type: ignore[union-attr]
        out.mux(packet)
    out.close()
    return bytes(sink.data)


def _part(api: Api, token: str, data: bytes) -> str:
    upload_id = _deferred(api, token)
    r = api.tus_patch(token, upload_id, 0, data, headers={"upload-length": str(len(data))})
    assert r.status_code == 204, r.text
    return upload_id


def test_the_parts_of_one_recording_are_joined_in_order_into_one_session(api: Api, alice: str) -> None:
    """A recorder restarted mid-session sends each part as its own stream; one session holds them all."""
    parts = [_webm(3.0, 440), _webm(2.0, 880), _webm(1.5, 330)]
    ids = [_part(api, alice, p) for p in parts]
    r = api.client.post("/v1/sessions", json={"upload_ids": ids, "metadata": good_metadata()},
                        headers=api.headers(alice, **{"idempotency-key": "parts-1"}))
    assert r.status_code == 201, r.text
    assert abs(r.json()["duration_s"] - 6.5) < 0.1  # each part's timestamps start at 0: joined, they run on
    assert api.tus_files() == []
    [audio] = api.files_on_volume()
    import io

    import av

    with av.open(io.BytesIO(api.plain(audio))) as joined:
        samples = sum(frame.samples for frame in joined.decode(audio=0))
    assert abs(samples / 48000 - 6.5) < 0.1
    again = api.client.post("/v1/sessions", json={"upload_ids": ids, "metadata": good_metadata()},
                            headers=api.headers(alice, **{"idempotency-key": "parts-1"}))
    assert again.status_code == 200 and again.json()["id"] == r.json()["id"]


def test_parts_that_cannot_be_joined_are_kept(api: Api, alice: str) -> None:
    ids = [_part(api, alice, _webm(1.0, 440)), _part(api, alice, JFK.read_bytes())]
    r = api.client.post("/v1/sessions", json={"upload_ids": ids, "metadata": good_metadata()},
                        headers=api.headers(alice))
    assert (r.status_code, r.json()["error"]) == (422, "parts_unreadable")
    assert len(api.tus_files()) == 4 and api.enqueued() == 0  # nothing lost, nothing queued
    unfinished = _deferred(api, alice)
    r = api.client.post("/v1/sessions", json={"upload_ids": [ids[0], unfinished], "metadata": good_metadata()},
                        headers=api.headers(alice))
    assert (r.status_code, r.json()["error"]) == (409, "upload_length_unknown")
    for body in ({"upload_ids": [ids[0], ids[0]]}, {"upload_ids": []}, {"upload_id": ids[0], "upload_ids": ids}):
        r = api.client.post("/v1/sessions", json={**body, "metadata": good_metadata()}, headers=api.headers(alice))
        assert (r.status_code, r.json()["error"]) == (422, "invalid_body"), body
    assert len(api.tus_files()) == 6
