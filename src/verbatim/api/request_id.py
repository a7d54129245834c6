"""A request id on every request and answer (``X-Request-ID``), for the audit rows and the logs.

A client's own id is kept when it is short and plain (≤ 64 characters of letters, digits,
``-``, ``_``, ``.``); anything else is replaced by a fresh one, so a hostile header never
reaches the audit log.
"""

from __future__ import annotations

import re
import uuid

from starlette.types import ASGIApp, Receive, Scope, Send

from verbatim.api.security_headers import with_headers

_PLAIN = re.compile(rb"^[A-Za-z0-9._-]{1,64}$")


class RequestId:
    """ASGI middleware: ``scope["state"]["request_id"]`` and an ``X-Request-ID`` answer header."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = dict(scope.get("headers", ())).get(b"x-request-id", b"")
        request_id = sent.decode() if _PLAIN.match(sent) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        await self.app(scope, receive, with_headers(send, [(b"x-request-id", request_id.encode())]))
