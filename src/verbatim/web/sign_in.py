"""Sign-in (a token, or a one-time link), sign-out.

The sign-in forms come before any page session, so their CSRF token is a double-submit one:
a random value in a Strict, HttpOnly ``verbatim_pre_csrf`` cookie that the form must repeat.
A one-time link (``verbatim token create --link``) opens ``GET /app/sign-in/link?code=…``: a
cross-site navigation carries no Strict cookie, so that page only shows a form; posting it
(same-site, a script does it at once) redeems the code and sets the session cookie.
"""

from __future__ import annotations

import hmac
import secrets
import uuid
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from verbatim import audit
from verbatim.api.deps import ServicesDep
from verbatim.auth import resolve
from verbatim.db.engine import db_session
from verbatim.web import store
from verbatim.web.pages import CsrfDep, PageError, page_actor, render, safe_next

router = APIRouter(prefix="/app", include_in_schema=False)
PRE_CSRF = "verbatim_pre_csrf"


def _secure(request: Request) -> bool:
    return request.url.scheme == "https"


def _with_pre_csrf(request: Request, template: str, status: int = 200, **context: object) -> HTMLResponse:
    value = secrets.token_urlsafe(24)
    idle_min = round(request.app.state.services.settings.web_idle_s / 60)
    response = render(request, template, status, pre_csrf=value, idle_min=idle_min, **context)
    response.set_cookie(PRE_CSRF, value, httponly=True, secure=_secure(request), samesite="strict", path="/app/")
    return response


def _check_pre_csrf(request: Request, sent: str) -> None:
    kept = request.cookies.get(PRE_CSRF, "")
    if not kept or not hmac.compare_digest(sent.encode(), kept.encode()):
        raise PageError(403, "This sign-in form has expired or was not sent by a Verbatim page. Reload it and "
                             "try again.")


def _signed_in(request: Request, svc: ServicesDep, token_id: uuid.UUID, next_path: str) -> Response:
    started = store.start(svc.repo.url, token_id)
    if started is None:
        return _with_pre_csrf(request, "sign_in.html", 401, next=next_path,
                              error="That token is unknown, expired or revoked.")
    cookie, page = started
    with db_session(svc.repo.url) as db:
        audit.record(db, page_actor(request, page), "signed_in", None, {"via": "web"})
    # A clinic admin has no sessions of their own: their home is the clinic's list.
    target = next_path
    if page.principal.scope != "therapist" and not next_path.startswith(("/app/clinic", "/app/audit")):
        target = "/app/clinic"
    response = RedirectResponse(target, 303, headers={"cache-control": "no-store"})
    response.set_cookie(store.COOKIE, cookie, httponly=True, secure=_secure(request), samesite="strict", path="/")
    response.delete_cookie(PRE_CSRF, path="/app/")
    return response


@router.get("/sign-in")
def sign_in_page(request: Request, next: str | None = None, expired: bool = False) -> HTMLResponse:
    """The sign-in form (a token, pasted)."""
    return _with_pre_csrf(request, "sign_in.html", next=safe_next(next),
                          error="Your session ended after a period without activity. Sign in again." if expired
                          else None)


@router.post("/sign-in")
def sign_in(request: Request, svc: ServicesDep, token: Annotated[str, Form(max_length=200)],
            csrf_token: Annotated[str, Form(max_length=100)],
            next: Annotated[str | None, Form(max_length=2000)] = None) -> Response:
    """Check the token; open a page session; 303 to the page asked for."""
    _check_pre_csrf(request, csrf_token)
    who = resolve(svc.repo.url, token.strip())
    if who is None or who.scope == "admin":
        message = ("Operations tokens (admin scope) do not open the clinicians' pages." if who is not None
                   else "That token is unknown, expired or revoked.")
        return _with_pre_csrf(request, "sign_in.html", 401, next=safe_next(next), error=message)
    return _signed_in(request, svc, who.token_id, safe_next(next))


@router.get("/sign-in/link")
def link_page(request: Request, code: str = "") -> HTMLResponse:
    """Landing page of a one-time sign-in link: a form posted at once by a script (same-site)."""
    return _with_pre_csrf(request, "sign_in_link.html", code=code)


@router.post("/sign-in/link")
def link_sign_in(request: Request, svc: ServicesDep, code: Annotated[str, Form(max_length=200)],
                 csrf_token: Annotated[str, Form(max_length=100)]) -> Response:
    """Redeem a one-time code (at most once); open a page session."""
    _check_pre_csrf(request, csrf_token)
    token_id = store.redeem_link(svc.repo.url, code)
    if token_id is None:
        return _with_pre_csrf(request, "sign_in.html", 401, next="/app/sessions",
                              error="That sign-in link was already used or has expired. Ask for a new one, or sign "
                                    "in with your token.")
    return _signed_in(request, svc, token_id, "/app/sessions")


@router.post("/sign-out")
def sign_out(request: Request, svc: ServicesDep, page: CsrfDep) -> Response:
    """End the page session (the cookie is refused from now on) and go back to sign-in."""
    cookie = request.cookies.get(store.COOKIE, "")
    with db_session(svc.repo.url) as db:
        audit.record(db, page_actor(request, page), "signed_out", None, {"via": "web"})
    store.end(svc.repo.url, cookie)
    response = RedirectResponse("/app/sign-in", 303, headers={"cache-control": "no-store"})
    response.delete_cookie(store.COOKIE, path="/")
    return response
