"""Bad uploads, multipart and tus: each gets its status and error code, leaves no file and queues nothing.

"No file" means nothing under audio/, incoming/ or tus/ — except a resumable upload that is
legitimately still open (a refused PATCH, an early finalize), which must stay exactly as it was.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import select
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func
from sqlalchemy import select as sql_select

from tests.api.conftest import TUS, Api, LiveServer, good_metadata
from tests.conftest import SAMPLES
from tests.factories import token_for
from verbatim.db.engine import db_session
from verbatim.db.models import Session

JFK = SAMPLES / "jfk.wav"
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000") + b"\0" * 4000
BOUNDARY = "verbatimtestboundary"


def refused(api: Api, r: httpx.Response, status: int, code: str, *, open_upload: str | None = None) -> None:
    """The answer is ``{"error": code, "detail": …}`` with ``status``; nothing is left but ``open_upload``."""
    assert (r.status_code, r.json().get("error")) == (status, code), r.text
    assert set(r.json()) == {"error", "detail"} and r.json()["detail"]
    left = sorted(p.name for p in api.files_on_volume())
    assert left == ([] if open_upload is None else [f"{open_upload}.bin", f"{open_upload}.json"])
    assert api.enqueued() == 0
    with db_session(api.settings.database_url or "") as db:
        assert db.execute(sql_select(func.count()).select_from(Session)).scalar_one() == 0


def part(name: str, data: bytes, filename: str | bytes | None = None) -> bytes:
    disposition = f'form-data; name="{name}"'.encode()
    if filename is not None:
        raw = filename if isinstance(filename, bytes) else filename.encode()
        disposition += b'; filename="' + raw + b'"'
    return b"--" + BOUNDARY.encode() + b"\r\nContent-Disposition: " + disposition + b"\r\n\r\n" + data + b"\r\n"


def form(*parts: bytes, close: bool = True) -> bytes:
    return b"".join(parts) + (b"--" + BOUNDARY.encode() + b"--\r\n" if close else b"")


def meta_part(meta: Any = None) -> bytes:
    return part("metadata", json.dumps(good_metadata() if meta is None else meta).encode())


def post_form(api: Api, token: str, body: bytes, **headers: str) -> httpx.Response:
    return api.client.post("/v1/sessions", content=body, headers=api.headers(
        token, **{"content-type": f"multipart/form-data; boundary={BOUNDARY}", **headers}))


# --- what the audio is --------------------------------------------------------------------


def _truncated_wav() -> bytes:
    return JFK.read_bytes()[: len(JFK.read_bytes()) // 2]


def _corrupt() -> bytes:
    rng = random.Random(7)
    return b"RIFF" + bytes(rng.getrandbits(8) for _ in range(40_000))


@pytest.mark.parametrize(
    ("audio", "status", "code"),
    [
        pytest.param(b"", 422, "empty_audio", id="empty-file"),
        pytest.param(_truncated_wav(), 422, "unreadable_audio", id="truncated-wav"),
        pytest.param(_corrupt(), 422, "unreadable_audio", id="corrupt-file"),
        pytest.param(b"Dear diary, today I recorded nothing.\n" * 100, 422, "unreadable_audio", id="text-as-wav"),
        pytest.param(PNG, 422, "unreadable_audio", id="png-as-wav"),
    ],
)
def test_audio_that_is_not_a_recording(api: Api, alice: str, audio: bytes, status: int, code: str) -> None:
    refused(api, api.upload(alice, audio, filename="session.wav"), status, code)


@pytest.mark.parametrize(
    ("audio", "status", "code"),
    [
        pytest.param(b"", 422, "empty_audio", id="tus-empty"),
        pytest.param(_truncated_wav(), 422, "unreadable_audio", id="tus-truncated-wav"),
        pytest.param(PNG, 422, "unreadable_audio", id="tus-png"),
    ],
)
def test_tus_audio_that_is_not_a_recording_is_consumed(api: Api, alice: str, audio: bytes, status: int,
                                                        code: str) -> None:
    upload_id = api.tus_upload(alice, audio)
    refused(api, api.finalize(alice, upload_id), status, code)


def test_too_long(api_with: Callable[..., Api], alice: str) -> None:
    api = api_with(max_duration_s=5.0)  # JFK is 11 s
    refused(api, api.upload(alice, JFK), 413, "too_long")
    refused(api, api.finalize(alice, api.tus_upload(alice, JFK)), 413, "too_long")


def test_too_large_by_declared_length(api_with: Callable[..., Api], alice: str) -> None:
    api = api_with(max_upload_bytes=64 * 1024)  # JFK is 344 KiB
    refused(api, api.upload(alice, JFK), 413, "too_large")
    refused(api, api.tus_create(alice, JFK.stat().st_size), 413, "too_large")


def test_digest_mismatch(api: Api, alice: str) -> None:
    wrong = hashlib.sha256(b"something else").hexdigest()
    refused(api, api.upload(alice, JFK, headers={"x-content-sha256": wrong}), 422, "digest_mismatch")
    upload_id = api.tus_upload(alice, JFK)
    refused(api, api.finalize(alice, upload_id, headers={"x-content-sha256": wrong}), 422, "digest_mismatch")


def test_idempotency_key_reused_with_different_audio(api: Api, alice: str) -> None:
    first = api.upload(alice, JFK, headers={"idempotency-key": "same"})
    assert first.status_code == 201
    other = SAMPLES / "nada_lily_02_haggard_0216.wav"
    for r in (api.upload(alice, other, headers={"idempotency-key": "same"}),
              api.finalize(alice, api.tus_upload(alice, other), headers={"idempotency-key": "same"})):
        assert (r.status_code, r.json()["error"]) == (409, "idempotency_conflict")
        assert [p.name for p in api.files_on_volume()] == [f"{first.json()['id']}.audio"]
        assert api.enqueued() == 1  # the first upload's message only


# --- what the metadata is -----------------------------------------------------------------


def _without(key: str) -> dict[str, Any]:
    meta = good_metadata()
    meta.pop(key)
    return meta


@pytest.mark.parametrize(
    ("metadata", "status", "code"),
    [
        pytest.param("{not json", 422, "metadata_not_json", id="metadata-not-json"),
        pytest.param("[1, 2]", 422, "metadata_not_object", id="metadata-not-object"),
        pytest.param(_without("client_ids"), 422, "invalid_metadata", id="no-client-ids"),
        pytest.param(good_metadata(diagnosis="F32.1"), 422, "invalid_metadata", id="unknown-field"),
        pytest.param(_without("consent"), 422, "missing_consent", id="no-consent"),
    ],
)
def test_bad_metadata(api: Api, alice: str, metadata: Any, status: int, code: str) -> None:
    refused(api, api.upload(alice, JFK, metadata), status, code)


def test_metadata_over_64_kib(api: Api, alice: str) -> None:
    meta = good_metadata(client_ids=["x" * 199] * 400)
    refused(api, post_form(api, alice, form(meta_part(meta), part("audio", JFK.read_bytes(), "a.wav"))),
            413, "metadata_too_large")


def test_bad_finalize_metadata_keeps_the_upload_for_a_corrected_retry(api: Api, alice: str) -> None:
    """A typo in the metadata must not cost the recording: the upload stays, the fix goes through."""
    upload_id = api.tus_upload(alice, JFK)
    for meta, code in ((_without("consent"), "missing_consent"), ("a string", "metadata_not_object"),
                       (_without("client_ids"), "invalid_metadata")):
        refused(api, api.finalize(alice, upload_id, meta), 422, code, open_upload=upload_id)
    assert api.finalize(alice, upload_id).status_code == 201


@pytest.mark.parametrize(
    ("body", "code"),
    [
        pytest.param(b"{upload_id: nope", "body_not_json", id="finalize-not-json"),
        pytest.param(b'["upload_id"]', "invalid_body", id="finalize-not-object"),
        pytest.param(json.dumps({"upload_id": "x", "metadata": {}, "audio_url": "http://x"}).encode(),
                     "invalid_body", id="finalize-unknown-field"),
        pytest.param(json.dumps({"metadata": good_metadata()}).encode(), "invalid_body", id="finalize-no-upload-id"),
        pytest.param(json.dumps({"upload_id": "0" * 32}).encode(), "missing_metadata", id="finalize-no-metadata"),
    ],
)
def test_bad_finalize_body(api: Api, alice: str, body: bytes, code: str) -> None:
    r = api.client.post("/v1/sessions", content=body,
                        headers=api.headers(alice, **{"content-type": "application/json"}))
    refused(api, r, 422, code)


def test_finalize_body_over_the_limit(api: Api, alice: str) -> None:
    body = json.dumps({"upload_id": "0" * 32, "metadata": {"pad": "x" * 100_000}}).encode()
    headers = api.headers(alice, **{"content-type": "application/json"})
    refused(api, api.client.post("/v1/sessions", content=body, headers=headers), 413, "body_too_large")


# --- what the request is ------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "audio/wav", "multipart/form-data", None],
    ids=["text", "urlencoded", "raw-audio", "multipart-without-boundary", "no-content-type"],
)
def test_request_not_multipart(api: Api, alice: str, content_type: str | None) -> None:
    headers = api.headers(alice, **({"content-type": content_type} if content_type else {}))
    r = api.client.post("/v1/sessions", content=JFK.read_bytes(), headers=headers)
    refused(api, r, 415, "unsupported_media_type")


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        pytest.param(form(meta_part(), part("audio", JFK.read_bytes(), "a.wav"), part("audio", b"RIFF", "b.wav")),
                     400, "duplicate_audio", id="two-audio-parts"),
        pytest.param(form(meta_part()), 400, "missing_audio", id="no-audio-part"),
        pytest.param(form(part("audio", JFK.read_bytes(), "a.wav")), 422, "missing_metadata", id="no-metadata-part"),
        pytest.param(form(meta_part(), meta_part(), part("audio", JFK.read_bytes(), "a.wav")),
                     400, "duplicate_metadata", id="two-metadata-parts"),
        pytest.param(form(meta_part(), part("audio", JFK.read_bytes(), "a.wav"), part("notes", b"hi")),
                     400, "unexpected_part", id="unexpected-part"),
        pytest.param(form(meta_part(), part("audio", JFK.read_bytes(), "a.wav"), close=False),
                     400, "truncated_body", id="no-closing-boundary"),
        pytest.param(bytes(random.Random(3).getrandbits(8) for _ in range(20_000)), 400, "malformed_multipart",
                     id="garbage"),
        pytest.param(b"--" + BOUNDARY.encode() + b"\r\nContent-Disposition: form-data; name=\"audio\"; filename=\"a\""
                     b"\r\n\r\n" + JFK.read_bytes()[:50_000], 400, "truncated_body", id="ends-inside-audio"),
    ],
)
def test_garbled_multipart(api: Api, alice: str, body: bytes, status: int, code: str) -> None:
    refused(api, post_form(api, alice, body), status, code)


def test_only_a_therapist_uploads(api: Api) -> None:
    admin = token_for(api.settings, "", "North Clinic", scope="clinic_admin")
    refused(api, api.upload(admin, JFK), 403, "forbidden")
    refused(api, api.tus_create(admin, 10), 403, "forbidden")


def _tree(root: Path) -> set[Path]:
    """Files below ``root``, except an embedded server's own (PostgreSQL writes caches there at will)."""
    servers = [d for d in root.iterdir() if d.is_dir() and ((d / "PG_VERSION").exists() or d.name.startswith("redis"))]
    return {p for p in root.rglob("*") if p.is_file() and not any(p.is_relative_to(d) for d in servers)}


@pytest.mark.parametrize(
    "filename",
    ["../../etc/passwd", "/etc/passwd", "..\\..\\boot.ini", b"evil\x00.wav", "x" * 10_000, "../" * 50 + "tmp/x"],
    ids=["dotdot", "absolute", "backslashes", "nul-byte", "10000-chars", "deep-dotdot"],
)
def test_file_name_is_never_a_path(api: Api, alice: str, filename: str | bytes) -> None:
    outside = api.settings.data_dir.parent
    before = _tree(outside) - _tree(api.settings.data_dir)
    r = post_form(api, alice, form(meta_part(), part("audio", JFK.read_bytes(), filename)))
    if r.status_code == 201:
        sid = r.json()["id"]
        assert [p.relative_to(api.settings.data_dir).as_posix() for p in api.files_on_volume()] == [
            f"audio/{sid}.audio"]
        assert api.enqueued() == 1
    else:  # a 10 000-character header line may be refused as malformed: fine, as long as nothing is left
        refused(api, r, 400, "malformed_multipart")
    assert _tree(outside) - _tree(api.settings.data_dir) == before


# --- tus: bad PATCHes leave the open upload exactly as it was -------------------------------


@pytest.fixture
def half(api: Api, alice: str) -> Iterator[tuple[str, int]]:
    """An open upload of JFK holding its first half: (upload id, offset)."""
    upload_id = api.tus_upload(alice, JFK, complete=False)
    yield upload_id, JFK.stat().st_size // 2


def _unchanged(api: Api, alice: str, upload_id: str, offset: int) -> None:
    assert int(api.tus_head(alice, upload_id).headers["upload-offset"]) == offset
    assert api.plain(api.settings.tus_dir / f"{upload_id}.bin") == JFK.read_bytes()[:offset]


def test_tus_patch_at_the_wrong_offset(api: Api, alice: str, half: tuple[str, int]) -> None:
    upload_id, offset = half
    for wrong in (0, offset - 1, offset + 1):
        r = api.tus_patch(alice, upload_id, wrong, b"abc")
        refused(api, r, 409, "offset_conflict", open_upload=upload_id)
        assert int(r.headers["upload-offset"]) == offset and r.headers["tus-resumable"] == "1.0.0"
    _unchanged(api, alice, upload_id, offset)


def test_tus_patch_beyond_the_length(api: Api, alice: str, half: tuple[str, int]) -> None:
    upload_id, offset = half
    rest = JFK.read_bytes()[offset:]
    refused(api, api.tus_patch(alice, upload_id, offset, rest + b"x"), 413, "exceeds_upload_length",
            open_upload=upload_id)
    _unchanged(api, alice, upload_id, offset)

    def chunked() -> Iterator[bytes]:  # no Content-Length: found out only while writing, then undone
        yield rest
        yield b"one byte too many"

    refused(api, api.tus_patch(alice, upload_id, offset, chunked()), 413, "exceeds_upload_length",
            open_upload=upload_id)
    _unchanged(api, alice, upload_id, offset)


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        pytest.param({"content-type": "application/octet-stream"}, 415, "unsupported_media_type",
                     id="patch-wrong-content-type"),
        pytest.param({"tus-resumable": "0.2.2"}, 412, "tus_version_unsupported", id="patch-wrong-tus-version"),
        pytest.param({"upload-offset": "-1"}, 400, "invalid_header", id="patch-negative-offset"),
        pytest.param({"upload-offset": "1e3"}, 400, "invalid_header", id="patch-offset-not-an-integer"),
    ],
)
def test_tus_bad_patch_headers(api: Api, alice: str, half: tuple[str, int], headers: dict[str, str], status: int,
                               code: str) -> None:
    upload_id, offset = half
    r = api.tus_patch(alice, upload_id, offset, JFK.read_bytes()[offset:], headers=headers)
    refused(api, r, status, code, open_upload=upload_id)
    _unchanged(api, alice, upload_id, offset)


def test_tus_finalize_of_an_incomplete_upload(api: Api, alice: str, half: tuple[str, int]) -> None:
    upload_id, offset = half
    refused(api, api.finalize(alice, upload_id), 409, "upload_incomplete", open_upload=upload_id)
    _unchanged(api, alice, upload_id, offset)
    assert api.tus_patch(alice, upload_id, offset, JFK.read_bytes()[offset:]).status_code == 204
    assert api.finalize(alice, upload_id).status_code == 201  # resumable, then finalizable


def test_tus_upload_of_another_therapist(api: Api, alice: str, bob: str, half: tuple[str, int]) -> None:
    upload_id, offset = half
    refused(api, api.finalize(bob, upload_id), 404, "not_found", open_upload=upload_id)
    refused(api, api.tus_patch(bob, upload_id, offset, b"x"), 404, "not_found", open_upload=upload_id)
    assert api.tus_head(bob, upload_id).status_code == 404
    _unchanged(api, alice, upload_id, offset)


@pytest.mark.parametrize("upload_id", ["0" * 32, "../../etc/passwd", "A" * 32, "x" * 10_000, ""],
                         ids=["unknown", "traversal", "uppercase", "huge", "empty"])
def test_tus_finalize_of_no_such_upload(api: Api, alice: str, upload_id: str) -> None:
    refused(api, api.finalize(alice, upload_id), 404, "not_found")


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        pytest.param({"upload-length": None}, 400, "missing_header", id="create-no-length"),
        pytest.param({"upload-length": "12abc"}, 400, "invalid_header", id="create-bad-length"),
        pytest.param({"upload-defer-length": "1"}, 400, "invalid_header", id="create-length-and-deferred"),
        pytest.param({"upload-length": None, "upload-defer-length": "yes"}, 400, "invalid_header",
                     id="create-bad-deferred-length"),
        pytest.param({"upload-metadata": "filename not_base64!"}, 400, "invalid_upload_metadata",
                     id="create-bad-metadata"),
        pytest.param({"upload-metadata": "a YQ==,a YQ=="}, 400, "invalid_upload_metadata",
                     id="create-duplicate-metadata-key"),
        pytest.param({"tus-resumable": None}, 412, "tus_version_unsupported", id="create-no-tus-version"),
    ],
)
def test_tus_bad_creation(api: Api, alice: str, headers: dict[str, str | None], status: int, code: str) -> None:
    h = {**TUS, "upload-length": "1000", **headers}
    r = api.client.post("/v1/uploads", headers=api.headers(alice, **{k: v for k, v in h.items() if v is not None}))
    refused(api, r, status, code)


def test_tus_creation_with_a_body_of_another_type(api: Api, alice: str) -> None:
    r = api.client.post("/v1/uploads", content=b"RIFF....", headers=api.headers(alice, **TUS, **{
        "upload-length": "8", "content-type": "audio/wav"}))
    refused(api, r, 400, "invalid_creation_body")


# --- real connections: the limit stops the reading, a cut leaves nothing --------------------


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def _read_response(sock: socket.socket) -> tuple[int, dict[str, Any]]:
    raw = b""
    while b"\r\n\r\n" not in raw:
        raw += sock.recv(65536)
    head, _, body = raw.partition(b"\r\n\r\n")
    fields = dict(line.lower().partition(b": ")[::2] for line in head.split(b"\r\n")[1:])
    length = int(fields[b"content-length"])
    while len(body) < length:
        body += sock.recv(65536)
    return int(head.split()[1]), json.loads(body)


def test_too_large_is_answered_as_soon_as_passed_and_reading_stops(live: Callable[..., LiveServer], alice: str) -> None:
    """A chunked body (no Content-Length) of 256 MiB against a 1 MiB limit: 413 early, connection closed."""
    limit, total = 1024 * 1024, 256 * 1024 * 1024
    server = live(max_upload_bytes=limit)
    api = Api(httpx.Client(base_url=server.url), server.settings)
    sock = socket.create_connection(("127.0.0.1", server.port))
    sock.sendall(f"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {alice}\r\n"
                 f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n".encode()
                 + _chunk(meta_part() + b"--" + BOUNDARY.encode()
                          + b'\r\nContent-Disposition: form-data; name="audio"; filename="a.wav"\r\n\r\n'))
    sock.settimeout(5)
    piece = _chunk(b"\0" * 65536)
    sent, answer, cut = 0, None, None
    while sent < total:
        # A short wait per chunk lets the early answer arrive before our next send meets the
        # closed socket (a reset can discard an answer still unread in our receive buffer).
        if answer is None and select.select([sock], [], [], 0.005)[0]:
            answer = _read_response(sock)
        try:
            sock.sendall(piece)
        except OSError as exc:  # reset / broken pipe: the server closed the connection
            cut = exc
            if answer is None:
                with contextlib.suppress(OSError, ValueError, KeyError):
                    answer = _read_response(sock)
            break
        sent += 65536
    sock.close()
    assert answer is not None, "no answer before the server closed the connection"
    assert answer[0] == 413 and answer[1]["error"] == "too_large"
    assert cut is not None, "the server read the whole body"
    assert sent < limit + 32 * 1024 * 1024  # the limit plus what the kernel's socket buffers held
    refused_after_the_fact(api)


def refused_after_the_fact(api: Api) -> None:
    deadline = time.monotonic() + 10
    while api.files_on_volume() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert api.files_on_volume() == [] and api.enqueued() == 0
    with db_session(api.settings.database_url or "") as db:
        assert db.execute(sql_select(func.count()).select_from(Session)).scalar_one() == 0


def test_client_disconnect_mid_upload_leaves_nothing(live: Callable[..., LiveServer], alice: str) -> None:
    server = live()
    api = Api(httpx.Client(base_url=server.url), server.settings)
    body = form(meta_part(), part("audio", (SAMPLES / "therapy_dialogue.wav").read_bytes(), "s.wav"))
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(f"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {alice}\r\n"
                     f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
                     f"Content-Length: {len(body)}\r\n\r\n".encode() + body[: len(body) // 2])
        deadline = time.monotonic() + 10
        while not list(server.settings.incoming_dir.iterdir()):  # the server is writing the audio part
            assert time.monotonic() < deadline, "the upload never reached incoming/"
            time.sleep(0.01)
    refused_after_the_fact(api)


def test_an_upload_that_goes_silent_is_408_and_leaves_nothing(live: Callable[..., LiveServer], alice: str) -> None:
    """Declares 100 MB, sends the start of its audio part, then nothing (slow clients, security item 6)."""
    server = live(upload_idle_s=1.0)
    api = Api(httpx.Client(base_url=server.url), server.settings)
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.settimeout(30)
        sock.sendall(f"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {alice}\r\n"
                     f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
                     f"Content-Length: {100 * 1024 * 1024}\r\n\r\n".encode()
                     + meta_part() + b"--" + BOUNDARY.encode()
                     + b'\r\nContent-Disposition: form-data; name="audio"; filename="a.wav"\r\n\r\n' + b"\0" * 4096)
        status, body = _read_response(sock)
    assert (status, body["error"]) == (408, "upload_idle")
    refused_after_the_fact(api)
