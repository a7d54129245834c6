"""Writes made while shutting down or cancelling, each on a wall-clock budget.

Every teardown write (final session write, lease release, re-queue) gets at most
``teardown_budget_s`` seconds in total and ``teardown_attempt_timeout_s`` per attempt. The
settings refuse to start unless budget + per-attempt timeout < shutdown_window_s − drain_s,
so a teardown that begins at the very end of the drain still ends before the orchestrator's
SIGKILL. A write that runs out of budget raises TeardownTimeout, whose failure code
``teardown_persist_timeout`` goes on the session's end event; the stalled-session sweep
recovers the session from PostgreSQL later.
"""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable
from typing import TypeVar

import structlog

from verbatim.errors import VerbatimError
from verbatim.telemetry import metrics

T = TypeVar("T")
log = structlog.get_logger("verbatim.teardown")

TEARDOWN_PERSIST_TIMEOUT = "teardown_persist_timeout"


class TeardownTimeout(VerbatimError):
    """Raised when a teardown write did not succeed within its wall-clock budget."""

    failure_code = TEARDOWN_PERSIST_TIMEOUT


def budgeted(name: str, fn: Callable[[], T], budget_s: float, attempt_timeout_s: float) -> T:
    """Call ``fn`` until it succeeds, each attempt cut off after ``attempt_timeout_s`` seconds,
    all attempts within ``budget_s`` seconds. Raises TeardownTimeout when the budget is spent."""
    deadline = time.monotonic() + budget_s
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"teardown-{name}")
    last: BaseException | None = None
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            future = pool.submit(fn)
            try:
                return future.result(timeout=min(attempt_timeout_s, remaining))
            except concurrent.futures.TimeoutError as exc:
                last = exc
                # the stuck attempt keeps its thread; a fresh pool serves the next attempt
                pool.shutdown(wait=False, cancel_futures=True)
                pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"teardown-{name}")
            except Exception as exc:  # noqa: BLE001 - any failure is retried within the budget
                last = exc
                time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    raise TeardownTimeout(f"teardown write {name!r} did not succeed within {budget_s} s: {last!r}")


class Teardown:
    """One session's teardown: its writes share one wall-clock budget; reports duration and failure.

    Sharing the budget is what makes ``budget + per-attempt timeout < window`` hold for the
    whole teardown, not just for each write.
    """

    def __init__(self, session_id: str, run: int, budget_s: float, attempt_timeout_s: float):
        self.session_id = session_id
        self.run = run
        self.attempt_timeout_s = attempt_timeout_s
        self.started = time.monotonic()
        self.deadline = self.started + budget_s
        self.failure_code: str | None = None

    def write(self, name: str, fn: Callable[[], object]) -> bool:
        """One teardown write within what is left of the budget; False (failure code noted) if it ran out."""
        try:
            budgeted(name, fn, max(0.0, self.deadline - time.monotonic()), self.attempt_timeout_s)
            return True
        except TeardownTimeout as exc:
            self.failure_code = exc.failure_code
            log.error("teardown_write_failed", session_id=self.session_id, run=self.run, write=name,
                      failure_code=exc.failure_code)
            return False

    def finish(self, outcome: str) -> float:
        """Log the session's end event with the teardown's duration (seconds) and export it."""
        duration = time.monotonic() - self.started
        metrics.teardown_duration.observe(duration)
        log.info("session_run_end", session_id=self.session_id, run=self.run, outcome=outcome,
                 teardown_s=round(duration, 3), failure_code=self.failure_code)
        return duration
