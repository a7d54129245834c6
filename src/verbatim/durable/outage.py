"""Our own servers unreachable: telling such a fault apart, and waiting it out with backoff.

An outage of PostgreSQL or Redis is our fault, never the session's: a run in flight during
one is refunded (``DurableRuns``), and no process exits on one — each retries with backoff,
logs ``backend_unavailable`` / ``backend_restored`` and sets the ``backend_unavailable``
gauge (1 while it cannot reach that backend).

What counts as an outage: SQLAlchemy's ``OperationalError`` / ``InterfaceError`` (connection
refused or lost, the server shutting down, a statement timeout, a deadlock) and a
``DBAPIError`` whose connection was invalidated; Redis ``ConnectionError`` / ``TimeoutError``;
kombu's ``OperationalError`` (the broker). A value the database refuses (``DataError``,
``IntegrityError``) is not one: it is a bug or bad input.

Why our own code: the classification is Verbatim's rule (DESIGN.md "Our own faults are
ours"); the waiting is a capped exponential backoff (stamina's, via ``RetryPolicy``'s
shape), written as a small state object because a loop process must keep ticking.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import redis
import structlog
from sqlalchemy import exc as sa_exc

from verbatim.telemetry import metrics

log = structlog.get_logger("verbatim.outage")

DATABASE = "database"
REDIS = "redis"


def backend_of(exc: BaseException) -> str | None:
    """``"database"`` or ``"redis"`` when ``exc`` (or what caused it) is one of our servers unreachable; else None."""
    seen: BaseException | None = exc
    hops = 0
    while seen is not None and hops < 20:
        if isinstance(seen, sa_exc.OperationalError | sa_exc.InterfaceError):
            return DATABASE
        if isinstance(seen, sa_exc.DBAPIError) and seen.connection_invalidated:
            return DATABASE
        if isinstance(seen, redis.ConnectionError | redis.TimeoutError):
            return REDIS
        if _is_kombu_outage(seen):
            return REDIS
        if type(seen).__module__.startswith("psycopg") and type(seen).__name__ in ("OperationalError",
                                                                                  "InterfaceError"):
            return DATABASE
        seen = seen.__cause__ or seen.__context__
        hops += 1
    return None


def _is_kombu_outage(exc: BaseException) -> bool:
    try:
        from kombu.exceptions import OperationalError as KombuOperationalError
    except ImportError:  # pragma: no cover - kombu comes with celery
        return False
    return isinstance(exc, KombuOperationalError)


@dataclass
class Backoff:
    """Capped exponential backoff for one process's loop while a backend is down.

    ``failed(backend)`` → seconds to wait before the next try (``base_s`` doubling up to
    ``max_s``), logging ``backend_unavailable`` and raising the gauge; ``ok()`` after a try
    that reached every backend logs ``backend_restored`` (with how long it was down) and
    lowers the gauge.
    """

    process: str
    base_s: float
    max_s: float
    failures: int = 0
    down: dict[str, float] = field(default_factory=dict)  #: backend → time.monotonic() it was first seen down

    def failed(self, backend: str, error: BaseException) -> float:
        self.failures += 1
        wait = min(self.max_s, self.base_s * 2 ** (self.failures - 1))
        first = backend not in self.down
        self.down.setdefault(backend, time.monotonic())
        metrics.backend_unavailable.labels(process=self.process, backend=backend).set(1)
        log.warning("backend_unavailable", process=self.process, backend=backend, first=first,
                    attempt=self.failures, retry_in_s=round(wait, 3), error=type(error).__name__)
        return wait

    def ok(self) -> None:
        self.failures = 0
        for backend, since in self.down.items():
            metrics.backend_unavailable.labels(process=self.process, backend=backend).set(0)
            log.info("backend_restored", process=self.process, backend=backend,
                     down_s=round(time.monotonic() - since, 3))
        self.down.clear()
