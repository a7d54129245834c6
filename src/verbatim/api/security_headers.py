"""Headers every answer carries: never cache patient data, never sniff types, HSTS over TLS.

``/v1/…`` answers (sessions, transcripts, audit rows) get ``Cache-Control: no-store``; every
answer gets ``X-Content-Type-Options: nosniff``; an answer served over TLS (the ASGI scheme is
``https``, e.g. behind uvicorn's ``--proxy-headers``) gets ``Strict-Transport-Security``.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

HSTS = b"max-age=31536000; includeSubDomains"


def with_headers(send: Send, extra: list[tuple[bytes, bytes]]) -> Send:
    """``send`` that sets ``extra`` headers (replacing any of the same name) on the answer's start."""
    names = {name.lower() for name, _ in extra}

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in names]
            message = {**message, "headers": [*kept, *extra]}
        await send(message)

    return sending


class SecurityHeaders:
    """ASGI middleware adding the headers above to every HTTP answer."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = [(b"x-content-type-options", b"nosniff")]
        if scope["path"].startswith("/v1/"):
            extra.append((b"cache-control", b"no-store"))
        if scope.get("scheme") == "https":
            extra.append((b"strict-transport-security", HSTS))
        await self.app(scope, receive, with_headers(send, extra))
