"""The sweeps against real PostgreSQL, Redis and the local recognizer."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import text, update

from tests.conftest import SAMPLES, AsrServer
from tests.factories import force_due, new_session
from verbatim import keys
from verbatim.config import Settings
from verbatim.context import ProcessContext
from verbatim.db.engine import db_session, engine
from verbatim.db.models import Session
from verbatim.leases import Lease
from verbatim.pipeline.sweeps import SweepReport, tick
from verbatim.resumable import ResumableUploads
from verbatim.runtime import build_context

CLIP = SAMPLES / "nada_lily_02_haggard_0216.wav"


@pytest.fixture
def ctx(settings: Settings) -> Iterator[ProcessContext]:
    s = settings.model_copy(update={"vendor_job_max_age_s": 1.0, "orphan_audio_grace_s": 1.0, "lease_ttl_s": 2.0,
                                    "heartbeat_s": 0.5})
    c = build_context(s)
    yield c
    c.recognizer.close()


def sweep(ctx: ProcessContext) -> SweepReport:
    """One tick with every periodic sweep due (as if its period had passed)."""
    with db_session(ctx.repo.url) as db:
        db.execute(text("DELETE FROM sweep_schedule"))
    return tick(ctx)


def make_due(ctx: ProcessContext, *sids: uuid.UUID, in_s: float = 0.0) -> None:
    for sid in sids:
        force_due(ctx.repo.url, sid, in_s)


def test_due_session_requeued_but_not_one_leased_or_not_yet_due(ctx: ProcessContext) -> None:
    due = new_session(ctx.settings, CLIP)
    waiting = new_session(ctx.settings, CLIP)  # its message is in the queue: due only after stall_s
    leased = new_session(ctx.settings, CLIP)
    make_due(ctx, due, leased)
    lease = ctx.new_lease(leased)
    assert lease.acquire()
    report = sweep(ctx)
    lease.release()
    assert report.requeued == [due]
    assert report.rechecks == 1
    assert ctx.redis.llen(keys.CAPTURE_QUEUE) == 1
    # The requeued session is due again only after the stall window: the next tick sends nothing.
    assert tick(ctx).requeued == []
    assert ctx.repo.runs.state(waiting).due_at is not None


def test_a_live_lease_is_looked_at_again_at_its_expiry(ctx: ProcessContext) -> None:
    sid = new_session(ctx.settings, CLIP)
    make_due(ctx, sid)
    # A lease far longer than the stall window and than any stall of a loaded machine: the recheck's
    # due time is told from the claim's (stall_s) whatever the machine's speed.
    lease = Lease(ctx.redis, str(sid), 120.0, 1.0, key=keys.lease(sid))
    assert lease.acquire()
    assert sweep(ctx).requeued == []
    with db_session(ctx.repo.url) as db:
        left = db.execute(text("SELECT extract(epoch FROM due_at - now()) FROM durable_runs WHERE subject_id = :s"),
                          {"s": sid}).scalar_one()
    assert ctx.settings.stall_s < left <= 120.1  # due when the lease would expire, not stall_s later
    lease.release()  # as if the holder died and its lease ran out
    force_due(ctx.repo.url, sid)  # ... and its expiry (the recheck's due time, checked above) came
    deadline = time.monotonic() + 30
    while not tick(ctx).requeued:
        assert time.monotonic() < deadline
        time.sleep(0.2)


def test_stall_detection_uses_the_database_clock_and_the_stall_window(ctx: ProcessContext) -> None:
    """A session with work outstanding, no due time and no write for stall_s is made due (safety net)."""
    old = new_session(ctx.settings, CLIP)
    new_session(ctx.settings, CLIP)  # written just now: left alone
    with db_session(ctx.repo.url) as db:
        db.execute(text("UPDATE durable_runs SET due_at = NULL"))
        db.execute(update(Session).where(Session.id == old)
                   .values(updated_at=text(f"now() - interval '{ctx.settings.stall_s + 1} seconds'")))
    report = sweep(ctx)
    assert report.stalled == [old]
    assert report.requeued == [old]


def test_one_failing_sweep_does_not_stop_the_others(ctx: ProcessContext) -> None:
    """The vendor's job list fails (recognizer unreachable): orphan audio and due runs still go."""
    ctx.recognizer = build_context(ctx.settings.model_copy(
        update={"recognizer_url": "http://127.0.0.1:9/v2"})).recognizer
    due = new_session(ctx.settings, CLIP)
    make_due(ctx, due)
    stray = ctx.volume.audio_dir / f"{uuid.uuid4()}.audio"
    stray.write_bytes(b"x")
    old = time.time() - 10
    os.utime(stray, (old, old))
    report = sweep(ctx)
    assert report.steps["stranded_vendor_jobs"] == "error"
    assert report.steps["orphan_audio"] == "done" and not stray.exists()
    assert report.requeued == [due]


def test_a_finalized_resumable_upload_is_not_an_orphan(ctx: ProcessContext) -> None:
    """tus finalize moves a file whose last PATCH is older than the grace: the grace counts from the move."""
    uploads = ResumableUploads(ctx.settings.tus_dir, ctx.settings.tus_expiry_s, ctx.volume.ring)
    owner = uuid.uuid4()
    info = uploads.create(owner, 3, {})
    with uploads.lock(info.id, owner) as locked:
        locked.write(b"abc")
        old = time.time() - 10  # the last PATCH, long before the finalize
        os.utime(uploads.data_path(info.id), (old, old))
        target = ctx.volume.new_incoming()
        locked.move_to(target)
    committed = ctx.volume.commit(target, uuid.uuid4())  # hashed and probed meanwhile; no row yet
    assert sweep(ctx).audio_deleted == 0
    assert committed.exists()


def test_stranded_vendor_job_deleted_unless_a_live_session_references_it(ctx: ProcessContext, asr: AsrServer) -> None:
    # The recognizer service is shared by this test process: jobs earlier tests left there are
    # stranded too and the sweep would rightly delete them, so start from an empty job list.
    for job in asr.jobs():
        ctx.recognizer.delete(str(job["id"]))
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


def test_orphan_audio_and_partial_uploads_deleted_after_the_grace(ctx: ProcessContext) -> None:
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


def test_stalled_query_uses_the_partial_index_with_many_finished_sessions(ctx: ProcessContext) -> None:
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
