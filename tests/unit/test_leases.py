"""The lease fails closed: once no renewal has succeeded for a whole TTL, the run stops (fakeredis).

Time is a fake monotonic clock: these tests do not depend on how fast the machine is.
"""

from __future__ import annotations

import time

import fakeredis
import pytest
import redis

import verbatim.leases
from verbatim.errors import LeaseLost
from verbatim.leases import Lease


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Unreachable(fakeredis.FakeRedis):
    """A Redis that answers SET but whose every later call fails, as if the network were cut."""

    cut = False

    def eval(self, *args: object, **kwargs: object) -> object:  # type: ignore[override]
        if self.cut:
            raise redis.ConnectionError("network cut")
        return super().eval(*args, **kwargs)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(verbatim.leases.time, "monotonic", fake)
    return fake


def test_check_fails_closed_once_a_ttl_passed_without_a_renewal(clock: Clock) -> None:
    client = Unreachable()
    lease = Lease(client, "s1", ttl_s=60, heartbeat_s=3600)  # no heartbeat during the test
    assert lease.acquire()
    clock.now += 59
    assert lease.renew()
    client.cut = True
    clock.now += 59.9
    lease.check()  # cut off, but inside the TTL of the last renewal: keep going
    clock.now += 0.2
    with pytest.raises(LeaseLost):
        lease.check()  # the lease may have expired in Redis and been taken: stop
    lease._stop.set()  # noqa: SLF001


def test_the_heartbeat_gives_up_on_redis_errors_after_the_ttl(clock: Clock) -> None:
    client = Unreachable()
    lease = Lease(client, "s2", ttl_s=60, heartbeat_s=0.01)
    assert lease.acquire()
    client.cut = True
    clock.now += 61  # the heartbeat keeps failing past the TTL
    deadline = time.time() + 30  # real time, only as a deadline for the thread to notice
    while not lease._lost.is_set():  # noqa: SLF001
        assert time.time() < deadline, "the heartbeat never gave up"
        time.sleep(0.01)
    with pytest.raises(LeaseLost):
        lease.check()
    lease._stop.set()  # noqa: SLF001


def test_a_renewed_lease_keeps_passing_its_check(clock: Clock) -> None:
    client = fakeredis.FakeRedis()
    lease = Lease(client, "s3", ttl_s=60, heartbeat_s=3600)
    assert lease.acquire()
    for _ in range(5):  # five TTLs, each renewed in time
        clock.now += 50
        assert lease.renew()
        lease.check()
    assert lease.release()
