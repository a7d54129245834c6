"""What every run (capture, note), sweep and retention pass of one process works with, built once per
process after it starts (never at import time, never shared across a fork).

The drain's cancel token is the core's (``verbatim.durable.cancel``); it is re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import redis

from verbatim.config import Settings
from verbatim.db.repo import Repo
from verbatim.durable.cancel import CancelToken
from verbatim.leases import Lease
from verbatim.polish.base import Polisher
from verbatim.queue import CaptureQueue
from verbatim.recognizer.client import Recognizer
from verbatim.storage import AudioVolume

if TYPE_CHECKING:
    from verbatim.pipeline.cleanup import Cleanup

__all__ = ["CancelToken", "ProcessContext"]


@dataclass
class ProcessContext:
    """What every run and sweep of one process works with (it satisfies ``verbatim.durable.services.Services``)."""

    settings: Settings
    repo: Repo
    redis: redis.Redis
    recognizer: Recognizer
    polisher: Polisher
    volume: AudioVolume
    queue: CaptureQueue
    cleanup: Cleanup
    cancel: CancelToken = field(default_factory=CancelToken)

    def new_lease(self, session_id: object) -> Lease:
        return Lease(self.redis, str(session_id), self.settings.lease_ttl_s, self.settings.heartbeat_s)
