"""The partition drill with test timings: parts on separate hosts (network namespaces), cut mid-run.

Three partitions while six sessions are in flight: a worker host cut from Redis, then from
PostgreSQL, then the API host (with the sweeper) from both. Nothing is lost, no write of a replaced
run commits, and a run cut off from Redis is taken over by another worker — never before its lease
has expired. How soon after is the bench's figure (bench/partition.py), not asserted here.
"""

from __future__ import annotations

import os
import shutil

import pytest

from bench.partition import QUICK, drill

pytestmark = [
    pytest.mark.faults,
    pytest.mark.xdist_group("netns"),  # the drill's namespaces and addresses are fixed names
    pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                       reason="needs root and iproute2 to make network namespaces"),
    pytest.mark.timeout(1800),
]


def test_three_partitions_lose_nothing_and_commit_no_stale_write() -> None:
    # w1 holds 2 runs, w2 (4 workers) takes the other 2: two workers free to take over, so a
    # takeover waits for the lease only.
    with drill(QUICK, sessions=4, workers_per_host=2) as d:
        result = d.run()
    assert result["partitions"] == 3 and result["sessions"] == 12
    assert result["sessions_lost"] == 0
    assert result["stale_writes"] == 0
    # The Redis cut left a run without renewals past its lease: another worker took it over…
    assert result["takeovers"] >= 1
    # …and not before the lease expired (the watcher hears of renewals a little late under load).
    assert result["recovery_over_lease_min"] >= 1 - 0.25 / QUICK.lease_ttl_s
