"""The note run in-process against real PostgreSQL and Redis: drafted, checkpointed, fenced, swept."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select

from tests.conftest import SAMPLES
from tests.factories import force_due, ready_session
from verbatim.config import Settings
from verbatim.db.engine import db_session
from verbatim.db.models import Note, NoteCitation, NoteVersion, Session, Transcript
from verbatim.durable.core import Outcome
from verbatim.errors import NoteRequestInvalid
from verbatim.notes.repo import NoteRepo
from verbatim.notes.run import run_note
from verbatim.notes.service import request_note
from verbatim.pipeline.sweeps import SweepReport, requeue_due
from verbatim.runtime import build_context


def ask(settings: Settings, sid: uuid.UUID, fmt: str = "soap", client: str | None = None) -> uuid.UUID:
    with db_session(settings.database_url or "") as db:
        session = db.get(Session, sid)
        assert session is not None
        return request_note(db, settings, session, fmt, client).note_id


def note_row(settings: Settings, note_id: uuid.UUID) -> Note:
    with db_session(settings.database_url or "") as db:
        row = db.get(Note, note_id)
        assert row is not None
        db.expunge(row)
        return row


def test_a_note_run_drafts_every_section_with_citations_of_the_clients_record(settings: Settings) -> None:
    ctx = build_context(settings)
    sid = ready_session(settings, SAMPLES / "notes" / "couple_money.json")
    note_id = ask(settings, sid, "birp", "alex")
    assert run_note(ctx, note_id) is Outcome.READY
    row = note_row(settings, note_id)
    assert (row.status, row.version, row.writer, row.transcript_version) == ("draft", 1, "offline-drafter-1", 1)
    assert [s["name"] for s in row.sections] == ["Behavior", "Intervention", "Response", "Plan"]
    with db_session(settings.database_url or "") as db:
        alex = db.execute(select(Transcript.segments).where(Transcript.session_id == sid,
                                                            Transcript.client_id == "alex")).scalar_one()
        cites = db.execute(select(NoteCitation).where(NoteCitation.note_id == note_id)).scalars().all()
        version = db.execute(select(NoteVersion).where(NoteVersion.note_id == note_id)).scalar_one()
    own = {s["id"]: s for s in alex if s["speaker"] in ("therapist", "alex")}
    assert cites
    for c in cites:
        assert c.segment_id in own and own[c.segment_id]["text"] == c.quote and c.speaker in ("therapist", "alex")
    assert version.kind == "draft" and version.body["risk"]["status"] == "none found"
    assert NoteRepo(settings.database_url or "").runs.count_of(note_id) == 1
    assert run_note(ctx, note_id) is Outcome.NOTHING  # drafted: a second message does nothing


@pytest.mark.parametrize(("fmt", "client", "code"), [
    ("soapy", "alex", "unknown_format"),
    ("soap", "nobody", "client_not_in_session"),
    ("soap", None, "client_not_in_session"),
])
def test_bad_requests_write_nothing(settings: Settings, fmt: str, client: str | None, code: str) -> None:
    sid = ready_session(settings, SAMPLES / "notes" / "couple_money.json")
    with pytest.raises(NoteRequestInvalid) as caught:
        ask(settings, sid, fmt, client)
    assert caught.value.code == code
    with db_session(settings.database_url or "") as db:
        assert db.execute(select(Note.id)).first() is None


def test_the_sweep_requeues_a_dead_note_run_and_a_resumed_run_starts_at_the_next_section(settings: Settings) -> None:
    ctx = build_context(settings)
    sid = ready_session(settings, SAMPLES / "therapy_dialogue.json")
    note_id = ask(settings, sid)
    repo = NoteRepo(settings.database_url or "")
    # A run that checkpointed two sections and died (its lease expired): as the run leaves it.
    with db_session(settings.database_url or "") as db:
        counted = repo.runs.count(db, note_id, 0.01, settings.note_deadline_s)
    from verbatim.notes.drafter import OfflineDrafter
    from verbatim.notes.evidence import units
    from verbatim.notes.formats import sections_of
    with db_session(settings.database_url or "") as db:
        state = repo.load(db, note_id)
    assert state is not None
    items = units(state.segments, state.client_id)
    whole = OfflineDrafter().draft(sections_of("soap"), items)
    saved = [{**whole[0], "checkpointed": True}, {**whole[1], "checkpointed": True}]
    for i in range(2):
        repo.save_section(note_id, counted.fence, i, saved[i], "offline-drafter-1", 1)
    sent: list[uuid.UUID] = []
    ctx.queue.enqueue_note = sent.append  # type: ignore[method-assign]
    force_due(repo.url, note_id, kind="note")
    report = SweepReport()
    requeue_due(ctx, report)
    assert sent == [note_id] and note_id in report.requeued
    assert run_note(ctx, note_id) is Outcome.READY
    row = note_row(settings, note_id)
    # Sections 1 and 2 are the checkpoint's (not written again); 3 and 4 are the resumed run's.
    written = [{k: v for k, v in s.items() if k != "writer"} for s in row.sections]
    assert written == saved + whole[2:] and repo.runs.count_of(note_id) == 2


def test_a_draft_that_quotes_what_the_record_check_missed_never_says_nothing_detected(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    # The record's check misses everything (as a detector can): the draft's own words are still read.
    import verbatim.notes.run as note_run
    from verbatim.notes.risk import NOTHING_DETECTED
    missed = {"status": "none found", "flags": [], "denials": [], "family_history": [], "checked": NOTHING_DETECTED}
    monkeypatch.setattr(note_run, "flags", lambda items: dict(missed))
    ctx = build_context(settings)
    sid = ready_session(settings, SAMPLES / "notes" / "risk_discussed.json")
    note_id = ask(settings, sid, "soap")
    assert run_note(ctx, note_id) is Outcome.READY
    with db_session(settings.database_url or "") as db:
        version = db.execute(select(NoteVersion).where(NoteVersion.note_id == note_id)).scalar_one()
    risk = version.body["risk"]
    assert risk["status"] == "found" and "checked" not in risk, risk
    assert risk["note_mentions"] and not any(m["denied"] for m in risk["note_mentions"]), risk
    assert note_row(settings, note_id).risk_flags["flags"] == []  # the record's check is kept as it found
