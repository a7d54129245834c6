"""A seeded explorer of the whole promise: random interleavings of every door, checked after every step.

The world is real PostgreSQL and Redis, the real API (in-process, through its HTTP interface),
real capture, note and sweep code run in this process, and an in-process recognizer keeping the
Speechmatics client's contract (``tests/explorer/vendor.py``). A rule is one step a person, a
worker or the clock takes: an upload, a capture-run step (crashing at a named point, or not), a
vendor fault, a Redis flush, a speaker remap, a segment correction, a suggestion's review, a note
request, a note-run step (crashing after a section, or not), a signature, an amendment, a
confirmation against the record, a withdrawal, a retention expiry, a key rotation, a sweep tick,
time moving on. After every step the invariants (DESIGN.md round 3, a–g) are checked.

A crash is simulated in-process: the crash point raises ``Crash`` (a BaseException: no ``except
Exception`` of the run sees it), which is what a SIGKILL there leaves behind once its lease has
expired — the explorer's time always moves past a dead run's lease.

Words: every scripted speaker says tokens of their own (``t<session>x<speaker>y<n>``), so any
token in a client's record or note can be traced to the label that said it; the label's role is
the explorer's model (the roles published, then every remap that succeeded).
"""

from __future__ import annotations

import io
import json
import random
import re
import threading
import time
import uuid
import wave
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis
from fastapi.testclient import TestClient
from sqlalchemy import select, text, update
from sqlalchemy.engine import make_url

from tests.explorer.proxy import Proxy
from tests.explorer.shrink import Step, ddmin, render
from tests.explorer.vendor import FakeVendor, Line
from tests.factories import token_for
from verbatim import crash as crash_module
from verbatim.api.app import create_app
from verbatim.config import Settings
from verbatim.db.engine import db_session
from verbatim.db.models import AuditEntry, Note, NoteCitation, NoteVersion, SegmentEdit, Session, Transcript
from verbatim.durable.core import Outcome
from verbatim.keys import run_lease
from verbatim.notes.run import run_note
from verbatim.pipeline.run import run_capture
from verbatim.pipeline.sweeps import tick
from verbatim.reliability.analysis import analyse
from verbatim.reliability.models import ReliabilitySuggestion
from verbatim.reliability.suggestions import create_suggestions
from verbatim.reliability.sweep import complete_request
from verbatim.runtime import build_context

TOKEN = re.compile(r"t(\d+)x(\d+)y\d+", re.I)
CAPTURE_POINTS = ("after_submit", "after_job_saved", "mid_poll", "after_turns_fetched", "after_checkpoint",
                  "mid_polish", "after_publish")
ACTIVE = ("queued", "recognizing", "checkpointed", "publishing", "parked")
#: how long an outage of our own server lasts (seconds): a restart, a failover
OUTAGE_S = 1.5
#: outcomes of a run that did its work or ended its subject for good: counting them is right
SETTLED = (Outcome.READY, Outcome.PARKED, Outcome.FAILED, Outcome.BLOCKED, Outcome.INTERRUPTED, Outcome.NOTHING,
           Outcome.BUSY)


class Crash(BaseException):
    """The process died at a crash point (simulated; see the module docstring)."""


class Violation(AssertionError):
    """Raised when an invariant does not hold after a step."""

    @property
    def kind(self) -> str:
        """What broke, to tell the same failure from another while shrinking: ``(c)``, or the first words."""
        text_ = str(self).split("\n", 1)[0]
        m = re.search(r"\(([a-g])\)", text_)
        return f"({m.group(1)})" if m else " ".join(text_.split(":", 1)[0].split()[:4])


def _wav(seconds: float = 1.0) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\x00\x10" * int(8000 * seconds))
    return buf.getvalue()


@dataclass
class Tracked:
    """The explorer's model of one session."""

    n: int
    sid: uuid.UUID
    clients: list[str]
    script: list[Line]
    roles: dict[str, str] = field(default_factory=dict)  #: label → role, per the explorer's model
    history: dict[int, dict[str, str]] = field(default_factory=dict)  #: record version → roles then


@dataclass
class Report:
    steps: int = 0
    rules: Counter[str] = field(default_factory=Counter)
    invariants: Counter[str] = field(default_factory=Counter)
    trace: list[Step] = field(default_factory=list)  #: every step taken, to replay and shrink
    seconds: Counter[str] = field(default_factory=Counter)  #: wall-clock milliseconds per rule (a bench figure)
    findings: Counter[str] = field(default_factory=Counter)  #: what went wrong but was recovered from


class World:
    """One explored world over ``settings`` (its database and Redis are the explorer's alone)."""

    def __init__(self, settings: Settings, admin_url: str, seed: int, on_close: Callable[[], None] | None = None):
        self.chooser = random.Random(seed)  #: picks each step's rule and the seed of its own choices
        self.rng = random.Random(seed)  #: a rule's own choices (re-seeded per step: a step replays alone)
        self.on_close = on_close
        # Our own servers behind proxies the explorer cuts (the admin URL, the explorer's own eyes, is direct).
        pg, rd = make_url(settings.database_url or ""), make_url(settings.redis_url or "")
        self.eyes = redis.Redis.from_url(settings.redis_url or "")  #: the explorer's own look at Redis (direct)
        self.proxies = {"postgres": Proxy(pg.host or "127.0.0.1", pg.port or 5432),
                        "redis": Proxy(rd.host or "127.0.0.1", rd.port or 6379)}
        settings = settings.model_copy(update={
            "database_url": pg.set(port=self.proxies["postgres"].port).render_as_string(hide_password=False),
            "redis_url": rd.set(port=self.proxies["redis"].port).render_as_string(hide_password=False)})
        self.settings = settings
        self.admin_url = admin_url
        self.outage_at: tuple[str, str] | None = None  #: (server, point): cut it when the run reaches the point
        self.outage_fired = False
        self.ctx = build_context(settings)
        self.vendor = FakeVendor(polls=0)
        self.vendor.install(self.ctx.recognizer)
        self.api = TestClient(create_app(settings))
        self.api.__enter__()  # the app's lifespan: its services
        self.token = token_for(settings.model_copy(update={"database_url": admin_url}), "Explorer", "Clinic E")
        self.sessions: dict[uuid.UUID, Tracked] = {}
        self.notes: dict[uuid.UUID, uuid.UUID] = {}  #: note id → session id
        self.signed: dict[uuid.UUID, Any] = {}  #: note id → the signed body the explorer last saw
        self.report = Report()
        self.crash_at: str | None = None
        self.timers: list[threading.Timer] = []

    def close(self) -> None:
        self.settle_outage()
        self.api.__exit__(None, None, None)
        self.ctx.redis.close()
        self.eyes.close()
        for proxy in self.proxies.values():
            proxy.close()
        if self.on_close is not None:
            self.on_close()

    def begin_outage(self, server: str) -> None:
        """Cut ``server`` now and bring it back OUTAGE_S later (a restart, a failover)."""
        self.outage_fired = True
        proxy = self.proxies[server]
        proxy.cut()
        timer = threading.Timer(OUTAGE_S, proxy.restore)
        timer.daemon = True
        timer.start()
        self.timers.append(timer)

    # --- plumbing ------------------------------------------------------------------------
    def h(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.token}"}

    @contextmanager
    def crashing(self, point: str | None) -> Iterator[None]:
        """Arm one crash point for the call inside (every module that imported crash_point sees it)."""
        self.crash_at = point

        def fire(name: str) -> None:
            if self.outage_at is not None and name == self.outage_at[1]:
                server, _ = self.outage_at
                self.outage_at = None
                self.begin_outage(server)
            if self.crash_at is not None and (name == self.crash_at):
                self.crash_at = None
                raise Crash(name)

        modules = _crash_modules()
        saved = [(m, m.crash_point) for m in modules]
        for m in modules:
            m.crash_point = fire
        try:
            yield
        except Crash:
            pass
        finally:
            for m, f in saved:
                m.crash_point = f
            self.crash_at = None

    def db(self) -> Any:
        return db_session(self.admin_url)

    def pick(self, statuses: tuple[str, ...] | None = None) -> Tracked | None:
        ids = list(self.sessions)
        if not ids:
            return None
        if statuses is not None:
            with self.db() as db:
                ids = list(db.execute(select(Session.id).where(Session.id.in_(ids), Session.status.in_(statuses))
                                      ).scalars())
        return self.sessions[self.rng.choice(sorted(ids))] if ids else None

    def pick_note(self, statuses: tuple[str, ...]) -> uuid.UUID | None:
        with self.db() as db:
            ids = sorted(db.execute(select(Note.id).where(Note.id.in_(list(self.notes)), Note.status.in_(statuses))
                                    ).scalars())
        return self.rng.choice(ids) if ids else None

    def learn_roles(self, t: Tracked) -> None:
        """After a publish: the roles the system published become the model's (version 1's)."""
        with self.db() as db:
            row = db.get(Session, t.sid)
            version = db.execute(select(Transcript.version).where(Transcript.session_id == t.sid)).scalars().first()
        if row is not None and row.published_turns and not t.roles:
            t.roles = {turn["speaker"]: turn.get("role", "unassigned") for turn in row.published_turns}
        if version is not None:
            t.history.setdefault(int(version), dict(t.roles))

    def note_version(self, t: Tracked) -> None:
        with self.db() as db:
            version = db.execute(select(Transcript.version).where(Transcript.session_id == t.sid)).scalars().first()
        if version is not None:
            t.history[int(version)] = dict(t.roles)

    # --- rules ------------------------------------------------------------------------------
    def upload(self) -> None:
        n = len(self.sessions) + 1
        couples = self.rng.random() < 0.5
        clients = [f"c{n}a", f"c{n}b"] if couples else [f"c{n}a"]
        labels = ["S1", *[f"S{i + 2}" for i in range(len(clients))]]
        script: list[Line] = []
        for k in range(self.rng.randint(4, 8)):
            label = labels[k % len(labels)] if k < len(labels) else self.rng.choice(labels)
            words = [f"t{n}x{labels.index(label)}y{j}" for j in range(self.rng.randint(3, 6))]
            script.append((label, words))
        meta = {"client_ids": clients, "recorded_at": "2026-11-30T10:00:00Z",
                "session_type": "couples" if couples else "individual",
                "consent": {"obtained": True, "method": "verbal", "obtained_at": "2026-11-30T09:55:00Z"}}
        for attempt in range(3):
            r = self.api.post("/v1/sessions", files={"audio": ("s.wav", _wav(), "audio/wav")},
                              data={"metadata": json.dumps(meta)}, headers=self.h())
            if r.status_code != 422 or attempt == 2:
                break
            # A good recording refused: a finding (counted, printed by the bench) even when the retry passes.
            self.report.findings["good_upload_refused"] += 1
            self.report.findings[f"good_upload_refused: {r.text[:160]}"] += 1
        if r.status_code == 503 and "retry-after" in r.headers:
            return  # our own overload, said as such: the phone keeps the recording and tries again
        if r.status_code not in (200, 201, 202):
            raise Violation(f"a good upload was refused: {r.status_code} {r.text[:200]}")
        sid = uuid.UUID(r.json()["id"])
        self.vendor.scripts[str(sid)] = script
        self.sessions[sid] = Tracked(n, sid, clients, script)

    def capture_step(self) -> None:
        t = self.pick(ACTIVE)
        if t is None:
            return
        point = self.rng.choice((None, None, *CAPTURE_POINTS))
        before = self.runs_of("capture", t.sid)
        outcome = None
        with self.crashing(point):
            outcome = run_capture(self.ctx, t.sid)
        self.settle_outage()
        self.check_g("capture", t.sid, before, outcome)
        self.expire_leases()
        self.learn_roles(t)

    def vendor_fault(self) -> None:
        self.vendor.faults.append(self.rng.choice((429, 500, 503)))

    def vendor_slow(self) -> None:
        self.vendor.polls = self.rng.choice((0, 0, 1, 3))

    def redis_flush(self) -> None:
        self.eyes.flushdb()

    def remap(self) -> None:
        t = self.pick(("ready",))
        if t is None or not t.roles:
            return
        labels = sorted(t.roles)
        choices = ["therapist", *t.clients, "unassigned"]
        mapping = {label: self.rng.choice(choices) for label in labels}
        r = self.api.put(f"/v1/sessions/{t.sid}/speakers", json={"speakers": mapping}, headers=self.h())
        self.expect_audit(r, t, "speakers_corrected")
        if r.status_code == 200:
            t.roles = mapping
            self.note_version(t)

    def correct(self) -> None:
        t = self.pick(("ready",))
        if t is None or not t.roles:
            return
        index = self.rng.randrange(len(t.script))
        label = t.script[index][0]
        # The clinician's words for the turn: tokens of the same voice (a correction, not a new speaker).
        words = [f"t{t.n}x{int(label[1:]) - 1}y{self.rng.randint(100, 999)}" for _ in range(3)]
        r = self.api.put(f"/v1/sessions/{t.sid}/segments/seg-{index}", json={"text": " ".join(words)},
                         headers=self.h())
        self.expect_audit(r, t, "segment_corrected")
        if r.status_code == 200:
            self.note_version(t)

    def review(self) -> None:
        t = self.pick(("ready",))
        if t is None:
            return
        with self.db() as db:
            row = db.get(Session, t.sid)
            if row is not None and row.raw_turns and complete_request(db, t.sid):
                create_suggestions(db, t.sid, analyse(row.raw_turns, row.polished_turns or row.published_turns))
        with self.db() as db:
            ids = sorted(db.execute(select(ReliabilitySuggestion.id).where(
                ReliabilitySuggestion.session_id == t.sid)).scalars())
        if not ids:
            return
        move = self.rng.choice(("validate", "ignore", "revert"))
        r = self.api.post(f"/v1/suggestions/{self.rng.choice(ids)}/{move}", headers=self.h())
        self.expect_audit(r, t, "suggestion_reviewed")
        if r.status_code == 200:
            self.note_version(t)

    def note_request(self) -> None:
        t = self.pick(("ready",))
        if t is None:
            return
        client = self.rng.choice(t.clients)
        r = self.api.post(f"/v1/sessions/{t.sid}/notes", json={"format": "soap", "client_id": client},
                          headers=self.h())
        if r.status_code == 202:
            self.notes[uuid.UUID(r.json()["note_id"])] = t.sid
        elif r.status_code >= 500 and not (r.status_code == 503 and self.outage_fired):
            raise Violation(f"a note request answered {r.status_code}")

    def note_step(self) -> None:
        note_id = self.pick_note(("queued", "drafting"))
        if note_id is None:
            return
        point = self.rng.choice((None, None, "after_note_section_1", "after_note_section_2"))
        before = self.runs_of("note", note_id)
        outcome = None
        with self.crashing(point):
            outcome = run_note(self.ctx, note_id)
        self.settle_outage()
        self.check_g("note", note_id, before, outcome)
        self.expire_leases()

    def sign(self) -> None:
        note_id = self.pick_note(("draft",))
        if note_id is None:
            return
        if self.rng.random() < 0.3:
            self.api.post(f"/v1/notes/{note_id}/confirm-record", headers=self.h())
        r = self.api.post(f"/v1/notes/{note_id}/sign", headers=self.h())
        if r.status_code == 409 and r.json().get("error") == "needs_review":
            # The clinician decides each flagged sentence: keep some as written, remove the others.
            decision: dict[str, Any] = {"confirm": [], "remove": [], "version": r.json()["version"]}
            for f in r.json()["flagged"]:
                decision[self.rng.choice(("confirm", "remove"))].append(
                    {"section": f["section"], "sentence": f["sentence"]})
            r = self.api.post(f"/v1/notes/{note_id}/sign", json=decision, headers=self.h())
        if r.status_code == 200:
            self.signed[note_id] = self.body(note_id)
        elif r.status_code >= 500:
            raise Violation(f"signing answered {r.status_code}")

    def amend(self) -> None:
        note_id = self.pick_note(("signed",))
        if note_id is None:
            return
        note = self.api.get(f"/v1/notes/{note_id}", headers=self.h()).json()
        sections = [{"name": s["name"], "sentences": [x["text"] for x in s["sentences"]][:-1] or ["Reviewed."]}
                    for s in note["sections"]]
        r = self.amended(note_id, sections, "Corrected on review")
        if r.status_code == 200:
            self.signed[note_id] = self.body(note_id)

    def amended(self, note_id: str, sections: list[dict[str, Any]], reason: str) -> httpx.Response:
        """An amendment sent as a clinician would: asked to review its changed sentences (or told it takes out
        what the note said about risk), keep every one as written and send it again."""
        body: dict[str, Any] = {"sections": sections, "reason": reason}
        r = self.api.post(f"/v1/notes/{note_id}/amend", json=body, headers=self.h())
        if r.status_code == 409 and r.json().get("error") in ("needs_review", "removes_risk"):
            body["confirm"] = [{"section": f["section"], "sentence": f["sentence"]}
                               for f in r.json().get("flagged", [])]
            body["risk_acknowledged"] = [{"section": x["section"], "sentence": x["sentence"]}
                                         for x in r.json().get("risk_removed", [])]
            r = self.api.post(f"/v1/notes/{note_id}/amend", json=body, headers=self.h())
        if r.status_code >= 500:
            raise Violation(f"an amendment answered {r.status_code}")
        return r

    def withdraw(self) -> None:
        t = self.pick()
        if t is None or self.rng.random() < 0.5:
            return
        with self.db() as db:
            for note_id in db.execute(select(Note.id).where(Note.session_id == t.sid, Note.status == "signed")
                                      ).scalars():
                self.amended(note_id, [{"name": "Note", "sentences": ["Withdrawn at the client's request."]}],
                             "Session withdrawn")
                self.signed[note_id] = self.body(note_id)
        r = self.api.delete(f"/v1/sessions/{t.sid}", headers=self.h())
        if r.status_code >= 500:
            raise Violation(f"a withdrawal answered {r.status_code}")

    def expire(self) -> None:
        t = self.pick(("ready",))
        if t is None or self.rng.random() < 0.5:
            return
        with self.db() as db:
            db.execute(update(Session).where(Session.id == t.sid).values(
                finished_at=text("now() - interval '4000 days'")))
        from verbatim.pipeline.retention import expire_transcripts
        from verbatim.pipeline.sweeps import SweepReport

        expire_transcripts(self.ctx, SweepReport())

    def rotate_keys(self) -> None:
        from verbatim.sealed.rotate import rotate as reseal

        ring = self.ctx.recognizer.ring
        if ring is None or self.rng.random() < 0.7:
            return
        reseal([self.settings.audio_dir], ring)

    def sweep(self) -> None:
        tick(self.ctx)

    def outage(self) -> None:
        """PostgreSQL or Redis goes away — at once, or when a run reaches a named point — for OUTAGE_S."""
        server = self.rng.choice(("postgres", "redis"))
        rule = self.rng.choice(("capture_step", "capture_step", "note_step", "sweep", "remap"))
        if rule in ("capture_step", "note_step") and self.rng.random() < 0.7:
            points = CAPTURE_POINTS if rule == "capture_step" else ("after_note_section_1", "after_note_section_2")
            self.outage_at = (server, self.rng.choice(points))
        else:
            self.begin_outage(server)
        try:
            getattr(self, rule)()
        except Violation:
            raise
        finally:
            self.outage_at = None
            self.settle_outage()
            self.outage_fired = False

    def settle_outage(self) -> None:
        """End every outage now (it is over before the invariants are read).

        An outage lasts OUTAGE_S or until the step that saw it returns, whichever is first: once the
        step is done nothing of ours runs until the next one, so waiting out the rest of the 1.5 s
        would only make the soak slower (it was a fifth of its time).
        """
        for timer in self.timers:
            timer.cancel()
            timer.join()
        self.timers.clear()
        for proxy in self.proxies.values():
            proxy.restore()

    def runs_of(self, kind: str, subject: uuid.UUID) -> int:
        with self.db() as db:
            return int(db.execute(text("SELECT runs FROM durable_runs WHERE kind = :k AND subject_id = :s"),
                                  {"k": kind, "s": subject}).scalar_one_or_none() or 0)

    def check_g(self, kind: str, subject: uuid.UUID, before: int, outcome: Outcome | None) -> None:
        """(g): a run our own outage cut short is not counted (it ended neither done nor terminal)."""
        fired, self.outage_fired = self.outage_fired, False
        if not fired or outcome in (None, *SETTLED):
            return
        self.report.invariants["g_outage_not_counted"] += 1
        if self.runs_of(kind, subject) > before:
            raise Violation(f"(g) a {kind} run of {subject} cut short by our own outage ({outcome}) stayed counted")

    def advance(self) -> None:
        """Time moves on: every due time, deadline-free wait and parked look-up comes due."""
        with self.db() as db:
            db.execute(text("UPDATE durable_runs SET due_at = now() WHERE due_at > now()"))
            db.execute(text("UPDATE outbox SET next_attempt_at = now() WHERE next_attempt_at > now()"))
        self.expire_leases()

    def expire_leases(self) -> None:
        """No run is in flight between steps: any lease left is a dead run's, past its expiry."""
        for key in self.eyes.scan_iter(match="lease:*"):
            self.eyes.delete(key)

    def body(self, note_id: uuid.UUID) -> Any:
        with self.db() as db:
            note = db.get(Note, note_id)
            assert note is not None
            return db.execute(select(NoteVersion.body).where(NoteVersion.note_id == note_id,
                                                             NoteVersion.version == note.version)).scalar_one()

    def expect_audit(self, r: Any, t: Tracked, action: str) -> None:
        if r.status_code == 503 and "retry-after" in r.headers and self.outage_fired:
            return  # our own outage, said as such: nothing was changed
        if r.status_code >= 500:
            raise Violation(f"{action} answered {r.status_code}: {r.text[:200]}")
        if r.status_code != 200:
            return
        self.report.invariants["e_audited"] += 1
        with self.db() as db:
            rows = db.execute(select(AuditEntry.clinic_id).where(AuditEntry.session_id == t.sid,
                                                                 AuditEntry.action == action)).scalars().all()
            clinic = db.execute(select(Session.clinic_id).where(Session.id == t.sid)).scalar_one()
        if not rows or set(rows) != {clinic}:
            raise Violation(f"(e) {action} of {t.sid} has no audit row under its clinic")

    # --- invariants ----------------------------------------------------------------------
    def check(self) -> None:
        with self.db() as db:
            rows = {r.id: r for r in db.execute(select(Session).where(Session.id.in_(list(self.sessions)))).scalars()}
            records = list(db.execute(select(Transcript).where(Transcript.session_id.in_(list(rows)))).scalars())
            notes = list(db.execute(select(Note).where(Note.id.in_(list(self.notes)))).scalars())
            cites = list(db.execute(select(NoteCitation).where(NoteCitation.note_id.in_(list(self.notes)))).scalars())
            edits = {sid for (sid,) in db.execute(select(SegmentEdit.session_id))}
            suggestions = {sid for (sid,) in db.execute(select(ReliabilitySuggestion.session_id))}
            runs = {(k, s): (d, f) for k, s, d, f in db.execute(text(
                "SELECT kind, subject_id, due_at, fence FROM durable_runs"))}
            # Every note's current body in one query (one per note made the check a third of a step).
            bodies = {(i, v): b for i, v, b in db.execute(select(NoteVersion.note_id, NoteVersion.version,
                                                                 NoteVersion.body).join(
                Note, (Note.id == NoteVersion.note_id) & (Note.version == NoteVersion.version)).where(
                Note.id.in_(list(self.notes))))}
        current = {n.id: bodies.get((n.id, n.version)) for n in notes}
        self.check_a(rows)
        self.check_b(rows, records, notes, edits, suggestions)
        self.check_c(rows, records, notes, cites, current)
        self.check_d(rows, notes, runs)
        self.check_f(notes, current)

    def check_a(self, rows: dict[uuid.UUID, Session]) -> None:
        for sid, row in rows.items():
            self.report.invariants["a_never_none"] += 1
            if row.status in ("deleted", "failed") or row.transcript_expired_at is not None:
                continue
            audio = row.audio_path is not None and Path(row.audio_path).exists()
            if not (audio or row.vendor_job_id or row.raw_turns or row.published_turns):
                raise Violation(f"(a) session {sid} ({row.status}) has no audio, no job, no checkpoint, no record")
            if row.vendor_job_id and row.vendor_job_id not in self.vendor.jobs and not (audio or row.raw_turns) \
                    and row.status != "blocked":
                raise Violation(f"(a) session {sid}'s only copy, vendor job {row.vendor_job_id}, is gone")

    def check_b(self, rows: dict[uuid.UUID, Session], records: list[Transcript], notes: list[Note],
                edits: set[uuid.UUID], suggestions: set[uuid.UUID]) -> None:
        with_records = {r.session_id for r in records}
        drafts = {n.session_id for n in notes if n.status != "signed"}
        keys: list[bytes] | None = None  #: Redis's keys, read once per check (a SCAN per session was slow)
        for sid, row in rows.items():
            if row.status != "deleted" and row.transcript_expired_at is None:
                continue
            self.report.invariants["b_no_words"] += 1
            if keys is None:
                keys = list(self.eyes.scan_iter(count=1000))
            left = [what for what, there in (
                ("raw turns", row.raw_turns), ("published turns", row.published_turns),
                ("base turns", row.polished_turns), ("records", sid in with_records), ("corrections", sid in edits),
                ("suggestions", sid in suggestions), ("drafts", sid in drafts),
                ("words in Redis", self.redis_words(sid, keys))) if there]
            if left:
                raise Violation(f"(b) {row.status} session {sid} still holds {', '.join(left)}")

    def redis_words(self, sid: uuid.UUID, keys: list[bytes]) -> bool:
        """Whether any of ``keys`` (Redis's) naming the session holds a scripted word."""
        name = str(sid).encode()
        for key in (k for k in keys if name in k):
            kind = self.eyes.type(key)
            value = str(self.eyes.hgetall(key) if kind == b"hash" else
                        self.eyes.get(key) if kind == b"string" else "")
            if _tokens(value):
                return True
        return False

    def _said_by(self, t: Tracked, token: str) -> str:
        m = TOKEN.fullmatch(token)
        assert m is not None
        return f"S{int(m.group(2)) + 1}"

    def check_c(self, rows: dict[uuid.UUID, Session], records: list[Transcript], notes: list[Note],
                cites: list[NoteCitation], bodies: dict[uuid.UUID, Any]) -> None:
        for record in records:
            t = self.sessions[record.session_id]
            roles = t.history.get(record.version)
            if roles is None:
                continue  # a version the explorer did not make (a publish it has not seen yet)
            self.report.invariants["c_record_own_words"] += 1
            for seg in record.segments:
                for token in _tokens(seg["text"]):
                    label = self._said_by(t, token)
                    if roles.get(label) not in ("therapist", record.client_id):
                        raise Violation(f"(c) {record.client_id}'s record (v{record.version}) holds {token}, "
                                        f"said by {label} ({roles.get(label)})")
        by_note: dict[uuid.UUID, list[str]] = {}
        for c in cites:
            by_note.setdefault(c.note_id, []).append(c.quote)
        for note in notes:
            t = self.sessions[note.session_id]
            roles = t.history.get(note.transcript_version or -1)
            if roles is None or note.version == 0:
                continue
            self.report.invariants["c_note_own_words"] += 1
            body = bodies.get(note.id) or {}
            words = " ".join([*by_note.get(note.id, []), *(s["text"] for sec in body.get("sections", [])
                                                           for s in sec.get("sentences", []))])
            for token in _tokens(words):
                label = self._said_by(t, token)
                if roles.get(label) not in ("therapist", note.client_id):
                    raise Violation(f"(c) {note.client_id}'s note {note.id} holds {token}, said by {label}")

    def check_d(self, rows: dict[uuid.UUID, Session], notes: list[Note], runs: dict[Any, Any]) -> None:
        for sid, row in rows.items():
            if row.status not in ACTIVE:
                continue
            self.report.invariants["d_due_or_leased"] += 1
            due = runs.get(("capture", sid), (None, None))[0]
            if due is None and not self.eyes.exists(run_lease("capture", sid)):
                raise Violation(f"(d) session {sid} is {row.status} with no due time and no lease")
        for note in notes:
            if note.status not in ("queued", "drafting"):
                continue
            self.report.invariants["d_due_or_leased"] += 1
            due = runs.get(("note", note.id), (None, None))[0]
            if due is None and not self.eyes.exists(run_lease("note", note.id)):
                raise Violation(f"(d) note {note.id} is {note.status} with no due time and no lease")

    def check_f(self, notes: list[Note], bodies: dict[uuid.UUID, Any]) -> None:
        for note in notes:
            if note.id not in self.signed or note.status != "signed":
                continue
            self.report.invariants["f_signed_unchanged"] += 1
            if bodies.get(note.id) != self.signed[note.id]:
                raise Violation(f"(f) signed note {note.id} changed without an amendment")

    # --- the loop --------------------------------------------------------------------------
    RULES: tuple[tuple[str, int], ...] = (
        ("upload", 6), ("capture_step", 14), ("vendor_fault", 2), ("vendor_slow", 2), ("redis_flush", 1),
        ("remap", 6), ("correct", 5), ("review", 4), ("note_request", 6), ("note_step", 8), ("sign", 4),
        ("amend", 2), ("withdraw", 2), ("expire", 2), ("rotate_keys", 1), ("sweep", 5), ("advance", 3),
        ("outage", 2),
    )

    def step(self, step: Step | None = None) -> Step:
        """Take ``step`` (a recorded ``(rule, seed)``), or a new one the chooser picks; returns it."""
        if step is None:
            names = [n for n, _ in self.RULES]
            name = self.chooser.choices(names, weights=[w for _, w in self.RULES])[0]
            if not self.sessions:
                name = "upload"
            step = (name, self.chooser.getrandbits(32))
        name, seed = step
        self.rng = random.Random(seed)
        self.report.trace.append(step)
        started = time.monotonic()
        getattr(self, name)()
        self.report.seconds[name] += round((time.monotonic() - started) * 1000)
        self.report.rules[name] += 1
        self.report.steps += 1
        self.check()
        return step


def _tokens(words: str) -> list[str]:
    return [m.group(0).lower() for m in TOKEN.finditer(words)]


def _crash_modules() -> list[Any]:
    import sys

    return [m for name, m in list(sys.modules.items()) if name.startswith("verbatim.") and m is not None
            and getattr(m, "crash_point", None) is crash_module.crash_point]


def explorer_settings(admin_url: str, redis_url: str, data_dir: Path) -> Settings:
    """The settings of an explored world: FAST timings, the runtime role, a recognizer the explorer fakes."""
    from tests.conftest import FAST
    from verbatim.config import load_settings
    from verbatim.db.roles import runtime_url

    return load_settings(**{**FAST, "database_url": runtime_url(admin_url), "redis_url": redis_url,
                            "recognizer_url": "http://vendor.invalid/v2", "recognizer_api_key": "k",
                            "data_dir": data_dir, "log_json": True})


def replay(world_of: Callable[[int], World], steps: list[Step]) -> Violation | None:
    """Take ``steps`` in a fresh world from ``world_of``; the first Violation, or None."""
    world = world_of(0)
    try:
        for step in steps:
            try:
                world.step(step)
            except Violation as exc:
                return exc
    finally:
        world.close()
    return None


def shrink(fresh: Callable[[int], World], steps: list[Step], violation: Violation, budget_s: float = 600.0,
           budget: int = 200) -> list[Step]:
    """The fewest of ``steps`` (ddmin, each candidate replayed in a fresh world) still breaking ``violation``'s
    invariant, within ``budget`` replays and ``budget_s`` seconds (then the smallest failing one seen)."""
    deadline = time.monotonic() + budget_s

    def fails(candidate: list[Step]) -> bool:
        if time.monotonic() > deadline:
            return False
        found = replay(fresh, candidate)
        return found is not None and found.kind == violation.kind

    return ddmin(steps, fails, budget=budget)


def explore(world_of: Callable[[int], World], seeds: list[int], steps: int,
            fresh: Callable[[int], World] | None = None, shrink_s: float = 600.0) -> Report:
    """Run ``steps`` steps per seed; raises Violation (with the seed and the last steps) at the first break.

    With ``fresh`` (worlds on a database, Redis and folder of their own, each new), the failing
    run's steps are shrunk first (``shrink``, at most ``shrink_s`` seconds) and the Violation's
    message ends with the shrunk steps as a list literal (``render``) for the regression test.
    """
    total = Report()
    for seed in seeds:
        world = world_of(seed)
        failure: Violation | None = None
        try:
            for _ in range(steps):
                try:
                    world.step()
                except Violation as exc:
                    failure = exc
                    break
        finally:
            world.close()
        if failure is not None:
            trace = list(world.report.trace)
            message = (f"seed {seed}, step {len(trace)}: {failure}\n"
                       f"last steps: {[name for name, _ in trace[-15:]]}")
            if fresh is not None:
                try:
                    shrunk = shrink(fresh, trace, failure, budget_s=shrink_s)
                    message += f"\nshrunk from {len(trace)} to {len(shrunk)} steps: {render(shrunk)}"
                except Exception as exc:  # noqa: BLE001 - the violation stands; its shrinking broke
                    message += f"\nshrinking failed ({type(exc).__name__}: {exc}); all steps: {render(trace)}"
            raise Violation(message) from failure
        total.steps += world.report.steps
        total.rules.update(world.report.rules)
        total.invariants.update(world.report.invariants)
        total.seconds.update(world.report.seconds)
        total.findings.update(world.report.findings)
    return total
