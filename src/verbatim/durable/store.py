"""Durable run state in PostgreSQL: one ``durable_runs`` row per (kind, subject).

Why our own code: the fencing token, the run bound and the due time are the durability
logic itself; job-queue libraries keep attempts and ETAs in the broker, which a flushed
Redis loses.

Lock order, everywhere: the ``durable_runs`` row first, then the subject's own rows.
``count`` takes it FOR UPDATE (the upsert), every fenced write FOR SHARE (``hold``), so a
newer run's count waits for an older run's write in flight and then reads what it wrote.
Every time is the database's clock (``now()``), never a worker's.

Every due-time write is conditional on what its writer read: the run's fencing token (a run's
own settle), the row as claimed (``Seen``: the sweep and the parked poller write only while
fence and due time are what they claimed), or ``poked`` (a look asked for — an admin retry, a
notification — while a run was in flight: that run's settle leaves the subject due now, never
clears it). No write ever erases a due time that a later intent wrote.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.orm import Session as OrmSession

from verbatim.db.engine import db_session
from verbatim.errors import FenceLost, NotFound


@dataclass(frozen=True)
class Counted:
    """What counting a run returns: its number (1-based), its fencing token, whether the deadline passed."""

    run: int
    fence: int
    overdue: bool


@dataclass(frozen=True)
class Seen:
    """What a writer read of one row (``claim_due``, ``claim_parked``, ``peek``); its due-time write
    applies only while the row still has this fence and this due time."""

    subject_id: uuid.UUID
    fence: int
    due_at: datetime | None
    overdue: bool = False  #: the deadline had passed when it was read


_SEEN = "subject_id, fence, due_at, coalesce(deadline_at < now(), false) AS overdue"


def _seen(rows: object) -> list[Seen]:
    return [Seen(r.subject_id, r.fence, r.due_at, bool(r.overdue)) for r in rows]  # type: ignore[attr-defined]


@dataclass(frozen=True)
class RunState:
    """A snapshot of one ``durable_runs`` row (times in UTC)."""

    runs: int
    fence: int
    due_at: datetime | None
    deadline_at: datetime | None


class RunStore:
    """``durable_runs`` operations for one kind of run (``capture``, ``note``…) over one database URL."""

    def __init__(self, database_url: str, kind: str):
        self.url = database_url
        self.kind = kind

    # --- creation -------------------------------------------------------------------
    def ensure(self, db: OrmSession, subject_id: uuid.UUID, deadline_s: float, due_in_s: float | None, *,
               reset_deadline: bool = False) -> None:
        """Create the row (no runs yet) if missing, due in ``due_in_s`` seconds, deadline ``deadline_s`` away.

        An existing row only gets the new due time (and, with ``reset_deadline``, the new deadline:
        an admin retry gives a blocked session a fresh window) and is marked ``poked``: a run in
        flight meanwhile settles to due now instead of clearing this due time.
        """
        db.execute(
            text("""
                INSERT INTO durable_runs (kind, subject_id, due_at, deadline_at)
                VALUES (:kind, :sid, now() + make_interval(secs => :due), now() + make_interval(secs => :deadline))
                ON CONFLICT (kind, subject_id) DO UPDATE SET due_at = EXCLUDED.due_at, updated_at = now(),
                    poked = true,
                    deadline_at = CASE WHEN :reset THEN EXCLUDED.deadline_at ELSE durable_runs.deadline_at END
            """),
            {"kind": self.kind, "sid": subject_id, "due": due_in_s, "deadline": deadline_s, "reset": reset_deadline},
        )

    # --- counting -------------------------------------------------------------------
    def count(self, db: OrmSession, subject_id: uuid.UUID, lease_ttl_s: float, deadline_s: float,
              holder: str | None = None) -> Counted:
        """Count a run and take a new fencing token, in one statement (inside the caller's transaction).

        The run is due again at its lease's expiry: if this process dies, the sweep process
        looks then. A row missing (a subject made before its kind existed) is created with its
        deadline ``deadline_s`` from now. A parked row stops being parked (a run holds it now);
        ``holder`` (the worker's name) lets a restarted worker find the runs it was running. A
        ``poke`` before this count is answered by this run (it reads the subject after it), so
        ``poked`` is cleared.
        """
        row = db.execute(
            text("""
                INSERT INTO durable_runs (kind, subject_id, runs, fence, due_at, deadline_at, holder)
                VALUES (:kind, :sid, 1, 1, now() + make_interval(secs => :ttl), now() + make_interval(secs => :dl),
                        :holder)
                ON CONFLICT (kind, subject_id) DO UPDATE
                    SET runs = durable_runs.runs + 1, fence = durable_runs.fence + 1,
                        due_at = EXCLUDED.due_at, updated_at = now(), parked_at = NULL, holder = EXCLUDED.holder,
                        poked = false
                RETURNING runs, fence, coalesce(deadline_at < now(), false) AS overdue
            """),
            {"kind": self.kind, "sid": subject_id, "ttl": lease_ttl_s, "dl": deadline_s, "holder": holder},
        ).one()
        return Counted(row.runs, row.fence, row.overdue)

    def peek(self, db: OrmSession, subject_id: uuid.UUID) -> Seen | None:
        """The row FOR UPDATE (None when missing): what a run that ends with nothing to do may clear."""
        rows = db.execute(
            text(f"SELECT {_SEEN} FROM durable_runs WHERE kind = :kind AND subject_id = :sid FOR UPDATE"),
            {"kind": self.kind, "sid": subject_id},
        ).all()
        return _seen(rows)[0] if rows else None

    def hold(self, db: OrmSession, subject_id: uuid.UUID, fence: int) -> None:
        """Lock the row FOR SHARE for the caller's transaction if ``fence`` is current; else raise FenceLost.

        Every fenced write of a run calls this first, in its own transaction: a newer run's
        ``count`` then waits until that write commits.
        """
        current = db.execute(
            text("SELECT fence FROM durable_runs WHERE kind = :kind AND subject_id = :sid FOR SHARE"),
            {"kind": self.kind, "sid": subject_id},
        ).scalar_one_or_none()
        if current is None:
            raise NotFound(f"no {self.kind} run of {subject_id}")
        if current != fence:
            raise FenceLost(f"{self.kind} {subject_id}: fence is {current}, this run holds {fence}")

    def bump(self, db: OrmSession, subject_id: uuid.UUID) -> None:
        """Take a fencing token without counting a run (a withdrawal): every running run loses its fence."""
        db.execute(
            text("""
                INSERT INTO durable_runs (kind, subject_id, fence) VALUES (:kind, :sid, 1)
                ON CONFLICT (kind, subject_id) DO UPDATE
                    SET fence = durable_runs.fence + 1, due_at = NULL, updated_at = now()
            """),
            {"kind": self.kind, "sid": subject_id},
        )

    def refund(self, subject_id: uuid.UUID, fence: int, due_in_s: float | None, *, ended: bool = True) -> bool:
        """Give back the run holding ``fence`` — at most once per run — and make it due in ``due_in_s``.

        Idempotent: a teardown write retried after a timed-out attempt that still commits later
        refunds once. ``ended``: the run's lease is released (or lost), so the row stops naming its
        worker; a teardown passes False, since its lease release may still fail — a restart under the
        worker's name then releases it. Returns True if this call gave the run back.
        """
        with db_session(self.url) as db:
            row = db.execute(
                text("""
                    UPDATE durable_runs SET runs = runs - 1, refunded_fence = :fence,
                        holder = CASE WHEN :ended THEN NULL ELSE holder END,
                        due_at = CASE WHEN CAST(:due AS float8) IS NULL THEN due_at
                                      ELSE now() + make_interval(secs => :due) END,
                        updated_at = now()
                    WHERE kind = :kind AND subject_id = :sid AND fence = :fence
                      AND refunded_fence IS DISTINCT FROM :fence
                    RETURNING runs
                """),
                {"kind": self.kind, "sid": subject_id, "fence": fence, "due": due_in_s, "ended": ended},
            ).one_or_none()
        return row is not None

    # --- parking (waiting on a vendor without a worker) ------------------------------------
    def park(self, subject_id: uuid.UUID, fence: int, due_in_s: float) -> bool:
        """Park the run holding ``fence``: give the run back (once, like ``refund``), look again in ``due_in_s``.

        A park is not a crash: it must not bring the subject closer to its run limit. If a
        notification arrived while the run was in flight (``poked``), the subject is due at once.
        Returns False when a newer run (or a withdrawal) moved the fence: nothing is written.
        """
        with db_session(self.url) as db:
            row = db.execute(
                text("""
                    UPDATE durable_runs SET
                        runs = CASE WHEN refunded_fence IS DISTINCT FROM :fence THEN runs - 1 ELSE runs END,
                        refunded_fence = :fence, parked_at = now(), holder = NULL,
                        due_at = CASE WHEN poked THEN now() ELSE now() + make_interval(secs => :due) END,
                        poked = false, updated_at = now()
                    WHERE kind = :kind AND subject_id = :sid AND fence = :fence
                    RETURNING runs
                """),
                {"kind": self.kind, "sid": subject_id, "fence": fence, "due": due_in_s},
            ).one_or_none()
        return row is not None

    def poke(self, db: OrmSession, subject_id: uuid.UUID) -> None:
        """A notification: a parked subject is due now; a run in flight parks due now (``poked``)."""
        db.execute(
            text("""
                UPDATE durable_runs SET poked = true, updated_at = now(),
                    due_at = CASE WHEN parked_at IS NOT NULL THEN now() ELSE due_at END
                WHERE kind = :kind AND subject_id = :sid
            """),
            {"kind": self.kind, "sid": subject_id},
        )

    def claim_parked(self, limit: int, recheck_s: float) -> list[Seen]:
        """Parked subjects whose look-up time has passed, oldest first, each pushed ``recheck_s`` ahead.

        Returns each row as claimed (its ``overdue``: the deadline passed). SKIP LOCKED: two sweep
        processes claim disjoint sets.
        """
        with db_session(self.url) as db:
            return _seen(db.execute(
                text(f"""
                    UPDATE durable_runs SET due_at = now() + make_interval(secs => :recheck)
                    WHERE (kind, subject_id) IN (
                        SELECT kind, subject_id FROM durable_runs
                        WHERE kind = :kind AND parked_at IS NOT NULL AND due_at IS NOT NULL AND due_at <= now()
                        ORDER BY due_at LIMIT :limit FOR UPDATE SKIP LOCKED)
                    RETURNING {_SEEN}
                """),
                {"kind": self.kind, "limit": limit, "recheck": recheck_s},
            ))

    def set_due_many(self, due_in_s: dict[Seen, float], *, parked: bool = False) -> int:
        """Look at each claimed subject again in its own number of seconds (one statement).

        Each row is written only while its fence and due time are as claimed (and, with ``parked``,
        while it is still parked): a run a notification started meanwhile keeps its lease-expiry
        due time. Returns how many rows were written.
        """
        if not due_in_s:
            return 0
        with db_session(self.url) as db:
            return len(db.execute(
                text("""
                    UPDATE durable_runs r SET due_at = now() + make_interval(secs => v.due), updated_at = now()
                    FROM unnest(CAST(:ids AS uuid[]), CAST(:fences AS bigint[]), CAST(:seen AS timestamptz[]),
                                CAST(:dues AS float8[])) AS v(sid, fence, seen, due)
                    WHERE r.kind = :kind AND r.subject_id = v.sid AND r.fence = v.fence
                      AND r.due_at IS NOT DISTINCT FROM v.seen AND (NOT :parked OR r.parked_at IS NOT NULL)
                    RETURNING r.subject_id
                """),
                {"kind": self.kind, "ids": [x.subject_id for x in due_in_s], "fences": [x.fence for x in due_in_s],
                 "seen": [x.due_at for x in due_in_s], "dues": list(due_in_s.values()), "parked": parked},
            ).all())

    def release_holder(self, holder: str) -> list[uuid.UUID]:
        """A restarted worker: runs counted in its name and not ended (its previous process is dead) are due now."""
        with db_session(self.url) as db:
            return list(db.execute(
                text("""
                    UPDATE durable_runs SET due_at = now(), holder = NULL, updated_at = now()
                    WHERE kind = :kind AND holder = :holder AND due_at IS NOT NULL
                    RETURNING subject_id
                """),
                {"kind": self.kind, "holder": holder},
            ).scalars())

    # --- the due time -----------------------------------------------------------------
    def settle(self, subject_id: uuid.UUID, fence: int, due_in_s: float | None) -> bool:
        """A run's own last due-time write (fenced): look again in ``due_in_s`` seconds (None: nothing to look at).

        If a look was asked for while the run was in flight (``poked``: an admin retry, a
        notification), the subject is due now instead: the run's outcome never erases it. The
        run has ended, so the row no longer names its worker. False when a newer run (or a
        withdrawal) holds the fence: nothing is written.
        """
        with db_session(self.url) as db:
            return db.execute(
                text("""
                    UPDATE durable_runs
                    SET due_at = CASE WHEN poked THEN now()
                                      WHEN CAST(:due AS float8) IS NULL THEN NULL
                                      ELSE now() + make_interval(secs => :due) END,
                        poked = false, holder = NULL, updated_at = now()
                    WHERE kind = :kind AND subject_id = :sid AND fence = :fence
                    RETURNING subject_id
                """),
                {"kind": self.kind, "sid": subject_id, "due": due_in_s, "fence": fence},
            ).first() is not None

    def set_due(self, seen: Seen, due_in_s: float | None, db: OrmSession | None = None) -> bool:
        """Look at this subject again in ``due_in_s`` seconds (None: nothing to look at) — only while its
        fence and due time are still what ``seen`` read. False (nothing written) otherwise."""
        stmt = text("""
            UPDATE durable_runs
            SET due_at = CASE WHEN CAST(:due AS float8) IS NULL THEN NULL
                              ELSE now() + make_interval(secs => :due) END,
                updated_at = now()
            WHERE kind = :kind AND subject_id = :sid AND fence = :fence
              AND due_at IS NOT DISTINCT FROM CAST(:seen AS timestamptz)
            RETURNING subject_id
        """)
        params = {"kind": self.kind, "sid": seen.subject_id, "due": due_in_s, "fence": seen.fence,
                  "seen": seen.due_at}
        if db is not None:
            return db.execute(stmt, params).first() is not None
        with db_session(self.url) as own:
            return own.execute(stmt, params).first() is not None

    def hasten(self, subject_id: uuid.UUID, due_in_s: float, db: OrmSession | None = None) -> bool:
        """Look at this subject no later than ``due_in_s`` seconds from now: an earlier due time stays, a
        cleared one stays cleared (nothing to look at), a parked row stays parked. False when no row changed."""
        stmt = text("""
            UPDATE durable_runs SET due_at = now() + make_interval(secs => :due), updated_at = now()
            WHERE kind = :kind AND subject_id = :sid AND due_at > now() + make_interval(secs => :due)
            RETURNING subject_id
        """)
        params = {"kind": self.kind, "sid": subject_id, "due": due_in_s}
        if db is not None:
            return db.execute(stmt, params).first() is not None
        with db_session(self.url) as own:
            return own.execute(stmt, params).first() is not None

    def claim_due(self, limit: int, recheck_s: float) -> list[Seen]:
        """Subjects whose due time has passed, oldest first; each is pushed ``recheck_s`` into the future.

        Parked subjects are not claimed here (``claim_parked``: the vendor is asked first).

        SKIP LOCKED and the push make two sweep processes claim disjoint sets. The caller then
        decides (lease held → due at its expiry; work left → enqueue; none → clear), each write
        through ``set_due`` with the row as claimed here.
        """
        with db_session(self.url) as db:
            return _seen(
                db.execute(
                    text(f"""
                        UPDATE durable_runs SET due_at = now() + make_interval(secs => :recheck)
                        WHERE (kind, subject_id) IN (
                            SELECT kind, subject_id FROM durable_runs
                            WHERE kind = :kind AND due_at IS NOT NULL AND due_at <= now()
                              AND parked_at IS NULL
                            ORDER BY due_at LIMIT :limit FOR UPDATE SKIP LOCKED)
                        RETURNING {_SEEN}
                    """),
                    {"kind": self.kind, "limit": limit, "recheck": recheck_s},
                )
            )

    def mark_stalled(self, db: OrmSession, live_sql: str, stall_s: float, deadline_s: float,
                     limit: int) -> list[uuid.UUID]:
        """The stall net: subjects with work outstanding, no due time and no write for ``stall_s`` → due now.

        ``live_sql`` selects ``id, updated_at`` of the kind's subjects with work outstanding (``kinds.Subjects``).
        Conditional on what it reads: a row that got a due time meanwhile keeps it.
        """
        return list(db.execute(
            text(f"""
                INSERT INTO durable_runs (kind, subject_id, due_at, deadline_at)
                SELECT :kind, l.id, now(), now() + make_interval(secs => :deadline)
                FROM ({live_sql}) AS l
                LEFT JOIN durable_runs r ON r.kind = :kind AND r.subject_id = l.id
                WHERE r.due_at IS NULL AND l.updated_at < now() - make_interval(secs => :stall)
                LIMIT :limit
                ON CONFLICT (kind, subject_id) DO UPDATE SET due_at = now(), updated_at = now()
                    WHERE durable_runs.due_at IS NULL
                RETURNING subject_id
            """),
            {"kind": self.kind, "stall": stall_s, "deadline": deadline_s, "limit": limit},
        ).scalars())

    def state(self, subject_id: uuid.UUID) -> RunState:
        """The row as it is now (zeros when no run was ever counted)."""
        with db_session(self.url) as db:
            return self.state_in(db, subject_id)

    def state_in(self, db: OrmSession, subject_id: uuid.UUID) -> RunState:
        """The row, read in ``db``'s transaction (zeros when no run was ever counted)."""
        row = db.execute(
            text("SELECT runs, fence, due_at, deadline_at FROM durable_runs WHERE kind = :kind AND subject_id = :sid"),
            {"kind": self.kind, "sid": subject_id},
        ).one_or_none()
        if row is None:
            return RunState(0, 0, None, None)
        return RunState(row.runs, row.fence, row.due_at, row.deadline_at)

    def count_in(self, db: OrmSession, subject_id: uuid.UUID) -> int:
        """How many runs have been counted, read in ``db``'s transaction (0 when none has started)."""
        return int(db.execute(
            text("SELECT runs FROM durable_runs WHERE kind = :kind AND subject_id = :sid"),
            {"kind": self.kind, "sid": subject_id},
        ).scalar_one_or_none() or 0)

    def counts(self, subject_ids: list[uuid.UUID]) -> dict[uuid.UUID, int]:
        """Runs counted per subject, in one query (subjects never run are absent)."""
        if not subject_ids:
            return {}
        with db_session(self.url) as db:
            rows = db.execute(
                text("SELECT subject_id, runs FROM durable_runs WHERE kind = :kind AND subject_id = ANY(:ids)"),
                {"kind": self.kind, "ids": list(subject_ids)},
            ).all()
        return {row.subject_id: row.runs for row in rows}

    def count_of(self, subject_id: uuid.UUID) -> int:
        """How many runs have been counted (0 when none has started)."""
        return self.state(subject_id).runs
