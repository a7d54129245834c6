"""The audit helper: one append-only row per access to patient data, in the caller's transaction.

``record(db, actor, action, session_id)`` inserts into ``audit_log`` inside the transaction
that reads or changes the data, so a change is never committed without its row (a failed
insert rolls the change back) and a read is never answered without one. Rows say who (token,
therapist, clinic, scope), what (``action``), which session, when (database clock), from which
address and which request (``X-Request-ID``). The table refuses UPDATE, DELETE and TRUNCATE
(a trigger; migrations 0001).

Actions: ``session_created``, ``sessions_listed``, ``session_read``, ``transcript_read``,
``speakers_corrected``, ``session_deleted``, ``suggestions_read``, ``suggestion_reviewed``,
``admin_sessions_listed``, ``admin_session_read``, ``admin_retry``, ``admin_runs_listed``, ``dlq_reprocess``,
``upload_created``, ``upload_terminated``, ``audit_read``, ``break_glass_opened``, ``transcript_read_break_glass``,
``break_glass_listed``, ``signed_in``, ``signed_out`` (the web pages; their rows carry
``{"via": "web"}``), ``note_requested``, ``note_read``, ``note_read_break_glass``, ``note_versions_read``,
``note_edited``, ``note_signed``, ``note_cosigned``, ``note_amended``, ``note_exported``, ``template_created``,
``notes_batch_requested``, ``notes_batch_read``, ``client_record_exported``, ``segment_corrected``,
``segment_history_read``, ``note_record_confirmed``; by Verbatim itself (scope ``system``):
``transcript_published``, ``transcript_dropped``, ``transcript_expired``, ``recognizer_notified``; for a
caller not signed in (scope ``anonymous``, see ``verbatim.api.guessing``): ``sign_in_failed``, ``auth_throttled``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session as OrmSession

from verbatim.auth import Principal
from verbatim.db.models import AuditEntry, Session


@dataclass(frozen=True)
class Actor:
    """Who acts, from where, in which request (the API builds one per request)."""

    principal: Principal
    remote_addr: str | None = None
    request_id: str | None = None


def record_system(db: OrmSession, action: str, session_id: uuid.UUID | None = None,
                  clinic_id: uuid.UUID | None = None, detail: dict[str, Any] | None = None) -> None:
    """Append an audit row for Verbatim's own act (a retention delete): scope ``system``, no token."""
    db.execute(insert(AuditEntry).values(scope="system", action=action, session_id=session_id, clinic_id=clinic_id,
                                         detail=detail))


def record_anonymous(db: OrmSession, action: str, remote_addr: str | None, request_id: str | None,
                     detail: dict[str, Any] | None = None) -> None:
    """Append an audit row for a caller who is nobody yet (a failed sign-in): scope ``anonymous``, no
    token, no clinic; ``detail`` says how (``{"via": "web" | "link" | "bearer"}``), never what was sent."""
    db.execute(insert(AuditEntry).values(scope="anonymous", action=action, remote_addr=remote_addr,
                                         request_id=request_id, detail=detail))


def record(db: OrmSession, actor: Actor, action: str, session_id: uuid.UUID | None = None,
           detail: dict[str, Any] | None = None) -> None:
    """Append one audit row in ``db``'s transaction (it commits, or vanishes, with the caller's work).

    The row's clinic is the session's when ``session_id`` is given (the data's clinic), else the actor's.

    ``detail`` holds no patient data (counts, filters, ids) — never transcript text or client ids.
    """
    who = actor.principal
    # Filed under the data's clinic, never the actor's: an ops admin reading clinic B's session
    # lands in B's audit log, where B's clinic admin sees it.
    clinic: Any = who.clinic_id
    if session_id is not None:
        clinic = func.coalesce(select(Session.clinic_id).where(Session.id == session_id).scalar_subquery(),
                               who.clinic_id)
    db.execute(insert(AuditEntry).values(
        token_id=who.token_id, therapist_id=who.therapist_id, clinic_id=clinic, scope=who.scope,
        action=action, session_id=session_id, remote_addr=actor.remote_addr, request_id=actor.request_id,
        detail=detail,
    ))
