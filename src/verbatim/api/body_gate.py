"""Authenticate before reading any body, and cap every body by route (ASGI middleware).

FastAPI reads and parses a JSON body before any dependency runs, so a 150 MiB body sent
without a token used to be read, buffered and parsed before the 401. This gate runs first:

1. A request to ``/v1/…`` that carries a body (Content-Length > 0 or chunked) must present a
   valid bearer token; otherwise it is answered 401 at once and its body is never read (the
   outer ``CloseOnUnreadBody`` then closes the connection, so the server stops reading too).
   The resolved principal is kept in ``scope["state"]`` so the route does not look it up again.
2. A page of ``/app/…`` that carries a body must come from a signed-in page session (the
   ``verbatim_session`` cookie; see ``verbatim.web.store``), except the sign-in forms;
   otherwise it is redirected (303) to the sign-in page, its body unread (when it came with an
   expired cookie from a note's or a session's page, the sign-in leads back to that page, where
   the text typed is restored from the tab: ``verbatim.web.notes_page``). A few API routes
   (the resumable upload and its finalizing ``POST /v1/sessions``) also accept a page session
   instead of a bearer token, but only with its CSRF token in ``X-CSRF-Token``: the upload page
   uses them. The resolved page session is kept in ``scope["state"]["page_session"]``.
3. Each route has a body cap: uploads keep their own streaming limits (multipart and tus
   enforce ``max_upload_bytes`` as they stream); every other route takes at most
   ``SMALL_BODY_BYTES`` (64 KiB). A declared length over the cap is refused 413 before
   reading; a chunked body is buffered only up to the cap, then refused. A small body that
   goes silent for ``idle_s`` seconds is answered 408: the gate buffers it, so the gate times it.
   The tus finalize (``POST /v1/sessions`` with a JSON body) is a small body too.
4. A buffered JSON body nested too deeply for Python's parser (``[`` × 60 000) is answered 422
   here: FastAPI would turn its RecursionError into a bare 400 "error parsing the body".

5. A wrong bearer token counts as a failed authentication of the client's address, and a throttled
   address is answered 429 before its token is looked up (``verbatim.api.guessing``). A fault of ours
   met by the gate's own look-ups (PostgreSQL down) is answered as the app answers it
   (``verbatim.api.errors.fault_answer``: 503 with Retry-After), not a 500.

Why our own code: the order (auth, then cap, then body) is the point, and no maintained
middleware does "authenticate before the body" for a FastAPI app.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import re
from collections.abc import Callable
from http.cookies import CookieError, SimpleCookie
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from verbatim.api.errors import ApiError, fault_answer
from verbatim.api.guessing import Guessing, too_many
from verbatim.auth import Principal, resolve
from verbatim.web.store import COOKIE, PageSession, touch

SMALL_BODY_BYTES = 64 * 1024

#: (method, path pattern) → body cap in bytes; None: the route streams and enforces its own limit.
ROUTE_CAPS: list[tuple[str, re.Pattern[str], int | None]] = [
    ("POST", re.compile(r"^/v1/sessions/?$"), None),  # multipart upload, or the small tus finalize
    ("PATCH", re.compile(r"^/v1/uploads/[^/]+/?$"), None),  # tus chunks (offset and size checked)
    ("POST", re.compile(r"^/v1/uploads/?$"), None),  # tus creation-with-upload: the first chunk
]


#: API routes a signed-in page may call with its cookie and X-CSRF-Token (the upload and recorder pages).
PAGE_API_ROUTES: list[tuple[str, re.Pattern[str]]] = [
    ("POST", re.compile(r"^/v1/uploads/?$")),
    ("HEAD", re.compile(r"^/v1/uploads/[^/]+/?$")),
    ("PATCH", re.compile(r"^/v1/uploads/[^/]+/?$")),
    ("DELETE", re.compile(r"^/v1/uploads/[^/]+/?$")),
    ("POST", re.compile(r"^/v1/sessions/?$")),
    ("GET", re.compile(r"^/v1/uploads/?$")),  # the recorder lists recordings that stopped arriving
    ("POST", re.compile(r"^/v1/uploads/[^/]+/finish/?$")),  # … and finishes one with what arrived
]
#: Pages that take a form from a browser not signed in yet.
SIGN_IN_PATHS = frozenset({"/app/sign-in", "/app/sign-in/link"})


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


def _content_type(scope: Scope) -> bytes:
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            return value.split(b";", 1)[0].strip().lower()
    return b""


def _too_deep(messages: list[Message]) -> bool:
    """Whether the buffered body (at most the small cap) is JSON nested past the parser's recursion limit."""
    try:
        json.loads(b"".join(m.get("body", b"") for m in messages))
    except RecursionError:
        return True
    except ValueError:
        return False  # not JSON at all: the route answers that (422 with the parser's message)
    return False


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token.strip() else None
    return None


def _header(scope: Scope, wanted: bytes) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == wanted:
            return value.decode("latin-1")
    return None


def _cookie(scope: Scope) -> str | None:
    """The page-session cookie's value, if the request carries one."""
    raw = _header(scope, b"cookie")
    if not raw:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(raw)
    except CookieError:
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None and morsel.value else None


async def _answer(send: Send, status: int, code: str, detail: str, headers: dict[str, str] | None = None) -> None:
    body = json.dumps({"error": code, "detail": detail}).encode()
    extra = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"cache-control", b"no-store"), *extra]})
    await send({"type": "http.response.body", "body": body})


class _GateAnswer(Exception):
    """An answer the gate gives before the app: a fault of ours met by its own look-ups (the database
    down, mapped by ``fault_answer``), or a throttled address's 429."""

    def __init__(self, answer: ApiError):
        super().__init__(answer.code)
        self.answer = answer


async def _looked_up(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in the thread pool; a fault of ours becomes ``_GateAnswer`` (answered, not a 500)."""
    try:
        return await run_in_threadpool(fn, *args)
    except Exception as exc:
        answer = fault_answer(exc)
        if answer is None:
            raise
        raise _GateAnswer(answer) from exc


_PAGE_OF_FORM = re.compile(r"^(/app/(?:notes|sessions)/[0-9a-f-]{36})/")


def _sign_in_for(scope: Scope) -> bytes:
    """Where a form post without a live page session goes: sign-in, then back to the page the form was on
    (a note's or a session's) when the browser still had a cookie — the session expired while it was open."""
    page = _PAGE_OF_FORM.match(scope["path"])
    if page is None or _cookie(scope) is None:
        return b"/app/sign-in"
    return f"/app/sign-in?next={page.group(1)}&expired=true".encode()


class BodyGate:
    """ASGI middleware: 401 before any body byte is read; 413 past the route's cap (see module docstring).

    ``database_url`` is a callable so the app can build it in its lifespan (per process).
    """

    def __init__(self, app: ASGIApp, database_url: Callable[[], str], idle_s: float = 30.0,
                 web_idle_s: float = 900.0, guessing: Callable[[], Guessing] | None = None):
        self.app = app
        self.database_url = database_url
        self.guessing = guessing
        self.idle_s = idle_s
        self.web_idle_s = web_idle_s

    async def _page_session(self, scope: Scope) -> PageSession | None:
        cookie = _cookie(scope)
        if cookie is None:
            return None
        found: PageSession | None = await _looked_up(touch, self.database_url(), cookie, self.web_idle_s)
        if found is not None:
            scope.setdefault("state", {})["page_session"] = found
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self._gate(scope, receive, send)
        except _GateAnswer as fault:
            a = fault.answer
            await _answer(send, a.status, a.code, a.detail, a.headers)

    async def _gate(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path, method = scope["path"], scope["method"]
        if path.startswith("/app/"):
            await self._page(scope, receive, send)
            return
        if not path.startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        open_cap = open_route_cap(method, path)
        if open_cap is not None:
            # Authenticates itself (the recognizer's per-job secret, checked by the route): only the cap.
            await self._capped(scope, receive, send, _declared(scope)[0], open_cap)
            return
        token = _bearer(scope)
        who: Principal | None = None
        if token is None and any(m == method and p.match(path) for m, p in PAGE_API_ROUTES):
            page = await self._page_session(scope)
            sent = _header(scope, b"x-csrf-token") or ""
            # The cookie alone is not enough: a cross-site form could carry it; the CSRF header cannot.
            if page is not None and hmac.compare_digest(sent.encode(), page.csrf_token.encode()):
                who = page.principal
                scope.setdefault("state", {})["principal"] = who
        length, has_body = _declared(scope)
        if not has_body:
            await self.app(scope, receive, send)
            return
        if who is None and token is not None:
            who = await self._resolve(scope, token)
        if who is None:
            await _answer(send, 401, "unauthorized",
                          "send Authorization: Bearer <token> with a valid token before any request body")
            return
        scope.setdefault("state", {})["principal"] = who
        await self._capped(scope, receive, send, length)

    async def _resolve(self, scope: Scope, token: str) -> Principal | None:
        """The token's principal, or None (a failure counted); a throttled address is answered 429."""
        guessing = self.guessing() if self.guessing is not None else None
        client = scope.get("client")
        address = client[0] if client else None
        if guessing is not None:
            # Checked before the token is: once throttled, a right guess answers as a wrong one does.
            throttled = await _looked_up(guessing.throttled, address, "bearer")
            if throttled is not None:
                raise _GateAnswer(too_many(throttled))
        who: Principal | None = await _looked_up(resolve, self.database_url(), token)
        if who is None and guessing is not None:
            await _looked_up(guessing.failed, address, "bearer", scope.get("state", {}).get("request_id"))
        return who

    async def _page(self, scope: Scope, receive: Receive, send: Send) -> None:
        """``/app/…``: a form post needs a live page session (sign-in forms excepted), then the small cap."""
        length, has_body = _declared(scope)
        if not has_body:
            await self.app(scope, receive, send)
            return
        if scope["path"] not in SIGN_IN_PATHS and await self._page_session(scope) is None:
            await send({"type": "http.response.start", "status": 303,
                        "headers": [(b"location", _sign_in_for(scope)), (b"content-length", b"0"),
                                    (b"cache-control", b"no-store")]})
            await send({"type": "http.response.body", "body": b""})
            return
        await self._capped(scope, receive, send, length)

    async def _capped(self, scope: Scope, receive: Receive, send: Send, length: int | None,
                      cap: int | None = None) -> None:
        cap = cap if cap is not None else body_cap(scope["method"], scope["path"])
        if cap is None and _content_type(scope) == b"application/json":
            cap = SMALL_BODY_BYTES  # the tus finalize: a small JSON body on the upload route
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
            try:
                message = await asyncio.wait_for(receive(), self.idle_s)
            except TimeoutError:
                await _answer(send, 408, "body_idle", f"no body data for {self.idle_s:.0f} s; send the request again")
                return
            messages.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > cap:
                await _answer(send, 413, "body_too_large", f"this endpoint takes a body of at most {cap} bytes")
                return
            if not message.get("more_body", False):
                break

        if _content_type(scope) == b"application/json" and _too_deep(messages):
            await _answer(send, 422, "body_not_json", "the JSON body is nested too deeply")
            return

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)
