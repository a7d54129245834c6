"""The clinicians' web pages under ``/app`` (server-rendered, Jinja2 + htmx), and ``/docs`` served offline.

``install(app, settings)`` adds the page routes, their static files (``/app/static``, with the
vendored htmx and tus-js-client and their licences; the recorder's manifest and scripts), HTML
error pages for ``/app`` paths (the JSON API keeps its JSON errors), and — when
``settings.docs_enabled`` — Swagger UI at ``/docs`` from the ``swagger-ui-py`` package's files (no CDN).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import cast

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from verbatim.api.errors import ApiError
from verbatim.config import Settings
from verbatim.errors import IllegalTransition, NotFound
from verbatim.web import clinic, notes_page, ops, recorder, segment_edit, session_list, session_page, sign_in
from verbatim.web.pages import PageError, SignInRequired, render, sign_in_redirect

Handler = Callable[[Request, Exception], Awaitable[Response]]
STATIC = Path(__file__).parent / "static"


def _status(exc: Exception) -> tuple[int, str]:
    if isinstance(exc, PageError):
        return exc.status, exc.message
    if isinstance(exc, NotFound):
        return 404, "There is no such page, or it is not yours to see."
    if isinstance(exc, ApiError):
        return exc.status, exc.detail
    if isinstance(exc, IllegalTransition):
        return 409, str(exc)
    if isinstance(exc, RequestValidationError):
        return 422, "Something in the address or the form is not valid; go back and check it."
    if isinstance(exc, StarletteHTTPException):
        return exc.status_code, "There is no such page." if exc.status_code == 404 else str(exc.detail)
    return 500, "Something went wrong."


def _html_for_pages(fallback: Handler | None) -> Handler:
    """An exception handler answering an HTML page under ``/app`` and ``fallback`` (JSON) elsewhere."""

    async def handle(request: Request, exc: Exception) -> Response:
        if isinstance(exc, SignInRequired):
            answer = sign_in_redirect(exc.next_path, exc.expired)
            if request.headers.get("hx-request"):
                # A poll (htmx) must not swap the sign-in page into the table: send the whole page there.
                return Response(status_code=204, headers={"HX-Redirect": answer.headers["location"]})
            return answer
        if request.url.path.startswith("/app") or fallback is None:
            status, message = _status(exc)
            if status == 404:
                message = "There is no such page, or it is not yours to see."
            page = render(request, "error.html", status, code=status, message=message)
            if isinstance(exc, ApiError) and exc.headers:
                page.headers.update(exc.headers)  # e.g. Retry-After of a 429 or 503
            return page
        return await fallback(request, exc)

    return handle


def install(app: FastAPI, settings: Settings) -> None:
    """Add the pages, their static files, their error pages and the offline ``/docs`` to ``app``."""
    for router in (sign_in.router, session_list.router, session_page.router, segment_edit.router, notes_page.router,
                   clinic.router, ops.router, recorder.router):
        app.include_router(router)
    app.mount("/app/static", StaticFiles(directory=STATIC), name="app-static")
    for exc_class in (SignInRequired, PageError, NotFound, ApiError, IllegalTransition, RequestValidationError,
                      StarletteHTTPException):
        json_handler = cast(Handler | None, app.exception_handlers.get(exc_class))
        app.add_exception_handler(exc_class, _html_for_pages(json_handler))
    if settings.docs_enabled:
        _offline_docs(app)


def _offline_docs(app: FastAPI) -> None:
    import swagger_ui

    assets = Path(swagger_ui.__file__).parent / "static"
    app.mount("/docs-assets", StaticFiles(directory=assets), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        """Swagger UI from local files (swagger-ui-py ships them; Apache-2.0)."""
        return get_swagger_ui_html(openapi_url="/openapi.json", title="Verbatim API",
                                   swagger_js_url="/docs-assets/swagger-ui-bundle.js",
                                   swagger_css_url="/docs-assets/swagger-ui.css",
                                   swagger_favicon_url="/docs-assets/favicon-32x32.png")
