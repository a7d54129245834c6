"""Fault injection for the local recognizer service — off unless ``VERBATIM_ASR_FAULTS=true``.

Tests arm faults over HTTP (``/_faults/…``): fail the next N requests of a kind with
401/429/5xx, a response slower than the client's timeout, or an answer the client cannot
use (``created``, a body without ``job``, truncated JSON), reject audio, hold jobs in
``running``, expire or delete a job (as if someone else had).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["submit", "status", "transcript", "delete", "list", "any"]
#: an HTTP status to answer with, a response slower than the client's timeout, or a 200 whose body
#: the client cannot use: ``created`` (Speechmatics' not-yet-started status), ``no_job`` (a body
#: without ``job``), ``truncated`` (JSON cut off mid-way).
Mode = Literal["401", "429", "500", "503", "timeout", "created", "no_job", "truncated"]


@dataclass
class Armed:
    mode: Mode
    count: int
    retry_after_s: float | None = None
    delay_s: float = 0.0


@dataclass
class FaultState:
    """Armed faults; every method is thread-safe."""

    failures: dict[str, list[Armed]] = field(default_factory=dict)
    reject_next: int = 0
    hold: bool = False
    delete_on_poll: int = 0
    page_max: int | None = None  #: the most jobs one ``GET /v2/jobs`` answers, whatever ``limit`` asks (a SaaS cap)
    last_config: dict[str, Any] = field(default_factory=dict)  #: the config of the last job submitted
    requests: dict[str, int] = field(default_factory=dict)  #: requests seen per kind (status, list…)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def arm(self, kind: Kind, armed: Armed) -> None:
        with self._lock:
            self.failures.setdefault(kind, []).append(armed)

    def take(self, kind: str) -> Armed | None:
        """The fault to apply to this request, if one is armed for its kind (or for any)."""
        with self._lock:
            for key in (kind, "any"):
                queue = self.failures.get(key) or []
                while queue and queue[0].count <= 0:
                    queue.pop(0)
                if queue:
                    queue[0].count -= 1
                    return Armed(queue[0].mode, 1, queue[0].retry_after_s, queue[0].delay_s)
            return None

    def count(self, kind: str) -> None:
        with self._lock:
            self.requests[kind] = self.requests.get(kind, 0) + 1

    def requests_seen(self) -> dict[str, int]:
        with self._lock:
            return dict(self.requests)

    def peek(self, kind: str) -> Armed | None:
        """The fault the next request of this kind would get, without using it up."""
        with self._lock:
            for key in (kind, "any"):
                queue = [a for a in self.failures.get(key) or [] if a.count > 0]
                if queue:
                    return queue[0]
            return None

    def take_reject(self) -> bool:
        with self._lock:
            if self.reject_next > 0:
                self.reject_next -= 1
                return True
            return False

    def take_delete_on_poll(self) -> bool:
        with self._lock:
            if self.delete_on_poll > 0:
                self.delete_on_poll -= 1
                return True
            return False

    def reset(self) -> None:
        with self._lock:
            self.failures.clear()
            self.reject_next = 0
            self.hold = False
            self.delete_on_poll = 0
            self.page_max = None
