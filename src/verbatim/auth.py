"""Bearer tokens: stored as SHA-256 only, with scope, expiry and revocation.

Scopes: ``therapist`` (own sessions), ``clinic_admin`` (the clinic's sessions),
``admin`` (admin endpoints). A therapist belongs to one clinic.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import select, update

from verbatim.db.engine import db_session
from verbatim.db.models import ApiToken, Clinic, Therapist
from verbatim.errors import NotFound

SCOPES = ("therapist", "clinic_admin", "admin")
PREFIX = "vbt_"


@dataclass(frozen=True)
class Principal:
    """Who is calling: token id, scope, and the therapist/clinic the token speaks for."""

    token_id: uuid.UUID
    scope: str
    therapist_id: uuid.UUID | None
    clinic_id: uuid.UUID | None


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def ensure_therapist(database_url: str, therapist: str, clinic: str) -> tuple[uuid.UUID, uuid.UUID]:
    """(therapist id, clinic id), creating either if missing."""
    with db_session(database_url) as db:
        clinic_row = db.execute(select(Clinic).where(Clinic.name == clinic)).scalar_one_or_none()
        if clinic_row is None:
            clinic_row = Clinic(name=clinic)
            db.add(clinic_row)
            db.flush()
        row = db.execute(
            select(Therapist).where(Therapist.clinic_id == clinic_row.id, Therapist.name == therapist)
        ).scalar_one_or_none()
        if row is None:
            row = Therapist(clinic_id=clinic_row.id, name=therapist)
            db.add(row)
            db.flush()
        return row.id, clinic_row.id


def create_token(
    database_url: str,
    *,
    therapist: str | None = None,
    clinic: str,
    scope: str = "therapist",
    expires_in_days: float | None = 90,
) -> str:
    """Issue a token and return it in clear (the only time it is ever shown).

    Raises ValueError for an unknown scope or a therapist scope without a therapist.
    """
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SCOPES)}")
    if scope == "therapist" and not therapist:
        raise ValueError("a therapist token needs --therapist")
    if therapist:
        therapist_id, clinic_id = ensure_therapist(database_url, therapist, clinic)
    else:
        therapist_id, clinic_id = None, ensure_therapist(database_url, "admin", clinic)[1]
    token = PREFIX + secrets.token_urlsafe(32)
    expires = datetime.now(UTC) + timedelta(days=expires_in_days) if expires_in_days else None
    with db_session(database_url) as db:
        db.add(ApiToken(token_hash=hash_token(token), scope=scope, therapist_id=therapist_id,
                        clinic_id=clinic_id, expires_at=expires))
    return token


def resolve(database_url: str, token: str) -> Principal | None:
    """The principal for a presented token, or None if unknown, expired or revoked."""
    with db_session(database_url) as db:
        row = db.execute(select(ApiToken).where(ApiToken.token_hash == hash_token(token))).scalar_one_or_none()
    if row is None or row.revoked_at is not None:
        return None
    if row.expires_at is not None and row.expires_at < datetime.now(UTC):
        return None
    return Principal(row.id, row.scope, row.therapist_id, row.clinic_id)


def token_id(database_url: str, token: str) -> uuid.UUID:
    """The id of a token given in clear (to name it later without the secret); raises NotFound."""
    with db_session(database_url) as db:
        found = db.execute(select(ApiToken.id).where(ApiToken.token_hash == hash_token(token))).scalar_one_or_none()
    if found is None:
        raise NotFound("no such token")
    return found


def revoke(database_url: str, token_id: uuid.UUID) -> None:
    """Revoke a token by its id (never the clear token: it would sit in shell history and process
    lists); raises NotFound if there is no such token."""
    with db_session(database_url) as db:
        done = db.execute(
            update(ApiToken).where(ApiToken.id == token_id).values(revoked_at=datetime.now(UTC))
            .returning(ApiToken.id)
        ).one_or_none()
    if done is None:
        raise NotFound("no such token")
