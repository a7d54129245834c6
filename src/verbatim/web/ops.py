"""The operations page: every unfinished run of every kind, for an operations (``admin``-scope) token.

``GET /app/ops`` shows the rows ``verbatim.ops_runs.list_runs`` returns — the same rows as
``verbatim runs list`` and ``GET /v1/admin/runs``, not a copy of their fields — oldest change first:
kind, state (the durable-run core's: running, parked, due, overdue, blocked, cancelled), holder
(while its lease is live), since, next due, deadline, runs used, last fault code, subject id.
Filters: ``kind`` and ``state`` (blank: any). No patient data: no client ids, no words. Audited
(``admin_runs_listed``, ``via: web``). Redis unreachable: a 503 page with Retry-After (without
the leases, running and waiting runs cannot be told apart).
"""

from __future__ import annotations

import redis
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from verbatim import audit
from verbatim.api.deps import ServicesDep
from verbatim.api.errors import ApiError
from verbatim.db.engine import db_session
from verbatim.ops_runs import KINDS, RunState, list_runs
from verbatim.web.pages import ActorPageDep, PageError, render
from verbatim.web.session_list import Text

router = APIRouter(prefix="/app", include_in_schema=False)
#: most rows the page shows (oldest change first); the API and the CLI page further
PAGE_ROWS = 500


@router.get("/ops", response_class=HTMLResponse)
def ops_page(request: Request, svc: ServicesDep, actor: ActorPageDep, kind: Text = "", state: Text = "") -> Response:
    """Every unfinished run, filtered by kind and state; 403 for a clinician, 422 for an unknown filter."""
    if actor.principal.scope != "admin":
        raise PageError(403, "This page is for operations (an admin-scope token).")
    kinds = [k.kind for k in KINDS]
    if kind and kind not in kinds:
        raise PageError(422, f"Unknown kind “{kind}”: choose one from the list.")
    try:
        wanted = RunState(state) if state else None
    except ValueError:
        raise PageError(422, f"Unknown state “{state}”: choose one from the list.") from None
    try:
        rows = list_runs(svc.repo.url, svc.redis, kind=kind or None, state=wanted, limit=PAGE_ROWS + 1)
    except redis.RedisError:
        raise ApiError(503, "leases_unavailable", "Redis cannot be reached, so running and waiting runs cannot be "
                       "told apart; reload in a few seconds.", headers={"Retry-After": "5"}) from None
    with db_session(svc.repo.url) as db:
        audit.record(db, actor, "admin_runs_listed", None, {"count": min(len(rows), PAGE_ROWS), "via": "web"})
    return render(request, "ops.html", rows=rows[:PAGE_ROWS], more=len(rows) > PAGE_ROWS, kinds=kinds,
                  states=[s.value for s in RunState], query={"kind": kind, "state": state})
