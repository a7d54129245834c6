"""``/v1/admin``: failed and blocked sessions, retrying a blocked one, every unfinished run (admin scope only)."""

from __future__ import annotations

import uuid
from typing import Annotated

import redis
from fastapi import APIRouter, Query
from pydantic import BaseModel

from verbatim import audit
from verbatim.admin import list_sessions, retry_session, show_session
from verbatim.api.deps import ActorDep, AdminDep, ServicesDep
from verbatim.api.errors import ApiError
from verbatim.api.sessions import SessionOut, _out, _outs
from verbatim.db.engine import db_session
from verbatim.ops_runs import KINDS, RunRow, RunState, list_runs
from verbatim.states import DISPLAY_STATUSES

router = APIRouter(prefix="/v1/admin", tags=["admin"])


class AdminSessionPage(BaseModel):
    items: list[SessionOut]


@router.get("/sessions", response_model=AdminSessionPage)
def admin_sessions(
    svc: ServicesDep,
    _: AdminDep,
    actor: ActorDep,
    status: Annotated[str, Query(pattern=f"^({'|'.join(DISPLAY_STATUSES)})$")] = "failed",
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> AdminSessionPage:
    """Sessions in one status (default ``failed``), most recently updated first, every clinic — metadata
    only (no client ids, no transcript text). ``parked`` (shown as each item's ``display_status``) is
    the capture run's state, not a stored status: live sessions waiting on the recognizer without a
    worker; a stored live status lists the others. Audited."""
    rows = list_sessions(svc.repo.url, status, limit)
    with db_session(svc.repo.url) as db:
        audit.record(db, actor, "admin_sessions_listed", None, {"status": status, "count": len(rows)})
    return AdminSessionPage(items=_outs(svc, rows, redact=True))


@router.get("/sessions/{session_id}")
def admin_session(session_id: uuid.UUID, svc: ServicesDep, _: AdminDep, actor: ActorDep) -> dict[str, object]:
    """A session's bookkeeping and event log (never transcript text or client ids). Audited."""
    shown = show_session(svc.repo.url, session_id)
    with db_session(svc.repo.url) as db:
        audit.record(db, actor, "admin_session_read", session_id)
    return shown


@router.post("/sessions/{session_id}/retry", response_model=SessionOut)
def admin_retry(session_id: uuid.UUID, svc: ServicesDep, _: AdminDep, actor: ActorDep) -> SessionOut:
    """Retry a blocked session once its configuration is fixed: back to queued, then enqueued.

    409 when the session is not blocked (or has nothing left to retry from); 404 if unknown.
    """
    retry_session(svc.settings, session_id)
    with db_session(svc.repo.url) as db:
        audit.record(db, actor, "admin_retry", session_id)
    return _out(svc, svc.repo.get(session_id), redact=True)


class RunPage(BaseModel):
    #: one unfinished run each (``verbatim.ops_runs.RunRow``, a dataclass pydantic reads as it is): no patient data
    items: list[RunRow]


@router.get("/runs", response_model=RunPage)
def admin_runs(
    svc: ServicesDep,
    _: AdminDep,
    actor: ActorDep,
    kind: Annotated[str | None, Query(pattern="^[a-z_]{1,20}$")] = None,
    state: RunState | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 500,
) -> RunPage:
    """Every unfinished run of every kind, oldest change first, every clinic: kind, subject id, state
    (running, parked, due, overdue, blocked, cancelled), holder (running only), since, next due,
    deadline, runs used, last fault code. 422 for an unknown kind; 503 when Redis (the leases)
    cannot be read. Audited."""
    kinds = [k.kind for k in KINDS]
    if kind is not None and kind not in kinds:
        raise ApiError(422, "unknown_kind", f"unknown run kind {kind!r}; choose one of {', '.join(kinds)}")
    try:
        rows = list_runs(svc.repo.url, svc.redis, kind=kind, state=state, limit=limit)
    except redis.RedisError:
        raise ApiError(503, "leases_unavailable", "Redis cannot be reached, so running and waiting runs cannot "
                       "be told apart; try again shortly", headers={"Retry-After": "5"}) from None
    with db_session(svc.repo.url) as db:
        audit.record(db, actor, "admin_runs_listed", None, {"count": len(rows)})
    return RunPage(items=rows)
