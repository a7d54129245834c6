"""Real ``verbatim analysis-worker`` processes, on a Redis of the test's own: SIGKILL while one
holds a message, SIGTERM with a clean drain, SIGTERM past the drain window."""

from __future__ import annotations

import signal
import time
import uuid

import pytest
import redis

from tests.reliability.conftest import (
    WorkerProcess,
    all_logs,
    analysis_row,
    publish_session,
    suggestions_of,
    wait_for,
)
from verbatim.embedded import EmbeddedRedis
from verbatim.reliability.settings import ReliabilitySettings
from verbatim.reliability.streams import Streams, lock_key, read_progress
from verbatim.reliability.sweep import emit_requested

pytestmark = pytest.mark.faults


def done(url: str, sid: uuid.UUID) -> bool:
    row = analysis_row(url, sid)
    return row is not None and row.completed_at is not None


def running_on(client: redis.Redis, sid: uuid.UUID, proc: WorkerProcess) -> bool:
    progress = read_progress(client, sid)
    return progress.get("status") == "running" and progress.get("consumer") == proc.name


@pytest.fixture
def rc(private_redis: EmbeddedRedis):  # type: ignore[no-untyped-def]
    client = redis.Redis.from_url(private_redis.url)
    yield client
    client.close()


def test_consumer_killed_mid_message_its_message_is_claimed_and_finished_by_another(
    database_url: str, private_redis: EmbeddedRedis, rc: redis.Redis, rsettings: ReliabilitySettings,
    worker_procs,  # type: ignore[no-untyped-def]
) -> None:
    sid = publish_session(database_url)
    # The holder keeps the message (and its lock, which outlives it by lock_ttl_seconds) for a minute.
    holder = worker_procs(private_redis.url, test_delay_s=60)
    logs = all_logs([holder])
    assert emit_requested(rc, sid, None, database_url=database_url, settings=rsettings)
    wait_for(lambda: running_on(rc, sid, holder) and analysis_row(database_url, sid).attempts == 1,  # type: ignore[union-attr]
             20, "the first worker holding the message", logs)
    holder.signal(signal.SIGKILL)
    assert holder.wait(10) == -signal.SIGKILL
    assert Streams(rc, rsettings).pending_count(holder.name) == 1
    lock_expires_at = time.time() + rc.pttl(lock_key(sid)) / 1000

    rescuer = worker_procs(private_redis.url)
    logs = all_logs([holder, rescuer])
    # The row commits first, the progress hash is written right after: wait for both.
    wait_for(lambda: done(database_url, sid) and read_progress(rc, sid).get("status") == "done", 30,
             "the claimed message finished", logs)
    progress = read_progress(rc, sid)
    assert progress["consumer"] == rescuer.name
    # Claimed after the idle time; analysed only once the dead worker's lock had expired
    # (deferred meanwhile, if the rescuer got there first).
    assert '"event": "analysis_message_claimed"' in rescuer.text()
    assert float(progress["finished_at"]) >= lock_expires_at
    wait_for(lambda: Streams(rc, rsettings).pending_count() == 0, 10, "nothing pending", logs)
    assert len(suggestions_of(database_url, sid)) == 8
    row = analysis_row(database_url, sid)
    assert row is not None and row.attempts == 2


def test_sigterm_drains_work_in_progress_then_exits_cleanly(
    database_url: str, private_redis: EmbeddedRedis, rc: redis.Redis, rsettings: ReliabilitySettings,
    worker_procs,  # type: ignore[no-untyped-def]
) -> None:
    sid = publish_session(database_url)
    proc = worker_procs(private_redis.url, test_delay_s=1.5, shutdown_drain_s=15)
    logs = all_logs([proc])
    assert emit_requested(rc, sid, None, database_url=database_url, settings=rsettings)
    wait_for(lambda: running_on(rc, sid, proc), 20, "the worker analysing", logs)
    proc.signal(signal.SIGTERM)
    started = time.monotonic()
    assert proc.wait(15) == 0, logs()
    assert time.monotonic() - started < 10
    assert done(database_url, sid)
    streams = Streams(rc, rsettings)
    assert streams.pending_count() == 0 and not rc.exists(lock_key(sid))
    consumers = rc.xinfo_consumers(rsettings.stream_key, rsettings.consumer_group)
    assert proc.name.encode() not in [c["name"] for c in consumers]  # a clean stop leaves no dead consumer
    assert '"clean": true' in proc.text()


def test_sigterm_past_the_drain_window_cancels_and_leaves_the_message_for_another_consumer(
    database_url: str, private_redis: EmbeddedRedis, rc: redis.Redis, rsettings: ReliabilitySettings,
    worker_procs,  # type: ignore[no-untyped-def]
) -> None:
    sid = publish_session(database_url)
    # A retry scheduled for later must survive the stop, in Redis, for the next worker.
    rc.xadd(rsettings.retry_stream_key, {"event_type": "reliability.analysis.requested",
                                          "transcript_id": str(uuid.uuid4()), "not_before_ts": str(time.time() + 3600)})
    proc = worker_procs(private_redis.url, test_delay_s=60, shutdown_drain_s=1.0)
    logs = all_logs([proc])
    assert emit_requested(rc, sid, None, database_url=database_url, settings=rsettings)
    wait_for(lambda: running_on(rc, sid, proc), 20, "the worker analysing", logs)
    proc.signal(signal.SIGTERM)
    started = time.monotonic()
    assert proc.wait(15) == 1, logs()
    assert time.monotonic() - started < 8
    text = proc.text()
    assert '"event": "analysis_drain_timeout"' in text and '"event": "analysis_interrupted"' in text
    assert not done(database_url, sid)
    # Interrupted analyses write nothing, release their lock, and stay pending for a claim.
    assert not rc.exists(lock_key(sid))
    assert Streams(rc, rsettings).pending_count(proc.name) == 1
    assert rc.xlen(rsettings.retry_stream_key) == 1
    assert read_progress(rc, sid)["status"] == "interrupted"

    successor = worker_procs(private_redis.url)
    wait_for(lambda: done(database_url, sid), 20, "the interrupted message finished", all_logs([proc, successor]))
    assert read_progress(rc, sid)["consumer"] == successor.name
