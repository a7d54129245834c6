"""Deploys and server faults with real processes: rolling restarts, Redis flushed or restarted,
PostgreSQL restarted, two sweep processes, a teardown slower than its budget."""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.conftest import SAMPLES, STEADY, AsrServer, make_settings
from tests.factories import new_session
from tests.faults.conftest import Cluster
from verbatim.db.engine import db_session
from verbatim.db.migrate import upgrade
from verbatim.db.models import SessionEvent
from verbatim.embedded import EmbeddedPostgres, EmbeddedRedis, free_port

CLIPS = sorted(p for p in SAMPLES.glob("*_0*.wav"))  # the six short LibriVox clips


def start_sessions(cluster: Cluster, n: int) -> list[uuid.UUID]:
    ids = []
    for i in range(n):
        sid = new_session(cluster.settings, CLIPS[i % len(CLIPS)])
        cluster.queue.enqueue(sid)
        ids.append(sid)
    return ids


def all_ready(cluster: Cluster, ids: list[uuid.UUID], timeout_s: float) -> None:
    cluster.wait_for(lambda: all(cluster.status(s) in ("ready", "failed") for s in ids), timeout_s,
                     "every session to finish")
    statuses = {s: cluster.status(s) for s in ids}
    assert set(statuses.values()) == {"ready"}, statuses


def events(cluster: Cluster, sid: uuid.UUID) -> list[tuple[str, str | None]]:
    with db_session(cluster.repo.url) as db:
        rows = db.execute(select(SessionEvent).where(SessionEvent.session_id == sid).order_by(SessionEvent.id))
        return [(e.kind, e.failure_code) for e in rows.scalars()]


def rolling_restart(cluster: Cluster, grace_s: float) -> None:
    """SIGTERM each current worker in turn; start its replacement once it has exited."""
    for old in [p for p in cluster.procs if p.name.startswith("worker") and p.alive()]:
        old.signal(signal.SIGTERM)
        assert old.wait(grace_s) is not None, f"{old.name} did not exit within {grace_s} s"
        cluster.worker()


@pytest.mark.faults
def test_rolling_deploy_under_load_loses_nothing(database_url: str, redis_url: str, asr: AsrServer,
                                                 data_dir: Path) -> None:
    settings = make_settings(database_url, redis_url, asr, data_dir)
    (data_dir / "logs").mkdir()
    cluster = Cluster(settings, data_dir / "logs")
    try:
        cluster.worker()
        cluster.worker()
        cluster.sweeper()
        ids = start_sessions(cluster, 20)
        time.sleep(2)
        rolling_restart(cluster, settings.shutdown_window_s)
        all_ready(cluster, ids, 240)
        rows = [cluster.view(s) for s in ids]
        assert [(r.polished, r.runs) for r in rows if not r.polished] == []
    finally:
        cluster.stop()


@pytest.mark.faults
def test_session_cancelled_twice_by_one_deploy_still_publishes_polished(
    database_url: str, redis_url: str, asr: AsrServer, data_dir: Path
) -> None:
    settings = make_settings(database_url, redis_url, asr, data_dir)
    (data_dir / "logs").mkdir()
    cluster = Cluster(settings, data_dir / "logs")
    try:
        asr.fault("hold", hold=True)  # the run waits on the vendor through both drains
        first = cluster.worker()
        sid = start_sessions(cluster, 1)[0]
        cluster.wait_for(lambda: cluster.view(sid).vendor_job_id is not None, 60, "the submit")
        for _ in range(2):
            draining = first
            draining.signal(signal.SIGTERM)
            assert draining.wait(settings.shutdown_window_s) is not None
            first = cluster.worker()
            cluster.wait_for(lambda: cluster.view(sid).fence > len(events(cluster, sid)), 60,
                             "the next run to take the session")
        asr.fault("hold", hold=False)
        assert cluster.wait_status(sid, {"ready", "failed"}) == "ready"
        row = cluster.view(sid)
        assert row.polished is True
        assert [k for k, _ in events(cluster, sid)] == ["run_cancelled", "run_cancelled", "transcript_ready"]
        assert asr.submissions()[str(sid)] == 1
    finally:
        asr.fault("hold", hold=False)
        cluster.stop()


@pytest.mark.faults
@pytest.mark.parametrize("fault", ["flushall", "restart"])
def test_redis_flushed_or_restarted_mid_run(fault: str, database_url: str, private_redis: EmbeddedRedis,
                                            asr: AsrServer, data_dir: Path) -> None:
    settings = make_settings(database_url, private_redis.url, asr, data_dir)
    (data_dir / "logs").mkdir()
    cluster = Cluster(settings, data_dir / "logs")
    try:
        asr.fault("hold", hold=True)
        cluster.worker()
        cluster.worker()
        cluster.sweeper()
        ids = start_sessions(cluster, 6)
        cluster.wait_for(lambda: sum(cluster.repo.get(s).vendor_job_id is not None for s in ids) >= 2, 60,
                         "two runs in flight")
        if fault == "flushall":
            cluster.redis.flushall()
        else:
            private_redis.restart()
        asr.fault("hold", hold=False)
        all_ready(cluster, ids, 180)
        for sid in ids:
            assert asr.submissions()[str(sid)] == 1
    finally:
        asr.fault("hold", hold=False)
        cluster.stop()


@pytest.mark.faults
def test_postgres_restarted_mid_run(redis_url: str, asr: AsrServer, data_dir: Path, scratch: Path) -> None:
    pg = EmbeddedPostgres(scratch / f"pg-{uuid.uuid4().hex[:6]}", free_port(), fast=True)
    pg.start()
    try:
        url = pg.create_database("verbatim")
        upgrade(url)
        settings = make_settings(url, redis_url, asr, data_dir)
        (data_dir / "logs").mkdir()
        cluster = Cluster(settings, data_dir / "logs")
        try:
            cluster.worker()
            cluster.worker()
            cluster.sweeper()
            ids = start_sessions(cluster, 6)
            time.sleep(1.5)
            pg.restart()
            all_ready(cluster, ids, 180)
        finally:
            cluster.stop()
    finally:
        from verbatim.db.engine import dispose_all

        dispose_all()
        pg.stop()


@pytest.mark.faults
def test_two_sweep_processes_do_no_double_work(
    database_url: str, redis_url: str, asr: AsrServer, data_dir: Path
) -> None:
    settings = make_settings(database_url, redis_url, asr, data_dir)
    (data_dir / "logs").mkdir()
    cluster = Cluster(settings, data_dir / "logs")
    try:
        ids = [new_session(settings, CLIPS[i]) for i in range(4)]  # stalled: never enqueued
        cluster.sweeper()
        cluster.sweeper()
        cluster.worker()
        all_ready(cluster, ids, 120)
        time.sleep(3)  # several more ticks from both sweep processes
        for sid in ids:
            assert cluster.view(sid).runs == 1
        for p in cluster.procs:
            text = p.log.read_text(errors="replace")
            assert "Traceback" not in text and '"level": "error"' not in text, p.name
    finally:
        cluster.stop()


@pytest.mark.faults
def test_slow_teardown_exits_inside_the_window_and_the_sweep_recovers(
    database_url: str, private_redis: EmbeddedRedis, asr: AsrServer, data_dir: Path
) -> None:
    # The run must be holding its lease, unparked, when the drain ends, however loaded the machine:
    # STEADY's lease outlives the stall below and its run waits for the vendor in the worker.
    settings = make_settings(database_url, private_redis.url, asr, data_dir, **STEADY, drain_s=1.0,
                             shutdown_window_s=8.0, teardown_budget_s=2.0, teardown_attempt_timeout_s=0.5)
    (data_dir / "logs").mkdir()
    cluster = Cluster(settings, data_dir / "logs")
    try:
        asr.fault("hold", hold=True)
        worker = cluster.worker()
        sid = start_sessions(cluster, 1)[0]
        cluster.wait_for(lambda: cluster.view(sid).vendor_job_id is not None, 120, "the submit")
        worker.signal(signal.SIGTERM)
        # Make the re-queue target (Redis) slower than the teardown budget from the drain on: stopped once
        # the worker says it drains, and kept stopped until its teardown has run out of budget.
        cluster.wait_for(lambda: '"worker_draining"' in worker.log.read_text(errors="replace"), 120, "the drain")
        pid = private_redis._proc.pid  # noqa: SLF001 - test reaches into its own server
        os.kill(pid, signal.SIGSTOP)  # Redis stops answering: every Redis write now hangs
        try:
            cluster.wait_for(lambda: not worker.alive() or '"teardown_write_failed"' in
                             worker.log.read_text(errors="replace"), 120, "the teardown to run out of budget")
        finally:
            os.kill(pid, signal.SIGCONT)
        # It exits by itself (a worker that hung would be SIGKILLed by the orchestrator at the window).
        assert worker.wait(120) is not None
        assert ("run_cancelled", "teardown_persist_timeout") in events(cluster, sid)
        asr.fault("hold", hold=False)
        cluster.sweeper()
        # Restarted in its slot: the lease its teardown could not release is released at once.
        cluster.worker(worker.name)
        assert cluster.wait_status(sid, {"ready", "failed"}, 180) == "ready"
    finally:
        asr.fault("hold", hold=False)
        cluster.stop()
