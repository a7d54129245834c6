"""A clinic admin's pages: the clinic's sessions (metadata only), the audit log, break-glass reading.

The clinic's list shows no client ids and no transcript text. Reading a colleague's transcript
is break-glass: a reason is required, a time-limited grant is opened for this token alone
(``api/break_glass.py``), and every read under it is audited as such.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from verbatim.api.audit_log import read_audit
from verbatim.api.break_glass import BreakGlassIn, open_grant
from verbatim.api.deps import ServicesDep
from verbatim.api.errors import ApiError
from verbatim.api.sessions import get_transcript
from verbatim.web.pages import ActorPageDep, CsrfDep, PageError, page_actor, render
from verbatim.web.session_list import PageNo, Text, filters, listing
from verbatim.web.session_page import _lines

router = APIRouter(prefix="/app", include_in_schema=False)


def _admin(actor: ActorPageDep) -> None:
    if actor.principal.scope != "clinic_admin":
        raise PageError(403, "This page is for a clinic administrator.")


@router.get("/clinic", response_class=HTMLResponse)
def clinic_page(request: Request, svc: ServicesDep, actor: ActorPageDep, status: Text = "", since: Text = "",
                until: Text = "", page: PageNo = 1) -> Response:
    """The clinic's sessions, newest first, metadata only. Audited."""
    if actor.principal.scope == "therapist":
        return RedirectResponse("/app/sessions", 303)
    _admin(actor)
    return render(request, "clinic.html", **listing(svc, actor, *filters(status, since, until), page, redact=True))


@router.get("/audit", response_class=HTMLResponse)
def audit_page(request: Request, svc: ServicesDep, actor: ActorPageDep,
               before_id: Annotated[int | None, Query(ge=1)] = None) -> Response:
    """The clinic's audit log, newest first, 100 rows a page. Audited (``audit_read``)."""
    _admin(actor)
    found = read_audit(svc, actor, limit=100, before_id=before_id, session_id=None)
    return render(request, "audit.html", rows=found.items, next_before_id=found.next_before_id)


@router.post("/clinic/sessions/{session_id}/break-glass")
def break_glass(session_id: uuid.UUID, request: Request, svc: ServicesDep, page: CsrfDep,
                reason: Annotated[str, Form(max_length=600)] = "") -> Response:
    """Open a break-glass grant with the reason given, then show the transcript."""
    try:
        body = BreakGlassIn(reason=reason)
    except ValidationError:
        raise PageError(422, "Give the reason you need this session now (10 to 500 characters, in readable words): "
                             "it is shown to "
                             "its therapist and kept in the audit log.") from None
    try:
        open_grant(session_id, body, svc, page_actor(request, page))
    except ApiError as exc:
        raise PageError(exc.status, exc.detail) from exc
    return RedirectResponse(f"/app/clinic/sessions/{session_id}/transcript", 303)


@router.get("/clinic/sessions/{session_id}/transcript", response_class=HTMLResponse)
def break_glass_read(session_id: uuid.UUID, request: Request, svc: ServicesDep, actor: ActorPageDep) -> Response:
    """A colleague's transcript under an open grant (read only); 404 without one. Audited as break-glass."""
    try:
        transcript = get_transcript(session_id, svc, actor.principal, actor)
    except ApiError as exc:
        raise PageError(exc.status, exc.detail) from exc
    tabs = [{"client_id": t.client_id, "lines": _lines([s.model_dump() for s in t.segments],
                                                       list(range(len(t.segments))), {})}
            for t in transcript.transcripts]
    return render(request, "break_glass.html", session_id=session_id, tabs=tabs,
                  unassigned=_lines([s.model_dump() for s in transcript.unassigned],
                                    list(range(len(transcript.unassigned))), {}))
