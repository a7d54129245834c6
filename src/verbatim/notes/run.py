"""The note run: the second kind of durable run (DESIGN.md "The note run").

The core (``verbatim.durable.core``) does the lease, the count and fencing token, the run
bound and deadline, the drain and the due time; this module is the steps: draft the next
section, checkpoint it (fenced), … , then the risk flags and version 1. A run cut off after
section k resumes at section k+1. Past ``polished_runs`` runs the model writer is not called
again: the offline drafter writes the remaining sections (a plain draft beats no draft).
"""

from __future__ import annotations

import uuid
from typing import Any

import structlog
from sqlalchemy.orm import Session as OrmSession

from verbatim import keys
from verbatim.crash import crash_point
from verbatim.db.engine import db_session
from verbatim.durable.core import SUBJECT_GONE, DurableRuns, Limits, Outcome, Ticket
from verbatim.durable.services import Services
from verbatim.errors import RecordMoved, RunStopped, VerbatimError
from verbatim.leases import Lease
from verbatim.notes.drafter import OfflineDrafter, Writer
from verbatim.notes.evidence import units
from verbatim.notes.repo import NOTE, NoteRepo, NoteState
from verbatim.notes.risk import flags

log = structlog.get_logger("verbatim.notes")

NoteTicket = Ticket[NoteState]
#: how many times one run starts its draft again because the record moved under it
RECORD_RESTARTS = 3


class NoteRun:
    """The note run as a kind of durable run (see ``verbatim.durable.core.RunKind``)."""

    name = NOTE
    log_key = "note_id"

    def __init__(self, ctx: Services, repo: NoteRepo, model: Writer | None = None):
        self.ctx = ctx
        self.repo = repo
        self.model = model
        self.offline = OfflineDrafter()

    def load(self, db: OrmSession, subject_id: uuid.UUID) -> NoteState | None:
        return self.repo.load(db, subject_id)

    def gone(self, state: NoteState) -> str | None:
        return state.gone

    def writer(self, run: int) -> Writer:
        """The model writer while runs ≤ ``polished_runs`` (if configured), else the offline drafter."""
        if self.model is not None and run <= self.ctx.settings.polished_runs:
            return self.model
        return self.offline

    def steps(self, ticket: NoteTicket, lease: Lease) -> Outcome:
        state = ticket.state
        for _ in range(RECORD_RESTARTS):
            try:
                return self._draft(ticket, lease, state)
            except RecordMoved:
                # The record changed under the run (a speaker fix, a correction): start again from the
                # new version, never mixing sections of two.
                log.info("note_record_moved")
                with db_session(self.repo.url) as db:
                    fresh = self.repo.load(db, ticket.subject_id)
                if fresh is None:
                    return Outcome.NOTHING
                if fresh.gone is not None:
                    # Withdrawn or expired meanwhile: end the note as the core ends a subject gone.
                    log.warning("run_subject_gone")
                    self.give_up(ticket, SUBJECT_GONE, fresh.gone)
                    return Outcome.FAILED
                state = fresh
        # The record keeps moving (a clinician at work on it): come back once it has settled.
        return Outcome.RETRY_LATER

    def _draft(self, ticket: NoteTicket, lease: Lease, state: NoteState) -> Outcome:
        items = units(state.segments, state.client_id)
        writer = self.writer(ticket.run)
        for index in range(len(state.done), len(state.sections)):
            lease.check()
            self.ctx.cancel.check()
            section = self._section(writer, state, index, items)
            self.repo.save_section(ticket.subject_id, ticket.fence, index, section, writer.name,
                                   state.transcript_version)
            log.info("note_section_saved", section=index + 1, of=len(state.sections), writer=writer.name)
            crash_point(f"after_note_section_{index + 1}")
        lease.check()
        # the risk check reads everything said: the words either side of an inaudible gap too (``units``' ``spoken``)
        risk = flags(units(state.segments, state.client_id, spoken=True))
        self.repo.finish(ticket.subject_id, ticket.fence, ticket.run, state.session_id, risk,
                         state.transcript_version)
        return Outcome.READY

    def _section(self, writer: Writer, state: NoteState, index: int, items: list[Any]) -> dict[str, Any]:
        """Section ``index`` by ``writer``, marked with who wrote it (the note records its writers)."""
        def write() -> dict[str, Any]:
            return writer.section(state.sections, index, items, state.known_names)

        try:
            return {**self.ctx.cancel.bounded(write), "writer": writer.name}
        except VerbatimError as exc:
            if writer is self.offline or isinstance(exc, RunStopped):
                raise
            # The model failed this section: the offline drafter writes it (cited, verified).
            log.warning("note_writer_failed", writer=writer.name, error=f"{type(exc).__name__}: {exc}"[:200])
            return {**self.offline.section(state.sections, index, items), "writer": self.offline.name}

    def give_up(self, ticket: NoteTicket, code: str, detail: str) -> None:
        self.repo.fail(ticket.subject_id, ticket.fence, ticket.run, ticket.state.session_id, code)

    def event(self, ticket: NoteTicket, kind: str, failure_code: str | None, detail: dict[str, Any]) -> None:
        self.repo.add_event(ticket.state.session_id, ticket.run, kind, failure_code,
                            {**detail, "note_id": str(ticket.subject_id)})

    def requeue(self, subject_id: uuid.UUID) -> None:
        self.ctx.queue.enqueue_note(subject_id)

    def after(self, ticket: NoteTicket, outcome: Outcome) -> None:
        """Nothing to deliver: the clinician reads the note's status (GET, or the batch's progress)."""


def note_lease(note_id: uuid.UUID) -> str:
    """The lease key of a note's runs."""
    return keys.run_lease(NOTE, note_id)


def note_runs(ctx: Services, model: Writer | None = None) -> DurableRuns[NoteState]:
    """The durable-run executor for note runs with this process's settings."""
    s = ctx.settings
    limits = Limits(
        max_runs=s.max_runs, deadline_s=s.note_deadline_s, lease_ttl_s=s.lease_ttl_s, heartbeat_s=s.heartbeat_s,
        retry_later_s=s.retry_later_s, teardown_budget_s=s.teardown_budget_s,
        teardown_attempt_timeout_s=s.teardown_attempt_timeout_s,
    )
    repo = NoteRepo(ctx.repo.url)
    return DurableRuns(NoteRun(ctx, repo, model), repo.runs, ctx.redis, limits, note_lease, holder=s.worker_name)


def run_note(ctx: Services, note_id: uuid.UUID) -> Outcome:
    """Execute one note run for ``note_id``; never raises for expected faults."""
    model = None
    if ctx.settings.note_writer == "openai":
        from verbatim.notes.openai_writer import make_writer

        model = make_writer(ctx.settings)
    return note_runs(ctx, model).execute(note_id)
