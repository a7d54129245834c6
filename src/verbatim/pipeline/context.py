"""What a capture run works with, built once per worker process (never at import time)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import redis

from verbatim.config import Settings
from verbatim.db.repo import Repo
from verbatim.errors import RunCancelled
from verbatim.leases import Lease
from verbatim.pipeline.notify import Notifier
from verbatim.polish.base import Polisher
from verbatim.queue import CaptureQueue
from verbatim.recognizer.client import Recognizer
from verbatim.storage import AudioVolume


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


@dataclass
class RunContext:
    """Dependencies of a capture run."""

    settings: Settings
    repo: Repo
    redis: redis.Redis
    recognizer: Recognizer
    polisher: Polisher
    volume: AudioVolume
    queue: CaptureQueue
    notifier: Notifier
    cancel: CancelToken = field(default_factory=CancelToken)

    def new_lease(self, session_id: object) -> Lease:
        return Lease(self.redis, str(session_id), self.settings.lease_ttl_s, self.settings.heartbeat_s)
