"""What every page shares: templates, the signed-in page session, the CSRF check, page errors.

A page is answered with ``render(request, "name.html", **context)``: HTML with autoescaping on
(a transcript segment holding ``<script>`` is shown as text), ``Cache-Control: no-store``, and a
Content-Security-Policy allowing scripts, styles and connections to this origin only.
"""

from __future__ import annotations

import hmac
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape

from verbatim.api.deps import ServicesDep
from verbatim.audit import Actor
from verbatim.web.store import COOKIE, PageSession, touch
from verbatim.web.words import register as register_filters

HERE = Path(__file__).parent
STATIC_DIR = HERE / "static"
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'")
PAGE_HEADERS = {"cache-control": "no-store", "content-security-policy": CSP, "referrer-policy": "no-referrer",
                "x-frame-options": "DENY"}

env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True),
                  trim_blocks=True, lstrip_blocks=True)
register_filters(env)


class SignInRequired(Exception):
    """Raised when a page is asked for without a live page session (answered 303 → sign-in)."""

    def __init__(self, next_path: str, expired: bool = False):
        super().__init__(next_path)
        self.next_path = next_path
        self.expired = expired


class PageError(Exception):
    """Raised by a page to answer an HTML error page with ``status`` and a message in words."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def render(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    """The template rendered as a page (see the module docstring for its headers)."""
    page: PageSession | None = getattr(request.state, "page_session", None)
    html = env.get_template(template).render(request=request, page=page, **context)
    return HTMLResponse(html, status, headers=PAGE_HEADERS)


def page_session(request: Request, svc: ServicesDep) -> PageSession:
    """The signed-in page session (already resolved by ``BodyGate`` for a form post), or SignInRequired."""
    found = getattr(request.state, "page_session", None)
    cookie = request.cookies.get(COOKIE)
    if not isinstance(found, PageSession):
        found = touch(svc.repo.url, cookie, svc.settings.web_idle_s) if cookie else None
    if found is None:
        # A cookie that no longer opens anything: the session went idle (or was signed out elsewhere).
        raise SignInRequired(request.url.path + (f"?{request.url.query}" if request.url.query else ""),
                             expired=bool(cookie))
    request.state.page_session = found
    if found.principal.scope == "admin" and not _ops_may_open(request.url.path):
        # An operations token sees runs, never a clinic's sessions or its audit log.
        raise PageError(403, "An operations (admin-scope) token opens the runs page only: go to /app/ops.")
    return found


#: the pages an operations (admin-scope) page session may open: the runs page, home, sign-out
OPS_PATHS = ("/app/ops",)


def _ops_may_open(path: str) -> bool:
    return path.rstrip("/") in ("/app", "/app/sign-out") or any(
        path == p or path.startswith(p + "/") for p in OPS_PATHS)


PageDep = Annotated[PageSession, Depends(page_session)]


def page_actor(request: Request, page: PageDep) -> Actor:
    """Who acts, for the audit row: the page session's token, the address, the request id."""
    return Actor(page.principal, request.client.host if request.client else None,
                 getattr(request.state, "request_id", None))


ActorPageDep = Annotated[Actor, Depends(page_actor)]


async def csrf_checked(request: Request, page: PageDep) -> PageSession:
    """The page session, once the form's ``csrf_token`` (or ``X-CSRF-Token``) matches it; 403 otherwise."""
    sent = request.headers.get("x-csrf-token")
    if sent is None:
        form = await request.form()
        value = form.get("csrf_token")
        sent = value if isinstance(value, str) else ""
    if not hmac.compare_digest(sent.encode(), page.csrf_token.encode()):
        raise PageError(403, "This form was not sent by a Verbatim page (its CSRF token is missing or wrong). "
                             "Reload the page and try again.")
    return page


CsrfDep = Annotated[PageSession, Depends(csrf_checked)]


def sign_in_redirect(next_path: str, expired: bool = False) -> RedirectResponse:
    """303 to the sign-in page, which then leads back to ``next_path`` (and says why, if ``expired``)."""
    query = f"next={quote(next_path, safe='')}" + ("&expired=true" if expired else "")
    return RedirectResponse(f"/app/sign-in?{query}", 303, headers={"cache-control": "no-store"})


def safe_next(value: str | None) -> str:
    """A same-site page path to go to after sign-in (anything else → the sessions page)."""
    if value and value.startswith("/app/") and not value.startswith("//") and "\\" not in value:
        return value
    return "/app/sessions"
