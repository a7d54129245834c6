"""Worker identity (fakeredis): a live holder refuses a second process; a dead holder on this host is taken
over; a run lease is released only when its token carries the worker's name."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import fakeredis
import psutil
import pytest

from verbatim import keys
from verbatim.identity import WorkerIdentity, WorkerNameTaken, identity
from verbatim.leases import Lease, release_owned


def test_identity_is_name_at_host_unless_the_name_has_a_host() -> None:
    assert identity("capture-1") == f"capture-1@{socket.gethostname()}"
    assert identity("capture-0@pod-7") == "capture-0@pod-7"


def test_a_live_holder_refuses_a_second_claim() -> None:
    r = fakeredis.FakeRedis()
    first = WorkerIdentity(r, "capture-1@h", 15)
    first.claim()
    with pytest.raises(WorkerNameTaken):
        WorkerIdentity(r, "capture-1@h", 15).claim()  # this very process holds it: alive
    first.release()
    WorkerIdentity(r, "capture-1@h", 15).claim()  # released: free again


def test_a_dead_holder_on_this_host_is_taken_over() -> None:
    r = fakeredis.FakeRedis()
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = psutil.Process(child.pid).create_time()
    child.wait()  # reaped: the pid no longer runs
    r.set(keys.worker("capture-1@h"), f"{socket.gethostname()}:{child.pid}:{started:.3f}", px=15000)
    WorkerIdentity(r, "capture-1@h", 15).claim()
    assert r.get(keys.worker("capture-1@h")).decode().split(":")[1] == str(os.getpid())


def test_a_holder_on_another_host_is_never_taken_over() -> None:
    r = fakeredis.FakeRedis()
    r.set(keys.worker("capture-1@h"), "elsewhere:1:1.000", px=15000)
    with pytest.raises(WorkerNameTaken):
        WorkerIdentity(r, "capture-1@h", 15).claim()


def test_release_owned_deletes_only_the_named_workers_lease() -> None:
    r = fakeredis.FakeRedis()
    mine = Lease(r, "s1", 60, 15, owner="capture-1@h")
    theirs = Lease(r, "s2", 60, 15, owner="capture-10@h")  # a name with the same prefix
    assert mine.acquire() and theirs.acquire()
    assert not release_owned(r, keys.lease("s2"), "capture-1@h")
    assert release_owned(r, keys.lease("s1"), "capture-1@h")
    assert not r.exists(keys.lease("s1")) and r.exists(keys.lease("s2"))
    mine.release()
    theirs.release()
