"""The capture-run lease: Redis ``SET NX PX`` with a token, renewed by a heartbeat thread.

The lease keeps two runs from working at once; it does not make writes safe (a paused
process can outlive it) — the PostgreSQL fencing token does that (``verbatim.db.repo``).
Renewal and release compare the token in Lua, so a run never extends or deletes a lease
that is no longer its own.
"""

from __future__ import annotations

import threading
import time
import uuid
from types import TracebackType

import redis
import structlog

from verbatim import keys
from verbatim.errors import LeaseLost

log = structlog.get_logger("verbatim.lease")

# KEYS[1] = lease key, ARGV[1] = token, ARGV[2] = ttl in ms
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
# KEYS[1] = key, ARGV[1] = token: delete only if the value is still ours. Shared by every
# token-owned lock (capture leases here, the reliability transcript lock).
COMPARE_AND_DELETE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
"""


class Lease:
    """One run's lease on one session.

    ``acquire()`` → bool; while held, a daemon thread renews it every ``heartbeat_s``
    seconds. ``check()`` raises LeaseLost once a renewal found the lease gone or not ours —
    or once no renewal has succeeded for a whole TTL (Redis unreachable): the lease may then
    have expired in Redis and been taken, so the run fails closed (monotonic clock).
    """

    def __init__(self, client: redis.Redis, session_id: uuid.UUID | str, ttl_s: float, heartbeat_s: float,
                 key: str | None = None, owner: str | None = None):
        self._redis = client
        self.key = key or keys.lease(session_id)
        # A new token per run; prefixed with the worker's name, so a restarted worker can release
        # the leases its dead process held (``release_owned``).
        self.token = f"{owner}/{uuid.uuid4().hex}" if owner else uuid.uuid4().hex
        self._ttl_ms = int(ttl_s * 1000)
        self._heartbeat_s = heartbeat_s
        self._stop = threading.Event()
        self._lost = threading.Event()
        self._thread: threading.Thread | None = None
        self._confirmed = 0.0  # time.monotonic() just before the last SET/renewal that succeeded

    def acquire(self) -> bool:
        """Take the lease if nobody holds it; start the heartbeat. False when held by another run."""
        sent = time.monotonic()
        if not self._redis.set(self.key, self.token, nx=True, px=self._ttl_ms):
            return False
        self._confirmed = sent
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat-{self.key}", daemon=True)
        self._thread.start()
        return True

    def _beat(self) -> None:
        while not self._stop.wait(self._heartbeat_s):
            try:
                renewed = self.renew()
            except redis.RedisError as exc:
                # Redis briefly unreachable: keep trying until the TTL would have run out, then
                # give up — past that point the lease may belong to a newer run.
                if self.expired():
                    self._lost.set()
                    log.warning("lease_lost", key=self.key, reason="redis_unreachable", error=type(exc).__name__)
                    return
                continue
            if not renewed:
                self._lost.set()
                log.warning("lease_lost", key=self.key, holder_changed=self._redis.exists(self.key) == 1)
                return

    def renew(self) -> bool:
        """Extend the lease by its TTL if it is still ours (compare-and-PEXPIRE)."""
        sent = time.monotonic()
        renewed = bool(self._redis.eval(_RENEW, 1, self.key, self.token, self._ttl_ms))
        if renewed:
            self._confirmed = sent
        return renewed

    def expired(self) -> bool:
        """Whether a whole TTL has passed since the last confirmed SET or renewal (seconds, monotonic)."""
        return time.monotonic() - self._confirmed >= self._ttl_ms / 1000

    def check(self) -> None:
        """Raise LeaseLost if a heartbeat found the lease expired or taken, or no renewal succeeded for a TTL."""
        if self._lost.is_set() or self.expired():
            self._lost.set()
            raise LeaseLost(f"lease {self.key} is no longer ours")

    def release(self) -> bool:
        """Stop the heartbeat and delete the lease if still ours (compare-and-DEL). True if deleted."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1)
        return bool(self._redis.eval(COMPARE_AND_DELETE, 1, self.key, self.token))

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.release()


# KEYS[1] = key, ARGV[1] = owner prefix ("name/"): delete only a lease held in that worker's name.
_DELETE_OWNED = """
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, string.len(ARGV[1])) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
"""


def release_owned(client: redis.Redis, key: str, owner: str) -> bool:
    """Delete the lease at ``key`` if a run of worker ``owner`` holds it (that process is dead). True if deleted."""
    return bool(client.eval(_DELETE_OWNED, 1, key, f"{owner}/"))


def is_held(client: redis.Redis, session_id: uuid.UUID | str) -> bool:
    """Whether some run holds the session's lease right now."""
    return bool(client.exists(keys.lease(session_id)))
