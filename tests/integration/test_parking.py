"""Parking: a capture run waits for the recognizer without holding a worker (real PostgreSQL, Redis, recognizer)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator

import httpx
import pytest
from sqlalchemy import text

from tests.conftest import API_KEY, SAMPLES, AsrServer, make_settings
from tests.factories import new_session, view
from verbatim import keys
from verbatim.context import ProcessContext
from verbatim.db.engine import db_session
from verbatim.durable.core import Outcome
from verbatim.pipeline.parked import Backoff, poll_parked
from verbatim.pipeline.run import run_capture
from verbatim.runtime import build_context

CLIP = SAMPLES / "nada_lily_02_haggard_0216.wav"


@pytest.fixture
def make_ctx(database_url: str, redis_url: str, asr: AsrServer, data_dir) -> Iterator[Callable[..., ProcessContext]]:  # type: ignore[no-untyped-def]
    made: list[ProcessContext] = []

    def make(**extra: object) -> ProcessContext:
        values: dict[str, object] = {"recognizer_park_after_s": 0.0, "recognizer_park_s": 0.5,
                                     "recognizer_park_max_s": 2.0, **extra}
        ctx = build_context(make_settings(database_url, redis_url, asr, data_dir, **values))
        made.append(ctx)
        return ctx

    yield make
    for ctx in made:
        ctx.recognizer.close()


def row(ctx: ProcessContext, sid: uuid.UUID) -> dict[str, object]:
    with db_session(ctx.repo.url) as db:
        r = db.execute(text("""
            SELECT runs, fence, parked_at IS NOT NULL AS parked, extract(epoch FROM due_at - now()) AS due_in,
                   holder
            FROM durable_runs WHERE kind = 'capture' AND subject_id = :s"""), {"s": sid}).one()
    return dict(r._mapping)


def job_done(asr: AsrServer, job_id: str) -> bool:
    r = httpx.get(f"{asr.url}/v2/jobs/{job_id}", headers={"authorization": f"Bearer {API_KEY}"}, timeout=5)
    return bool(r.json()["job"]["status"] == "done")


def wait_for(cond: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def lookups_until_queued(ctx: ProcessContext, sid: uuid.UUID, timeout_s: float = 60.0) -> None:
    """Tick the parked-session look-up until it queues ``sid`` (its job done, its look-up time passed)."""
    deadline = time.monotonic() + timeout_s
    while sid not in poll_parked(ctx, Backoff()).queued:
        assert time.monotonic() < deadline, "the parked session was never queued"
        time.sleep(0.2)


def park(ctx: ProcessContext, sid: uuid.UUID) -> str:
    assert run_capture(ctx, sid) is Outcome.PARKED
    job = view(ctx.repo, sid).vendor_job_id
    assert job is not None
    return str(job)


def test_a_run_parks_once_its_job_is_saved_and_the_park_is_not_a_run(make_ctx: Callable[..., ProcessContext]) -> None:
    ctx = make_ctx(recognizer_park_s=30.0)
    sid = new_session(ctx.settings, CLIP)
    park(ctx, sid)
    r = row(ctx, sid)
    assert r["parked"] and r["runs"] == 0  # given back: parking never spends the run bound
    assert 25 < float(r["due_in"]) <= 30.5  # looked up at its look-up time (database clock)
    assert not ctx.redis.exists(keys.lease(sid))  # the lease (and the worker) released
    s = view(ctx.repo, sid)
    assert s.status == "recognizing" and s.audio_path is None  # our audio went after the job id was saved


def test_a_lost_notification_is_covered_by_the_lookup_time(make_ctx: Callable[..., ProcessContext], asr: AsrServer
                                                           ) -> None:
    ctx = make_ctx()  # no callback URL: no notification will ever arrive
    sid = new_session(ctx.settings, CLIP)
    job = park(ctx, sid)
    wait_for(lambda: job_done(asr, job), "the recognizer to finish")
    before = httpx.get(f"{asr.url}/_faults/requests", timeout=5).json()
    lookups_until_queued(ctx, sid)
    after = httpx.get(f"{asr.url}/_faults/requests", timeout=5).json()
    assert after.get("status", 0) == before.get("status", 0)  # a list call, not per-job status requests
    assert after.get("list", 0) > before.get("list", 0)
    assert ctx.redis.llen(keys.CAPTURE_QUEUE) >= 1
    assert run_capture(ctx, sid) is Outcome.READY
    assert view(ctx.repo, sid).status == "ready"
    assert row(ctx, sid)["runs"] == 1 and not row(ctx, sid)["parked"]


def test_a_job_still_running_is_looked_up_again_later_not_queued(make_ctx: Callable[..., ProcessContext],
                                                                 asr: AsrServer) -> None:
    ctx = make_ctx()
    asr.fault("hold")  # the job stays running
    sid = new_session(ctx.settings, CLIP)
    park(ctx, sid)
    wait_for(lambda: float(row(ctx, sid)["due_in"]) <= 0, "the look-up time")
    report = poll_parked(ctx, Backoff())
    assert report.queued == [] and report.waiting == 1
    assert float(row(ctx, sid)["due_in"]) > 0 and row(ctx, sid)["parked"]
    assert ctx.redis.llen(keys.CAPTURE_QUEUE) == 0


def test_a_vendor_429_slows_the_poller_without_spending_runs(make_ctx: Callable[..., ProcessContext],
                                                            asr: AsrServer) -> None:
    ctx = make_ctx()
    sid = new_session(ctx.settings, CLIP)
    job = park(ctx, sid)
    wait_for(lambda: job_done(asr, job), "the recognizer to finish")
    wait_for(lambda: float(row(ctx, sid)["due_in"]) <= 0, "the look-up time")
    asr.fault("fail", kind="list", mode="429", count=1, retry_after_s=3)
    backoff = Backoff()
    report = poll_parked(ctx, backoff)
    assert report.queued == [] and report.backed_off_s >= 3
    assert float(row(ctx, sid)["due_in"]) > 2  # waits out the Retry-After
    assert row(ctx, sid)["runs"] == 0 and row(ctx, sid)["parked"]
    lists = httpx.get(f"{asr.url}/_faults/requests", timeout=5).json().get("list", 0)
    # While held back, no sweep process asks the vendor at all (the hold is in the database).
    assert poll_parked(ctx, backoff).list_calls == 0
    assert httpx.get(f"{asr.url}/_faults/requests", timeout=5).json().get("list", 0) == lists
    lookups_until_queued(ctx, sid)
    assert run_capture(ctx, sid) is Outcome.READY
    assert row(ctx, sid)["runs"] == 1


def test_a_parked_session_survives_a_redis_flush(make_ctx: Callable[..., ProcessContext], asr: AsrServer) -> None:
    ctx = make_ctx()
    sid = new_session(ctx.settings, CLIP)
    job = park(ctx, sid)
    ctx.redis.flushdb()  # every queued message and lease gone: the parked state is in PostgreSQL
    wait_for(lambda: job_done(asr, job), "the recognizer to finish")
    lookups_until_queued(ctx, sid)
    assert run_capture(ctx, sid) is Outcome.READY


def test_the_session_deadline_applies_to_parked_sessions(make_ctx: Callable[..., ProcessContext], asr: AsrServer
                                                         ) -> None:
    ctx = make_ctx()
    asr.fault("hold")
    sid = new_session(ctx.settings, CLIP)
    park(ctx, sid)
    with db_session(ctx.repo.url) as db:
        db.execute(text("UPDATE durable_runs SET deadline_at = now() - interval '1 second', due_at = now() "
                        "WHERE subject_id = :s"), {"s": sid})
    assert sid in poll_parked(ctx, Backoff()).queued  # overdue: queued without asking the vendor
    assert run_capture(ctx, sid) is Outcome.FAILED
    assert view(ctx.repo, sid).failure_code == "deadline_exceeded"


def test_a_resumed_run_whose_job_still_runs_parks_again_uncounted(make_ctx: Callable[..., ProcessContext],
                                                                  asr: AsrServer) -> None:
    ctx = make_ctx()
    asr.fault("hold")
    sid = new_session(ctx.settings, CLIP)
    park(ctx, sid)
    for _ in range(ctx.settings.max_runs + 2):  # more resumes than the run bound: none is spent
        assert run_capture(ctx, sid) is Outcome.PARKED
    assert row(ctx, sid)["runs"] == 0
    asr.fault("hold", hold=False)
    job = str(view(ctx.repo, sid).vendor_job_id)
    wait_for(lambda: job_done(asr, job), "the recognizer to finish")
    assert run_capture(ctx, sid) is Outcome.READY
    assert row(ctx, sid)["runs"] == 1
