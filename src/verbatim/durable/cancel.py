"""The drain's cancel token, shared by every kind of run (DESIGN.md "Deploys").

The worker sets a deadline on SIGTERM (``workers.signals``); a run checks it between steps
and around every call that may block (``bounded``), and past it raises RunCancelled, which the
core (``verbatim.durable.core``) turns into its budgeted teardown.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from verbatim.errors import RunCancelled

T = TypeVar("T")


@dataclass
class CancelToken:
    """Set by the worker on SIGTERM: past ``deadline`` (time.monotonic seconds) a run must stop."""

    deadline: float | None = None
    on_expire: Callable[[], object] | None = None

    def cancel_at(self, deadline: float) -> None:
        self.deadline = deadline if self.deadline is None else min(self.deadline, deadline)

    @property
    def cancelled(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def check(self) -> None:
        """Raise RunCancelled once the drain deadline has passed."""
        if self.cancelled:
            if self.on_expire is not None:
                self.on_expire()
                self.on_expire = None
            raise RunCancelled("worker is shutting down and the drain window is over")

    def time_left(self) -> float | None:
        """Seconds until the drain deadline (None: no drain under way)."""
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    def bounded(self, fn: Callable[[], T], poll_s: float = 0.25) -> T:
        """Call ``fn`` so that the run still reaches its teardown inside the drain window.

        The call runs on a daemon thread while this one watches the drain deadline — which a
        SIGTERM may set *during* the call. Past the deadline this raises RunCancelled and the
        call is abandoned (its thread ends with the process). Re-raises whatever ``fn`` raised.
        """
        self.check()
        box: dict[str, Any] = {}
        done = threading.Event()

        def target() -> None:
            try:
                box["value"] = fn()
            except BaseException as exc:  # noqa: BLE001 - handed to the caller below
                box["error"] = exc
            finally:
                done.set()

        threading.Thread(target=target, name="bounded-call", daemon=True).start()
        while not done.wait(poll_s):
            self.check()
        if "error" in box:
            raise box["error"]
        return box["value"]
