"""Tables of the reliability analysis (migration ``0002``), on ``verbatim.db.models.Base``.

``reliability_analyses``   one row per published session: was its analysis asked for,
                           emitted on the stream, finished? The sweep re-emits from it.
``reliability_suggestions`` what the analysis found, each with its review status.
``reliability_actions``    every status change of a suggestion; append-only, enforced by a
                           trigger in the database (migration 0002), like ``audit_log``.

Suggestion rows hold transcript text (patient data) and are deleted with the session's
other copies (the sweep purges them once a session is withdrawn). Action rows hold no text
and no foreign key, so they outlive the suggestions they describe, as an audit trail must.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, UUID
from sqlalchemy.orm import Mapped, mapped_column

from verbatim.db.models import Base

#: Kept equal to ``verbatim.reliability.suggestions.SuggestionStatus`` (a unit test checks):
#: the database refuses any other value whoever writes it.
STATUSES = ("pending", "validated", "auto_applied", "ignored")
#: Kept equal to ``verbatim.reliability.suggestions.SuggestionKind``.
KINDS = ("word", "speaker", "edit")


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def _now() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), nullable=False, server_default=func.now())


class ReliabilityAnalysis(Base):
    """The analysis request of one published session (transcript_id = session id).

    ``requested_at``: when publish committed (same transaction). ``emitted_at``: when the
    request was last put on the main stream (None: never — Redis was down at publish).
    ``completed_at``: when the suggestions were committed. ``attempts``: analysis attempts
    started. ``dead_lettered_at``: set when the request went to the dead-letter stream, cleared
    when an admin re-injects it; the sweep leaves such requests to the admin.
    """

    __tablename__ = "reliability_analyses"
    __table_args__ = (
        # The re-emit sweep reads only unfinished requests: a partial index keeps it cheap.
        Index("ix_reliability_analyses_unfinished", "requested_at", postgresql_where=text("completed_at IS NULL")),
    )
    session_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("sessions.id"), primary_key=True)
    requested_at: Mapped[datetime] = _now()
    emitted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    completed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    dead_lettered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class ReliabilitySuggestion(Base):
    """One suggestion on one speaker turn of a session's checkpoint (``sessions.raw_turns``).

    ``kind``: ``word`` (a word heard with low confidence; ``word_index`` into the turn's
    ``words``, ``alternatives`` the recognizer gave, ``suggested`` the one that applies),
    ``speaker`` (a doubtful attribution; ``original``/``suggested`` are speaker labels) or
    ``edit`` (the polish pass's rewrite of the turn's text). ``reason`` says which rule
    found it. Times are seconds from the start of the recording.
    """

    __tablename__ = "reliability_suggestions"
    __table_args__ = (
        CheckConstraint(_in("status", STATUSES), name="status"),
        CheckConstraint(_in("kind", KINDS), name="kind"),
        Index("ix_reliability_suggestions_session_turn", "session_id", "turn_index"),
    )
    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True, default=uuid.uuid4)
    session_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("sessions.id"), nullable=False)
    kind: Mapped[str] = mapped_column(String(20), nullable=False)
    reason: Mapped[str] = mapped_column(String(40), nullable=False)
    status: Mapped[str] = mapped_column(String(20), nullable=False)
    turn_index: Mapped[int] = mapped_column(Integer, nullable=False)
    word_index: Mapped[int | None] = mapped_column(Integer)
    start_s: Mapped[float] = mapped_column(Float, nullable=False)
    end_s: Mapped[float] = mapped_column(Float, nullable=False)
    original: Mapped[str] = mapped_column(Text, nullable=False)
    suggested: Mapped[str | None] = mapped_column(Text)
    alternatives: Mapped[list[str]] = mapped_column(JSONB, nullable=False, server_default=text("'[]'::jsonb"))
    confidence: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[datetime] = _now()
    updated_at: Mapped[datetime] = _now()


class ReliabilityAction(Base):
    """An immutable record of one status change: who, what, from, to, when.

    ``action``: ``created`` (by the analysis; ``from_status`` None), ``validated``,
    ``ignored`` or ``reverted``. ``actor``: ``analysis`` or ``therapist`` (then
    ``therapist_id`` and ``token_id`` say who). A trigger refuses UPDATE, DELETE and TRUNCATE.
    """

    __tablename__ = "reliability_actions"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    suggestion_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), nullable=False, index=True)
    session_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), nullable=False, index=True)
    action: Mapped[str] = mapped_column(String(20), nullable=False)
    from_status: Mapped[str | None] = mapped_column(String(20))
    to_status: Mapped[str] = mapped_column(String(20), nullable=False)
    actor: Mapped[str] = mapped_column(String(20), nullable=False)
    therapist_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    token_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    at: Mapped[datetime] = _now()
