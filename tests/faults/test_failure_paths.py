"""Failure paths with real processes: a deploy during a slow recognizer call, sweeps while every
worker is busy, recovery bounded by the lease in every kill."""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.conftest import SAMPLES, AsrServer, make_settings
from tests.factories import force_due, new_session
from tests.faults.conftest import Cluster
from verbatim import keys
from verbatim.db.engine import db_session
from verbatim.db.models import SessionEvent

CLIP = SAMPLES / "nada_lily_02_haggard_0216.wav"


@pytest.mark.faults
def test_sigterm_during_a_slow_recognizer_call_cancels_and_refunds_the_run(
    database_url: str, redis_url: str, asr: AsrServer, data_dir: Path
) -> None:
    """A status call slower than the whole drain window: the run still reaches its teardown before
    the orchestrator's SIGKILL — cancelled and refunded, not counted."""
    settings = make_settings(database_url, redis_url, asr, data_dir, recognizer_request_timeout_s=60.0,
                             drain_s=2.0)
    (data_dir / "logs").mkdir()
    cluster = Cluster(settings, data_dir / "logs")
    try:
        asr.fault("fail", kind="status", mode="timeout", count=100, delay_s=45.0)
        worker = cluster.worker()
        sid = new_session(settings, CLIP)
        cluster.queue.enqueue(sid)
        cluster.wait_for(lambda: cluster.view(sid).vendor_job_id is not None, 60, "the run to submit")
        time.sleep(0.5)  # inside the slow status call now
        worker.signal(signal.SIGTERM)
        # drain (2 s) + teardown budget (5 s) + margin: far less than the 45 s call
        assert worker.wait(settings.drain_s + settings.teardown_budget_s + 15) is not None, "worker did not exit"
        row = cluster.view(sid)
        assert (row.runs, row.status) == (0, "recognizing")
        with db_session(cluster.repo.url) as db:
            kinds = list(db.execute(select(SessionEvent.kind).where(SessionEvent.session_id == sid)).scalars())
        assert kinds == ["run_cancelled"]
    finally:
        asr.fault("reset")
        cluster.stop()


@pytest.mark.faults
def test_sweeps_run_while_every_worker_is_busy(
    database_url: str, redis_url: str, asr: AsrServer, data_dir: Path
) -> None:
    settings = make_settings(database_url, redis_url, asr, data_dir, orphan_audio_grace_s=1.0)
    (data_dir / "logs").mkdir()
    cluster = Cluster(settings, data_dir / "logs")
    try:
        asr.fault("hold", hold=True)  # the only worker polls a job that does not finish
        cluster.worker()
        busy = new_session(settings, CLIP)
        cluster.queue.enqueue(busy)
        cluster.wait_for(lambda: cluster.view(busy).vendor_job_id is not None, 60, "the worker to be busy")
        # A session whose run died (its lease runs out in 1 s) and a recording nobody owns.
        dead = new_session(settings, CLIP)
        cluster.redis.set(keys.lease(dead), "dead-run", px=1000)
        force_due(cluster.repo.url, dead)
        stray = settings.audio_dir / f"{uuid.uuid4()}.audio"
        stray.write_bytes(b"x")
        os.utime(stray, (time.time() - 10, time.time() - 10))
        cluster.sweeper()
        cluster.wait_for(lambda: not stray.exists(), 30, "the orphan recording to be deleted")
        cluster.wait_for(lambda: cluster.redis.llen(keys.CAPTURE_QUEUE) >= 1, 30,
                         "the dead run's session to be re-queued at its lease's expiry")
        assert cluster.status(busy) == "recognizing"  # the worker was busy the whole time
    finally:
        asr.fault("hold", hold=False)
        cluster.stop()
