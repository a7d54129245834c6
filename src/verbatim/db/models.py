"""PostgreSQL schema: the source of truth. Redis holds only what can be rebuilt from here.

``alembic upgrade head`` must produce exactly this schema (tests/integration/test_migrations.py).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, UUID
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


def _uuid() -> Mapped[uuid.UUID]:
    return mapped_column(UUID(as_uuid=True), primary_key=True, default=uuid.uuid4)


def _now() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), nullable=False, server_default=func.now())


class Clinic(Base):
    """A practice; therapists belong to one. ``transcript_retention_days``: how long its transcripts
    are kept once ready (NULL: the ``VERBATIM_TRANSCRIPT_RETENTION_DAYS`` default)."""

    __tablename__ = "clinics"
    id: Mapped[uuid.UUID] = _uuid()
    name: Mapped[str] = mapped_column(String(200), nullable=False, unique=True)
    transcript_retention_days: Mapped[int | None] = mapped_column(Integer)
    #: how long its signed notes are kept (a clinical record: years, not days; NULL: the
    #: ``VERBATIM_NOTE_RETENTION_DAYS`` default), counted from signing, independent of the transcript's
    note_retention_days: Mapped[int | None] = mapped_column(Integer)
    #: IANA time zone of the clinic (exports print the time of service in it; NULL: UTC)
    time_zone: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = _now()


class Therapist(Base):
    """A clinician who records sessions and reads their transcripts."""

    __tablename__ = "therapists"
    __table_args__ = (UniqueConstraint("clinic_id", "name", name="uq_therapists_clinic_name"),)
    id: Mapped[uuid.UUID] = _uuid()
    clinic_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("clinics.id"), nullable=False)
    name: Mapped[str] = mapped_column(String(200), nullable=False)
    #: a trainee: their signed notes also need a supervisor's co-signature to be final
    requires_cosign: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default=text("false"))
    #: the trainee's named supervisor (set by the clinic admin): the only therapist who co-signs their notes
    supervisor_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("therapists.id", name="fk_therapists_supervisor"))
    #: how exports name the clinician ("Dana Reyes", "LCSW"); NULL: ``name``, no credentials
    display_name: Mapped[str | None] = mapped_column(String(200))
    credentials: Mapped[str | None] = mapped_column(String(100))
    created_at: Mapped[datetime] = _now()


class ApiToken(Base):
    """A bearer token, stored as its SHA-256 only. Scope: therapist, clinic_admin or admin."""

    __tablename__ = "api_tokens"
    id: Mapped[uuid.UUID] = _uuid()
    token_hash: Mapped[str] = mapped_column(String(64), nullable=False, unique=True)
    scope: Mapped[str] = mapped_column(String(20), nullable=False)
    therapist_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("therapists.id"))
    clinic_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("clinics.id"))
    created_at: Mapped[datetime] = _now()
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Session(Base):
    """One recorded therapy session and everything a capture run needs to resume it.

    Its capture runs are counted and fenced in ``durable_runs`` (kind ``capture``): every
    write of a run is conditional on that row's fencing token. ``raw_turns`` is the
    checkpoint: the speaker turns exactly as the recognizer gave them.
    """

    __tablename__ = "sessions"
    __table_args__ = (
        UniqueConstraint("therapist_id", "idempotency_key", name="uq_sessions_therapist_idempotency"),
        # The stalled-session sweep reads only sessions with work outstanding: a partial index
        # keeps it cheap however many finished sessions pile up.
        Index(
            "ix_sessions_active",
            "updated_at",
            postgresql_where=text("status IN ('queued', 'recognizing', 'checkpointed', 'publishing')"),
        ),
        Index("ix_sessions_therapist_created", "therapist_id", "created_at"),
    )
    id: Mapped[uuid.UUID] = _uuid()
    therapist_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("therapists.id"), nullable=False)
    clinic_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("clinics.id"), nullable=False)
    status: Mapped[str] = mapped_column(String(20), nullable=False, server_default="queued")
    client_ids: Mapped[list[str]] = mapped_column(JSONB, nullable=False)
    recorded_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    session_type: Mapped[str] = mapped_column(String(20), nullable=False)
    consent: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    idempotency_key: Mapped[str | None] = mapped_column(String(200))
    # the recording on our volume (None once deleted)
    audio_path: Mapped[str | None] = mapped_column(Text)
    audio_sha256: Mapped[str] = mapped_column(String(64), nullable=False)
    audio_bytes: Mapped[int] = mapped_column(BigInteger, nullable=False)
    audio_duration_s: Mapped[float] = mapped_column(Float, nullable=False)
    audio_format: Mapped[str] = mapped_column(String(40), nullable=False)
    # capture-run bookkeeping (runs, fencing token and due time live in ``durable_runs``)
    polished: Mapped[bool | None] = mapped_column(Boolean)
    failure_code: Mapped[str | None] = mapped_column(String(60))
    failure_detail: Mapped[str | None] = mapped_column(Text)
    vendor_job_id: Mapped[str | None] = mapped_column(String(100))
    vendor_submitted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # JSONB(none_as_null): Python None is SQL NULL, never the JSON value null.
    raw_turns: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONB(none_as_null=True))
    # the published turns (polished text, speaker labels) from which the per-client split is made
    published_turns: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONB(none_as_null=True))
    # the turns as the publish step rendered them (polished text, label, role): the base every
    # change of the record rebuilds from (``verbatim.record``); written only there
    polished_turns: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONB(none_as_null=True))
    speaker_map: Mapped[dict[str, str] | None] = mapped_column(JSONB)
    created_at: Mapped[datetime] = _now()
    updated_at: Mapped[datetime] = _now()
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # when the retention sweep deleted the transcript (its clinic's retention had passed)
    transcript_expired_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # a recording that stopped arriving, finished with what arrived (``verbatim.api.recordings``):
    # {"reason": "stalled" | "finished", "held_s", "last_byte_at"}; None for a whole recording
    partial_recording: Mapped[dict[str, Any] | None] = mapped_column(JSONB)


class Transcript(Base):
    """A published transcript: one per client id of the session (couples/family split).

    Each segment carries a stable ``id`` (``seg-{n}``: the n-th recognized turn; every
    republish keeps one segment per recognized turn, in order, so an id names the same words
    across corrections). ``version`` counts publishes and corrections (1 = first publish); a
    note records the version it was drafted from.
    """

    __tablename__ = "transcripts"
    __table_args__ = (UniqueConstraint("session_id", "client_id", name="uq_transcripts_session_client"),)
    id: Mapped[uuid.UUID] = _uuid()
    session_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("sessions.id"), nullable=False)
    client_id: Mapped[str] = mapped_column(String(200), nullable=False)
    segments: Mapped[list[dict[str, Any]]] = mapped_column(JSONB, nullable=False)
    polished: Mapped[bool] = mapped_column(Boolean, nullable=False)
    version: Mapped[int] = mapped_column(Integer, nullable=False, server_default="1")
    created_at: Mapped[datetime] = _now()


class VendorSubmission(Base):
    """Submission ledger: one row written *before* each vendor submit, so an orphan job can be found."""

    __tablename__ = "vendor_submissions"
    id: Mapped[uuid.UUID] = _uuid()
    session_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("sessions.id"), nullable=False, index=True)
    run: Mapped[int] = mapped_column(Integer, nullable=False)
    vendor_job_id: Mapped[str | None] = mapped_column(String(100))
    submitted_at: Mapped[datetime] = _now()
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    delete_reason: Mapped[str | None] = mapped_column(String(40))
    #: SHA-256 of the per-job secret the recognizer's notification carries (None: no notification asked)
    callback_secret_sha256: Mapped[bytes | None] = mapped_column(LargeBinary)
    notified_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))  #: first valid notification


class SessionEvent(Base):
    """What happened to a session, in order: the therapist-facing log (ready, failed, interrupted…)."""

    __tablename__ = "session_events"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    session_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("sessions.id"), nullable=False, index=True)
    run: Mapped[int] = mapped_column(Integer, nullable=False)
    kind: Mapped[str] = mapped_column(String(40), nullable=False)
    failure_code: Mapped[str | None] = mapped_column(String(60))
    detail: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    created_at: Mapped[datetime] = _now()


class AuditEntry(Base):
    """Append-only audit row (who, what, which session, when, from where, which request); a trigger
    refuses UPDATE, DELETE and TRUNCATE. Written by ``verbatim.audit.record``."""

    __tablename__ = "audit_log"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    token_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    therapist_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    clinic_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True), index=True)
    scope: Mapped[str | None] = mapped_column(String(20))
    action: Mapped[str] = mapped_column(String(40), nullable=False)
    session_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True), index=True)
    remote_addr: Mapped[str | None] = mapped_column(String(64))
    request_id: Mapped[str | None] = mapped_column(String(64))
    detail: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    at: Mapped[datetime] = _now()


class DurableRun(Base):
    """The durable state of one kind of run on one subject (a capture run of a session, a note run…).

    ``runs`` counts started runs (bounded by the kind's limit); ``fence`` is the fencing
    token, bumped by the statement that starts a run (and by a withdrawal); every write of
    the run locks this row ``FOR SHARE`` and checks the token. ``refunded_fence`` makes the
    refund of a run idempotent: a run is given back at most once. ``due_at`` is when the
    sweep process looks at the run next (NULL: nothing to look at); ``deadline_at`` is the
    wall-clock bound after which the run gives up with a named failure code. Times are the
    database's clock.
    """

    __tablename__ = "durable_runs"
    __table_args__ = (
        Index("ix_durable_runs_due", "due_at", postgresql_where=text("due_at IS NOT NULL")),
        Index("ix_durable_runs_holder", "holder", postgresql_where=text("holder IS NOT NULL")),
    )
    kind: Mapped[str] = mapped_column(String(20), primary_key=True)
    subject_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    runs: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    fence: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")
    refunded_fence: Mapped[int | None] = mapped_column(BigInteger)
    due_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    deadline_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    #: set while the run is parked (waiting on the vendor, no lease, not a run); cleared by the next count
    parked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    #: a notification arrived while a run was in flight: its park makes the subject due at once
    poked: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default=text("false"))
    holder: Mapped[str | None] = mapped_column(String(120))  #: the worker name of the last counted run
    created_at: Mapped[datetime] = _now()
    updated_at: Mapped[datetime] = _now()


class OutboxItem(Base):
    """A pending delete or notification, retried by the sweep process until done.

    ``kind``: ``vendor_delete`` (payload ``job_id``, ``reason``), ``vendor_delete_tagged``
    (every vendor job tagged with ``session_id``), ``file_delete`` (``path``), ``redis_delete``
    (``keys``), ``webhook`` (``event`` body). Written in the same transaction as the durable write that makes the
    delete safe or the event true, so no clean-up depends on the run that started it.
    ``delivery_id`` is sent with webhooks so a receiver can drop duplicates (at least once).
    """

    __tablename__ = "outbox"
    __table_args__ = (
        Index("ix_outbox_pending", "next_attempt_at", postgresql_where=text("done_at IS NULL")),
    )
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(30), nullable=False)
    session_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True), index=True)
    payload: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False)
    delivery_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), nullable=False, default=uuid.uuid4)
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    next_attempt_at: Mapped[datetime] = _now()
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _now()
    done_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class SweepSchedule(Base):
    """When each periodic sweep (stranded vendor jobs, orphan audio, analysis re-emit) runs next.

    Claimed with one ``UPDATE … WHERE next_at <= now()``: two sweep processes never run the
    same sweep in the same period, and a sweep whose process died runs again one period later.
    """

    __tablename__ = "sweep_schedule"
    name: Mapped[str] = mapped_column(String(40), primary_key=True)
    next_at: Mapped[datetime] = _now()


class BreakGlassGrant(Base):
    """A colleague's time-limited access to one session's transcript, with the reason given.

    Opened by a clinic admin or a covering therapist of the same clinic for their own token;
    shown to the session's therapist; every open and every read is audited.
    """

    __tablename__ = "break_glass_grants"
    id: Mapped[uuid.UUID] = _uuid()
    session_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("sessions.id"), nullable=False, index=True)
    clinic_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), nullable=False)
    token_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), nullable=False)
    therapist_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    scope: Mapped[str] = mapped_column(String(20), nullable=False)
    reason: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[datetime] = _now()
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)


class NoteTemplate(Base):
    """A clinic's note template: named sections, each ``{"name", "instruction", "example"?}``."""

    __tablename__ = "note_templates"
    id: Mapped[uuid.UUID] = _uuid()
    clinic_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("clinics.id"), nullable=False, index=True)
    therapist_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("therapists.id"))
    name: Mapped[str] = mapped_column(String(200), nullable=False)
    sections: Mapped[list[dict[str, Any]]] = mapped_column(JSONB, nullable=False)
    created_at: Mapped[datetime] = _now()


class NoteBatch(Base):
    """A morning's notes: one request for many notes; each note is its own durable run."""

    __tablename__ = "note_batches"
    id: Mapped[uuid.UUID] = _uuid()
    therapist_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("therapists.id"), nullable=False)
    created_at: Mapped[datetime] = _now()


class Note(Base):
    """A clinical note of one client of one session, drafted by a note run (``durable_runs`` kind ``note``).

    ``status``: see ``verbatim.notes.states.NoteStatus``. ``sections`` is the run's checkpoint:
    one entry per section written so far (a run cut off resumes at the next one). The reviewed
    text lives in ``note_versions``; ``version`` is the current one. ``session_id`` is not a
    foreign key: a signed note outlives its session's transcript (quote snapshots).
    """

    __tablename__ = "notes"
    __table_args__ = (Index("ix_notes_therapist_created", "therapist_id", "created_at"),)
    id: Mapped[uuid.UUID] = _uuid()
    session_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), nullable=False, index=True)
    clinic_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("clinics.id"), nullable=False)
    therapist_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("therapists.id"), nullable=False)
    client_id: Mapped[str] = mapped_column(String(200), nullable=False)
    format: Mapped[str] = mapped_column(String(60), nullable=False)
    template_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("note_templates.id"))
    batch_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("note_batches.id"), index=True)
    status: Mapped[str] = mapped_column(String(20), nullable=False, server_default="queued")
    transcript_version: Mapped[int | None] = mapped_column(Integer)
    writer: Mapped[str | None] = mapped_column(String(120))
    sections: Mapped[list[dict[str, Any]]] = mapped_column(JSONB, nullable=False, server_default="[]")
    risk_flags: Mapped[dict[str, Any] | None] = mapped_column(JSONB(none_as_null=True))
    version: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    requires_cosign: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default=text("false"))
    signed_by: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    signed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    cosigned_by: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    cosigned_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    retain_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    failure_code: Mapped[str | None] = mapped_column(String(60))
    created_at: Mapped[datetime] = _now()
    updated_at: Mapped[datetime] = _now()


class NoteVersion(Base):
    """One version of a note's text: the draft (1), each edit, each amendment (with its reason).

    ``body``: ``{"sections": [{"name", "sentences": [{"text", "citations", "label"}]}]}``;
    ``diff``: unified diff against the previous version's plain text (empty for the draft).
    """

    __tablename__ = "note_versions"
    __table_args__ = (UniqueConstraint("note_id", "version", name="uq_note_versions_note_version"),)
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    note_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("notes.id"), nullable=False)
    version: Mapped[int] = mapped_column(Integer, nullable=False)
    kind: Mapped[str] = mapped_column(String(20), nullable=False)  # draft | edit | amendment
    body: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False)
    diff: Mapped[str] = mapped_column(Text, nullable=False, server_default="")
    reason: Mapped[str | None] = mapped_column(Text)
    author_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    created_at: Mapped[datetime] = _now()


class NoteCitation(Base):
    """The evidence of one drafted sentence: a segment of the client's record, with a snapshot of its words.

    The snapshot (speaker, start/end seconds, quote) keeps the citation meaningful after a
    correction or after the transcript's retention deleted it.
    """

    __tablename__ = "note_citations"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    note_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("notes.id"), nullable=False, index=True)
    section: Mapped[str] = mapped_column(String(200), nullable=False)
    sentence: Mapped[int] = mapped_column(Integer, nullable=False)
    segment_id: Mapped[str] = mapped_column(String(40), nullable=False)
    speaker: Mapped[str] = mapped_column(String(200), nullable=False)
    start_s: Mapped[float] = mapped_column(Float, nullable=False)
    end_s: Mapped[float] = mapped_column(Float, nullable=False)
    quote: Mapped[str] = mapped_column(Text, nullable=False)


class EhrIdentifier(Base):
    """An optional mapping of a clinic's local id to its EHR's identifier, used by FHIR exports.

    ``kind``: ``client`` (``local_id`` = a client id) or ``practitioner`` (``local_id`` = a
    therapist id); ``system`` and ``value`` are the EHR's identifier (e.g. an MRN system URI).
    """

    __tablename__ = "ehr_identifiers"
    __table_args__ = (UniqueConstraint("clinic_id", "kind", "local_id", name="uq_ehr_identifiers_local"),)
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    clinic_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("clinics.id"), nullable=False)
    kind: Mapped[str] = mapped_column(String(20), nullable=False)
    local_id: Mapped[str] = mapped_column(String(200), nullable=False)
    system: Mapped[str] = mapped_column(String(300), nullable=False)
    value: Mapped[str] = mapped_column(String(200), nullable=False)


class SegmentEdit(Base):
    """A clinician's free-text correction of one transcript segment (one recognized turn).

    ``turn_index`` is the ``n`` of the segment id ``seg-{n}`` (stable across corrections);
    ``original`` is the segment's text just before this correction, ``text`` the text after it.
    The latest correction of a turn is its published text: every republish (a suggestion
    validated or reverted, speakers corrected) lays it over the recognizer's words again.
    """

    __tablename__ = "segment_edits"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    session_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("sessions.id"), nullable=False, index=True)
    turn_index: Mapped[int] = mapped_column(Integer, nullable=False)
    original: Mapped[str] = mapped_column(Text, nullable=False)
    text: Mapped[str] = mapped_column(Text, nullable=False)
    author_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), nullable=False)
    created_at: Mapped[datetime] = _now()
