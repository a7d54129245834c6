"""The session page's free-text correction of one segment (``POST /app/sessions/{id}/segments/{seg}``).

``GET …/segments/{seg}/edit`` answers the correction form: the fragment when the page's script
asks for it (``segment-fix.js`` loads it in place of the link, so an hour's transcript carries
400 short links, not 400 forms), a page of its own otherwise (no script). It reads the segment
through ``segment_history`` (authorized and audited as the API's read).

The form (CSRF-protected) goes through the JSON API's own ``correct_segment``, so the page's
correction is authorized, versioned and audited exactly as ``PUT /v1/sessions/{id}/segments/{seg}``:
another therapist's session is a 404 page, a session not ready a 409 page, empty or oversized
words a 422 page; nothing is changed when it is refused.
"""

from __future__ import annotations

import secrets
import uuid
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from verbatim.api.deps import ServicesDep
from verbatim.api.errors import ApiError
from verbatim.api.segments import MAX_SEGMENT_CHARS, SegmentCorrection, _index, correct_segment, segment_history
from verbatim.web.pages import ActorPageDep, CsrfDep, PageError, page_actor, render

router = APIRouter(prefix="/app", include_in_schema=False)


@router.get("/sessions/{session_id}/segments/{segment_id}/edit", response_class=HTMLResponse)
def edit_form(session_id: uuid.UUID, segment_id: str, request: Request, svc: ServicesDep,
              actor: ActorPageDep) -> Response:
    """The correction form of one segment, filled with its words now (a fragment for the script, else a page)."""
    try:
        segment = segment_history(session_id, segment_id, svc, actor.principal, actor)
    except ApiError as exc:
        raise PageError(exc.status, exc.detail) from exc
    template = "_segment_form.html" if request.headers.get("hx-request") else "segment_edit.html"
    return render(request, template, session_id=session_id, segment=segment, index=_index(segment_id),
                  key=secrets.token_hex(3))


@router.post("/sessions/{session_id}/segments/{segment_id}")
def correct(session_id: uuid.UUID, segment_id: str, request: Request, svc: ServicesDep, page: CsrfDep,
            text: Annotated[str, Form(max_length=MAX_SEGMENT_CHARS * 2)] = "",
            client_id: Annotated[str, Form(max_length=200)] = "") -> Response:
    """Save the corrected words of one segment; back to the same turn on the session page."""
    try:
        body = SegmentCorrection(text=text, client_id=client_id or None)
    except ValidationError as exc:
        raise PageError(422, f"The corrected words must be 1 to {MAX_SEGMENT_CHARS} characters of readable text "
                             f"({_first_problem(exc)}); nothing was changed.") from exc
    try:
        correct_segment(session_id, segment_id, body, svc, page.principal, page_actor(request, page))
    except ApiError as exc:
        raise PageError(exc.status, exc.detail) from exc
    return RedirectResponse(f"/app/sessions/{session_id}#turn-{_index(segment_id)}", 303)


def _first_problem(exc: ValidationError) -> str:
    """The first refusal's message (our validators' messages name positions, never the text)."""
    errors = exc.errors()
    return str(errors[0].get("msg", "invalid")).removeprefix("Value error, ") if errors else "invalid"
