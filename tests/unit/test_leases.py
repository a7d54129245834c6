"""The lease fails closed: once no renewal has succeeded for a whole TTL, the run stops (fakeredis)."""

from __future__ import annotations

import time

import fakeredis
import pytest
import redis

from verbatim.errors import LeaseLost
from verbatim.leases import Lease


class Unreachable(fakeredis.FakeRedis):
    """A Redis that answers SET but whose every later call fails, as if the network were cut."""

    cut = False

    def eval(self, *args: object, **kwargs: object) -> object:  # type: ignore[override]
        if self.cut:
            raise redis.ConnectionError("network cut")
        return super().eval(*args, **kwargs)


def test_heartbeat_gives_up_once_the_ttl_would_have_run_out() -> None:
    client = Unreachable()
    lease = Lease(client, "s1", ttl_s=0.6, heartbeat_s=0.1)
    assert lease.acquire()
    lease.check()  # fine while renewals succeed
    client.cut = True
    time.sleep(0.3)
    lease.check()  # still inside the TTL: keep going
    deadline = time.monotonic() + 10
    with pytest.raises(LeaseLost):
        while time.monotonic() < deadline:
            lease.check()
            time.sleep(0.05)
    lease._stop.set()  # noqa: SLF001 - stop the heartbeat without a release on a dead connection


def test_a_live_lease_keeps_passing_its_check() -> None:
    client = fakeredis.FakeRedis()
    lease = Lease(client, "s2", ttl_s=0.6, heartbeat_s=0.1)
    assert lease.acquire()
    time.sleep(1.0)  # several TTLs, renewed by the heartbeat
    lease.check()
    assert lease.release()
