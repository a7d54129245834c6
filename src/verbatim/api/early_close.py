"""Close the connection when the API answers before it has read the whole request body.

An upload refused early (413 at the size limit, 409 on a wrong tus offset, 401, …) leaves
the rest of its body in flight. HTTP/1.1 can only reuse the connection after that rest has
been read, so uvicorn (h11) keeps reading and discarding it: a 2 GiB upload refused at
1 MiB would still cost 2 GiB of reading. Adding ``Connection: close`` to such an answer makes
uvicorn close the connection once the answer is sent, so the server really stops reading.
Requests whose body was read to the end, or that have none, are left alone.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send


def _has_body(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() not in (b"", b"0")):
            return True
    return False


class CloseOnUnreadBody:
    """ASGI middleware: ``Connection: close`` on answers that start before the body's last byte was read."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _has_body(scope):
            await self.app(scope, receive, send)
            return
        body_read = False

        async def tracking_receive() -> Message:
            nonlocal body_read
            message = await receive()
            if message["type"] == "http.disconnect" or not message.get("more_body", False):
                body_read = True
            return message

        async def closing_send(message: Message) -> None:
            if message["type"] == "http.response.start" and not body_read:
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"connection"]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        await self.app(scope, tracking_receive, closing_send)
