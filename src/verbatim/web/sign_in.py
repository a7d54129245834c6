"""Sign-in (a token, or a one-time link), sign-out.

A therapist lands on their sessions, a clinic admin on the clinic's list, an operations (``admin``
scope) token on the runs page — the one page it opens (``verbatim.web.pages.page_session``).

The sign-in forms come before any page session, so their CSRF token is a double-submit one:
a random value in a Strict, HttpOnly ``verbatim_pre_csrf`` cookie that the form must repeat.
A one-time link (``verbatim token create --link``) opens ``GET /app/sign-in/link?code=…``: a
cross-site navigation carries no Strict cookie, so that page only shows a form, which names the
account the link opens ("as Alice, North Clinic") and asks to continue — it is never posted by a
script: a link forwarded by someone else (login CSRF: the victim's browser signed in as the
attacker, the victim's uploads landing in the attacker's account) is seen for whose it is.
Posting it (same-site, so a live page session's Strict cookie comes along) redeems the code and
sets the session cookie — except when the browser is signed in as someone else: then nothing is
redeemed, and a page says who is signed in, whose the link is, and asks again (``replace=yes``).

Failed sign-ins (a wrong token, a used, expired or unknown link code) count against the client's
address and are audited (``verbatim.api.guessing``); from 10 a minute the forms answer 429.
"""

from __future__ import annotations

import hmac
import secrets
import uuid
from typing import Annotated

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from verbatim import audit
from verbatim.api.deps import ServicesDep
from verbatim.api.guessing import too_many
from verbatim.auth import resolve
from verbatim.db.engine import db_session
from verbatim.web import store
from verbatim.web.pages import OPS_PATHS, CsrfDep, PageError, page_actor, render, safe_next

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
    # A clinic admin has no sessions of their own: their home is the clinic's list; an operations
    # token's is the runs page (the only one it opens).
    target = next_path
    if page.principal.scope == "admin":
        target = next_path if next_path.startswith(OPS_PATHS) else OPS_PATHS[0]
    elif page.principal.scope != "therapist" and not next_path.startswith(("/app/clinic", "/app/audit")):
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


def _address(request: Request) -> str | None:
    return request.client.host if request.client else None


def _not_throttled(request: Request, svc: ServicesDep, kind: str) -> None:
    throttled = svc.guessing.throttled(_address(request), kind)
    if throttled is not None:
        raise too_many(throttled)


def _failed(request: Request, svc: ServicesDep, kind: str) -> None:
    svc.guessing.failed(_address(request), kind, getattr(request.state, "request_id", None))


def _name(account: store.LinkAccount) -> str:
    if account.therapist:
        return f"{account.therapist} ({account.clinic})"
    return f"the {account.clinic} clinic admin" if account.scope == "clinic_admin" else account.clinic


@router.post("/sign-in")
def sign_in(request: Request, svc: ServicesDep, token: Annotated[str, Form(max_length=200)],
            csrf_token: Annotated[str, Form(max_length=100)],
            next: Annotated[str | None, Form(max_length=2000)] = None) -> Response:
    """Check the token; open a page session; 303 to the page asked for."""
    _check_pre_csrf(request, csrf_token)
    _not_throttled(request, svc, "sign_in")
    who = resolve(svc.repo.url, token.strip())
    if who is None:
        _failed(request, svc, "sign_in")
        return _with_pre_csrf(request, "sign_in.html", 401, next=safe_next(next),
                              error="That token is unknown, expired or revoked.")
    return _signed_in(request, svc, who.token_id, safe_next(next))


@router.get("/sign-in/link")
def link_page(request: Request, svc: ServicesDep, code: Annotated[str, Query(max_length=200)] = "") -> HTMLResponse:
    """Landing page of a one-time sign-in link: names the account it opens and asks to continue.
    The link stays unused until the form is posted."""
    _not_throttled(request, svc, "link")
    account = store.peek_link(svc.repo.url, code) if code else None
    if account is None:
        _failed(request, svc, "link")
        return _with_pre_csrf(request, "sign_in.html", 401, next="/app/sessions", error=_LINK_GONE)
    return _with_pre_csrf(request, "sign_in_link.html", code=code, account=_name(account))


_LINK_GONE = ("That sign-in link was already used or has expired. Ask for a new one, or sign in with your token.")


@router.post("/sign-in/link")
def link_sign_in(request: Request, svc: ServicesDep, code: Annotated[str, Form(max_length=200)],
                 csrf_token: Annotated[str, Form(max_length=100)],
                 replace: Annotated[str, Form(max_length=10)] = "") -> Response:
    """Redeem a one-time code (at most once); open a page session. A browser signed in as someone else
    is asked first (nothing redeemed): the link may have been forwarded by another person."""
    _check_pre_csrf(request, csrf_token)
    _not_throttled(request, svc, "link")
    account = store.peek_link(svc.repo.url, code)
    if account is None:
        _failed(request, svc, "link")
        return _with_pre_csrf(request, "sign_in.html", 401, next="/app/sessions", error=_LINK_GONE)
    cookie = request.cookies.get(store.COOKIE, "")
    live = store.touch(svc.repo.url, cookie, svc.settings.web_idle_s) if cookie else None
    if live is not None and live.principal.token_id != account.token_id and replace != "yes":
        current = store.account_of(svc.repo.url, live.principal.token_id)
        return _with_pre_csrf(request, "sign_in_link.html", 409, code=code, account=_name(account),
                              signed_in_as=_name(current) if current else "another account")
    token_id = store.redeem_link(svc.repo.url, code)
    if token_id is None:  # used by another request since the look above
        _failed(request, svc, "link")
        return _with_pre_csrf(request, "sign_in.html", 401, next="/app/sessions", error=_LINK_GONE)
    if live is not None:
        store.end(svc.repo.url, cookie)  # the browser's other session ends; it was asked, and said yes
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
