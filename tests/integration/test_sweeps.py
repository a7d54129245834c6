"""The sweeps against real PostgreSQL, Redis and the local recognizer."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import text, update

from tests.conftest import SAMPLES, AsrServer
from tests.factories import new_session
from verbatim import keys
from verbatim.config import Settings
from verbatim.db.engine import db_session, engine
from verbatim.db.models import Session
from verbatim.pipeline.context import RunContext
from verbatim.pipeline.sweeps import sweep_all
from verbatim.runtime import build_context

CLIP = SAMPLES / "nada_lily_02_haggard_0216.wav"


@pytest.fixture
def ctx(settings: Settings) -> Iterator[RunContext]:
    s = settings.model_copy(update={"vendor_job_max_age_s": 1.0, "orphan_audio_grace_s": 1.0, "lease_ttl_s": 2.0,
                                    "heartbeat_s": 0.5})
    c = build_context(s)
    yield c
    c.recognizer.close()


def sweep(ctx: RunContext):  # type: ignore[no-untyped-def]
    ctx.redis.delete(keys.SWEEP_LOCK)
    return sweep_all(ctx)


def test_stalled_session_requeued_but_not_one_waiting_in_the_queue_or_leased(ctx: RunContext) -> None:
    stalled = new_session(ctx.settings, CLIP)
    waiting = new_session(ctx.settings, CLIP)
    leased = new_session(ctx.settings, CLIP)
    ctx.queue.enqueue(waiting)
    lease = ctx.new_lease(leased)
    assert lease.acquire()
    time.sleep(0.6)  # older than the freshness window
    report = sweep(ctx)
    lease.release()
    assert report.requeued == [stalled]
    assert ctx.queue.is_queued(stalled)
    assert sweep_all(ctx).skipped  # a second beat inside the interval does nothing


def test_stranded_vendor_job_deleted_unless_a_live_session_references_it(ctx: RunContext, asr: AsrServer) -> None:
    done = new_session(ctx.settings, CLIP)
    live = new_session(ctx.settings, CLIP)
    orphan_job = ctx.recognizer.submit(ctx.volume.path_for(done), done)
    live_job = ctx.recognizer.submit(ctx.volume.path_for(live), live)
    with db_session(ctx.repo.url) as db:
        db.execute(update(Session).where(Session.id == done).values(status="ready"))
        db.execute(update(Session).where(Session.id == live).values(status="recognizing", vendor_job_id=live_job))
    time.sleep(1.5)  # older than vendor_job_max_age_s
    report = sweep(ctx)
    assert report.vendor_deleted == [orphan_job]
    assert report.vendor_reported == [live_job]
    ids = {j["id"] for j in asr.jobs()}
    assert orphan_job not in ids and live_job in ids
    ctx.recognizer.delete(live_job)


def test_orphan_audio_and_partial_uploads_deleted_after_the_grace(ctx: RunContext) -> None:
    kept = new_session(ctx.settings, CLIP)
    gone = new_session(ctx.settings, CLIP)
    with db_session(ctx.repo.url) as db:
        db.execute(update(Session).where(Session.id == gone).values(status="failed"))
    stray = ctx.volume.audio_dir / f"{uuid.uuid4()}.audio"  # a crashed upload: file, no row
    stray.write_bytes(b"x")
    partial = ctx.volume.new_incoming()
    partial.write_bytes(b"y")
    old = time.time() - 10
    for p in (ctx.volume.path_for(kept), ctx.volume.path_for(gone), stray, partial):
        os.utime(p, (old, old))
    report = sweep(ctx)
    assert report.audio_deleted == 3
    assert ctx.volume.path_for(kept).exists()
    assert not stray.exists() and not partial.exists() and not ctx.volume.path_for(gone).exists()


def test_stalled_query_uses_the_partial_index_with_many_finished_sessions(ctx: RunContext) -> None:
    sid = new_session(ctx.settings, CLIP)
    with engine(ctx.repo.url).begin() as conn:
        conn.execute(text(
            "INSERT INTO sessions (id, therapist_id, clinic_id, status, client_ids, recorded_at, session_type, "
            "audio_sha256, audio_bytes, audio_duration_s, audio_format) "
            "SELECT gen_random_uuid(), therapist_id, clinic_id, 'ready', client_ids, recorded_at, session_type, "
            "audio_sha256, audio_bytes, audio_duration_s, audio_format FROM sessions, generate_series(1, 50000) "
            "WHERE id = :sid"), {"sid": sid})
        conn.execute(text("ANALYZE sessions"))
        plan = "\n".join(r[0] for r in conn.execute(text(
            "EXPLAIN SELECT id FROM sessions WHERE status IN ('queued', 'recognizing', 'checkpointed', "
            "'publishing') AND updated_at < now()")))
    assert "ix_sessions_active" in plan, plan


def test_a_live_lease_gets_a_recheck_at_its_expiry(ctx: RunContext) -> None:
    from verbatim.pipeline.sweeps import recheck
    from verbatim.queue import SWEEP_QUEUE

    ctx.settings = ctx.settings.model_copy(update={"sweep_interval_s": 5.0})  # the lease (2 s) ends first
    sid = new_session(ctx.settings, CLIP)
    lease = ctx.new_lease(sid)
    assert lease.acquire()
    time.sleep(0.6)
    before = ctx.redis.llen(SWEEP_QUEUE)
    assert sweep(ctx).requeued == []
    assert ctx.redis.llen(SWEEP_QUEUE) == before + 1  # the recheck, due when the lease would expire
    assert recheck(ctx, sid) is False  # holder alive: nothing to do
    lease.release()  # as if the holder died and its lease ran out
    assert recheck(ctx, sid) is True and ctx.queue.is_queued(sid)
    assert recheck(ctx, sid) is False  # queued now: never twice
