"""The durable outbox: pending deletes and notifications, retried until done.

An item is written in the same transaction as the durable write that makes it safe (a
vendor delete with the checkpoint that replaces the vendor's copy) or true (a webhook with
the status it announces). Then the run that wrote it tries it at once, best effort, and the
sweep process retries whatever is left every tick, with a capped exponential backoff — so
no clean-up and no notification depends on the run that started it surviving.

Why our own code: the item must commit atomically with our own rows (a transactional
outbox); broker-side retries (Celery) would lose it with a flushed Redis.

Each attempt is logged (``outbox_attempt``: kind, id, attempt, outcome, error) and counted.
Delivery is at least once: a webhook carries the item's ``delivery_id`` for deduplication.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import structlog
from sqlalchemy import func, insert, select, text, update
from sqlalchemy.orm import Session as OrmSession

from verbatim.db.engine import db_session
from verbatim.db.models import OutboxItem
from verbatim.telemetry import metrics

log = structlog.get_logger("verbatim.outbox")

VENDOR_DELETE = "vendor_delete"  #: payload: job_id, reason
VENDOR_DELETE_TAGGED = "vendor_delete_tagged"  #: payload: reason; every vendor job tagged with session_id
FILE_DELETE = "file_delete"  #: payload: path
REDIS_DELETE = "redis_delete"  #: payload: keys (a list of Redis keys holding the session's data)
WEBHOOK = "webhook"  #: payload: the event body


@dataclass(frozen=True)
class Pending:
    """One claimed item: what to do, and which attempt this is (1-based)."""

    id: int
    kind: str
    session_id: uuid.UUID | None
    payload: dict[str, Any]
    delivery_id: uuid.UUID
    attempt: int


Handler = Callable[[Pending], None]


@dataclass
class DeliveryReport:
    """What one pass did: item ids done and failed."""

    done: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)


def cancel_file_deletes(db: OrmSession, session_id: uuid.UUID, path: str, reason: str) -> int:
    """Cancel the session's pending deletes of ``path`` in ``db``'s transaction; returns how many.

    Only inside the durable write that makes the file needed again (a resubmission from it). Waits
    for a delete in flight (its handler holds the row: ``Outbox.still_pending``): the caller must
    check the file still exists after this call, in the same transaction.
    """
    ids = list(db.execute(
        select(OutboxItem.id).where(OutboxItem.session_id == session_id, OutboxItem.kind == FILE_DELETE,
                                    OutboxItem.done_at.is_(None), OutboxItem.payload["path"].astext == path)
        .with_for_update()).scalars())
    if ids:
        db.execute(update(OutboxItem).where(OutboxItem.id.in_(ids))
                   .values(done_at=func.now(), last_error=f"cancelled: {reason}"))
    return len(ids)


def add(db: OrmSession, kind: str, payload: dict[str, Any], session_id: uuid.UUID | None = None) -> None:
    """Queue one item inside the caller's transaction (it commits, or vanishes, with the caller's write)."""
    db.execute(insert(OutboxItem).values(kind=kind, payload=payload, session_id=session_id,
                                         delivery_id=uuid.uuid4()))


class Outbox:
    """Claims and settles outbox items over one database URL.

    ``backoff_max_s``: the longest wait between two attempts of one item (seconds);
    ``claim_s``: how long a claimed item is hidden from other deliverers while one works on it.
    """

    def __init__(self, database_url: str, *, backoff_max_s: float = 60.0, claim_s: float = 60.0):
        self.url = database_url
        self.backoff_max_s = backoff_max_s
        self.claim_s = claim_s

    def claim(self, limit: int = 50, session_id: uuid.UUID | None = None,
              kinds: Iterable[str] | None = None) -> list[Pending]:
        """Due items (all, or one session's, optionally only some kinds), oldest first; each hidden for
        ``claim_s`` and its attempt counted."""
        due = select(OutboxItem.id).where(OutboxItem.done_at.is_(None), OutboxItem.next_attempt_at <= func.now())
        if session_id is not None:
            due = due.where(OutboxItem.session_id == session_id)
        if kinds is not None:
            due = due.where(OutboxItem.kind.in_(list(kinds)))
        due = due.order_by(OutboxItem.next_attempt_at).limit(limit).with_for_update(skip_locked=True)
        with db_session(self.url) as db:
            rows = db.execute(
                update(OutboxItem)
                .where(OutboxItem.id.in_(due.scalar_subquery()))
                .values(attempts=OutboxItem.attempts + 1,
                        next_attempt_at=func.now() + text(f"interval '{float(self.claim_s)} seconds'"))
                .returning(OutboxItem.id, OutboxItem.kind, OutboxItem.session_id, OutboxItem.payload,
                           OutboxItem.delivery_id, OutboxItem.attempts)
            ).all()
        return sorted((Pending(r.id, r.kind, r.session_id, r.payload, r.delivery_id, r.attempts) for r in rows),
                      key=lambda p: p.id)

    def settle(self, item: Pending, error: str | None) -> None:
        """Mark an item done, or schedule its next attempt after a capped exponential backoff."""
        with db_session(self.url) as db:
            if error is None:
                db.execute(update(OutboxItem).where(OutboxItem.id == item.id)
                           .values(done_at=func.now(), last_error=None))
                return
            wait = min(self.backoff_max_s, 2.0 ** min(item.attempt - 1, 16))
            db.execute(update(OutboxItem).where(OutboxItem.id == item.id).values(
                last_error=error[:2000], next_attempt_at=func.now() + text(f"interval '{wait} seconds'")))

    def deliver(self, handlers: dict[str, Handler], *, limit: int = 50,
                session_id: uuid.UUID | None = None, kinds: Iterable[str] | None = None) -> DeliveryReport:
        """Claim due items and run each one's handler; never raises for a failing handler.

        A handler raises to say "not done yet"; the error is recorded and the item retried later.
        """
        report = DeliveryReport()
        for item in self.claim(limit, session_id, kinds):
            handler = handlers.get(item.kind)
            error: str | None
            try:
                if handler is None:
                    raise LookupError(f"no handler for outbox kind {item.kind!r}")
                handler(item)
                error = None
            except Exception as exc:  # noqa: BLE001 - any failure means "retry later"
                error = f"{type(exc).__name__}: {exc}"
            log.info("outbox_attempt", item=item.id, kind=item.kind, attempt=item.attempt,
                     session_id=str(item.session_id) if item.session_id else None,
                     outcome="done" if error is None else "failed", error=error and error[:300])
            metrics.outbox_attempts.labels(kind=item.kind, outcome="done" if error is None else "failed").inc()
            try:
                self.settle(item, error)
            except Exception as exc:  # noqa: BLE001 - the claim expires and the item comes back
                log.warning("outbox_settle_failed", item=item.id, error=type(exc).__name__)
                continue
            (report.done if error is None else report.failed).append(item.id)
        return report

    @contextmanager
    def still_pending(self, item: Pending) -> Iterator[bool]:
        """Hold the item's row lock while its handler acts; yields False when it was cancelled meanwhile.

        A delete that a later durable write may cancel (``cancel_file_deletes``) runs inside this:
        the cancel waits for a delete in flight, and a delete never runs after its cancel.
        """
        with db_session(self.url) as db:
            done = db.execute(select(OutboxItem.done_at).where(OutboxItem.id == item.id).with_for_update()
                              ).one_or_none()
            yield done is not None and done[0] is None

    def pending(self, session_id: uuid.UUID | None = None, kinds: Iterable[str] | None = None) -> int:
        """How many items are not done yet (all, or one session's; optionally only some kinds)."""
        stmt = select(func.count()).select_from(OutboxItem).where(OutboxItem.done_at.is_(None))
        if session_id is not None:
            stmt = stmt.where(OutboxItem.session_id == session_id)
        if kinds is not None:
            stmt = stmt.where(OutboxItem.kind.in_(list(kinds)))
        with db_session(self.url) as db:
            return int(db.execute(stmt).scalar_one())
