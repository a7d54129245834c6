"""The capture run in-process against real PostgreSQL, Redis and the local recognizer over HTTP
(the real Speechmatics client). Fault matrix of the recognizer included."""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from sqlalchemy import select, update

from tests.conftest import FAST, SAMPLES, STEADY, AsrServer, make_settings
from tests.factories import SessionView, new_session, view
from verbatim.config import Settings
from verbatim.context import ProcessContext
from verbatim.db.engine import db_session
from verbatim.db.models import DurableRun, Session, SessionEvent, Transcript
from verbatim.embedded import EmbeddedRedis
from verbatim.pipeline.run import Outcome, run_capture
from verbatim.runtime import build_context

JFK = SAMPLES / "jfk.wav"


@pytest.fixture
def ctx(settings: Settings) -> Iterator[ProcessContext]:
    context = build_context(settings)
    yield context
    context.recognizer.close()


@pytest.fixture
def steady_ctx(database_url: str, redis_url: str, asr: AsrServer, data_dir: Path) -> Iterator[ProcessContext]:
    """A context whose runs neither park nor lose their lease on a loaded machine (``STEADY``)."""
    context = build_context(make_settings(database_url, redis_url, asr, data_dir, **STEADY))
    yield context
    context.recognizer.close()


def row(ctx: ProcessContext, sid: uuid.UUID) -> SessionView:
    return view(ctx.repo, sid)


def transcripts(ctx: ProcessContext, sid: uuid.UUID) -> dict[str, list[dict]]:  # type: ignore[type-arg]
    with db_session(ctx.repo.url) as db:
        return {t.client_id: t.segments for t in db.execute(select(Transcript).where(Transcript.session_id == sid))
                .scalars()}


def drain_outbox(ctx: ProcessContext, timeout_s: float = 60.0) -> None:
    """Deliver the outbox as the sweep process would, until nothing is pending (or fail after ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    while ctx.cleanup.outbox.pending():
        assert time.monotonic() < deadline, "outbox items still pending"
        ctx.cleanup.deliver()
        time.sleep(0.2)


def assert_clean(ctx: ProcessContext, asr: AsrServer, sid: uuid.UUID) -> None:
    """Nothing left behind once the outbox is delivered: no audio, no vendor job, one submission."""
    drain_outbox(ctx)
    assert not ctx.volume.path_for(sid).exists()
    assert all(j.get("tracking", {}).get("reference") != str(sid) for j in asr.jobs())
    assert asr.submissions().get(str(sid), 0) == 1


def test_session_becomes_transcript_and_copies_disappear(ctx: ProcessContext, asr: AsrServer) -> None:
    sid = new_session(ctx.settings, JFK)
    assert run_capture(ctx, sid) is Outcome.READY
    s = row(ctx, sid)
    assert (s.status, s.runs, s.polished, s.failure_code) == ("ready", 1, True, None)
    assert s.raw_turns and s.raw_turns[0]["words"]
    # One voice in an individual session is not assumed to be anyone: it is published unassigned.
    assert s.published_turns and {t["role"] for t in s.published_turns} == {"unassigned"}
    text = " ".join(t["text"] for t in s.published_turns).lower()
    assert "country" in text
    assert_clean(ctx, asr, sid)


def test_dictation_single_voice_is_the_therapist(ctx: ProcessContext, asr: AsrServer) -> None:
    sid = new_session(ctx.settings, JFK, session_type="dictation")
    assert run_capture(ctx, sid) is Outcome.READY
    s = row(ctx, sid)
    assert s.published_turns and {t["role"] for t in s.published_turns} == {"therapist"}
    # The therapist's words are in the client's record (the memo is about that client).
    record = transcripts(ctx, sid)["client-a"]
    assert {seg["speaker"] for seg in record} == {"therapist"}
    assert "country" in " ".join(seg["text"] for seg in record).lower()
    # The capture run asked the recognizer for one voice.
    assert asr.last_config()["transcription_config"]["speaker_diarization_config"]["max_speakers"] == 1


def test_run_with_lease_held_does_nothing_and_counts_nothing(ctx: ProcessContext) -> None:
    sid = new_session(ctx.settings, JFK)
    other = ctx.new_lease(sid)
    assert other.acquire()
    try:
        assert run_capture(ctx, sid) is Outcome.BUSY
    finally:
        other.release()
    assert row(ctx, sid).runs == 0


def test_duplicate_delivery_three_at_once_one_does_the_work(ctx: ProcessContext, asr: AsrServer) -> None:
    sid = new_session(ctx.settings, JFK)
    contexts = [build_context(ctx.settings) for _ in range(3)]
    outcomes: list[Outcome] = []
    barrier = threading.Barrier(3)

    def go(c: ProcessContext) -> None:
        barrier.wait()
        outcomes.append(run_capture(c, sid))

    threads = [threading.Thread(target=go, args=(c,)) for c in contexts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert sorted(outcomes) == sorted([Outcome.READY, Outcome.BUSY, Outcome.BUSY])
    assert row(ctx, sid).runs == 1
    assert_clean(ctx, asr, sid)


def test_saved_checkpoint_never_lifts_the_run_limit(ctx: ProcessContext, asr: AsrServer) -> None:
    sid = new_session(ctx.settings, JFK)
    assert run_capture(ctx, sid) is Outcome.READY
    turns = row(ctx, sid).raw_turns
    # A session with its checkpoint saved but already run 5 times, put back to work:
    with db_session(ctx.repo.url) as db:
        db.execute(update(Session).where(Session.id == sid).values(status="publishing", raw_turns=turns))
        db.execute(update(DurableRun).where(DurableRun.subject_id == sid).values(runs=5))
    assert run_capture(ctx, sid) is Outcome.INTERRUPTED
    s = row(ctx, sid)
    assert (s.status, s.failure_code, s.runs, s.raw_turns) == ("failed", "interrupted", 6, None)
    assert transcripts(ctx, sid) == {}
    with db_session(ctx.repo.url) as db:
        kinds = list(db.execute(select(SessionEvent.kind).where(SessionEvent.session_id == sid)).scalars())
    assert "session_failed" in kinds


def test_past_polished_runs_publishes_as_heard(ctx: ProcessContext) -> None:
    sid = new_session(ctx.settings, JFK)
    with db_session(ctx.repo.url) as db:
        db.execute(update(DurableRun).where(DurableRun.subject_id == sid).values(runs=3))
    assert run_capture(ctx, sid) is Outcome.READY
    s = row(ctx, sid)
    assert (s.runs, s.polished) == (4, False)
    raw = " ".join(t["text"] for t in s.raw_turns or [])
    published = " ".join(t["text"] for t in s.published_turns or [])
    assert published == raw


def test_couples_session_one_record_per_client_with_placeholders(steady_ctx: ProcessContext) -> None:
    ctx = steady_ctx  # the recognition of this 2-voice clip may take minutes on a loaded machine: it must not park
    sid = new_session(ctx.settings, SAMPLES / "therapy_dialogue.wav", client_ids=["alex", "sam"])
    # Two voices only: force a three-speaker mapping through the correction path later; here
    # check the split invariants on what the recognizer gives.
    assert run_capture(ctx, sid) is Outcome.READY
    records = transcripts(ctx, sid)
    assert set(records) == {"alex", "sam"}
    for client, segments in records.items():
        for seg in segments:
            assert seg["speaker"] in ("therapist", client, "other participant")
            if seg["speaker"] == "other participant":
                assert seg["text"] == "[another participant spoke]"


@pytest.mark.parametrize(
    ("kind", "mode"),
    [("submit", "429"), ("status", "429"), ("status", "500"), ("transcript", "503"), ("delete", "500"),
     ("list", "500")],
)
def test_transient_faults_never_spend_a_run(steady_ctx: ProcessContext, asr: AsrServer, kind: str, mode: str) -> None:
    ctx = steady_ctx  # a run that lost its lease to a stalled machine would end SUPERSEDED, not READY
    asr.fault("fail", kind=kind, mode=mode, count=3, retry_after_s=0.2 if mode == "429" else None)
    sid = new_session(ctx.settings, JFK)
    assert run_capture(ctx, sid) is Outcome.READY
    assert row(ctx, sid).runs == 1
    assert_clean(ctx, asr, sid)


def test_a_steady_run_keeps_its_lease_and_its_worker_through_a_stalled_machine(
    database_url: str, private_redis: EmbeddedRedis, asr: AsrServer, data_dir: Path,
) -> None:
    """What ``STEADY`` sets up: Redis (or the whole machine) not answering for longer than FAST's lease
    mid-run, and a vendor slower than the run's checks, still end READY in one run."""
    ctx = build_context(make_settings(database_url, private_redis.url, asr, data_dir, **STEADY))
    asr.fault("hold", hold=True)
    outcome: list[Outcome] = []
    try:
        sid = new_session(ctx.settings, JFK)
        runner = threading.Thread(target=lambda: outcome.append(run_capture(ctx, sid)), daemon=True)
        runner.start()
        deadline = time.monotonic() + 120
        while row(ctx, sid).vendor_job_id is None:
            assert time.monotonic() < deadline, "the run never submitted"
            time.sleep(0.1)
        pid = private_redis._proc.pid  # noqa: SLF001 - the test stalls its own server
        os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(float(FAST["lease_ttl_s"]) + 2.0)  # a stall longer than FAST's whole lease
        finally:
            os.kill(pid, signal.SIGCONT)
        asr.fault("hold", hold=False)
        runner.join(600)
        assert outcome == [Outcome.READY]
        assert row(ctx, sid).runs == 1
    finally:
        asr.fault("hold", hold=False)
        ctx.recognizer.close()


def test_slow_responses_past_the_per_attempt_timeout_are_retried(ctx: ProcessContext, asr: AsrServer) -> None:
    asr.fault("fail", kind="status", mode="timeout", count=2, delay_s=ctx.settings.recognizer_request_timeout_s + 1)
    sid = new_session(ctx.settings, JFK)
    assert run_capture(ctx, sid) is Outcome.READY
    assert row(ctx, sid).runs == 1


def test_vendor_down_past_budget_refunds_the_run(ctx: ProcessContext, asr: AsrServer) -> None:
    ctx.recognizer.retry = type(ctx.recognizer.retry)(attempts=3, budget_s=2.0, wait_initial_s=0.1, wait_max_s=0.2)
    asr.fault("fail", kind="any", mode="500", count=50)
    sid = new_session(ctx.settings, JFK)
    assert run_capture(ctx, sid) is Outcome.RETRY_LATER
    s = row(ctx, sid)
    assert (s.status, s.runs) == ("queued", 0)
    assert ctx.volume.path_for(sid).exists()  # audio kept: nothing replaced it yet
    assert s.due_at is not None  # the sweep process sends it again once due


def test_rejected_audio_fails_the_session(ctx: ProcessContext, asr: AsrServer) -> None:
    asr.fault("reject_next", count=1)
    sid = new_session(ctx.settings, JFK)
    assert run_capture(ctx, sid) is Outcome.FAILED
    s = row(ctx, sid)
    assert (s.status, s.failure_code) == ("failed", "audio_rejected")
    assert not ctx.volume.path_for(sid).exists()


def test_job_deleted_mid_poll_is_recognizer_job_lost(ctx: ProcessContext, asr: AsrServer) -> None:
    asr.fault("hold", hold=True)
    asr.fault("delete_on_poll", count=1)
    sid = new_session(ctx.settings, JFK)
    assert run_capture(ctx, sid) is Outcome.FAILED
    s = row(ctx, sid)
    assert (s.status, s.failure_code) == ("failed", "recognizer_job_lost")


def test_job_expired_is_recognizer_job_lost(ctx: ProcessContext, asr: AsrServer) -> None:
    asr.fault("hold", hold=True)
    sid = new_session(ctx.settings, JFK)
    expired: list[str] = []

    def expire_when_submitted() -> None:
        import time

        for _ in range(200):
            with db_session(ctx.repo.url) as db:
                job = db.execute(select(Session.vendor_job_id).where(Session.id == sid)).scalar_one()
            if job:
                asr.fault(f"jobs/{job}/expire")
                expired.append(job)
                return
            time.sleep(0.05)

    t = threading.Thread(target=expire_when_submitted)
    t.start()
    assert run_capture(ctx, sid) is Outcome.FAILED
    t.join()
    assert expired
    assert row(ctx, sid).failure_code == "recognizer_job_lost"


def test_bad_api_key_blocks_with_audio_kept(settings: Settings, asr: AsrServer) -> None:
    bad = build_context(settings.model_copy(update={"recognizer_api_key": "wrong"}))
    sid = new_session(settings, JFK)
    assert run_capture(bad, sid) is Outcome.BLOCKED
    s = row(bad, sid)
    assert (s.status, s.failure_code, s.runs) == ("blocked", "recognizer_auth", 0)
    assert bad.volume.path_for(sid).exists()
    assert str(sid) not in asr.submissions()


def test_logs_are_json_with_session_and_run_and_no_patient_data(ctx: ProcessContext, capsys: pytest.CaptureFixture[str]
                                                                ) -> None:
    import json

    from verbatim.telemetry.logs import configure

    configure("INFO", json_output=True)
    try:
        sid = new_session(ctx.settings, JFK, client_ids=["Jane-Doe-4411"])
        assert run_capture(ctx, sid) is Outcome.READY
    finally:
        structlog.reset_defaults()
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    assert any(e.get("session_id") == str(sid) and e.get("run") == 1 for e in lines)
    text = " ".join(json.dumps(e) for e in lines).lower()
    published = " ".join(t["text"] for t in row(ctx, sid).published_turns or []).lower()
    assert "jane-doe-4411" not in text and f"{sid}.audio" not in text
    assert not any(word in text for word in ("fellow", "country") if word in published)
