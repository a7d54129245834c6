"""The session page's free-text correction of one segment (``POST /app/sessions/{id}/segments/{seg}``).

The form (CSRF-protected) goes through the JSON API's own ``correct_segment``, so the page's
correction is authorized, versioned and audited exactly as ``PUT /v1/sessions/{id}/segments/{seg}``:
another therapist's session is a 404 page, a session not ready a 409 page, empty or oversized
words a 422 page; nothing is changed when it is refused.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import ValidationError

from verbatim.api.deps import ServicesDep
from verbatim.api.errors import ApiError
from verbatim.api.segments import MAX_SEGMENT_CHARS, SegmentCorrection, _index, correct_segment
from verbatim.web.pages import CsrfDep, PageError, page_actor

router = APIRouter(prefix="/app", include_in_schema=False)


@router.post("/sessions/{session_id}/segments/{segment_id}")
def correct(session_id: uuid.UUID, segment_id: str, request: Request, svc: ServicesDep, page: CsrfDep,
            text: Annotated[str, Form(max_length=MAX_SEGMENT_CHARS * 2)] = "",
            client_id: Annotated[str, Form(max_length=200)] = "") -> Response:
    """Save the corrected words of one segment; back to the same turn on the session page."""
    try:
        body = SegmentCorrection(text=text, client_id=client_id or None)
    except ValidationError as exc:
        raise PageError(422, f"The corrected words must be 1 to {MAX_SEGMENT_CHARS} characters; nothing was "
                             "changed.") from exc
    try:
        correct_segment(session_id, segment_id, body, svc, page.principal, page_actor(request, page))
    except ApiError as exc:
        raise PageError(exc.status, exc.detail) from exc
    return RedirectResponse(f"/app/sessions/{session_id}#turn-{_index(segment_id)}", 303)
