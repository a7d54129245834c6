"""The per-transcript lock of the analysis: ``SET reliability_lock:{id} token NX EX ttl``.

One consumer analyses a transcript at a time; a second one finding the lock held counts
``worker_lock_acquired_total{outcome="busy"}`` and defers its message. Every attempt takes a
fresh uuid4 token, and release is a compare-and-delete in Lua: an attempt that outlived its
lock (paused past the TTL while another consumer took the lock) never deletes the other's.
The lock only keeps two analyses from running at once; what makes a late writer harmless
is the guarded commit (``reliability_analyses.completed_at IS NULL``).
"""

from __future__ import annotations

import uuid
from types import TracebackType

import redis

from verbatim.leases import COMPARE_AND_DELETE
from verbatim.reliability.streams import lock_key
from verbatim.telemetry import metrics


class TranscriptLock:
    """One attempt's lock on one transcript (session id). ``ttl_s`` in whole seconds (EX)."""

    def __init__(self, client: redis.Redis, transcript_id: uuid.UUID | str, ttl_s: int):
        self._redis = client
        self.key = lock_key(transcript_id)
        self.token = uuid.uuid4().hex  # fresh per attempt: a release can only ever match its own SET
        self._ttl_s = int(ttl_s)
        self.held = False

    def acquire(self) -> bool:
        """Take the lock if free (and count the outcome); False when another attempt holds it."""
        self.held = bool(self._redis.set(self.key, self.token, nx=True, ex=self._ttl_s))
        metrics.lock_acquired.labels(outcome="acquired" if self.held else "busy").inc()
        return self.held

    def release(self) -> bool:
        """Delete the lock if it is still ours (compare-and-DEL). True if it was deleted."""
        if not self.held:
            return False
        self.held = False
        return bool(self._redis.eval(COMPARE_AND_DELETE, 1, self.key, self.token))

    def remaining_s(self) -> float:
        """Seconds until the lock (whoever holds it) expires; 0 when it is free."""
        ms = int(self._redis.pttl(self.key))
        return max(0.0, ms / 1000) if ms > 0 else 0.0

    def __enter__(self) -> TranscriptLock:
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.release()
