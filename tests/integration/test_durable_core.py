"""What the durable-run core owns for every kind of run (real PostgreSQL, Redis and recognizer, in-process):
a subject that is gone, the stall net of every kind, due-time writes conditional on what they read, and
the one run state every view shows."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import delete, select, text, update

from tests.conftest import SAMPLES, AsrServer, make_settings
from tests.factories import force_due, new_session, ready_session
from verbatim.admin import retry_session, show_session
from verbatim.config import Settings
from verbatim.context import ProcessContext
from verbatim.db.engine import db_session
from verbatim.db.models import Note, Session, Transcript
from verbatim.durable.core import Outcome
from verbatim.durable.subjects import RunPhase
from verbatim.notes.repo import NoteRepo
from verbatim.notes.run import run_note
from verbatim.notes.service import request_note
from verbatim.notes.states import NOTE_SUBJECTS
from verbatim.pipeline.parked import Backoff, poll_parked
from verbatim.pipeline.retention import _expire
from verbatim.pipeline.run import run_capture
from verbatim.pipeline.sweeps import SweepReport, mark_stalled_due
from verbatim.runtime import build_context
from verbatim.states import CAPTURE_SUBJECTS
from verbatim.telemetry.ops import OpsCollector

CLIP = SAMPLES / "nada_lily_02_haggard_0216.wav"
NOTE_RECORD = SAMPLES / "notes" / "risk_discussed.json"


@pytest.fixture
def make_ctx(database_url: str, redis_url: str, asr: AsrServer,
             data_dir: Any) -> Iterator[Callable[..., ProcessContext]]:
    made: list[ProcessContext] = []

    def make(**extra: object) -> ProcessContext:
        ctx = build_context(make_settings(database_url, redis_url, asr, data_dir, **extra))
        made.append(ctx)
        return ctx

    yield make
    for ctx in made:
        ctx.recognizer.close()


@pytest.fixture
def ctx(make_ctx: Callable[..., ProcessContext]) -> ProcessContext:
    return make_ctx()


def ask_note(settings: Settings, sid: uuid.UUID) -> uuid.UUID:
    with db_session(settings.database_url or "") as db:
        session = db.get(Session, sid)
        assert session is not None
        return request_note(db, settings, session, "soap", None).note_id


def due_row(url: str, kind: str, sid: uuid.UUID) -> dict[str, Any]:
    with db_session(url) as db:
        r = db.execute(text("""
            SELECT runs, fence, due_at, parked_at IS NOT NULL AS parked, holder,
                   extract(epoch FROM due_at - now()) AS due_in
            FROM durable_runs WHERE kind = :k AND subject_id = :s"""), {"k": kind, "s": sid}).one()
    return dict(r._mapping)


def note_row(url: str, note_id: uuid.UUID) -> Note | None:
    with db_session(url) as db:
        row = db.get(Note, note_id)
        if row is not None:
            db.expunge(row)
        return row


# --- item 1: a subject that is gone, request_note's lock, the stall net of every kind ---------------------
def test_a_note_whose_record_is_gone_fails_subject_gone_instead_of_waiting_for_ever(ctx: ProcessContext) -> None:
    sid = ready_session(ctx.settings, NOTE_RECORD)
    note_id = ask_note(ctx.settings, sid)
    with db_session(ctx.repo.url) as db:  # the record goes (as a withdrawal deletes it) and the note stays queued
        db.execute(delete(Transcript).where(Transcript.session_id == sid))
    assert run_note(ctx, note_id) is Outcome.FAILED
    note = note_row(ctx.repo.url, note_id)
    assert note is not None and (note.status, note.failure_code) == ("failed", "subject_gone")
    assert due_row(ctx.repo.url, "note", note_id)["due_at"] is None  # terminal: nothing left to look at
    with db_session(ctx.repo.url) as db:
        assert NOTE_SUBJECTS.phase(db, note_id) is None


def _waiting_on_a_lock(url: str) -> bool:
    with db_session(url) as db:
        return bool(db.execute(text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )).scalar_one())


def test_request_note_holds_the_session_so_retention_never_strands_a_queued_note(ctx: ProcessContext) -> None:
    sid = ready_session(ctx.settings, NOTE_RECORD)
    with db_session(ctx.repo.url) as db:
        clinic_id = db.execute(select(Session.clinic_id).where(Session.id == sid)).scalar_one()
    expired = threading.Event()
    errors: list[BaseException] = []

    def retention() -> None:
        try:
            _expire(ctx, sid, clinic_id)  # the retention pass for this session, committing meanwhile
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            expired.set()

    with db_session(ctx.repo.url) as db:
        session = db.get(Session, sid)
        assert session is not None
        note_id = request_note(db, ctx.settings, session, "soap", None).note_id
        retention_thread = threading.Thread(target=retention, daemon=True)
        retention_thread.start()
        # Either retention waits for this request's lock on the session, or (without it) it commits now.
        deadline = time.monotonic() + 60
        while not expired.is_set() and not _waiting_on_a_lock(ctx.repo.url):
            assert time.monotonic() < deadline, "retention neither finished nor waited"
            time.sleep(0.05)
    retention_thread.join(60)
    assert not errors, errors
    with db_session(ctx.repo.url) as db:
        record = db.execute(select(Transcript.id).where(Transcript.session_id == sid)).first()
    note = note_row(ctx.repo.url, note_id)
    assert record is None  # retention ran
    # The note was deleted with the record (unsigned notes go with it), never left queued without one.
    assert note is None, (note.status if note else None)


def test_the_stall_net_covers_note_runs_and_the_gauge_counts_what_it_will_catch(ctx: ProcessContext) -> None:
    sid = ready_session(ctx.settings, NOTE_RECORD)
    note_id = ask_note(ctx.settings, sid)
    # Queued, no due time, no write for longer than stall_s: nobody would ever look at it again.
    with db_session(ctx.repo.url) as db:
        db.execute(text("UPDATE durable_runs SET due_at = NULL WHERE kind = 'note' AND subject_id = :s"),
                   {"s": note_id})
        db.execute(update(Note).where(Note.id == note_id).values(updated_at=text("now() - interval '1 hour'")))
    before = _scrape(ctx)
    assert before[("verbatim_runs_unwatched", (("kind", "note"),))] == 1
    assert before[("verbatim_runs", (("kind", "note"), ("state", "overdue")))] == 1
    report = SweepReport()
    mark_stalled_due(ctx, report)
    assert note_id in report.stalled
    r = due_row(ctx.repo.url, "note", note_id)
    assert r["due_at"] is not None and float(r["due_in"]) <= 0.5
    after = _scrape(ctx)
    assert after[("verbatim_runs_unwatched", (("kind", "note"),))] == 0
    assert after[("verbatim_runs", (("kind", "note"), ("state", "due")))] == 1
    assert run_note(ctx, note_id) is Outcome.READY


def _scrape(ctx: ProcessContext) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in OpsCollector(ctx.repo.url, ctx.redis).collect():
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


# --- item 3: due-time writes conditional on what they read -------------------------------------------------
def test_a_run_with_nothing_to_do_never_erases_an_admin_retry_committed_meanwhile(ctx: ProcessContext) -> None:
    sid = new_session(ctx.settings, CLIP)
    with db_session(ctx.repo.url) as db:
        db.execute(update(Session).where(Session.id == sid).values(status="blocked", failure_code="recognizer_auth"))
    store = ctx.repo.runs
    clear = store.set_due

    def retry_first(*args: Any, **kwargs: Any) -> Any:
        # The run read "blocked" (nothing to do); the admin's retry commits before its last write.
        retry_session(ctx.settings, sid)
        return clear(*args, **kwargs)

    store.set_due = retry_first  # type: ignore[method-assign]
    assert run_capture(ctx, sid) is Outcome.NOTHING
    assert ctx.repo.get(sid).status == "queued"
    r = due_row(ctx.repo.url, "capture", sid)
    assert r["due_at"] is not None and float(r["due_in"]) <= 1.0  # the retry's due time stands


def test_the_parked_poller_keeps_the_lease_expiry_due_time_of_a_run_a_notification_started(
    make_ctx: Callable[..., ProcessContext], asr: AsrServer,
) -> None:
    ctx = make_ctx(recognizer_park_after_s=0.0, recognizer_park_s=200.0, recognizer_park_max_s=300.0)
    asr.fault("hold", hold=True)  # the job keeps running: the poller would look again in 200 s
    try:
        sid = new_session(ctx.settings, CLIP)
        assert run_capture(ctx, sid) is Outcome.PARKED
        force_due(ctx.repo.url, sid)  # its look-up time has come
        lease_ttl = 5.0
        real_states = ctx.recognizer.states

        def notified_meanwhile(*args: Any, **kwargs: Any) -> Any:
            # While the poller asks the vendor, the notification's run is counted: due at its lease expiry.
            with db_session(ctx.repo.url) as db:
                ctx.repo.runs.count(db, sid, lease_ttl, 3600.0, "worker-notified")
            return real_states(*args, **kwargs)

        ctx.recognizer.states = notified_meanwhile  # type: ignore[method-assign]
        poll_parked(ctx, Backoff())
        r = due_row(ctx.repo.url, "capture", sid)
        assert not r["parked"] and r["holder"] == "worker-notified"
        assert float(r["due_in"]) <= lease_ttl, r  # a dead run is looked at when its lease expires, not 200 s later
    finally:
        asr.fault("hold", hold=False)


def test_a_sweep_that_finds_nothing_left_never_erases_a_due_time_written_after_its_claim(ctx: ProcessContext) -> None:
    sid = new_session(ctx.settings, CLIP)
    force_due(ctx.repo.url, sid)
    store = ctx.repo.runs
    claimed = store.claim_due(10, ctx.settings.stall_s)
    assert [c.subject_id for c in claimed] == [sid]
    with db_session(ctx.repo.url) as db:  # an upload's retry (or an admin) asks for a look after the claim
        store.ensure(db, sid, ctx.settings.session_deadline_s, 0.0)
    assert store.set_due(claimed[0], None) is False
    assert due_row(ctx.repo.url, "capture", sid)["due_at"] is not None


# --- item 2: one state per run, the same in every view -------------------------------------------------------
def test_every_view_shows_the_one_run_state_of_the_core(make_ctx: Callable[..., ProcessContext],
                                                        asr: AsrServer) -> None:
    ctx = make_ctx(recognizer_park_after_s=0.0, recognizer_park_s=200.0)
    url = ctx.repo.url
    due = new_session(ctx.settings, CLIP)  # uploaded: due after stall_s (in case its message is lost)
    overdue = new_session(ctx.settings, CLIP)
    force_due(url, overdue, -600.0)  # nobody looked for ten minutes: the sweep is not running
    running = new_session(ctx.settings, CLIP)
    with db_session(url) as db:
        ctx.repo.runs.count(db, running, 60.0, 3600.0, "worker-1")
    blocked = new_session(ctx.settings, CLIP)
    withdrawn = new_session(ctx.settings, CLIP)
    with db_session(url) as db:
        db.execute(update(Session).where(Session.id == blocked).values(status="blocked"))
        db.execute(update(Session).where(Session.id == withdrawn).values(status="deleted"))
    asr.fault("hold", hold=True)
    try:
        parked = new_session(ctx.settings, CLIP)
        assert run_capture(ctx, parked) is Outcome.PARKED
    finally:
        asr.fault("hold", hold=False)
    ready = ready_session(ctx.settings, NOTE_RECORD)
    expected = {due: RunPhase.DUE, overdue: RunPhase.OVERDUE, running: RunPhase.RUNNING, blocked: RunPhase.BLOCKED,
                withdrawn: RunPhase.CANCELLED, parked: RunPhase.PARKED, ready: None}
    with db_session(url) as db:
        assert CAPTURE_SUBJECTS.phases(db, list(expected)) == expected
    for sid, phase in expected.items():
        assert show_session(url, sid)["run_state"] == (phase.value if phase else None)
    gauges = _scrape(ctx)
    for phase in RunPhase:
        want = sum(1 for p in expected.values() if p is phase)
        assert gauges[("verbatim_runs", (("kind", "capture"), ("state", phase.value)))] == want, phase


def test_note_runs_record_their_worker(make_ctx: Callable[..., ProcessContext]) -> None:
    ctx = make_ctx(worker_name="notes-1@host")
    sid = ready_session(ctx.settings, NOTE_RECORD)
    note_id = ask_note(ctx.settings, sid)
    seen: list[str | None] = []
    repo = NoteRepo(ctx.repo.url)
    real = repo.save_section

    def spy(*args: Any, **kwargs: Any) -> None:
        seen.append(due_row(ctx.repo.url, "note", note_id)["holder"])
        real(*args, **kwargs)

    from verbatim.notes import run as note_run

    runs = note_run.note_runs(ctx)
    runs.kind.repo.save_section = spy  # type: ignore[attr-defined, method-assign]
    assert runs.execute(note_id) is Outcome.READY
    assert seen and set(seen) == {"notes-1@host"}  # a restart under this name recovers the run at once
    assert due_row(ctx.repo.url, "note", note_id)["holder"] is None  # ended: no longer this worker's
