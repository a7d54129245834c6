"""Break-glass: reading another therapist's transcript, with a stated reason, for a limited time.

A clinic admin, or a covering therapist of the same clinic, may need a colleague's session (the
therapist is away and the client in crisis). ``POST /v1/sessions/{id}/break-glass`` with a reason
opens a grant for the caller's token alone, for ``VERBATIM_BREAK_GLASS_S`` (1 h); while it is
open, ``GET /v1/sessions/{id}/transcript`` answers for that token, each read audited as
``transcript_read_break_glass``. Another clinic never can (404). Every grant is audited and
listed to the therapist who owns the session (``GET /v1/sessions/{id}/break-glass``).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from sqlalchemy import func, insert, select, text

from verbatim import audit
from verbatim.api.deps import ActorDep, ServicesDep
from verbatim.api.errors import ApiError
from verbatim.auth import Principal
from verbatim.db.engine import db_session
from verbatim.db.models import BreakGlassGrant, Session
from verbatim.errors import NotFound
from verbatim.free_text import REASON

router = APIRouter(prefix="/v1/sessions", tags=["break-glass"])


class BreakGlassIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: Annotated[str, StringConstraints(strip_whitespace=True, min_length=10, max_length=500), REASON] = Field(
        description="Why you need this session now (shown to its therapist; readable words, at least 4 letters)")


class GrantOut(BaseModel):
    id: uuid.UUID
    session_id: uuid.UUID
    scope: str
    therapist_id: uuid.UUID | None
    reason: str
    created_at: datetime
    expires_at: datetime


def active_grant(db_url: str, who: Principal, session_id: uuid.UUID) -> bool:
    """Whether ``who``'s token holds an open break-glass grant on the session (database clock)."""
    with db_session(db_url) as db:
        return db.execute(
            select(BreakGlassGrant.id).where(
                BreakGlassGrant.session_id == session_id, BreakGlassGrant.token_id == who.token_id,
                BreakGlassGrant.expires_at > func.now())
        ).first() is not None


@router.post("/{session_id}/break-glass", response_model=GrantOut, status_code=201)
def open_grant(session_id: uuid.UUID, body: BreakGlassIn, svc: ServicesDep, actor: ActorDep) -> GrantOut:
    """Open a time-limited grant to read a colleague's session of the same clinic. Audited, shown to
    its therapist. 404 for another clinic's (or an unknown) session, 403 for the admin scope, 409 for
    one's own session (no grant needed)."""
    who = actor.principal
    if who.scope not in ("clinic_admin", "therapist") or who.clinic_id is None:
        raise ApiError(403, "forbidden", "break-glass is for a clinic admin or a therapist of the same clinic")
    with db_session(svc.repo.url) as db:
        row = db.execute(select(Session.therapist_id).where(
            Session.id == session_id, Session.clinic_id == who.clinic_id, Session.status != "deleted")
        ).one_or_none()
        if row is None:
            raise NotFound(f"no session {session_id}")
        if who.therapist_id is not None and row.therapist_id == who.therapist_id:
            raise ApiError(409, "own_session", "this is your own session: read it without break-glass")
        grant = db.execute(insert(BreakGlassGrant).values(
            session_id=session_id, clinic_id=who.clinic_id, token_id=who.token_id, therapist_id=who.therapist_id,
            scope=who.scope, reason=body.reason,
            expires_at=func.now() + text(f"interval '{float(svc.settings.break_glass_s)} seconds'"),
        ).returning(BreakGlassGrant)).scalar_one()
        audit.record(db, actor, "break_glass_opened", session_id, {"grant_id": str(grant.id)})
        return GrantOut.model_validate(grant, from_attributes=True)


@router.get("/{session_id}/break-glass", response_model=list[GrantOut])
def list_grants(session_id: uuid.UUID, svc: ServicesDep, actor: ActorDep) -> list[GrantOut]:
    """Every break-glass grant on the session, newest first: for its therapist (and the clinic's admin)."""
    who = actor.principal
    with db_session(svc.repo.url) as db:
        owner = db.execute(select(Session.therapist_id, Session.clinic_id).where(Session.id == session_id)
                           ).one_or_none()
        allowed = owner is not None and (
            (who.scope == "therapist" and owner.therapist_id == who.therapist_id)
            or (who.scope == "clinic_admin" and owner.clinic_id == who.clinic_id))
        if not allowed:
            raise NotFound(f"no session {session_id}")
        grants = db.execute(select(BreakGlassGrant).where(BreakGlassGrant.session_id == session_id)
                            .order_by(BreakGlassGrant.created_at.desc())).scalars().all()
        audit.record(db, actor, "break_glass_listed", session_id)
        return [GrantOut.model_validate(g, from_attributes=True) for g in grants]
