"""API errors: one JSON shape, ``{"error": code, "detail": text}``, with the right 4xx.

Domain exceptions are mapped to status codes here, at the edge, and nowhere else.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from verbatim.errors import AudioUnreadable, IllegalTransition, NoteRequestInvalid, NotFound


class ApiError(Exception):
    """Raised by API code to answer ``status`` with an error code a client can act on.

    ``headers`` are added to the error response (e.g. ``Tus-Resumable`` on tus endpoints);
    ``extra``: more keys of the body a client acts on (never patient words), e.g. the flagged
    sentences a signature waits on.
    """

    def __init__(self, status: int, code: str, detail: str, headers: dict[str, str] | None = None,
                 extra: dict[str, object] | None = None):
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.headers = headers
        self.extra = extra or {}


def _body(code: str, detail: str) -> dict[str, str]:
    return {"error": code, "detail": detail}


def install(app: FastAPI) -> None:
    """Register the handlers that turn exceptions into error responses."""

    @app.exception_handler(ApiError)
    async def api_error(_: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse({**exc.extra, **_body(exc.code, exc.detail)}, exc.status, headers=exc.headers)

    @app.exception_handler(NotFound)
    async def not_found(_: Request, exc: NotFound) -> JSONResponse:
        return JSONResponse(_body("not_found", str(exc)), 404)

    @app.exception_handler(IllegalTransition)
    async def conflict(_: Request, exc: IllegalTransition) -> JSONResponse:
        return JSONResponse(_body("illegal_transition", str(exc)), 409)

    @app.exception_handler(NoteRequestInvalid)
    async def note_invalid(_: Request, exc: NoteRequestInvalid) -> JSONResponse:
        status = {"not_ready": 409, "no_client_speech": 409, "transcript_expired": 410}.get(exc.code, 422)
        return JSONResponse(_body(exc.code, str(exc)), status)

    @app.exception_handler(AudioUnreadable)
    async def unreadable(_: Request, exc: AudioUnreadable) -> JSONResponse:
        return JSONResponse(_body("unreadable_audio", str(exc)), 422)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return JSONResponse(_body("invalid_request", f"{where}: {first.get('msg', 'invalid')}"), 422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed"}.get(
            exc.status_code, "http_error"
        )
        return JSONResponse(_body(code, str(exc.detail)), exc.status_code, headers=exc.headers)
