"""API errors: one JSON shape, ``{"error": code, "detail": text}``, with the right 4xx.

Domain exceptions are mapped to status codes here, at the edge, and nowhere else. Faults of our
own servers have one mapping too (``fault_answer``), used by the exception handler and by the
middleware that runs before it (``BodyGate``):

==========================================  ======  ==========================  ===========
fault                                       status  ``error``                   Retry-After
==========================================  ======  ==========================  ===========
PostgreSQL unreachable, pool exhausted       503    ``database_unavailable``    5 s
(``OperationalError``, ``TimeoutError``)
Redis unreachable                            503    ``redis_unavailable``       5 s
a value the database refuses (``DataError``) 422    ``value_refused``           —
storage full (``ENOSPC``, ``EDQUOT``)        507    ``insufficient_storage``    —
storage read-only (``EROFS``)                503    ``storage_read_only``       30 s
cross-device rename (``EXDEV``)              503    ``storage_misconfigured``   30 s
storage I/O error (``EIO``)                  503    ``storage_io_error``        30 s
==========================================  ======  ==========================  ===========

An answered fault is logged as ``fault_answered`` with its class and errno only: a driver's message
can quote the values it refused (transcript words, note text), so it is never logged or returned.
"""

from __future__ import annotations

import errno
import math

import psycopg
import redis
import sqlalchemy.exc
import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from verbatim.errors import (
    AudioUnreadable,
    IllegalTransition,
    NoteRequestInvalid,
    NotFound,
    Overloaded,
    RecordUnavailable,
)


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


log = structlog.get_logger("verbatim.api")

#: seconds a client should wait before trying again after an outage of ours
DATABASE_RETRY_AFTER_S = 5
STORAGE_RETRY_AFTER_S = 30
#: errno → (status, code, what to tell the caller) for the audio volume and the upload folder
STORAGE_FAULTS: dict[int, tuple[int, str, str]] = {
    errno.ENOSPC: (507, "insufficient_storage", "the audio volume is full; nothing was stored"),
    errno.EDQUOT: (507, "insufficient_storage", "the audio volume's quota is used up; nothing was stored"),
    errno.EROFS: (503, "storage_read_only", "the audio volume is read-only at the moment; nothing was stored"),
    errno.EXDEV: (503, "storage_misconfigured", "the upload folder and the audio volume are on different "
                  "filesystems (an operator must fix the mounts); nothing was stored"),
    errno.EIO: (503, "storage_io_error", "the audio volume reported an I/O error; nothing was stored"),
}
#: the exception classes ``fault_answer`` maps (registered once, with one handler)
FAULT_TYPES: tuple[type[Exception], ...] = (
    sqlalchemy.exc.OperationalError, sqlalchemy.exc.TimeoutError, sqlalchemy.exc.DataError,
    psycopg.OperationalError, psycopg.DataError, redis.ConnectionError, redis.TimeoutError, OSError,
)


def fault_answer(exc: BaseException) -> ApiError | None:
    """The answer to a fault of ours (see the module docstring's table), or None when ``exc`` is not one."""
    if isinstance(exc, sqlalchemy.exc.DataError | psycopg.DataError):
        return ApiError(422, "value_refused", "the database refused a value of this request (e.g. a NUL byte or a "
                        "number out of range); nothing was stored")
    if isinstance(exc, sqlalchemy.exc.OperationalError | sqlalchemy.exc.TimeoutError | psycopg.OperationalError):
        return ApiError(503, "database_unavailable", "the database is unreachable at the moment; nothing was "
                        "stored, try again shortly", {"retry-after": str(DATABASE_RETRY_AFTER_S)})
    if isinstance(exc, redis.ConnectionError | redis.TimeoutError):
        return ApiError(503, "redis_unavailable", "the queue server is unreachable at the moment; try again "
                        "shortly", {"retry-after": str(DATABASE_RETRY_AFTER_S)})
    if isinstance(exc, OSError) and exc.errno in STORAGE_FAULTS:
        status, code, detail = STORAGE_FAULTS[exc.errno]
        return ApiError(status, code, detail, {"retry-after": str(STORAGE_RETRY_AFTER_S)} if status == 503 else None)
    return None


def _body(code: str, detail: str) -> dict[str, str]:
    return {"error": code, "detail": detail}


def install(app: FastAPI) -> None:
    """Register the handlers that turn exceptions into error responses."""

    @app.exception_handler(ApiError)
    async def api_error(_: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse({**exc.extra, **_body(exc.code, exc.detail)}, exc.status, headers=exc.headers)

    async def fault(request: Request, exc: Exception) -> JSONResponse:
        answer = fault_answer(exc)
        if answer is None:
            raise exc  # not a fault of ours we know: the server's 500 (and its traceback in the log)
        log.warning("fault_answered", status=answer.status, error=answer.code, fault=type(exc).__name__,
                    errno=getattr(exc, "errno", None), method=request.method, path=request.url.path)
        return JSONResponse(_body(answer.code, answer.detail), answer.status, headers=answer.headers)

    for fault_type in FAULT_TYPES:
        app.add_exception_handler(fault_type, fault)

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

    @app.exception_handler(RecordUnavailable)
    async def record_unavailable(_: Request, exc: RecordUnavailable) -> JSONResponse:
        return JSONResponse(_body(exc.code, str(exc)), 409 if exc.code == "not_ready" else 410)

    @app.exception_handler(AudioUnreadable)
    async def unreadable(_: Request, exc: AudioUnreadable) -> JSONResponse:
        return JSONResponse(_body("unreadable_audio", str(exc)), 422)

    @app.exception_handler(Overloaded)
    async def overloaded(_: Request, exc: Overloaded) -> JSONResponse:
        return JSONResponse(_body("overloaded", str(exc)), 503,
                            headers={"Retry-After": str(max(1, math.ceil(exc.retry_after_s)))})

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
