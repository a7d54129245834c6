"""Authenticate before reading any body; cap every small route's body (security issue, item 1).

Against a real uvicorn server over raw sockets: a body that will be refused is never read.
"""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections.abc import Callable
from typing import Any

from tests.api.conftest import LiveServer
from verbatim.api.body_gate import SMALL_BODY_BYTES, body_cap

BIG = 150 * 1024 * 1024


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], dict[str, Any]]:
    raw = b""
    while b"\r\n\r\n" not in raw:
        chunk = sock.recv(65536)
        assert chunk, "connection closed without an answer"
        raw += chunk
    head, _, body = raw.partition(b"\r\n\r\n")
    fields = {k.decode().lower(): v.decode() for k, _, v in
              (line.partition(b": ") for line in head.split(b"\r\n")[1:])}
    while len(body) < int(fields["content-length"]):
        body += sock.recv(65536)
    return int(head.split()[1]), fields, json.loads(body)


def send_head_only(server: LiveServer, request_line: str, headers: dict[str, str]) -> tuple[float, int, dict, dict]:  # type: ignore[type-arg]
    """Send only the request head (a body is announced but never sent); (seconds to the status, answer)."""
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.settimeout(20)
        head = request_line + "\r\nHost: x\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        started = time.monotonic()
        sock.sendall(head.encode())
        status, fields, body = read_response(sock)
        return time.monotonic() - started, status, fields, body


def test_an_unauthenticated_huge_body_is_refused_before_any_of_it_is_read(
    live: Callable[..., LiveServer],
) -> None:
    server = live()
    sid = uuid.uuid4()
    for line in (f"PUT /v1/sessions/{sid}/speakers HTTP/1.1", "POST /v1/reliability/dlq/reprocess HTTP/1.1",
                 "POST /v1/sessions HTTP/1.1"):
        elapsed, status, fields, body = send_head_only(
            server, line, {"Content-Type": "application/json", "Content-Length": str(BIG)})
        # The answer came although not one body byte was sent: nothing was read or parsed.
        assert (status, body["error"]) == (401, "unauthorized"), line
        assert fields.get("connection") == "close"
        assert elapsed < 10


def test_a_bad_token_is_refused_before_the_body_too(live: Callable[..., LiveServer]) -> None:
    server = live()
    _, status, _, _ = send_head_only(server, f"PUT /v1/sessions/{uuid.uuid4()}/speakers HTTP/1.1",
                                     {"Authorization": "Bearer vbt_not-a-token", "Content-Length": str(BIG)})
    assert status == 401


def test_an_authenticated_body_over_the_small_cap_is_413_before_reading(
    live: Callable[..., LiveServer], alice: str,
) -> None:
    server = live()
    _, status, _, body = send_head_only(server, f"PUT /v1/sessions/{uuid.uuid4()}/speakers HTTP/1.1",
                                        {"Authorization": f"Bearer {alice}", "Content-Type": "application/json",
                                         "Content-Length": str(SMALL_BODY_BYTES + 1)})
    assert (status, body["error"]) == (413, "body_too_large")


def test_a_chunked_body_over_the_small_cap_is_413(live: Callable[..., LiveServer], alice: str) -> None:
    server = live()
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.settimeout(20)
        sock.sendall(f"PUT /v1/sessions/{uuid.uuid4()}/speakers HTTP/1.1\r\nHost: x\r\n"
                     f"Authorization: Bearer {alice}\r\nContent-Type: application/json\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n".encode())
        piece = b"[" * 8192
        try:
            for _ in range(SMALL_BODY_BYTES // len(piece) + 2):
                sock.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        except OSError:
            pass  # the server answered and closed: fine
        status, _, body = read_response(sock)
    assert (status, body["error"]) == (413, "body_too_large")


def test_a_small_authenticated_body_still_reaches_its_route(live: Callable[..., LiveServer], alice: str) -> None:
    import httpx

    server = live()
    r = httpx.put(f"{server.url}/v1/sessions/{uuid.uuid4()}/speakers", json={"speakers": {"S1": "therapist"}},
                  headers={"Authorization": f"Bearer {alice}"})
    assert r.status_code == 404  # the route ran: an unknown session of this therapist


def test_upload_routes_keep_their_own_streaming_limits() -> None:
    assert body_cap("POST", "/v1/sessions") is None
    assert body_cap("PATCH", "/v1/uploads/0123abcd") is None
    assert body_cap("PUT", "/v1/sessions/x/speakers") == SMALL_BODY_BYTES
    assert body_cap("POST", "/v1/uploads") is None  # creation-with-upload: the first bytes stream with the POST
