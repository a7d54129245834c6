"""A paused worker past its lease (the zombie), and sessions that keep killing their workers."""

from __future__ import annotations

import signal
import time
import uuid
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.conftest import SAMPLES, AsrServer, make_settings
from tests.factories import new_session
from tests.faults.conftest import Cluster
from verbatim.db.engine import db_session
from verbatim.db.models import Session, SessionEvent
from verbatim.embedded import EmbeddedRedis

CLIP = SAMPLES / "nada_lily_02_haggard_0216.wav"


def transcript_texts(cluster: Cluster, sid: uuid.UUID) -> list[str]:
    """The published turns' texts (one voice in an individual session is unassigned, so the
    client's record shows only placeholders: the words are read from the published turns)."""
    with db_session(cluster.repo.url) as db:
        session = db.get(Session, sid)
        return [t["text"] for t in (session.published_turns or [])] if session is not None else []


@pytest.mark.faults
@pytest.mark.parametrize("flush_redis", [False, True], ids=["lease-expired", "redis-flushed"])
def test_zombie_writes_nothing_after_a_newer_run_finished(
    flush_redis: bool, database_url: str, private_redis: EmbeddedRedis, asr: AsrServer, data_dir: Path
) -> None:
    settings = make_settings(database_url, private_redis.url, asr, data_dir)
    (data_dir / "logs").mkdir()
    cluster = Cluster(settings, data_dir / "logs")
    try:
        asr.fault("hold", hold=True)  # the first run waits on the vendor, where we pause it
        zombie = cluster.worker()
        sid = new_session(settings, CLIP)
        cluster.queue.enqueue(sid)
        cluster.wait_for(lambda: cluster.view(sid).vendor_job_id is not None, 60, "the first run to submit")
        zombie.signal(signal.SIGSTOP)
        if flush_redis:
            cluster.redis.flushall()
        time.sleep(settings.lease_ttl_s + 1)  # past the lease TTL
        cluster.worker()
        cluster.sweeper()
        cluster.wait_for(lambda: cluster.view(sid).runs == 2, 60, "a newer run to take over")
        asr.fault("hold", hold=False)
        assert cluster.wait_status(sid, {"ready", "failed"}) == "ready"
        before = transcript_texts(cluster, sid)
        row = cluster.view(sid)
        zombie.signal(signal.SIGCONT)
        time.sleep(settings.heartbeat_s * 3 + 2)  # let the zombie wake, poll and try to write
        after = cluster.view(sid)
        assert (after.status, after.fence, after.runs, after.polished) == ("ready", row.fence, 2, True)
        assert after.raw_turns == row.raw_turns
        assert transcript_texts(cluster, sid) == before
        assert asr.submissions().get(str(sid)) == 1
        with db_session(cluster.repo.url) as db:
            kinds = list(db.execute(select(SessionEvent.kind).where(SessionEvent.session_id == sid)).scalars())
        assert kinds == ["transcript_ready"]
    finally:
        asr.fault("hold", hold=False)
        cluster.stop()


def keep_one_worker(cluster: Cluster, sid: uuid.UUID, done: set[str], timeout_s: float, **env: object) -> int:
    """Restart the worker whenever it dies until the session reaches ``done``; returns the kills seen."""
    kills = 0
    worker = cluster.worker(**env)
    deadline = time.monotonic() + timeout_s
    while cluster.status(sid) not in done:
        assert time.monotonic() < deadline, f"session stuck in {cluster.status(sid)} after {kills} kills"
        if not worker.alive():
            kills += 1
            worker = cluster.worker(**env)
        time.sleep(0.2)
    return kills


@pytest.mark.faults
def test_session_killed_five_times_is_interrupted_and_everything_deleted(
    database_url: str, redis_url: str, asr: AsrServer, data_dir: Path
) -> None:
    settings = make_settings(database_url, redis_url, asr, data_dir, crash_point="mid_poll")
    (data_dir / "logs").mkdir()
    cluster = Cluster(settings, data_dir / "logs")
    try:
        asr.fault("hold", hold=True)  # keeps every run polling, where the crash hook fires
        cluster.sweeper()
        sid = new_session(settings, CLIP)
        cluster.queue.enqueue(sid)
        kills = keep_one_worker(cluster, sid, {"failed", "ready"}, 150)
        row = cluster.view(sid)
        assert (row.status, row.failure_code, row.runs, kills) == ("failed", "interrupted", 6, 5)
        assert row.raw_turns is None and row.vendor_job_id is None and row.audio_path is None
        cluster.wait_for(  # the clean-up queued with the failure, tried at once or by the sweep process
            lambda: not settings.audio_dir.joinpath(f"{sid}.audio").exists()
            and all(j.get("tracking", {}).get("reference") != str(sid) for j in asr.jobs()),
            30, "the audio and every vendor job of the session to be deleted")
        with db_session(cluster.repo.url) as db:
            events = list(db.execute(select(SessionEvent).where(SessionEvent.session_id == sid)).scalars())
        assert [(e.kind, e.failure_code) for e in events] == [("session_failed", "interrupted")]
    finally:
        asr.fault("hold", hold=False)
        cluster.stop()


@pytest.mark.faults
def test_killed_three_times_in_polish_publishes_unpolished(
    database_url: str, redis_url: str, asr: AsrServer, data_dir: Path
) -> None:
    settings = make_settings(database_url, redis_url, asr, data_dir, crash_point="mid_polish")
    (data_dir / "logs").mkdir()
    cluster = Cluster(settings, data_dir / "logs")
    try:
        cluster.sweeper()
        sid = new_session(settings, CLIP)
        cluster.queue.enqueue(sid)
        kills = keep_one_worker(cluster, sid, {"failed", "ready"}, 120)
        row = cluster.view(sid)
        assert (row.status, row.runs, row.polished, kills) == ("ready", 4, False, 3)
        heard = [t["text"] for t in row.raw_turns or []]
        assert transcript_texts(cluster, sid) == heard
    finally:
        cluster.stop()
