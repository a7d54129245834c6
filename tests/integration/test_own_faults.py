"""Our own faults are ours (issue 27): a key we lack, the vendor's job lost with our audio still
here, a vendor list longer than one page, re-queues of sessions still waiting in the queue.

In-process capture runs against real PostgreSQL, Redis and the local recognizer (the real
Speechmatics client)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.conftest import SAMPLES, AsrServer, make_settings
from tests.factories import new_session, view
from verbatim.admin import retry_session
from verbatim.context import ProcessContext
from verbatim.db.engine import db_session
from verbatim.db.models import OutboxItem, Session
from verbatim.pipeline.run import Outcome, run_capture
from verbatim.runtime import build_context
from verbatim.sealed.ring import create_ring_file, export_ring, import_keys
from verbatim.telemetry.ops import OpsCollector

JFK = SAMPLES / "jfk.wav"

# Real recognitions of a real clip: on a loaded 2-core machine some outlast the 300 s default.
pytestmark = pytest.mark.timeout(900)


@pytest.fixture
def ctx(settings) -> Iterator[ProcessContext]:  # type: ignore[no-untyped-def]
    context = build_context(settings)
    yield context
    context.recognizer.close()


def pending_file_deletes(url: str, sid: uuid.UUID) -> int:
    with db_session(url) as db:
        return len(db.execute(select(OutboxItem.id).where(
            OutboxItem.session_id == sid, OutboxItem.kind == "file", OutboxItem.done_at.is_(None))).all())


def blocked_gauge(ctx: ProcessContext) -> dict[str, float]:
    found: dict[str, float] = {}
    for family in OpsCollector(ctx.repo.url, ctx.redis).collect():
        if family.name == "verbatim_sessions_blocked":
            found.update({s.labels["code"]: s.value for s in family.samples})
    return found


# --- 5. A key we lack blocks the session with its audio kept ----------------------------------------
def test_a_key_the_worker_lacks_blocks_the_session_and_an_admin_retry_resumes(
        database_url: str, redis_url: str, asr: AsrServer, data_dir: Path) -> None:
    uploaded_ring = data_dir / "api-keys" / "ring.json"
    worker_ring = data_dir / "worker-keys" / "ring.json"
    for ring in (uploaded_ring, worker_ring):
        ring.parent.mkdir()
        create_ring_file(ring)
    # The API sealed the upload under a key the worker's ring does not hold (a rotation the
    # worker has not seen, a key not yet imported).
    api_settings = make_settings(database_url, redis_url, asr, data_dir, key_file=uploaded_ring)
    worker_settings = make_settings(database_url, redis_url, asr, data_dir, key_file=worker_ring)
    sid = new_session(api_settings, JFK)
    audio = Path(str(view(build_context(api_settings).repo, sid).audio_path))
    ctx = build_context(worker_settings)
    try:
        outcome = run_capture(ctx, sid)
        row = view(ctx.repo, sid)
        assert outcome is Outcome.BLOCKED, outcome
        assert (row.status, row.failure_code) == ("blocked", "encryption_key_missing")
        assert row.runs == 0, "our own key fault spent a run"
        assert audio.exists() and row.audio_path == str(audio), "the only copy must be kept"
        assert pending_file_deletes(ctx.repo.url, sid) == 0
        assert row.due_at is None  # nothing to look at until an admin retries
        assert asr.submissions().get(str(sid), 0) == 0  # nothing reached the vendor half-sent
        assert blocked_gauge(ctx) == {"encryption_key_missing": 1}  # alert VerbatimSessionBlocked

        # The fix: the worker's ring gets the key (its file changes; the running process follows it).
        import_keys(worker_ring, export_ring(uploaded_ring))
        retry_session(worker_settings, sid)
        assert run_capture(ctx, sid) is Outcome.READY
        done = view(ctx.repo, sid)
        assert (done.status, done.runs, done.failure_code) == ("ready", 1, None)
        assert blocked_gauge(ctx) == {}
    finally:
        ctx.recognizer.close()


def test_a_sealed_recording_cut_short_blocks_and_is_never_deleted(ctx: ProcessContext, asr: AsrServer) -> None:
    sid = new_session(ctx.settings, JFK)
    path = Path(str(view(ctx.repo, sid).audio_path))
    with open(path, "r+b") as fh:  # a damaged disk: the file ends mid-segment
        fh.truncate(path.stat().st_size - 100)
    size = path.stat().st_size
    assert run_capture(ctx, sid) is Outcome.BLOCKED
    row = view(ctx.repo, sid)
    assert (row.status, row.failure_code, row.runs) == ("blocked", "sealed_audio_unreadable", 0)
    assert path.stat().st_size == size and pending_file_deletes(ctx.repo.url, sid) == 0
    with db_session(ctx.repo.url) as db:
        detail = db.execute(select(Session.failure_detail).where(Session.id == sid)).scalar_one()
    assert str(path) not in (detail or "")


def _wait(predicate, timeout_s: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


# --- 13. A session still waiting in the queue is not sent again -------------------------------------
def test_sessions_waiting_behind_busy_workers_are_not_sent_again(
        database_url: str, redis_url: str, asr: AsrServer, data_dir: Path) -> None:
    from verbatim.pipeline.sweeps import SweepReport, requeue_due

    settings = make_settings(database_url, redis_url, asr, data_dir, stall_s=1.0)
    ctx = build_context(settings)
    try:
        ids = [new_session(settings, JFK) for _ in range(6)]  # due after stall_s, as after an upload
        for sid in ids:
            ctx.queue.enqueue(sid)  # the upload's message; no worker takes it (all busy)
        assert ctx.redis.llen("capture") == 6
        looked = SweepReport()

        def sweep_once() -> None:
            report = SweepReport()
            requeue_due(ctx, report)
            looked.requeued.extend(report.requeued)
            looked.still_queued += report.still_queued

        # Each session comes due at least twice (stall_s apart) while its message still waits.
        _wait(lambda: (sweep_once(), looked.still_queued >= 12 or len(looked.requeued) >= 6)[1], 120,
              "two looks at every waiting session")
        assert looked.requeued == [], "a session whose message is still waiting was sent again"
        assert ctx.redis.llen("capture") == 6

        # The messages lost (a Redis flush): now each is sent again, once.
        ctx.redis.delete("capture")
        _wait(lambda: (sweep_once(), len(set(looked.requeued)) == 6)[1], 120, "every session sent again")
        assert sorted(looked.requeued) == sorted(ids)
        assert ctx.redis.llen("capture") == 6
    finally:
        ctx.recognizer.close()


# --- 7. The vendor's list is read to its end -----------------------------------------------------
def test_adoption_and_the_tagged_delete_see_jobs_past_the_first_page(ctx: ProcessContext, asr: AsrServer) -> None:
    from verbatim.durable import outbox

    asr.fault("hold", hold=True)  # the jobs stay listed, and the recognizer does no work
    others: list[str] = []
    try:
        sid = new_session(ctx.settings, JFK)
        oldest = ctx.recognizer.submit(Path(str(view(ctx.repo, sid).audio_path)), sid)  # then the run was cut off
        others = [ctx.recognizer.submit(JFK, uuid.uuid4()) for _ in range(4)]
        asr.fault("page_max", jobs=2)  # the vendor answers two jobs per page, whatever we ask for
        listed = {j.job_id for j in ctx.recognizer.list_jobs()}
        assert {oldest, *others} <= listed
        assert ctx.recognizer.find_session_job(sid) == oldest  # adopted, not submitted a second time
        with db_session(ctx.repo.url) as db:
            outbox.add(db, outbox.VENDOR_DELETE_TAGGED, {"reason": "withdrawn"}, sid)
        ctx.cleanup.now(sid)
        assert ctx.cleanup.outbox.pending(sid) == 0
        asr.fault("page_max", jobs=0)
        remaining = {str(j["id"]) for j in asr.jobs()}
        assert oldest not in remaining, "the tagged delete was marked done with the session's job still listed"
        assert set(others) <= remaining  # only the session's own jobs go
    finally:
        asr.fault("reset")
        for job in others:
            ctx.recognizer.delete(job)


# --- 6. Vendor job lost, our audio still here: one fenced write ------------------------------------
def test_a_lost_vendor_job_resumes_from_our_audio_even_if_the_resubmit_is_cut_off(
        database_url: str, redis_url: str, asr: AsrServer, data_dir: Path) -> None:
    from sqlalchemy import update

    from verbatim.durable import outbox

    # A short vendor budget: the resubmission below gives up (refunded) within seconds.
    settings = make_settings(database_url, redis_url, asr, data_dir, recognizer_retry_budget_s=2.0)
    ctx = build_context(settings)
    try:
        sid = new_session(settings, JFK)
        audio = str(view(ctx.repo, sid).audio_path)
        # As after the job id was saved and the immediate delete of our audio failed (backing off):
        # the vendor's job is what the session points at, and our audio's delete is pending.
        with db_session(ctx.repo.url) as db:
            db.execute(update(Session).where(Session.id == sid).values(
                status="recognizing", vendor_job_id="job-lost-by-the-vendor", audio_path=None))
            outbox.add(db, outbox.FILE_DELETE, {"path": audio, "reason": "submitted"}, sid)
            db.execute(update(OutboxItem).where(OutboxItem.session_id == sid)
                       .values(next_attempt_at=OutboxItem.created_at))
        asr.fault("fail", kind="submit", mode="503", count=1000)  # the resubmission is cut off
        assert run_capture(ctx, sid) is Outcome.RETRY_LATER
        row = view(ctx.repo, sid)
        assert (row.status, row.vendor_job_id, row.audio_path) == ("recognizing", None, audio)
        ctx.cleanup.deliver()  # the sweep process's outbox pass
        assert Path(audio).exists(), "the audio the session now depends on was deleted"
        assert pending_file_deletes(ctx.repo.url, sid) == 0

        asr.fault("reset")
        assert run_capture(ctx, sid) is Outcome.READY
        done = view(ctx.repo, sid)
        assert (done.status, done.runs) == ("ready", 1)
    finally:
        asr.fault("reset")
        ctx.recognizer.close()


# --- 8. The orphan sweep leaves a rotation's copies alone ---------------------------------------------
def test_the_orphan_sweep_does_not_take_a_rotations_copy_for_an_orphan(
        database_url: str, redis_url: str, asr: AsrServer, data_dir: Path) -> None:
    import os

    from verbatim.pipeline.sweeps import SweepReport, delete_orphan_audio

    settings = make_settings(database_url, redis_url, asr, data_dir, orphan_audio_grace_s=60.0)
    ctx = build_context(settings)
    try:
        sid = new_session(settings, JFK)  # a live session's recording, being re-sealed right now
        audio = Path(str(view(ctx.repo, sid).audio_path))
        copy = audio.with_name(f".{audio.name}.rekey")
        copy.write_bytes(audio.read_bytes())
        hour_ago = audio.stat().st_mtime - 3600
        os.utime(copy, (hour_ago, hour_ago))  # as the rotation does: the copy keeps its original's age
        orphan = ctx.volume.audio_dir / f"{uuid.uuid4()}.wav"  # a recording nobody owns, as old
        orphan.write_bytes(b"x")
        os.utime(orphan, (hour_ago, hour_ago))
        report = SweepReport()
        delete_orphan_audio(ctx, report)
        assert not orphan.exists() and report.audio_deleted == 1  # the sweep did run
        assert copy.exists(), "a key rotation's copy in progress was deleted as an orphan"
        assert audio.exists()
    finally:
        ctx.recognizer.close()
