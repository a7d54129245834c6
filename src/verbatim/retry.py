"""Retry policies as data: which errors are retried, for how long, and how long to wait.

Loops are stamina's (attempt cap + wall-clock budget, instant in tests via
``stamina.set_testing``); this module only decides. Errors that must never be retried are
the RecognizerError subclasses other than RecognizerTransient: auth, rejected audio,
a lost job.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import stamina

from verbatim.errors import PolishTransient, RecognizerTransient, WriterTransient


def transient_backoff(exc: Exception) -> bool | float:
    """stamina backoff hook: retry transient faults; honour a server's Retry-After (seconds)."""
    if isinstance(exc, RecognizerTransient):
        return exc.retry_after_s if exc.retry_after_s is not None else True
    return isinstance(exc, (PolishTransient, WriterTransient))


@dataclass(frozen=True)
class RetryPolicy:
    """At most ``attempts`` tries within ``budget_s`` seconds, waits from ``wait_initial_s`` up to ``wait_max_s``."""

    attempts: int
    budget_s: float
    wait_initial_s: float = 0.5
    wait_max_s: float = 10.0

    def attempts_iter(self) -> Iterator[stamina.Attempt]:
        """``for attempt in policy.attempts_iter(): with attempt: call()`` — raises the last error when spent."""
        return iter(
            stamina.retry_context(
                on=transient_backoff,
                attempts=self.attempts,
                timeout=self.budget_s,
                wait_initial=self.wait_initial_s,
                wait_max=self.wait_max_s,
            )
        )
