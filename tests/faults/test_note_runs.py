"""Note runs with real worker processes: SIGKILLed mid-note, the sweep and another worker finish it."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.conftest import SAMPLES, AsrServer, make_settings
from tests.factories import ready_session
from tests.faults.conftest import Cluster
from verbatim.config import Settings
from verbatim.db.engine import db_session
from verbatim.db.models import Note, Session
from verbatim.notes.repo import NoteRepo
from verbatim.notes.run import run_note
from verbatim.notes.service import request_note
from verbatim.runtime import build_context


def ask(settings: Settings, sid: uuid.UUID, fmt: str = "soap") -> uuid.UUID:
    with db_session(settings.database_url or "") as db:
        session = db.get(Session, sid)
        assert session is not None
        return request_note(db, settings, session, fmt, None).note_id


def note(settings: Settings, note_id: uuid.UUID) -> Note:
    with db_session(settings.database_url or "") as db:
        row = db.get(Note, note_id)
        assert row is not None
        db.expunge(row)
        return row


@pytest.mark.faults
def test_a_note_run_killed_after_its_second_section_resumes_at_the_third(
    database_url: str, redis_url: str, asr: AsrServer, data_dir: Path,
) -> None:
    settings = make_settings(database_url, redis_url, asr, data_dir)
    sid = ready_session(settings, SAMPLES / "notes" / "risk_discussed.json")
    uncrashed_id = ask(settings, sid)
    run_note(build_context(settings), uncrashed_id)
    expected = note(settings, uncrashed_id)
    logs = data_dir / "logs"
    logs.mkdir()
    cluster = Cluster(settings, logs)
    marker = data_dir / "crashed"
    try:
        first = cluster.worker(crash_point="after_note_section_2", crash_marker=marker)
        note_id = ask(settings, sid)
        cluster.queue.enqueue_note(note_id)
        cluster.wait_for(lambda: not first.alive(), 60, "the worker to die after the second section")
        killed = note(settings, note_id)
        assert (killed.status, len(killed.sections)) == ("drafting", 2)
        cluster.worker(crash_point="after_note_section_2", crash_marker=marker)  # armed: fires at most once
        cluster.sweeper()
        cluster.wait_for(lambda: note(settings, note_id).status == "draft", 60, "the note to be drafted")
        row = note(settings, note_id)
        assert row.sections == expected.sections and row.risk_flags == expected.risk_flags
        assert row.risk_flags is not None and row.risk_flags["status"] == "found"
        assert NoteRepo(database_url).runs.count_of(note_id) == 2
        # The resumed run wrote sections 3 and 4 only: its log says so.
        text = "".join(p.log.read_text(errors="replace") for p in cluster.procs[1:2])
        assert '"section": 3' in text and '"section": 1,' not in text
    finally:
        cluster.stop()


def _writers(settings: Settings, note_id: uuid.UUID) -> list[str]:
    return [s["writer"] for s in note(settings, note_id).sections]


@pytest.mark.faults
def test_killed_past_the_polished_bound_the_rest_is_the_offline_draft(
    database_url: str, redis_url: str, asr: AsrServer, data_dir: Path,
) -> None:
    from tests.scripted_llm import scripted_llm

    with scripted_llm() as llm:
        settings = make_settings(database_url, redis_url, asr, data_dir, note_writer="openai",
                                 llm_base_url=llm.url, llm_model="scripted", polished_runs=1)
        sid = ready_session(settings, SAMPLES / "therapy_dialogue.json")
        logs = data_dir / "logs"
        logs.mkdir()
        cluster = Cluster(settings, logs)
        marker = data_dir / "crashed"
        try:
            first = cluster.worker(crash_point="after_note_section_2", crash_marker=marker)
            note_id = ask(settings, sid)
            cluster.queue.enqueue_note(note_id)
            cluster.wait_for(lambda: not first.alive(), 60, "the worker to die after the second section")
            cluster.worker()
            cluster.sweeper()
            cluster.wait_for(lambda: note(settings, note_id).status == "draft", 60, "the note to be drafted")
            assert _writers(settings, note_id) == ["openai:scripted"] * 2 + ["offline-drafter-1"] * 2
            writes = [r for r in llm.requests if "claims" not in r["messages"][-1]["content"]]
            assert len(writes) == 2  # the model was not called again past the bound
            assert NoteRepo(database_url).runs.count_of(note_id) == 2
        finally:
            cluster.stop()


@pytest.mark.faults
def test_sigterm_mid_note_cancels_gives_the_run_back_and_requeues(
    database_url: str, redis_url: str, asr: AsrServer, data_dir: Path,
) -> None:
    import signal

    from sqlalchemy import select

    from tests.scripted_llm import scripted_llm
    from verbatim.db.models import SessionEvent

    with scripted_llm() as llm:
        settings = make_settings(database_url, redis_url, asr, data_dir, note_writer="openai",
                                 llm_base_url=llm.url, llm_model="scripted", drain_s=1.0)
        sid = ready_session(settings, SAMPLES / "therapy_dialogue.json")
        logs = data_dir / "logs"
        logs.mkdir()
        cluster = Cluster(settings, logs)
        try:
            llm.hold()
            worker = cluster.worker()
            note_id = ask(settings, sid)
            cluster.queue.enqueue_note(note_id)
            cluster.wait_for(lambda: len(llm.requests) >= 1, 60, "the run to call the model")
            worker.signal(signal.SIGTERM)
            assert worker.wait(30) is not None, "the worker did not exit inside its drain window"
            assert NoteRepo(database_url).runs.count_of(note_id) == 0  # the cancelled run was given back
            assert note(settings, note_id).status == "queued"
            with db_session(database_url) as db:
                kinds = list(db.execute(select(SessionEvent.kind).where(SessionEvent.session_id == sid)).scalars())
            assert "note_run_cancelled" in kinds
            assert cluster.redis.llen("capture") >= 1  # re-queued at once by the teardown
            llm.release()
            cluster.worker()
            cluster.wait_for(lambda: note(settings, note_id).status == "draft", 60, "the note to be drafted")
            assert NoteRepo(database_url).runs.count_of(note_id) == 1
        finally:
            llm.release()
            cluster.stop()
