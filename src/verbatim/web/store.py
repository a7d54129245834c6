"""Cookie sessions and one-time sign-in links, in PostgreSQL (tables in ``verbatim.web.models``).

A page session is a random cookie value whose SHA-256 is the row's key; it speaks for one bearer
token, so it is never more than the token: a revoked or expired token ends it too. Each request
checks and extends it with one ``UPDATE … RETURNING`` on the database clock; it ends
``idle_s`` seconds after the last request, or at sign-out.

Why our own code: the session must be checked against our own token table in the same
statement, and the CSRF token lives with it; a generic session middleware (signed cookies)
cannot be revoked at sign-out.
"""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass

from sqlalchemy import insert, text, update

from verbatim.auth import Principal, hash_token
from verbatim.db.engine import db_session
from verbatim.web.models import SignInLink, WebSession

COOKIE = "verbatim_session"


@dataclass(frozen=True)
class PageSession:
    """A live page session: who it speaks for, and the CSRF token its forms must send back."""

    principal: Principal
    csrf_token: str


_TOUCH = text("""
UPDATE web_sessions w SET last_seen_at = now()
FROM api_tokens t
WHERE w.id_hash = :h AND w.revoked_at IS NULL AND w.last_seen_at > now() - make_interval(secs => :idle)
  AND t.id = w.token_id AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())
RETURNING t.id, t.scope, t.therapist_id, t.clinic_id, w.csrf_token
""")

#: A token that may open the pages: live, a clinician's, or an operations (``admin``) token — which
#: opens the runs page alone (``verbatim.web.pages.page_session`` confines it).
_LIVE_TOKEN = text("""
SELECT id, scope, therapist_id, clinic_id FROM api_tokens
WHERE id = :id AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
  AND scope IN ('therapist', 'clinic_admin', 'admin')
""")


def start(database_url: str, token_id: uuid.UUID) -> tuple[str, PageSession] | None:
    """Open a page session for a live therapist, clinic-admin or operations token: (cookie value,
    session); None if the token is not live."""
    cookie = secrets.token_urlsafe(32)
    csrf = secrets.token_urlsafe(32)
    with db_session(database_url) as db:
        row = db.execute(_LIVE_TOKEN, {"id": token_id}).one_or_none()
        if row is None:
            return None
        db.execute(insert(WebSession).values(id_hash=hash_token(cookie), token_id=token_id, csrf_token=csrf))
    return cookie, PageSession(Principal(row.id, row.scope, row.therapist_id, row.clinic_id), csrf)


def touch(database_url: str, cookie: str, idle_s: float) -> PageSession | None:
    """The live session for this cookie value, extended by this request; None if unknown, idle
    for ``idle_s`` seconds or more, signed out, or its token revoked or expired."""
    with db_session(database_url) as db:
        row = db.execute(_TOUCH, {"h": hash_token(cookie), "idle": float(idle_s)}).one_or_none()
    if row is None:
        return None
    return PageSession(Principal(row.id, row.scope, row.therapist_id, row.clinic_id), row.csrf_token)


def end(database_url: str, cookie: str) -> None:
    """Sign out: the cookie value is refused from now on, even if the browser kept it."""
    with db_session(database_url) as db:
        db.execute(update(WebSession).where(WebSession.id_hash == hash_token(cookie), WebSession.revoked_at.is_(None))
                   .values(revoked_at=text("now()")))


def create_link(database_url: str, token_id: uuid.UUID, ttl_s: float) -> str:
    """A one-time sign-in code for the token, valid ``ttl_s`` seconds (only its digest is stored)."""
    code = secrets.token_urlsafe(32)
    with db_session(database_url) as db:
        db.execute(insert(SignInLink).values(code_hash=hash_token(code), token_id=token_id,
                                             expires_at=text(f"now() + make_interval(secs => {float(ttl_s)})")))
    return code


@dataclass(frozen=True)
class LinkAccount:
    """Whose account an unused sign-in link opens, for the page that asks before it is used."""

    token_id: uuid.UUID
    therapist: str | None  #: the therapist's name (None for a clinic admin's token)
    clinic: str
    scope: str


_PEEK_LINK = text("""
SELECT t.id AS token_id, t.scope, th.name AS therapist, c.name AS clinic
FROM web_sign_in_links l
JOIN api_tokens t ON t.id = l.token_id
JOIN clinics c ON c.id = t.clinic_id
LEFT JOIN therapists th ON th.id = t.therapist_id
WHERE l.code_hash = :h AND l.used_at IS NULL AND l.expires_at > now()
  AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())
""")


def peek_link(database_url: str, code: str) -> LinkAccount | None:
    """The account an unused, unexpired link opens (the link stays unused); None otherwise."""
    with db_session(database_url) as db:
        row = db.execute(_PEEK_LINK, {"h": hash_token(code)}).one_or_none()
    return None if row is None else LinkAccount(row.token_id, row.therapist, row.clinic, row.scope)


def account_of(database_url: str, token_id: uuid.UUID) -> LinkAccount | None:
    """The same description for the token a live page session speaks for."""
    with db_session(database_url) as db:
        row = db.execute(text(
            "SELECT t.id AS token_id, t.scope, th.name AS therapist, c.name AS clinic FROM api_tokens t "
            "JOIN clinics c ON c.id = t.clinic_id LEFT JOIN therapists th ON th.id = t.therapist_id WHERE t.id = :id"
        ), {"id": token_id}).one_or_none()
    return None if row is None else LinkAccount(row.token_id, row.therapist, row.clinic, row.scope)


def redeem_link(database_url: str, code: str) -> uuid.UUID | None:
    """The token id of an unused, unexpired link, marking it used (at most once); None otherwise."""
    with db_session(database_url) as db:
        return db.execute(text(
            "UPDATE web_sign_in_links SET used_at = now() "
            "WHERE code_hash = :h AND used_at IS NULL AND expires_at > now() RETURNING token_id"
        ), {"h": hash_token(code)}).scalar_one_or_none()


def sign_in_link(database_url: str, token_id: uuid.UUID, base_url: str, ttl_s: float) -> str:
    """The address of a new one-time sign-in link for the token, on the pages at ``base_url``."""
    return f"{base_url.rstrip('/')}/app/sign-in/link?code={create_link(database_url, token_id, ttl_s)}"
