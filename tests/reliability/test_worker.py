"""The event-driven pipeline in-process: workers on threads over real Redis Streams and PostgreSQL.

Retries with their not_before, dead letters and their re-injection from the admin endpoint,
two consumers on one transcript, a lock released only by its owner, a consumer that died
holding a message, and an event emitted while Redis was down.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence

import redis
from fastapi.testclient import TestClient

from tests.reliability.conftest import (
    RunningWorker,
    analysis_row,
    bearer,
    publish_session,
    session_row,
    suggestions_of,
    wait_for,
)
from verbatim.embedded import EmbeddedRedis
from verbatim.polish.base import Turn
from verbatim.reliability.analysis import analyse
from verbatim.reliability.lock import TranscriptLock
from verbatim.reliability.settings import ReliabilitySettings
from verbatim.reliability.streams import AnalysisEvent, AnalysisTransient, Streams, lock_key, read_progress
from verbatim.reliability.suggestions import SuggestionSpec
from verbatim.reliability.sweep import emit_requested, sweep
from verbatim.telemetry import metrics

StartWorker = Callable[..., RunningWorker]


class Flaky:
    """An analyser that raises ``fails`` times (transient), then analyses; records call times."""

    def __init__(self, fails: int, exc: Exception | None = None, hold_s: float = 0.0):
        self.fails = fails
        self.exc = exc or AnalysisTransient("LLM timeout")
        self.hold_s = hold_s
        self.calls: list[float] = []
        self.lock = threading.Lock()

    def __call__(self, raw: Sequence[Turn], published: Sequence[Turn] | None) -> list[SuggestionSpec]:
        with self.lock:
            self.calls.append(time.monotonic())
            failing = len(self.calls) <= self.fails
        time.sleep(self.hold_s)
        if failing:
            raise self.exc
        return analyse(raw, published)


def emit(url: str, client: redis.Redis, rs: ReliabilitySettings, sid: uuid.UUID) -> None:
    assert emit_requested(client, sid, None, database_url=url, settings=rs)


def done(url: str, sid: uuid.UUID) -> bool:
    row = analysis_row(url, sid)
    return row is not None and row.completed_at is not None


def lock_count(outcome: str) -> float:
    return metrics.lock_acquired.labels(outcome=outcome)._value.get()


def test_published_session_is_analysed_and_acknowledged(
    database_url: str, rclient: redis.Redis, rsettings: ReliabilitySettings, streams: Streams,
    start_worker: StartWorker,
) -> None:
    sid = publish_session(database_url)
    emit(database_url, rclient, rsettings, sid)
    entry = rclient.xrange(rsettings.stream_key)[-1][1]
    event = AnalysisEvent.parse(entry)
    assert (event.transcript_id, event.retry_count, event.metadata) == (sid, 0, {})
    assert event.user_id == session_row(database_url, sid).therapist_id
    assert analysis_row(database_url, sid).emitted_at is not None  # type: ignore[union-attr]
    assert read_progress(rclient, sid)["status"] == "queued"
    start_worker()
    wait_for(lambda: done(database_url, sid), 10, "the analysis")
    wait_for(lambda: read_progress(rclient, sid).get("status") == "done", 5, "progress done")
    assert rclient.ttl(f"reliability_progress:{sid}") > rsettings.progress_ttl_seconds - 10
    assert len(suggestions_of(database_url, sid)) == 8
    assert streams.pending_count() == 0
    assert analysis_row(database_url, sid).attempts == 1  # type: ignore[union-attr]
    assert not rclient.exists(lock_key(sid))


def test_transient_error_is_retried_after_not_before_with_retry_count_carried(
    database_url: str, rclient: redis.Redis, rsettings: ReliabilitySettings, streams: Streams,
    start_worker: StartWorker,
) -> None:
    sid = publish_session(database_url)
    flaky = Flaky(fails=2)
    start_worker(analyser=flaky, retry_backoff_s=0.5, retry_backoff_max_s=1.0)
    emit(database_url, rclient, rsettings, sid)
    wait_for(lambda: rclient.xlen(rsettings.retry_stream_key) == 1, 10, "a scheduled retry")
    entry = AnalysisEvent.parse(rclient.xrange(rsettings.retry_stream_key)[0][1])
    raw = {k.decode(): v.decode() for k, v in rclient.xrange(rsettings.retry_stream_key)[0][1].items()}
    assert entry.retry_count == 1 and entry.transcript_id == sid
    assert float(raw["not_before_ts"]) > time.time() and "LLM timeout" in raw["last_error"]
    wait_for(lambda: done(database_url, sid), 15, "the analysis after two retries")
    assert len(flaky.calls) == 3
    # not_before honoured: 0.5 s, then 1.0 s (doubling, capped at the maximum)
    assert flaky.calls[1] - flaky.calls[0] >= 0.45 and flaky.calls[2] - flaky.calls[1] >= 0.95
    wait_for(lambda: read_progress(rclient, sid).get("status") == "done", 5, "progress done")
    assert read_progress(rclient, sid)["retry_count"] == "2"
    assert analysis_row(database_url, sid).attempts == 3  # type: ignore[union-attr]
    assert rclient.xlen(rsettings.retry_stream_key) == 0  # promoted entries are trimmed away
    assert rclient.xlen(rsettings.dlq_stream_key) == 0 and streams.pending_count() == 0


def test_always_failing_message_is_dead_lettered_then_reprocessed_from_the_admin_endpoint(
    database_url: str, rclient: redis.Redis, rsettings: ReliabilitySettings, streams: Streams,
    start_worker: StartWorker, api: TestClient, admin: str, alice: str,
) -> None:
    sid = publish_session(database_url)
    failing = Flaky(fails=10**6)
    worker = start_worker(analyser=failing, retry_backoff_s=0.1, retry_backoff_max_s=0.2)
    emit(database_url, rclient, rsettings, sid)
    wait_for(lambda: rclient.xlen(rsettings.dlq_stream_key) == 1, 15, "a dead letter")
    assert len(failing.calls) == 1 + rsettings.max_retries
    wait_for(lambda: analysis_row(database_url, sid).dead_lettered_at is not None, 5,  # type: ignore[union-attr]
             "the request marked dead-lettered")
    assert analysis_row(database_url, sid).completed_at is None  # type: ignore[union-attr]
    wait_for(lambda: read_progress(rclient, sid).get("status") == "dead_lettered", 5, "progress dead_lettered")
    worker.stop()

    assert api.get("/v1/reliability/dlq/stats", headers=bearer(alice)).status_code == 403
    stats = api.get("/v1/reliability/dlq/stats", headers=bearer(admin)).json()
    listed = api.get("/v1/reliability/dlq/list", headers=bearer(admin)).json()
    assert stats["count"] == 1 and stats["stream"] == "reliability:events:dlq"
    assert stats["oldest_id"] == stats["newest_id"] == listed["messages"][0]["id"]
    assert listed["count"] == 1
    fields = listed["messages"][0]["fields"]
    assert fields["transcript_id"] == str(sid) and fields["retry_count"] == rsettings.max_retries
    assert fields["event_type"] == "reliability.analysis.requested" and fields["metadata"] == {}
    assert "retries_exhausted" in fields["error"] and "LLM timeout" in fields["error"]
    float(fields["failed_at"])
    # Nothing more happens to a dead letter: the sweep leaves it to the admin.
    assert sweep(rclient, database_url, rsettings).reemitted == []

    bad = api.post("/v1/reliability/dlq/reprocess", headers=bearer(admin), json={})
    assert bad.status_code == 422
    answer = api.post("/v1/reliability/dlq/reprocess", headers=bearer(admin),
                      json={"message_ids": [listed["messages"][0]["id"]]})
    assert answer.json() == {"reprocessed": 1}
    assert rclient.xlen(rsettings.dlq_stream_key) == 0
    again = AnalysisEvent.parse(rclient.xrange(rsettings.stream_key)[-1][1])
    assert (again.transcript_id, again.retry_count) == (sid, 0)
    assert analysis_row(database_url, sid).dead_lettered_at is None  # type: ignore[union-attr]
    start_worker()
    wait_for(lambda: done(database_url, sid), 10, "the re-injected analysis")
    assert len(suggestions_of(database_url, sid)) == 8


def test_permanent_error_and_malformed_event_go_straight_to_the_dead_letters(
    database_url: str, rclient: redis.Redis, rsettings: ReliabilitySettings, streams: Streams,
    start_worker: StartWorker, api: TestClient, admin: str,
) -> None:
    sid = publish_session(database_url)
    broken = Flaky(fails=10**6, exc=KeyError("words"))
    start_worker(analyser=broken)
    emit(database_url, rclient, rsettings, sid)
    rclient.xadd(rsettings.stream_key, {"event_type": "something.else", "transcript_id": "x"})
    wait_for(lambda: rclient.xlen(rsettings.dlq_stream_key) == 2, 10, "two dead letters")
    assert len(broken.calls) == 1
    listed = api.get("/v1/reliability/dlq/list", headers=bearer(admin)).json()["messages"]
    errors = sorted(m["fields"]["error"] for m in listed)
    assert errors[0].startswith("KeyError") and errors[1].startswith("malformed")
    assert api.post("/v1/reliability/dlq/reprocess", headers=bearer(admin), json={"all": True}).json() == {
        "reprocessed": 2}
    wait_for(lambda: rclient.xlen(rsettings.dlq_stream_key) == 2, 10, "both dead again")
    assert streams.pending_count() == 0


def test_two_consumers_on_one_transcript_one_acquires_the_other_is_busy(
    database_url: str, rclient: redis.Redis, rsettings: ReliabilitySettings, streams: Streams,
    start_worker: StartWorker,
) -> None:
    sid = publish_session(database_url)
    slow = Flaky(fails=0, hold_s=1.0)
    busy_before, acquired_before = lock_count("busy"), lock_count("acquired")
    start_worker(analyser=slow, concurrency=1)
    start_worker(analyser=slow, concurrency=1)
    emit(database_url, rclient, rsettings, sid)
    emit(database_url, rclient, rsettings, sid)  # a duplicate event: both consumers get one
    wait_for(lambda: done(database_url, sid), 10, "the analysis")
    wait_for(lambda: streams.pending_count() == 0 and rclient.xlen(rsettings.retry_stream_key) == 0, 10,
             "the deferred duplicate settled")
    assert lock_count("busy") - busy_before >= 1
    assert lock_count("acquired") - acquired_before >= 1
    assert len(slow.calls) == 1  # analysed once; the duplicate found it done
    assert len(suggestions_of(database_url, sid)) == 8


def test_lock_is_released_only_by_its_owner_after_it_expired_and_was_taken(rclient: redis.Redis) -> None:
    tid = uuid.uuid4()
    first = TranscriptLock(rclient, tid, ttl_s=1)
    assert first.acquire()
    assert rclient.ttl(lock_key(tid)) == 1
    assert not TranscriptLock(rclient, tid, ttl_s=1).acquire()
    time.sleep(1.1)  # the first holder was paused past its TTL
    second = TranscriptLock(rclient, tid, ttl_s=30)
    assert second.acquire() and second.token != first.token
    assert first.release() is False  # the late release leaves the new owner's lock alone
    assert rclient.get(lock_key(tid)) == second.token.encode()
    assert second.release() is True and not rclient.exists(lock_key(tid))


def test_message_of_a_dead_consumer_is_claimed_after_the_idle_time(
    database_url: str, rclient: redis.Redis, rsettings: ReliabilitySettings, streams: Streams,
    start_worker: StartWorker,
) -> None:
    sid = publish_session(database_url)
    emit(database_url, rclient, rsettings, sid)
    # A consumer takes the message and dies before doing anything: no ack, no heartbeat.
    assert len(streams.read("ghost", 1, 100)) == 1
    assert streams.pending_count("ghost") == 1
    started = time.monotonic()
    start_worker()
    wait_for(lambda: done(database_url, sid), 10, "the claimed analysis")
    assert time.monotonic() - started >= rsettings.claim_idle_ms / 1000 * 0.9
    assert streams.pending_count() == 0


def test_event_lost_with_redis_down_is_re_emitted_by_the_sweep(
    database_url: str, private_redis: EmbeddedRedis, rsettings: ReliabilitySettings, start_worker: StartWorker,
) -> None:
    client = redis.Redis.from_url(private_redis.url, socket_timeout=2, socket_connect_timeout=1)
    sid = publish_session(database_url)
    private_redis.stop()
    assert emit_requested(client, sid, None, database_url=database_url, settings=rsettings) is False
    row = analysis_row(database_url, sid)
    assert row is not None and row.emitted_at is None
    private_redis.start()
    assert client.xlen(rsettings.stream_key) == 0
    report = sweep(client, database_url, rsettings)
    assert report.reemitted == [sid]
    assert sweep(client, database_url, rsettings).reemitted == []  # emitted now: not again
    worker = start_worker(client=client)
    wait_for(lambda: done(database_url, sid), 10, "the re-emitted analysis")
    assert sweep(client, database_url, rsettings).reemitted == []
    worker.stop()
    client.close()


def test_sweep_purges_the_suggestions_of_a_withdrawn_session(
    database_url: str, rclient: redis.Redis, rsettings: ReliabilitySettings, start_worker: StartWorker,
) -> None:
    from sqlalchemy import update

    from verbatim.db.engine import db_session
    from verbatim.db.models import Session

    sid = publish_session(database_url)
    start_worker()
    emit(database_url, rclient, rsettings, sid)
    wait_for(lambda: done(database_url, sid), 10, "the analysis")
    with db_session(database_url) as db:
        db.execute(update(Session).where(Session.id == sid).values(status="deleted", raw_turns=None))
    assert sweep(rclient, database_url, rsettings).purged == 8
    assert suggestions_of(database_url, sid) == []
