"""Every failure path keeps the promise: the capture run in-process against real PostgreSQL, Redis
and the local recognizer (real Speechmatics client). Each test names the interleaving it guards."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select, text, update

from tests.conftest import SAMPLES, STEADY, AsrServer, make_settings
from tests.factories import new_session, view
from verbatim.context import ProcessContext
from verbatim.db.engine import db_session
from verbatim.db.models import DurableRun, OutboxItem, Session, Transcript, VendorSubmission
from verbatim.errors import RecognizerTransient
from verbatim.pipeline.run import Outcome, run_capture
from verbatim.pipeline.withdraw import withdraw
from verbatim.polish.split import PLACEHOLDER
from verbatim.recognizer.client import JobState
from verbatim.runtime import build_context

JFK = SAMPLES / "jfk.wav"
FAMILY = SAMPLES / "family_session.wav"


@pytest.fixture
def ctx(settings) -> Iterator[ProcessContext]:  # type: ignore[no-untyped-def]
    context = build_context(settings)
    yield context
    context.recognizer.close()


@pytest.fixture
def steady_ctx(database_url: str, redis_url: str, asr: AsrServer, data_dir: Path) -> Iterator[ProcessContext]:
    """A context whose runs neither park nor lose their lease on a loaded machine (``STEADY``)."""
    context = build_context(make_settings(database_url, redis_url, asr, data_dir, **STEADY))
    yield context
    context.recognizer.close()


def pending(ctx: ProcessContext, sid: uuid.UUID, kind: str | None = None) -> int:
    return ctx.cleanup.outbox.pending(sid, [kind] if kind else None)


def deliver_until_done(ctx: ProcessContext, sid: uuid.UUID, timeout_s: float = 60.0) -> None:
    """Deliver the outbox as the sweep process does, until the session has nothing pending."""
    deadline = time.monotonic() + timeout_s
    while pending(ctx, sid):
        assert time.monotonic() < deadline, "outbox items still pending"
        ctx.cleanup.deliver()
        time.sleep(0.2)


def outbox_item(ctx: ProcessContext, sid: uuid.UUID, kind: str) -> OutboxItem:
    with db_session(ctx.repo.url) as db:
        return db.execute(select(OutboxItem).where(OutboxItem.session_id == sid, OutboxItem.kind == kind)).scalar_one()


def vendor_jobs_of(asr: AsrServer, sid: uuid.UUID) -> list[str]:
    return [str(j["id"]) for j in asr.jobs() if j.get("tracking", {}).get("reference") == str(sid)]


# --- 1. A vendor clean-up fault after the checkpoint never costs the saved transcript -----------
@pytest.mark.parametrize("mode", ["401", "500"])
def test_failing_vendor_delete_after_checkpoint_publishes_and_retries_from_the_outbox(
    ctx: ProcessContext, asr: AsrServer, mode: str
) -> None:
    asr.fault("fail", kind="delete", mode=mode, count=1000)
    sid = new_session(ctx.settings, JFK)
    assert run_capture(ctx, sid) is Outcome.READY
    s = view(ctx.repo, sid)
    assert (s.status, s.runs, s.vendor_job_id, s.due_at) == ("ready", 1, None, None)
    assert pending(ctx, sid, "vendor_delete") == 1 and len(vendor_jobs_of(asr, sid)) == 1
    deadline = time.monotonic() + 60
    while outbox_item(ctx, sid, "vendor_delete").attempts < 3:  # the vendor still refuses: retried, logged
        assert time.monotonic() < deadline
        ctx.cleanup.deliver()
        time.sleep(0.2)
    item = outbox_item(ctx, sid, "vendor_delete")
    assert item.last_error and item.done_at is None
    asr.fault("reset")  # key fixed / vendor back
    deliver_until_done(ctx, sid)
    assert vendor_jobs_of(asr, sid) == []
    with db_session(ctx.repo.url) as db:
        reasons = list(db.execute(select(VendorSubmission.delete_reason)
                                  .where(VendorSubmission.session_id == sid)).scalars())
    assert reasons == ["checkpointed"]


# --- 4. Withdrawal and failure find every vendor job of the session ------------------------------
def test_withdrawal_deletes_jobs_the_ledger_never_saw_and_audio_while_the_vendor_is_down(
    ctx: ProcessContext, asr: AsrServer
) -> None:
    sid = new_session(ctx.settings, JFK)
    # A run cut off between the vendor's answer and any write of ours: a tagged job, no ledger row.
    orphan = ctx.recognizer.submit(ctx.volume.path_for(sid), sid)
    asr.fault("fail", kind="any", mode="503", count=1000)
    withdraw(ctx.repo, ctx.cleanup, sid)
    assert view(ctx.repo, sid).status == "deleted"
    assert not ctx.volume.path_for(sid).exists()  # local audio gone although the vendor is down
    assert pending(ctx, sid, "vendor_delete_tagged") == 1
    asr.fault("reset")
    deliver_until_done(ctx, sid)
    assert orphan not in {str(j["id"]) for j in asr.jobs()}


def test_withdrawal_during_the_submit_deletes_the_job_the_submit_then_returns(ctx: ProcessContext,
                                                                            asr: AsrServer) -> None:
    """The withdrawal's clean-up runs before the vendor has answered the submit; the job that answer
    creates must not be left at the vendor."""
    asr.fault("fail", kind="submit", mode="timeout", count=1, delay_s=2.0)  # a slow submit, then it succeeds
    sid = new_session(ctx.settings, JFK)
    outcome: list[Outcome] = []
    run = threading.Thread(target=lambda: outcome.append(run_capture(ctx, sid)))
    run.start()
    deadline = time.monotonic() + 30
    while True:  # the ledger row is written just before the submit starts
        with db_session(ctx.repo.url) as db:
            if db.execute(select(VendorSubmission.id).where(VendorSubmission.session_id == sid)).first():
                break
        assert time.monotonic() < deadline
        time.sleep(0.05)
    withdraw(ctx.repo, ctx.cleanup, sid)
    deliver_until_done(ctx, sid)  # nothing at the vendor yet: the tagged-jobs delete finds nothing
    run.join(60)
    assert outcome == [Outcome.SUPERSEDED]
    with db_session(ctx.repo.url) as db:
        ledger = list(db.execute(select(VendorSubmission.vendor_job_id)
                                 .where(VendorSubmission.session_id == sid)).scalars())
    assert len(ledger) == 1 and ledger[0] is not None  # in the ledger the moment the submit returned
    deliver_until_done(ctx, sid)
    assert vendor_jobs_of(asr, sid) == []


def test_a_job_adopted_from_the_vendor_list_reaches_the_ledger_at_once(ctx: ProcessContext, asr: AsrServer) -> None:
    sid = new_session(ctx.settings, JFK)
    asr.fault("hold", hold=True)
    adopted = ctx.recognizer.submit(ctx.volume.path_for(sid), sid)  # a run cut off before any write of ours
    cancel_after(ctx, 1.5)
    assert run_capture(ctx, sid) is Outcome.CANCELLED  # adopted, saved, polled, then a deploy
    ctx.cancel.deadline = None
    with db_session(ctx.repo.url) as db:
        ledger = list(db.execute(select(VendorSubmission.vendor_job_id)
                                 .where(VendorSubmission.session_id == sid)).scalars())
    assert ledger == [adopted]
    assert asr.submissions().get(str(sid)) == 1  # adopted, not submitted again
    withdraw(ctx.repo, ctx.cleanup, sid)
    deliver_until_done(ctx, sid)
    assert vendor_jobs_of(asr, sid) == []
    asr.fault("hold", hold=False)


# --- 6. Refunded runs are bounded: a wall-clock deadline per session, job timeout from submission ---
def test_session_past_its_deadline_fails_with_a_named_code_and_its_copies_go(
    ctx: ProcessContext, asr: AsrServer
) -> None:
    asr.fault("hold", hold=True)  # the vendor job never finishes
    sid = new_session(ctx.settings, JFK)
    ctx.settings = ctx.settings.model_copy(update={"recognizer_job_timeout_s": 1.0})
    assert run_capture(ctx, sid) is Outcome.RETRY_LATER  # refunded: transient
    assert view(ctx.repo, sid).runs == 0
    with db_session(ctx.repo.url) as db:
        db.execute(update(DurableRun).where(DurableRun.subject_id == sid)
                   .values(deadline_at=text("now() - interval '1 second'")))
    assert run_capture(ctx, sid) is Outcome.FAILED
    s = view(ctx.repo, sid)
    assert (s.status, s.failure_code, s.due_at, s.vendor_job_id, s.raw_turns) == (
        "failed", "deadline_exceeded", None, None, None)
    asr.fault("hold", hold=False)
    deliver_until_done(ctx, sid)
    assert vendor_jobs_of(asr, sid) == []
    assert not ctx.volume.path_for(sid).exists()


def test_job_timeout_counts_from_the_submission_not_the_run(ctx: ProcessContext, asr: AsrServer) -> None:
    asr.fault("hold", hold=True)
    sid = new_session(ctx.settings, JFK)
    ctx.settings = ctx.settings.model_copy(update={"recognizer_job_timeout_s": 600.0})
    cancel_after(ctx, 1.0)
    assert run_capture(ctx, sid) is Outcome.CANCELLED  # a deploy: the job id is saved, the run refunded
    ctx.cancel.deadline = None
    with db_session(ctx.repo.url) as db:  # the job was submitted 601 s ago
        db.execute(update(Session).where(Session.id == sid)
                   .values(vendor_submitted_at=text("now() - interval '601 seconds'")))
    started = time.monotonic()
    assert run_capture(ctx, sid) is Outcome.RETRY_LATER
    assert time.monotonic() - started < 60  # not another 600 s of polling
    asr.fault("hold", hold=False)


# --- 9. A teardown refund applies once per run ------------------------------------------------------
def test_refund_is_idempotent_per_run(ctx: ProcessContext) -> None:
    sid = new_session(ctx.settings, JFK)
    with db_session(ctx.repo.url) as db:
        counted = ctx.repo.runs.count(db, sid, 60.0, 3600.0)
    barrier = threading.Barrier(4)

    def refund() -> None:
        barrier.wait()
        ctx.repo.runs.refund(sid, counted.fence, 0.0)

    threads = [threading.Thread(target=refund) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ctx.repo.runs.refund(sid, counted.fence, 0.0)  # a late attempt of a timed-out teardown write
    assert ctx.repo.runs.count_of(sid) == 0


# --- 10. The drain deadline bounds every blocking call --------------------------------------------
def cancel_after(ctx: ProcessContext, seconds: float) -> None:
    ctx.cancel.deadline = None
    ctx.cancel.cancel_at(time.monotonic() + seconds)


def test_a_slow_recognizer_call_is_cut_off_at_the_drain_deadline(ctx: ProcessContext, asr: AsrServer) -> None:
    """One status call slower than the whole drain window: the run still reaches its teardown."""
    ctx.settings = ctx.settings.model_copy(update={"recognizer_request_timeout_s": 30.0})
    ctx.recognizer = build_context(ctx.settings).recognizer
    asr.fault("fail", kind="status", mode="timeout", count=5, delay_s=20.0)
    sid = new_session(ctx.settings, JFK)
    cancel_after(ctx, 2.0)
    started = time.monotonic()
    assert run_capture(ctx, sid) is Outcome.CANCELLED
    assert time.monotonic() - started < 15
    s = view(ctx.repo, sid)
    assert (s.runs, s.status) == (0, "recognizing")  # refunded; the saved job id is what the next run resumes
    assert s.vendor_job_id is not None
    ctx.cancel.deadline = None


# --- 12. The vendor's unexpected answers are transient, `created` is running ------------------------
@pytest.mark.parametrize("mode", ["no_job", "truncated"])
def test_an_answer_we_cannot_read_is_transient_never_a_lost_job(
    ctx: ProcessContext, asr: AsrServer, mode: str
) -> None:
    sid = new_session(ctx.settings, JFK)
    job = ctx.recognizer.submit(ctx.volume.path_for(sid), sid)
    asr.fault("fail", kind="status", mode=mode, count=1000)
    ctx.recognizer.retry = type(ctx.recognizer.retry)(attempts=2, budget_s=2.0, wait_initial_s=0.1, wait_max_s=0.2)
    with pytest.raises(RecognizerTransient):
        ctx.recognizer.state(job)
    asr.fault("reset")
    asr.fault("fail", kind="status", mode=mode, count=1)  # one bad answer, then a good one
    ctx.recognizer.retry = type(ctx.recognizer.retry)(attempts=5, budget_s=10.0, wait_initial_s=0.1, wait_max_s=0.2)
    assert ctx.recognizer.state(job) in (JobState.RUNNING, JobState.DONE)
    ctx.recognizer.delete(job)


def test_created_means_running(ctx: ProcessContext, asr: AsrServer) -> None:
    asr.fault("hold", hold=True)
    sid = new_session(ctx.settings, JFK)
    job = ctx.recognizer.submit(ctx.volume.path_for(sid), sid)
    asr.fault("fail", kind="status", mode="created", count=1)
    assert ctx.recognizer.state(job) is JobState.RUNNING
    assert ctx.recognizer.find_session_job(sid) == job
    asr.fault("hold", hold=False)
    ctx.recognizer.delete(job)


# --- 14. Sessions with several clients: no client's record holds another client's words -------------
def speaker_at(reference: list[dict], start_s: float, end_s: float) -> str:  # type: ignore[type-arg]
    """Who really spoke most of [start_s, end_s], by the reference's exact turn times."""
    def overlap(t: dict) -> float:  # type: ignore[type-arg]
        return max(0.0, min(end_s, t["end_s"]) - max(start_s, t["start_s"]))
    return str(max(reference, key=overlap)["speaker"])


def test_family_session_keeps_each_clients_words_out_of_the_others_record(steady_ctx: ProcessContext,
                                                                         asr: AsrServer) -> None:
    """Whatever the recognizer hears, a client's record shows no words the other client spoke."""
    ctx = steady_ctx  # a 3-voice recognition may take minutes on a loaded machine: it must not park
    reference = json.loads((SAMPLES / "family_session.json").read_text())
    sid = new_session(ctx.settings, FAMILY, client_ids=["client_a", "client_b"], session_type="family")
    assert run_capture(ctx, sid) is Outcome.READY
    config = asr.last_config()
    assert config["transcription_config"]["speaker_diarization_config"]["max_speakers"] == 3
    with db_session(ctx.repo.url) as db:
        records = {t.client_id: t.segments for t in db.execute(select(Transcript).where(Transcript.session_id == sid))
                   .scalars()}
    for client, other in (("client_a", "client_b"), ("client_b", "client_a")):
        shown = [seg for seg in records[client] if seg["text"] != PLACEHOLDER]
        leaked = [seg["text"] for seg in shown if speaker_at(reference, seg["start_s"], seg["end_s"]) == other]
        assert not leaked, f"{client}'s record holds words {other} said: {leaked}"
        assert shown, f"{client}'s record shows nothing at all"


# --- 15. Failed sessions store SQL NULL, not JSON null ------------------------------------------------
def test_failed_session_stores_sql_null(ctx: ProcessContext, asr: AsrServer) -> None:
    sid = new_session(ctx.settings, JFK)
    with db_session(ctx.repo.url) as db:
        db.execute(update(DurableRun).where(DurableRun.subject_id == sid).values(runs=5))
    assert run_capture(ctx, sid) is Outcome.INTERRUPTED
    with db_session(ctx.repo.url) as db:
        nulls = db.execute(text("SELECT raw_turns IS NULL, published_turns IS NULL FROM sessions WHERE id = :s"),
                           {"s": sid}).one()
    assert tuple(nulls) == (True, True)


# --- A Redis restart (leases are not persisted) does not spend a run ---------------------------------
def test_a_lease_lost_to_a_redis_flush_gives_the_run_back(ctx: ProcessContext, asr: AsrServer) -> None:
    asr.fault("hold", hold=True)
    sid = new_session(ctx.settings, JFK)
    outcome: list[Outcome] = []
    run = threading.Thread(target=lambda: outcome.append(run_capture(ctx, sid)))
    run.start()
    deadline = time.monotonic() + 60
    while view(ctx.repo, sid).vendor_job_id is None:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    ctx.redis.flushdb()  # as a Redis restart without persistence would
    run.join(60)
    asr.fault("hold", hold=False)
    assert outcome == [Outcome.SUPERSEDED]
    s = view(ctx.repo, sid)
    assert (s.runs, s.status) == (0, "recognizing")  # refunded; resumes from the saved job id
    assert s.due_at is not None
