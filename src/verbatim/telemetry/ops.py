"""What operations watch, read at scrape time by the sweep process (``verbatim sweeper`` with
``VERBATIM_METRICS_PORT``): the system's state from PostgreSQL and Redis, not one process's counters.

Gauges (each scrape is five small queries and three Redis reads):

- ``verbatim_sessions{status}`` — sessions by status;
- ``verbatim_sessions_blocked{code}`` — blocked sessions (audio kept, an admin retry needed) by failure
  code, e.g. ``encryption_key_missing`` (alert ``VerbatimSessionBlocked``);
- ``verbatim_sessions_parked`` — sessions waiting on the recognizer without a worker;
- ``verbatim_oldest_queued_seconds`` / ``verbatim_oldest_parked_seconds`` — age (since upload) of the
  oldest session still queued / parked (0 when none);
- ``verbatim_queue_depth{queue}`` — ``capture`` (Celery list), ``notes`` (if the note kind's queue exists),
  ``outbox`` (pending deletes and webhooks), ``reliability_dlq`` (dead-lettered analysis events);
- ``verbatim_runs_due_overdue`` — non-parked runs past their due time (the sweep is behind or not running);
- ``verbatim_sweep_last_tick_age_seconds`` — since the sweep process's last finished tick (database clock);
- ``verbatim_runs{kind,state}`` — subjects of every kind of run by their run's one state
  (``verbatim.durable.subjects``: running, parked, due, overdue, blocked, cancelled — the same
  expression the API and ``verbatim sessions show`` use);
- ``verbatim_runs_unwatched{kind}`` — subjects with work outstanding and no due time: nobody looks at
  them until the stall net does (it should stay 0; above 0 for longer than ``stall_s`` is a bug).

Why our own code: a custom collector is prometheus-client's documented way to export a value
read at scrape time; the queries are ours.
"""

from __future__ import annotations

from collections.abc import Iterator

import redis
import structlog
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import text

from verbatim import keys
from verbatim.db.engine import db_session
from verbatim.durable.subjects import Subjects
from verbatim.notes.states import NOTE_SUBJECTS
from verbatim.states import CAPTURE_SUBJECTS

log = structlog.get_logger("verbatim.ops")

NOTES_QUEUE = "notes"
DLQ_STREAM = "reliability:events:dlq"


class OpsCollector(Collector):
    """Scrape-time gauges over one database and one Redis (see the module docstring)."""

    def __init__(self, database_url: str, client: redis.Redis, dlq_stream: str = DLQ_STREAM,
                 subjects: tuple[Subjects, ...] = (CAPTURE_SUBJECTS, NOTE_SUBJECTS)):
        self.url = database_url
        self.redis = client
        self.dlq = dlq_stream
        self.subjects = subjects

    def collect(self) -> Iterator[GaugeMetricFamily]:
        depth = GaugeMetricFamily("verbatim_queue_depth", "Work waiting, by queue", labels=["queue"])
        try:
            yield from self._database(depth)
        except Exception as exc:  # noqa: BLE001 - a scrape must answer; the gap shows in the graphs
            log.warning("ops_metrics_database_failed", error=type(exc).__name__)
        try:
            depth.add_metric(["capture"], int(self.redis.llen(keys.CAPTURE_QUEUE)))
            depth.add_metric(["notes"], int(self.redis.llen(NOTES_QUEUE)))
            depth.add_metric(["reliability_dlq"], int(self.redis.xlen(self.dlq)) if self.redis.exists(self.dlq) else 0)
        except redis.RedisError as exc:
            log.warning("ops_metrics_redis_failed", error=type(exc).__name__)
        yield depth

    def _database(self, depth: GaugeMetricFamily) -> Iterator[GaugeMetricFamily]:
        with db_session(self.url) as db:
            by_status = db.execute(text("SELECT status, count(*) FROM sessions GROUP BY status")).all()
            blocked = db.execute(text(
                "SELECT coalesce(failure_code, 'unknown'), count(*) FROM sessions WHERE status = 'blocked' "
                "GROUP BY 1")).all()
            ages = db.execute(text("""
                SELECT
                  coalesce(extract(epoch FROM now() - min(s.created_at) FILTER (WHERE s.status = 'queued')), 0),
                  coalesce(extract(epoch FROM now() - min(s.created_at) FILTER (WHERE r.parked_at IS NOT NULL)), 0),
                  count(*) FILTER (WHERE r.parked_at IS NOT NULL)
                FROM sessions s LEFT JOIN durable_runs r ON r.kind = 'capture' AND r.subject_id = s.id
                WHERE s.status IN ('queued', 'recognizing', 'checkpointed', 'publishing')
            """)).one()
            outbox = db.execute(text("SELECT count(*) FROM outbox WHERE done_at IS NULL")).scalar_one()
            overdue = db.execute(text("""
                SELECT count(*) FROM durable_runs
                WHERE parked_at IS NULL AND due_at IS NOT NULL AND due_at < now() - interval '60 seconds'
            """)).scalar_one()
            last_tick = db.execute(text(
                "SELECT extract(epoch FROM now() - max(next_at)) FROM sweep_schedule WHERE name = 'tick'"
            )).scalar_one_or_none()
            census = {k.kind: k.census(db) for k in self.subjects}
            unwatched = {k.kind: k.unwatched(db) for k in self.subjects}
        sessions = GaugeMetricFamily("verbatim_sessions", "Sessions by status", labels=["status"])
        for status, n in by_status:
            sessions.add_metric([status], n)
        yield sessions
        held = GaugeMetricFamily("verbatim_sessions_blocked",
                                 "Sessions blocked with their audio kept, waiting for an admin retry, by failure code",
                                 labels=["code"])
        for code, n in blocked:
            held.add_metric([code], n)
        yield held
        yield GaugeMetricFamily("verbatim_sessions_parked", "Sessions waiting on the recognizer without a worker",
                                value=ages[2])
        yield GaugeMetricFamily("verbatim_oldest_queued_seconds", "Age of the oldest queued session (s)",
                                value=float(ages[0]))
        yield GaugeMetricFamily("verbatim_oldest_parked_seconds", "Age of the oldest parked session (s)",
                                value=float(ages[1]))
        depth.add_metric(["outbox"], outbox)
        yield GaugeMetricFamily("verbatim_runs_due_overdue", "Runs more than 60 s past their due time",
                                value=overdue)
        runs = GaugeMetricFamily("verbatim_runs", "Subjects by their run's state", labels=["kind", "state"])
        for kind, counts in census.items():
            for phase, n in counts.items():
                runs.add_metric([kind, phase.value], n)
        yield runs
        lost = GaugeMetricFamily("verbatim_runs_unwatched", "Subjects with work outstanding and no due time",
                                 labels=["kind"])
        for kind, n in unwatched.items():
            lost.add_metric([kind], n)
        yield lost
        if last_tick is not None:
            yield GaugeMetricFamily("verbatim_sweep_last_tick_age_seconds", "Since the last finished sweep tick (s)",
                                    value=float(last_tick))
