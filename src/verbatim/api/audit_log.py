"""``GET /v1/audit``: a clinic admin reads its clinic's audit log (newest first, paginated). Audited."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel
from sqlalchemy import select

from verbatim import audit
from verbatim.api.deps import ActorDep, ServicesDep
from verbatim.api.errors import ApiError
from verbatim.db.engine import db_session
from verbatim.db.models import AuditEntry

router = APIRouter(prefix="/v1/audit", tags=["audit"])


class AuditRow(BaseModel):
    id: int
    at: datetime
    action: str
    session_id: uuid.UUID | None
    therapist_id: uuid.UUID | None
    token_id: uuid.UUID | None
    scope: str | None
    remote_addr: str | None
    request_id: str | None
    detail: dict[str, Any] | None


class AuditPage(BaseModel):
    items: list[AuditRow]
    next_before_id: int | None  #: pass as ``before_id`` for the next (older) page


@router.get("", response_model=AuditPage)
def read_audit(
    svc: ServicesDep,
    actor: ActorDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    before_id: Annotated[int | None, Query(ge=1)] = None,
    session_id: uuid.UUID | None = None,
) -> AuditPage:
    """The caller's clinic's audit rows, newest first; ``before_id`` pages back. Clinic admins only (403)."""
    who = actor.principal
    if who.scope != "clinic_admin" or who.clinic_id is None:
        raise ApiError(403, "forbidden", "the audit log is for a clinic admin token (verbatim token create "
                                         "--scope clinic_admin)")
    stmt = select(AuditEntry).where(AuditEntry.clinic_id == who.clinic_id)
    if before_id is not None:
        stmt = stmt.where(AuditEntry.id < before_id)
    if session_id is not None:
        stmt = stmt.where(AuditEntry.session_id == session_id)
    stmt = stmt.order_by(AuditEntry.id.desc()).limit(limit + 1)
    with db_session(svc.repo.url) as db:
        rows = list(db.execute(stmt).scalars())
        audit.record(db, actor, "audit_read", session_id, {"count": min(len(rows), limit)})
    more = len(rows) > limit
    items = [AuditRow.model_validate(r, from_attributes=True) for r in rows[:limit]]
    return AuditPage(items=items, next_before_id=items[-1].id if more and items else None)
