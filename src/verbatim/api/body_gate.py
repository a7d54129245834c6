"""Authenticate before reading any body, and cap every body by route (ASGI middleware).

FastAPI reads and parses a JSON body before any dependency runs, so a 150 MiB body sent
without a token used to be read, buffered and parsed before the 401. This gate runs first:

1. A request to ``/v1/…`` that carries a body (Content-Length > 0 or chunked) must present a
   valid bearer token; otherwise it is answered 401 at once and its body is never read (the
   outer ``CloseOnUnreadBody`` then closes the connection, so the server stops reading too).
   The resolved principal is kept in ``scope["state"]`` so the route does not look it up again.
2. Each route has a body cap: uploads keep their own streaming limits (multipart and tus
   enforce ``max_upload_bytes`` as they stream); every other route takes at most
   ``SMALL_BODY_BYTES`` (64 KiB). A declared length over the cap is refused 413 before
   reading; a chunked body is buffered only up to the cap, then refused.

Why our own code: the order (auth, then cap, then body) is the point, and no maintained
middleware does "authenticate before the body" for a FastAPI app.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from verbatim.auth import Principal, resolve

SMALL_BODY_BYTES = 64 * 1024

#: (method, path pattern) → body cap in bytes; None: the route streams and enforces its own limit.
ROUTE_CAPS: list[tuple[str, re.Pattern[str], int | None]] = [
    ("POST", re.compile(r"^/v1/sessions/?$"), None),  # multipart upload, or the small tus finalize
    ("PATCH", re.compile(r"^/v1/uploads/[^/]+/?$"), None),  # tus chunks (offset and size checked)
]


#: Routes outside bearer-token authentication, each with its own (small) body cap in bytes. The
#: recognizer's job notification proves itself with a per-job secret, checked by the route.
CALLBACK_BODY_BYTES = 16 * 1024
OPEN_ROUTES: list[tuple[str, re.Pattern[str], int]] = [
    ("POST", re.compile(r"^/v1/recognizer/callbacks/[^/]+/?$"), CALLBACK_BODY_BYTES),
]


def open_route_cap(method: str, path: str) -> int | None:
    """The body cap of a route that authenticates itself (no bearer token), or None for every other route."""
    for m, pattern, cap in OPEN_ROUTES:
        if m == method and pattern.match(path):
            return cap
    return None


def body_cap(method: str, path: str) -> int | None:
    """The largest body the route accepts (bytes), or None when the route enforces its own limit."""
    for m, pattern, cap in ROUTE_CAPS:
        if m == method and pattern.match(path):
            return cap
    return SMALL_BODY_BYTES


def _declared(scope: Scope) -> tuple[int | None, bool]:
    """(Content-Length or None, whether a body is coming at all)."""
    length: int | None = None
    chunked = False
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                length = int(value)
            except ValueError:
                length = -1
        elif name == b"transfer-encoding":
            chunked = True
    return length, chunked or bool(length)


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token.strip() else None
    return None


async def _answer(send: Send, status: int, code: str, detail: str) -> None:
    body = json.dumps({"error": code, "detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"cache-control", b"no-store")]})
    await send({"type": "http.response.body", "body": body})


class BodyGate:
    """ASGI middleware: 401 before any body byte is read; 413 past the route's cap (see module docstring).

    ``database_url`` is a callable so the app can build it in its lifespan (per process).
    """

    def __init__(self, app: ASGIApp, database_url: Callable[[], str]):
        self.app = app
        self.database_url = database_url

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        length, has_body = _declared(scope)
        if not has_body:
            await self.app(scope, receive, send)
            return
        cap = open_route_cap(scope["method"], scope["path"])
        if cap is None:
            token = _bearer(scope)
            who: Principal | None = None
            if token is not None:
                who = await run_in_threadpool(resolve, self.database_url(), token)
            if who is None:
                await _answer(send, 401, "unauthorized",
                              "send Authorization: Bearer <token> with a valid token before any request body")
                return
            scope.setdefault("state", {})["principal"] = who
            cap = body_cap(scope["method"], scope["path"])
        if cap is None:
            await self.app(scope, receive, send)
            return
        if length is not None and (length < 0 or length > cap):
            await _answer(send, 413, "body_too_large", f"this endpoint takes a body of at most {cap} bytes")
            return
        # Small routes: buffer at most `cap` bytes, then replay them to the app.
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > cap:
                await _answer(send, 413, "body_too_large", f"this endpoint takes a body of at most {cap} bytes")
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)
