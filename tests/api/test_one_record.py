"""One record, one guard: every door to a client's record is locked, versioned and audited.

Each race is driven from a second connection that holds the session row (as a withdrawal, a
retention delete or a correction does while it commits): the door under test is started in a
thread, the test waits until PostgreSQL shows it waiting on a lock, then commits the competing
change. A lock-first door then sees that change; a door that read the row earlier writes over it.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import psycopg
import pytest
from psycopg.types.json import Jsonb
from sqlalchemy import select
from sqlalchemy.engine import make_url

from tests.api.conftest import Api
from tests.conftest import SAMPLES
from tests.factories import ready_session, token_for
from verbatim.config import Settings
from verbatim.db.engine import db_session
from verbatim.db.models import AuditEntry, Clinic, Note, NoteCitation, Session, Transcript
from verbatim.notes.run import run_note
from verbatim.runtime import build_context

DIALOGUE = SAMPLES / "therapy_dialogue.json"
COUPLE = SAMPLES / "notes" / "couple_money.json"
#: the couple's voices heard the wrong way round: Alex's words in Sam's record (labels by first speech)
SWAPPED = {"therapist": "therapist", "alex": "sam", "sam": "alex"}
RIGHT = {"S1": "therapist", "S2": "alex", "S3": "sam"}


def H(token: str) -> dict[str, str]:  # noqa: N802 - reads like a header
    return {"authorization": f"Bearer {token}"}


def _connect(settings: Settings) -> psycopg.Connection:
    u = make_url(settings.database_url or "")
    return psycopg.connect(host=u.host, port=u.port or 5432, user=u.username or "postgres", password=u.password,
                           dbname=u.database)


def _lock_waiters(settings: Settings) -> int:
    with _connect(settings) as conn:
        return int(conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                "AND wait_event_type = 'Lock'").fetchone()[0])  # type: ignore[index]


@contextmanager
def holding(settings: Settings, sid: uuid.UUID) -> Iterator[psycopg.Connection]:
    """A second connection holding the session row FOR UPDATE; its work commits when the block ends."""
    conn = _connect(settings)
    try:
        conn.execute("SELECT id FROM sessions WHERE id = %s FOR UPDATE", (sid,))
        yield conn
        conn.commit()
    finally:
        conn.close()


class Door:
    """A request run in a thread (it may block on the held row); ``result()`` waits for it."""

    def __init__(self, fn: Callable[[], httpx.Response]):
        self.response: httpx.Response | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(fn,), daemon=True)
        self.thread.start()

    def _run(self, fn: Callable[[], httpx.Response]) -> None:
        try:
            self.response = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in result()
            self.error = exc

    def result(self, timeout: float = 120.0) -> httpx.Response:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the request never finished (deadlocked?)"
        if self.error is not None:
            raise self.error
        assert self.response is not None
        return self.response


def wait_blocked(settings: Settings, door: Door, waiters: int = 1, timeout: float = 120.0) -> None:
    """Wait until ``waiters`` backends wait on a lock (the door has reached the held row)."""
    deadline = time.monotonic() + timeout
    while _lock_waiters(settings) < waiters:
        assert door.thread.is_alive(), "the request finished without reaching the held row"
        assert time.monotonic() < deadline, "the request never reached the held row"
        time.sleep(0.05)


def session_words(settings: Settings, sid: uuid.UUID) -> tuple[Any, Any, int]:
    """(raw turns, published turns, transcript rows) of a session."""
    with db_session(settings.database_url or "") as db:
        row = db.get(Session, sid)
        assert row is not None
        n = len(db.execute(select(Transcript.id).where(Transcript.session_id == sid)).all())
        return row.raw_turns, row.published_turns, n


def record_of(settings: Settings, sid: uuid.UUID, client: str) -> tuple[list[dict[str, Any]], int]:
    with db_session(settings.database_url or "") as db:
        row = db.execute(select(Transcript).where(Transcript.session_id == sid, Transcript.client_id == client)
                         ).scalar_one()
        return list(row.segments), row.version


def speakers_of(settings: Settings, sid: uuid.UUID) -> dict[str, str]:
    with db_session(settings.database_url or "") as db:
        row = db.get(Session, sid)
        assert row is not None
        return {t["speaker"]: t.get("role", "unassigned") for t in row.published_turns or []}


# --- 1. a speaker fix racing a withdrawal, retention, a correction -----------------------------------------


def test_speaker_fix_racing_a_withdrawal_never_writes_the_words_back(api: Api, settings: Settings,
                                                                    alice: str) -> None:
    sid = ready_session(settings, DIALOGUE, therapist="Alice", clinic="North Clinic")
    mapping = {label: ("unassigned" if role == "therapist" else role) for label, role in speakers_of(settings,
                                                                                                     sid).items()}
    with holding(settings, sid) as conn:
        door = Door(lambda: api.client.put(f"/v1/sessions/{sid}/speakers", json={"speakers": mapping},
                                           headers=H(alice)))
        wait_blocked(settings, door)
        # What a withdrawal commits: the words go, the session is deleted.
        conn.execute("UPDATE sessions SET status = 'deleted', raw_turns = NULL, published_turns = NULL, "
                     "client_ids = '[]' WHERE id = %s", (sid,))
        conn.execute("DELETE FROM transcripts WHERE session_id = %s", (sid,))
    r = door.result()
    assert (r.status_code, r.json()["error"]) == (410, "session_withdrawn")
    assert session_words(settings, sid) == (None, None, 0)
    r = api.client.get(f"/v1/sessions/{sid}/transcript", headers=H(alice))
    assert (r.status_code, r.json()["error"]) == (410, "session_withdrawn")


def test_speaker_fix_racing_retention_never_keeps_the_words(api: Api, settings: Settings, alice: str) -> None:
    sid = ready_session(settings, DIALOGUE, therapist="Alice", clinic="North Clinic")
    mapping = speakers_of(settings, sid)
    with holding(settings, sid) as conn:
        door = Door(lambda: api.client.put(f"/v1/sessions/{sid}/speakers", json={"speakers": mapping},
                                           headers=H(alice)))
        wait_blocked(settings, door)
        # What the retention sweep commits: every word goes, the expiry is recorded (it never looks again).
        conn.execute("UPDATE sessions SET raw_turns = NULL, published_turns = NULL, "
                     "transcript_expired_at = now() WHERE id = %s", (sid,))
        conn.execute("DELETE FROM transcripts WHERE session_id = %s", (sid,))
    r = door.result()
    assert (r.status_code, r.json()["error"]) == (410, "transcript_expired")
    assert session_words(settings, sid) == (None, None, 0)


def test_speaker_fix_racing_a_correction_keeps_the_correction(api: Api, settings: Settings, alice: str) -> None:
    sid = ready_session(settings, DIALOGUE, therapist="Alice", clinic="North Clinic")
    mapping = speakers_of(settings, sid)
    segments, _ = record_of(settings, sid, "client")
    target = next(s for s in segments if s["speaker"] == "client")
    fixed = "I wake at four most nights, thinking about the job."
    index = int(target["id"].removeprefix("seg-"))
    with db_session(settings.database_url or "") as db:
        row = db.get(Session, sid)
        assert row is not None
        published = [dict(t) for t in row.published_turns or []]
        therapist = row.therapist_id
    original = published[index]["text"]
    published[index]["text"] = fixed
    corrected = [{**s, "text": fixed} if s["id"] == target["id"] else s for s in segments]
    with holding(settings, sid) as conn:
        door = Door(lambda: api.client.put(f"/v1/sessions/{sid}/speakers", json={"speakers": mapping},
                                           headers=H(alice)))
        wait_blocked(settings, door)
        # What a segment correction commits: the edit row (original kept), the turn's new words.
        conn.execute("INSERT INTO segment_edits (session_id, turn_index, original, text, author_id) "
                     "VALUES (%s, %s, %s, %s, %s)", (sid, index, original, fixed, therapist))
        conn.execute("UPDATE sessions SET published_turns = %s WHERE id = %s", (Jsonb(published), sid))
        conn.execute("UPDATE transcripts SET segments = %s, version = version + 1 WHERE session_id = %s",
                     (Jsonb(corrected), sid))
    assert door.result().status_code == 200
    after, _ = record_of(settings, sid, "client")
    assert next(s for s in after if s["id"] == target["id"])["text"] == fixed
    history = api.client.get(f"/v1/sessions/{sid}/segments/{target['id']}", headers=H(alice)).json()
    assert history["corrected"] and history["text"] == fixed


# --- every door: one version for the whole record, audited under the data's clinic -------------------------


def test_every_change_bumps_one_record_version_and_is_audited_without_words(api: Api, settings: Settings,
                                                                             alice: str) -> None:
    sid = ready_session(settings, COUPLE, therapist="Alice", clinic="North Clinic")
    assert {record_of(settings, sid, c)[1] for c in ("alex", "sam")} == {1}
    r = api.client.put(f"/v1/sessions/{sid}/speakers", json={"speakers": RIGHT}, headers=H(alice))
    assert r.status_code == 200, r.text
    alex, version = record_of(settings, sid, "alex")
    assert version == 2 and record_of(settings, sid, "sam")[1] == 2
    own = next(s for s in alex if s["speaker"] == "alex")
    r = api.client.put(f"/v1/sessions/{sid}/segments/{own['id']}", json={"text": "I get anxious about bills.",
                                                                         "client_id": "alex"}, headers=H(alice))
    assert r.status_code == 200, r.text
    assert {record_of(settings, sid, c)[1] for c in ("alex", "sam")} == {3}
    with db_session(settings.database_url or "") as db:
        rows = list(db.execute(select(AuditEntry).where(AuditEntry.session_id == sid)).scalars())
        clinic = db.execute(select(Session.clinic_id).where(Session.id == sid)).scalar_one()
    actions = [r.action for r in rows]
    assert "speakers_corrected" in actions and "segment_corrected" in actions
    details = " ".join(str(r.detail) for r in rows)
    assert "alex" not in details and "sam" not in details and "anxious" not in details
    assert {r.clinic_id for r in rows} == {clinic}


def test_an_ops_admin_reading_another_clinics_session_is_audited_under_that_clinic(api: Api,
                                                                                    settings: Settings) -> None:
    sid = ready_session(settings, DIALOGUE, therapist="Bea", clinic="South Clinic")
    ops = token_for(settings, "", "HQ", scope="admin")
    r = api.client.get(f"/v1/admin/sessions/{sid}", headers=H(ops))
    assert r.status_code == 200, r.text
    with db_session(settings.database_url or "") as db:
        south = db.execute(select(Clinic.id).where(Clinic.name == "South Clinic")).scalar_one()
        filed = db.execute(select(AuditEntry.clinic_id).where(AuditEntry.session_id == sid,
                                                              AuditEntry.action == "admin_session_read")).scalar_one()
    assert filed == south


# --- 4. no note is written from a stale record --------------------------------------------------------------


def _draft(api: Api, settings: Settings, token: str, sid: uuid.UUID, client: str) -> str:
    r = api.client.post(f"/v1/sessions/{sid}/notes", json={"format": "soap", "client_id": client}, headers=H(token))
    assert r.status_code == 202, r.text
    return str(r.json()["note_id"])


def _quotes(settings: Settings, note_id: str) -> list[tuple[str, str]]:
    with db_session(settings.database_url or "") as db:
        return [(c.segment_id, c.quote) for c in db.execute(
            select(NoteCitation).where(NoteCitation.note_id == uuid.UUID(note_id))).scalars()]


def _words_of(segments: list[dict[str, Any]], speaker: str) -> list[str]:
    return [str(s["text"]) for s in segments if s["speaker"] == speaker]


def test_a_note_run_racing_a_speaker_fix_is_written_from_the_new_record_only(
        api: Api, settings: Settings, alice: str, monkeypatch: pytest.MonkeyPatch) -> None:
    sid = ready_session(settings, COUPLE, speakers=SWAPPED, therapist="Alice", clinic="North Clinic")
    before, _ = record_of(settings, sid, "sam")
    alex_words = _words_of(before, "sam")  # heard as Sam's, said by Alex
    note_id = _draft(api, settings, alice, sid, "sam")

    from verbatim.notes import repo as notes_repo

    saved = notes_repo.NoteRepo.save_section
    fixed = []

    def save_then_fix(self: notes_repo.NoteRepo, *args: Any, **kwargs: Any) -> None:
        saved(self, *args, **kwargs)
        if not fixed:  # the clinician names the voices right after section 1 is saved
            fixed.append(api.client.put(f"/v1/sessions/{sid}/speakers", json={"speakers": RIGHT}, headers=H(alice)))

    monkeypatch.setattr(notes_repo.NoteRepo, "save_section", save_then_fix)
    run_note(build_context(settings), uuid.UUID(note_id))
    assert fixed and fixed[0].status_code == 200, fixed[0].text
    note = api.client.get(f"/v1/notes/{note_id}", headers=H(alice)).json()
    assert note["status"] == "draft"
    after, version = record_of(settings, sid, "sam")
    assert note["transcript_version"] == version and not note["stale"]
    quotes = " ".join(q for _, q in _quotes(settings, note_id))
    text = " ".join(s["text"] for sec in note["sections"] for s in sec["sentences"])
    for words in alex_words:
        assert words not in quotes and words not in text
    own = {s["id"] for s in after if s["speaker"] in ("therapist", "sam")}
    assert {seg for seg, _ in _quotes(settings, note_id)} <= own


def test_a_stale_draft_is_not_signed_until_confirmed_against_the_new_record(api: Api, settings: Settings,
                                                                           alice: str) -> None:
    sid = ready_session(settings, COUPLE, speakers=SWAPPED, therapist="Alice", clinic="North Clinic")
    swapped, _ = record_of(settings, sid, "sam")
    alex_said = {s["id"] for s in swapped if s["speaker"] == "sam"}  # Alex's turns, heard as Sam's
    note_id = _draft(api, settings, alice, sid, "sam")
    run_note(build_context(settings), uuid.UUID(note_id))
    cited = {seg for seg, _ in _quotes(settings, note_id)}
    assert cited & alex_said, "the draft should rest on the turns heard as Sam's"

    assert api.client.put(f"/v1/sessions/{sid}/speakers", json={"speakers": RIGHT}, headers=H(alice)).status_code \
        == 200
    note = api.client.get(f"/v1/notes/{note_id}", headers=H(alice)).json()
    assert note["stale"] and note["record_version"] == note["transcript_version"] + 1
    r = api.client.post(f"/v1/notes/{note_id}/sign", headers=H(alice))
    assert (r.status_code, r.json()["error"]) == (409, "stale_note")

    r = api.client.post(f"/v1/notes/{note_id}/confirm-record", headers=H(alice))
    assert r.status_code == 200, r.text
    confirmed = r.json()
    assert not confirmed["stale"]
    moved = [s for sec in confirmed["sections"] for s in sec["sentences"]
             if s["record_moved"] and s["label"] == "unsupported"]
    assert moved, "sentences resting on Alex's words are marked unsupported"
    assert not {seg for seg, _ in _quotes(settings, note_id)} & alex_said
    for sec in confirmed["sections"]:
        for s in sec["sentences"]:
            assert not {c["segment_id"] for c in s["citations"]} & alex_said
    with db_session(settings.database_url or "") as db:
        assert "note_record_confirmed" in db.execute(select(AuditEntry.action).where(
            AuditEntry.session_id == sid)).scalars().all()
    # Signing now asks for a decision on each flagged sentence (those included): remove them.
    r = api.client.post(f"/v1/notes/{note_id}/sign", headers=H(alice))
    if r.status_code == 409 and r.json()["error"] == "needs_review":
        refs = [{"section": f["section"], "sentence": f["sentence"]} for f in r.json()["flagged"]]
        r = api.client.post(f"/v1/notes/{note_id}/sign", json={"remove": refs, "version": r.json()["version"]},
                            headers=H(alice))
    assert r.status_code == 200, r.text


# --- 5. a withdrawal and a signature in between ----------------------------------------------------------


def test_a_note_signed_while_the_withdrawal_waits_blocks_the_withdrawal(api: Api, settings: Settings,
                                                                        alice: str) -> None:
    sid = ready_session(settings, DIALOGUE, therapist="Alice", clinic="North Clinic")
    note_id = _draft(api, settings, alice, sid, "client")
    run_note(build_context(settings), uuid.UUID(note_id))
    with holding(settings, sid) as conn:
        door = Door(lambda: api.client.delete(f"/v1/sessions/{sid}", headers=H(alice)))
        wait_blocked(settings, door)
        # A signature committing while the withdrawal waits on the session.
        conn.execute("UPDATE notes SET status = 'signed', signed_at = now(), signed_by = therapist_id "
                     "WHERE id = %s", (uuid.UUID(note_id),))
    r = door.result()
    assert (r.status_code, r.json()["error"]) == (409, "signed_note")
    with db_session(settings.database_url or "") as db:
        row = db.get(Session, sid)
        assert row is not None and row.status == "ready" and row.raw_turns
        assert db.get(Note, uuid.UUID(note_id)) is not None
