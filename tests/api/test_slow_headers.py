"""A connection with half-sent headers is closed after ``header_timeout_s`` (security issue, item 6).

Against a real uvicorn server (the API's own server options) over raw sockets. Each wait is
bounded by a deadline many times the timeout, so a slow machine only makes it slower, while a
server that holds the connection (uvicorn's default) fails the test.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

from tests.api.conftest import LiveServer

TIMEOUT_S = 0.5
DEADLINE_S = 60 * TIMEOUT_S


def closed_by_server(sock: socket.socket, deadline_s: float = DEADLINE_S) -> bool:
    """True once the server closes (EOF or reset) before ``deadline_s``; False if it is still open then."""
    sock.settimeout(deadline_s)
    try:
        return sock.recv(1024) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_a_connection_that_never_sends_a_byte_is_closed(live: Callable[..., LiveServer]) -> None:
    server = live(header_timeout_s=TIMEOUT_S)
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        assert closed_by_server(sock)


def test_half_sent_headers_are_closed_without_reaching_the_app(live: Callable[..., LiveServer]) -> None:
    server = live(header_timeout_s=TIMEOUT_S)
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data\r\n")
        assert closed_by_server(sock)


def test_trickled_header_bytes_do_not_extend_the_deadline(live: Callable[..., LiveServer]) -> None:
    """Slowloris: one byte at a time, each well inside the timeout, is still cut at the head's deadline."""
    server = live(header_timeout_s=TIMEOUT_S)
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Padding: " + b"a" * 10_000
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        deadline = time.monotonic() + DEADLINE_S
        closed = False
        for byte in head:
            try:
                sock.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            if closed_by_server(sock, TIMEOUT_S / 5):
                closed = True
                break
            assert time.monotonic() < deadline, "the server kept a trickling head open"
        assert closed, "the whole trickled head was accepted"


def test_a_kept_alive_connection_that_starts_a_head_and_stalls_is_closed(live: Callable[..., LiveServer]) -> None:
    server = live(header_timeout_s=TIMEOUT_S)
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.settimeout(DEADLINE_S)
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 200")
        # Read the whole body too: a body byte arriving later would look like "still open" below.
        head, _, body = answer.partition(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        while len(body) < length:
            body += sock.recv(65536)
        # The next request's first bytes cancel uvicorn's keep-alive timer; ours still runs.
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")
        assert closed_by_server(sock)


def test_a_prompt_request_is_served_and_its_slow_body_is_not_cut_by_the_head_deadline(
    live: Callable[..., LiveServer],
) -> None:
    server = live(header_timeout_s=TIMEOUT_S)
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 10\r\n\r\n")
        # The head is in: the app answers (401, no token) rather than the head deadline cutting it.
        sock.settimeout(DEADLINE_S)
        answer = sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 401"), answer[:100]


def test_connections_past_the_limit_are_answered_503_at_once(live: Callable[..., LiveServer]) -> None:
    """uvicorn's ``limit_concurrency`` (``api_max_connections``): idle connections cannot starve the rest."""
    server = live(api_max_connections=2, header_timeout_s=DEADLINE_S)
    held = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(2)]
    try:
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            sock.settimeout(DEADLINE_S)
            assert sock.recv(65536).startswith(b"HTTP/1.1 503")
    finally:
        for sock in held:
            sock.close()
