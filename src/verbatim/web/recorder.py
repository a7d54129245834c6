"""``GET /app/record``: the recorder a therapist opens in the phone's browser, and its service worker.

The page (``templates/record.html`` + ``static/recorder.js``) records with MediaRecorder, keeps
every one-second chunk encrypted in IndexedDB until the server confirmed it, and sends the
chunks through a deferred-length tus upload (``/v1/uploads``); the session is created from the
parts' uploads in order (``POST /v1/sessions`` with ``upload_ids``). ``/app/record-sw.js`` is
the service worker that keeps the page working without a network; it is served from ``/app/``
so that its scope can be ``/app/record``. Installable: ``static/recorder.webmanifest``.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from verbatim.api.deps import ServicesDep
from verbatim.web.pages import STATIC_DIR, PageDep, render
from verbatim.web.words import duration

router = APIRouter(prefix="/app", include_in_schema=False)


@router.get("/record", response_class=HTMLResponse)
def record_page(request: Request, page: PageDep, svc: ServicesDep) -> Response:
    """The recorder (therapists only; a clinic admin is sent to the clinic page)."""
    if page.principal.scope != "therapist":
        return RedirectResponse("/app/clinic", 303)
    return render(request, "record.html", stall=duration(svc.settings.recording_stall_s))


@router.get("/record/csrf")
def csrf_token(page: PageDep) -> JSONResponse:
    """``{"csrf_token"}`` of the current page session, for a recorder page opened before a new sign-in.

    Same-origin only by nature (no CORS: another site's script cannot read the answer); without a
    page session, 303 to the sign-in page.
    """
    return JSONResponse({"csrf_token": page.csrf_token}, headers={"cache-control": "no-store"})


@router.get("/record-sw.js")
def service_worker() -> Response:
    """The recorder's service worker script (never cached by HTTP: a new version must reach phones)."""
    return Response((STATIC_DIR / "recorder-sw.js").read_bytes(), media_type="text/javascript",
                    headers={"cache-control": "no-cache", "service-worker-allowed": "/app/record"})
