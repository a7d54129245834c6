"""Capacity with real processes: parked sessions hold no worker and survive kills and deploys;
a worker's name is its own; a restarted worker recovers its run without waiting out the lease."""

from __future__ import annotations

import signal
import uuid
from pathlib import Path

import pytest
from sqlalchemy import text

from tests.conftest import SAMPLES, AsrServer, make_settings
from tests.factories import new_session
from tests.faults.conftest import Cluster, Proc
from verbatim import keys
from verbatim.db.engine import db_session

CLIPS = sorted(p for p in SAMPLES.glob("*_0*.wav"))


def named_worker(cluster: Cluster, name: str, **extra: object) -> Proc:
    proc = Proc(f"worker-{name}-{len(cluster.procs)}", ["worker", "--name", name], cluster.env(**extra),
                cluster.log_dir / f"{name}-{len(cluster.procs)}.log")
    cluster.procs.append(proc)
    return proc


def parked(cluster: Cluster, ids: list[uuid.UUID]) -> int:
    with db_session(cluster.repo.url) as db:
        return int(db.execute(text("SELECT count(*) FROM durable_runs WHERE subject_id = ANY(:ids) "
                                   "AND parked_at IS NOT NULL"), {"ids": ids}).scalar_one())


def runs(cluster: Cluster, sid: uuid.UUID) -> int:
    return cluster.repo.runs.count_of(sid)


@pytest.mark.faults
def test_parked_sessions_survive_a_worker_kill_and_a_deploy(database_url: str, redis_url: str, asr: AsrServer,
                                                            data_dir: Path) -> None:
    settings = make_settings(database_url, redis_url, asr, data_dir, recognizer_park_after_s=0.0,
                             recognizer_park_s=1.0, recognizer_park_max_s=2.0)
    (data_dir / "logs").mkdir()
    cluster = Cluster(settings, data_dir / "logs")
    try:
        asr.fault("hold")  # every job stays running: the sessions park and stay parked
        first, second = cluster.worker(), cluster.worker()
        cluster.sweeper()
        ids = []
        for i in range(6):
            sid = new_session(settings, CLIPS[i % len(CLIPS)])
            cluster.queue.enqueue(sid)
            ids.append(sid)
        # Two worker processes hold six sessions at once: none of them holds a worker.
        cluster.wait_for(lambda: parked(cluster, ids) == len(ids), 120, "every session parked")
        first.signal(signal.SIGKILL)
        second.signal(signal.SIGTERM)  # a deploy: nothing is mid-stage, so it exits at once
        assert second.wait(settings.shutdown_window_s) is not None
        cluster.redis.flushdb()  # and Redis lost too
        cluster.worker()
        asr.fault("hold", hold=False)
        cluster.wait_for(lambda: all(cluster.status(s) in ("ready", "failed") for s in ids), 180,
                         "every parked session to finish")
        assert {cluster.status(s) for s in ids} == {"ready"}
        assert [runs(cluster, s) for s in ids] == [1] * len(ids)  # parking spent no runs
    finally:
        cluster.stop()


@pytest.mark.faults
def test_a_worker_name_held_by_a_live_process_refuses_to_start(cluster: Cluster) -> None:
    first = named_worker(cluster, "capture-1")
    cluster.wait_for(lambda: bool(cluster.redis.exists(keys.worker(f"capture-1@{_host()}"))), 60,
                     "the first worker to hold its name")
    second = named_worker(cluster, "capture-1")
    assert second.wait(120) == 2
    assert "held by a live process" in second.log.read_text()
    assert first.alive()


@pytest.mark.faults
def test_a_restarted_worker_recovers_its_run_before_the_lease_would_expire(
    database_url: str, redis_url: str, asr: AsrServer, data_dir: Path
) -> None:
    # A long lease: without the recovery, the killed run's session would wait 60 s for it.
    settings = make_settings(database_url, redis_url, asr, data_dir, lease_ttl_s=60.0, heartbeat_s=5.0,
                             sweep_tick_s=0.5)
    (data_dir / "logs").mkdir()
    cluster = Cluster(settings, data_dir / "logs")
    try:
        asr.fault("hold")  # the run waits in its worker (park_after 60 s under test): mid-stage
        worker = named_worker(cluster, "capture-1")
        cluster.sweeper()
        sid = new_session(settings, CLIPS[0])
        cluster.queue.enqueue(sid)
        # A deadline for a worker starting on a loaded machine, not a measurement.
        cluster.wait_for(lambda: cluster.status(sid) == "recognizing" and runs(cluster, sid) == 1, 180,
                         "the run to be mid-stage")
        assert cluster.redis.exists(keys.lease(sid))
        worker.signal(signal.SIGKILL)
        named_worker(cluster, "capture-1")  # its supervisor restarts it at once
        # Strictly before the killed run's lease (60 s) would have expired: only the recovery can do it.
        cluster.wait_for(lambda: runs(cluster, sid) == 2, settings.lease_ttl_s * 0.75, "the run to start again")
        asr.fault("hold", hold=False)
        assert cluster.wait_status(sid, {"ready", "failed"}, 120) == "ready"
    finally:
        cluster.stop()


def _host() -> str:
    import socket

    return socket.gethostname()
