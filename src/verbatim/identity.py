"""A worker's stable identity, and fast recovery of its runs (of every kind) when it restarts.

A worker is named by its slot (``verbatim worker --name capture-1``; the identity is
``capture-1@<host>`` unless the name already carries ``@``): ``up``, compose and the k8s
StatefulSet give every worker a stable one. The name is held under a Redis lease of its own
(``keys.worker``) whose value says which process holds it (``host:pid:start time``):

- a live process elsewhere (or here) holding the name → this one refuses to start
  (``WorkerNameTaken``): two live processes never share a name, so never each other's runs;
- the holder is a dead process on this host (a supervisor restart: same host, the pid gone or
  reused by a process started later) → this one takes the name over at once.

Then ``recover`` releases the run leases still held in this name — that process is dead —
and makes those runs due now and queues them — capture and note runs alike (the durable-run
core records the holder of every counted run) — so a restart recovers in seconds instead of a
lease TTL. Each counted run records its worker (``durable_runs.holder``) and its lease token
starts with the name (``Lease(owner=…)``).

Why our own code: the takeover rule is Verbatim's (no library decides when a Redis-held
name belongs to a dead process); it is a SET NX plus two compare-and-set scripts.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from collections.abc import Callable

import psutil
import redis
import structlog

from verbatim import keys
from verbatim.durable.store import RunStore
from verbatim.errors import VerbatimError
from verbatim.leases import COMPARE_AND_DELETE, release_owned

log = structlog.get_logger("verbatim.identity")

# KEYS[1] = name key, ARGV[1] = expected value, ARGV[2] = new value, ARGV[3] = ttl ms: replace only the expected holder.
_TAKE_OVER = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
return false
"""
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""


class WorkerNameTaken(VerbatimError):
    """Another live process holds this worker name: the worker refuses to start."""


def identity(name: str) -> str:
    """The worker's identity: ``name@host`` (host + slot), or ``name`` when it already names its host."""
    return name if "@" in name else f"{name}@{socket.gethostname()}"


def default_name() -> str:
    """A unique name for a worker started without one (no fast recovery: nobody restarts as it)."""
    return f"capture-{uuid.uuid4().hex[:8]}@{socket.gethostname()}"


def _this_process() -> str:
    me = psutil.Process(os.getpid())
    return f"{socket.gethostname()}:{me.pid}:{me.create_time():.3f}"


def _holder_dead(value: str) -> bool:
    """Whether the holder ``host:pid:start`` is a process of this host that no longer runs."""
    host, _, rest = value.partition(":")
    pid_s, _, started = rest.partition(":")
    if host != socket.gethostname():
        return False  # another host's process: we cannot tell, so it is alive until its lease expires
    try:
        proc = psutil.Process(int(pid_s))
        if proc.status() == psutil.STATUS_ZOMBIE:
            return True  # killed, not yet reaped by its parent
        return f"{proc.create_time():.3f}" != started  # the pid reused by a later process: the holder is gone
    except (psutil.NoSuchProcess, ValueError):
        return True


class WorkerIdentity:
    """``claim()`` the name (or raise WorkerNameTaken); a daemon thread renews it until ``release()``."""

    def __init__(self, client: redis.Redis, name: str, ttl_s: float):
        self.redis = client
        self.name = name
        self.key = keys.worker(name)
        self.value = _this_process()
        self.ttl_ms = int(ttl_s * 1000)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def claim(self) -> None:
        if not self.redis.set(self.key, self.value, nx=True, px=self.ttl_ms):
            held = self.redis.get(self.key)
            held_s = held.decode() if isinstance(held, bytes) else str(held)
            if held is None or not _holder_dead(held_s) or not self.redis.eval(
                    _TAKE_OVER, 1, self.key, held_s, self.value, self.ttl_ms):
                raise WorkerNameTaken(f"worker name {self.name!r} is held by a live process ({held_s}); "
                                      "give each worker its own --name (host + slot)")
            log.info("worker_name_taken_over", worker=self.name, previous=held_s)
        self._thread = threading.Thread(target=self._beat, name=f"identity-{self.name}", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.ttl_ms / 3000):
            try:
                if not self.redis.eval(_RENEW, 1, self.key, self.value, self.ttl_ms) and \
                        not self.redis.set(self.key, self.value, nx=True, px=self.ttl_ms):
                    log.error("worker_identity_lost", worker=self.name)  # another process took the name
            except redis.RedisError as exc:
                log.warning("worker_identity_renew_failed", worker=self.name, error=type(exc).__name__)

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1)
        try:
            self.redis.eval(COMPARE_AND_DELETE, 1, self.key, self.value)
        except redis.RedisError as exc:
            log.warning("worker_identity_release_failed", worker=self.name, error=type(exc).__name__)  # expires


def recover(store: RunStore, client: redis.Redis, name: str,
            lease_key: Callable[[uuid.UUID], str] = keys.lease) -> list[uuid.UUID]:
    """Runs counted in this worker's name (its previous process is dead): release their leases, due now.

    Returns their subject ids (the caller queues them; the sweep would within a tick anyway).
    Call only while holding the name (``WorkerIdentity.claim``).
    """
    subjects = store.release_holder(name)
    for sid in subjects:
        release_owned(client, lease_key(sid), name)
    if subjects:
        log.info("worker_runs_recovered", worker=name, runs=len(subjects))
    return subjects
