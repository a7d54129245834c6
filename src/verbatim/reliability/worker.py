"""The analysis worker (``verbatim analysis-worker``): one consumer of the ``reliability`` group.

Threads of one process:

- the **consumer loop** (the caller's thread) reads at most as many messages as there are
  free analysis threads (XREADGROUP), hands them to a ThreadPoolExecutor, heartbeats the
  ones in progress (so their idle time shows they are alive) and, every
  ``claim_interval_s``, claims messages idle past ``claim_idle_ms`` — their consumer died
  (XAUTOCLAIM: the stream's own stall sweep);
- ``concurrency`` **analysis threads**, each handling one message: per-transcript lock →
  count the attempt → analyse → commit suggestions with the guarded completion → XACK;
- the **retry scheduler**, promoting due retries to the main stream every ``retry_poll_s``.

A failed analysis is retried (transient faults, ``max_retries`` times, with backoff on the
retry stream) or dead-lettered (anything else, or retries spent). A message is acknowledged
only after its outcome is durable: suggestions committed, or the message moved to the retry
or dead-letter stream in the same MULTI/EXEC as its XACK.

SIGTERM: stop reading; cancel the scheduler (its entries stay in Redis); let analyses in
progress finish for ``shutdown_drain_s``; then shut the executor down — ``wait=True`` after
a clean drain, ``cancel_futures=True`` otherwise (``worker_drain_timeout_total``), when
analyses still running stop at their next check without writing, release their lock and
leave their message pending for another consumer to claim.

The worker has its own SQLAlchemy pool (``RELIABILITY_DB_*``), isolated from the API's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from types import FrameType

import redis
import sqlalchemy.exc
import structlog
from prometheus_client import Counter, Histogram
from sqlalchemy import Engine, create_engine, func, select
from sqlalchemy.orm import Session as OrmSession

from verbatim.db.engine import CONNECT_ARGS
from verbatim.db.engine import engine as shared_engine
from verbatim.db.models import Session
from verbatim.polish.base import Turn
from verbatim.reliability import analysis
from verbatim.reliability.lock import TranscriptLock
from verbatim.reliability.settings import ReliabilitySettings
from verbatim.reliability.streams import (
    AnalysisEvent,
    MalformedEvent,
    Message,
    RetryPolicy,
    Streams,
    Verdict,
    write_progress,
)
from verbatim.reliability.suggestions import SuggestionSpec, create_suggestions
from verbatim.reliability.sweep import complete_request, mark_dead_lettered, start_attempt
from verbatim.states import SessionStatus
from verbatim.telemetry import metrics

log = structlog.get_logger("verbatim.reliability")

messages_total = Counter(
    "reliability_messages_total", "Analysis messages handled, by outcome",
    ["outcome"],  # done, duplicate, retried, dead_lettered, deferred, interrupted
)
publish_to_done = Histogram(
    "reliability_publish_to_done_seconds", "From timestamp_requested to the analysis committed",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 1800, 3600),
)

#: (raw turns, published turns) → suggestions. The default is the offline analysis.
Analyser = Callable[[Sequence[Turn], Sequence[Turn] | None], list[SuggestionSpec]]

#: After a timed-out drain, running analyses get this long to notice the cancel and unwind.
CANCEL_GRACE_S = 5.0


class Interrupted(Exception):
    """Raised inside an analysis thread when the drain window is over: write nothing more."""


@dataclass(frozen=True)
class DrainReport:
    """How a worker stopped: ``clean`` when every analysis in progress finished in the window."""

    clean: bool
    finished: int
    interrupted: int
    abandoned: int  #: threads still running after the cancel grace (the process should exit hard)


def dedicated_engine(database_url: str, s: ReliabilitySettings) -> Engine:
    """The worker's own pool (``RELIABILITY_DB_*``), or the process's shared engine when disabled."""
    if not s.use_dedicated_pool:
        return shared_engine(database_url)
    return create_engine(
        database_url,
        pool_pre_ping=True,
        pool_size=s.db_pool_size,
        max_overflow=s.db_max_overflow,
        pool_recycle=s.db_pool_recycle,
        pool_timeout=s.db_pool_timeout,
        # a hung server must not hang an analysis thread forever
        connect_args=CONNECT_ARGS,
        hide_parameters=True,  # no transcript words in an error's message (it is logged)
    )


def default_analyser(s: ReliabilitySettings) -> Analyser:
    def run(raw: Sequence[Turn], published: Sequence[Turn] | None) -> list[SuggestionSpec]:
        return analysis.analyse(
            raw, published, confidence_threshold=s.confidence_threshold, short_turn_max_s=s.short_turn_max_s,
            mid_sentence_gap_s=s.mid_sentence_gap_s,
        )

    return run


def describe(exc: BaseException) -> str:
    """``"Type: first line of the message"`` for the retry and dead-letter streams.

    Only the first line, and for a failed SQL statement only the driver's error: SQLAlchemy
    appends the statement's parameters — transcript text — on the lines after it.
    """
    cause = exc.orig if isinstance(exc, sqlalchemy.exc.StatementError) and exc.orig is not None else exc
    lines = str(cause).splitlines()
    return f"{type(cause).__name__}: {lines[0] if lines else ''}"[:300]


def consumer_name() -> str:
    """Unique per process start: a restarted worker never inherits a dead one's pending list."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class AnalysisWorker:
    """One consumer process's machinery. ``run()`` blocks until ``stop()`` (SIGTERM) and the drain."""

    def __init__(
        self,
        settings: ReliabilitySettings,
        database_url: str,
        client: redis.Redis,
        *,
        consumer: str | None = None,
        analyser: Analyser | None = None,
    ):
        self.settings = settings
        self.redis = client
        self.streams = Streams(client, settings)
        self.policy = RetryPolicy.from_settings(settings)
        self.engine = dedicated_engine(database_url, settings)
        self.consumer = consumer or consumer_name()
        self.analyser = analyser or default_analyser(settings)
        self._stop = threading.Event()  # set by SIGTERM: read nothing more
        self._cancel = threading.Event()  # set when the drain window is over: running analyses give up
        self._stop_scheduler = threading.Event()
        self._slot_free = threading.Event()
        self._inflight: dict[str, Future[None]] = {}
        self._guard = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=settings.concurrency, thread_name_prefix="analysis")
        self._scheduler = threading.Thread(target=self._schedule_retries, name="retry-scheduler", daemon=True)
        self._beat_s = settings.claim_idle_ms / 1000 / 3
        self.stopped_by: str | None = None

    # --- lifecycle -------------------------------------------------------------------------------
    def stop(self, *_: object) -> None:
        """Stop consuming (safe from a signal handler); ``run()`` then drains and returns."""
        self._stop.set()
        self._slot_free.set()

    def install_signal_handlers(self) -> None:
        """SIGTERM and SIGINT stop the worker gracefully (main thread only)."""

        def handler(signum: int, _frame: FrameType | None) -> None:
            # Only set flags here: logging from a signal handler can re-enter a write in progress.
            self.stopped_by = signal.Signals(signum).name
            self.stop()

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    def run(self) -> DrainReport:
        """Consume until stopped, then drain. Returns how the drain went."""
        log.info("analysis_worker_started", consumer=self.consumer, stream=self.streams.main,
                 group=self.streams.group, concurrency=self.settings.concurrency)
        self._until_redis(self.streams.ensure_group)
        self._scheduler.start()
        next_claim = 0.0  # claim at once: a restart picks up what a dead worker left
        next_beat = time.monotonic() + self._beat_s
        while not self._stop.is_set():
            try:
                now = time.monotonic()
                if now >= next_beat:
                    self._heartbeat()
                    next_beat = now + self._beat_s
                # Cleared before counting: a slot freed from now on wakes the wait below.
                self._slot_free.clear()
                free = self.settings.concurrency - self._busy()
                if free <= 0:
                    self._slot_free.wait(0.2)
                    continue
                if now >= next_claim:
                    next_claim = now + self.settings.claim_interval_s
                    claimed = self.streams.claim_stalled(self.consumer, free)
                    for message in claimed:
                        log.info("analysis_message_claimed", message_id=message.id, deliveries=message.deliveries)
                        self._submit(message)
                    free -= len(claimed)
                if free > 0:
                    for message in self.streams.read(self.consumer, free, self.settings.read_block_ms):
                        self._submit(message)
            except redis.RedisError as exc:
                log.warning("analysis_worker_redis_error", error=type(exc).__name__)
                self._stop.wait(1.0)
        return self._drain()

    def _until_redis(self, call: Callable[[], object]) -> None:
        while not self._stop.is_set():
            try:
                call()
                return
            except redis.RedisError as exc:
                log.warning("analysis_worker_redis_error", error=type(exc).__name__)
                self._stop.wait(1.0)

    def _busy(self) -> int:
        with self._guard:
            return len(self._inflight)

    def _submit(self, message: Message) -> None:
        future = self._executor.submit(self._handle, message)
        with self._guard:
            self._inflight[message.id] = future

        def finished(_: Future[None]) -> None:
            with self._guard:
                self._inflight.pop(message.id, None)
            self._slot_free.set()

        future.add_done_callback(finished)

    def _heartbeat(self) -> None:
        with self._guard:
            ids = list(self._inflight)
        self.streams.heartbeat(self.consumer, ids)

    def _schedule_retries(self) -> None:
        while not self._stop_scheduler.wait(self.settings.retry_poll_s):
            try:
                moved = self.streams.promote_due()
                if moved:
                    log.info("analysis_retries_promoted", count=moved)
            except Exception as exc:  # noqa: BLE001 - the scheduler outlives any one bad tick
                log.warning("analysis_scheduler_error", error=type(exc).__name__)

    def _drain(self) -> DrainReport:
        # The scheduler's entries live in Redis: the next worker to start promotes them.
        self._stop_scheduler.set()
        self._scheduler.join(timeout=5)
        with self._guard:
            running = list(self._inflight.values())
        log.info("analysis_worker_draining", signal=self.stopped_by, in_progress=len(running),
                 drain_s=self.settings.shutdown_drain_s)
        deadline = time.monotonic() + self.settings.shutdown_drain_s
        not_done = {f for f in running if not f.done()}
        while not_done and time.monotonic() < deadline:
            not_done = wait(not_done, timeout=min(self._beat_s, deadline - time.monotonic())).not_done
            with contextlib.suppress(redis.RedisError):
                self._heartbeat()  # still ours while we drain: nobody may claim them yet
        if not not_done:
            self._executor.shutdown(wait=True)
            report = DrainReport(True, len(running), 0, 0)
            with contextlib.suppress(redis.RedisError):
                self.streams.forget_consumer(self.consumer)
        else:
            metrics.drain_timeout.inc()
            self._cancel.set()
            self._executor.shutdown(wait=False, cancel_futures=True)
            left = wait(not_done, timeout=CANCEL_GRACE_S).not_done
            report = DrainReport(False, len(running) - len(not_done), len(not_done), len(left))
            log.warning("analysis_drain_timeout", interrupted=report.interrupted, abandoned=report.abandoned)
        if self.settings.use_dedicated_pool:
            self.engine.dispose()
        log.info("analysis_worker_stopped", clean=report.clean, finished=report.finished,
                 interrupted=report.interrupted)
        return report

    # --- one message -----------------------------------------------------------------------------
    def _handle(self, message: Message) -> None:
        """Handle one message to a durable outcome; never raises (the thread's last word is a log)."""
        try:
            self._handle_message(message)
        except Exception as exc:  # noqa: BLE001 - e.g. Redis down while recording the outcome
            # Nothing was acknowledged: the message stays pending and is claimed again later.
            log.error("analysis_message_unsettled", message_id=message.id, error=type(exc).__name__)

    def _handle_message(self, message: Message) -> None:
        s = self.settings
        try:
            event = AnalysisEvent.parse(message.fields)
        except MalformedEvent as exc:
            self.streams.dead_letter(message.id, message.fields, f"malformed: {exc}")
            messages_total.labels(outcome="dead_lettered").inc()
            log.warning("analysis_message_malformed", message_id=message.id)
            return
        tid = event.transcript_id
        if message.deliveries > s.max_deliveries:
            # Claimed from dead consumers again and again: it is what kills them. Stop the loop.
            self._dead_letter(message, event, f"delivered {message.deliveries} times without an outcome")
            return
        lock = TranscriptLock(self.redis, tid, s.lock_ttl_seconds)
        if not lock.acquire():
            # Another consumer analyses this transcript (a duplicate event, or a claim while the
            # first consumer still works): look again when it should be done or its lock expired.
            delay = min(s.busy_delay_s, max(0.1, lock.remaining_s()))
            self.streams.schedule_retry(message.id, event, "transcript locked by another consumer", delay)
            messages_total.labels(outcome="deferred").inc()
            log.info("analysis_deferred_busy", transcript_id=str(tid), delay_s=round(delay, 3))
            return
        try:
            write_progress(self.redis, tid, s.progress_ttl_seconds, status="running", retry_count=event.retry_count,
                           consumer=self.consumer)
            stored = self._analyse(event)
        except Interrupted:
            messages_total.labels(outcome="interrupted").inc()
            self._progress(tid, status="interrupted")
            log.info("analysis_interrupted", transcript_id=str(tid), message_id=message.id)
            return  # not acknowledged: another consumer claims it
        except Exception as exc:  # noqa: BLE001 - classified by the retry policy below
            self._failed(message, event, exc)
            return
        finally:
            try:
                if lock.held and not lock.release():
                    log.warning("analysis_lock_lost", transcript_id=str(tid))
            except redis.RedisError:
                pass  # it expires on its own
        self.streams.ack(message.id)
        if stored is None:
            # Someone completed it before us (a duplicate event): its progress already says so.
            messages_total.labels(outcome="duplicate").inc()
            log.info("analysis_duplicate", transcript_id=str(tid))
            return
        messages_total.labels(outcome="done").inc()
        finished = time.time()
        with contextlib.suppress(ValueError):  # a hand-written event with an unreadable timestamp
            publish_to_done.observe(max(0.0, finished - float(event.timestamp_requested)))
        self._progress(tid, status="done", suggestions=stored, retry_count=event.retry_count, finished_at=finished)
        log.info("analysis_done", transcript_id=str(tid), suggestions=stored, retry_count=event.retry_count)

    def _analyse(self, event: AnalysisEvent) -> int | None:
        """Analyse and commit; the number of suggestions stored, or None when it was already done."""
        tid = event.transcript_id
        with OrmSession(self.engine) as db, db.begin():
            if not start_attempt(db, tid):
                return None
        if self.settings.test_delay_s and self._cancel.wait(self.settings.test_delay_s):
            raise Interrupted()
        with OrmSession(self.engine) as db:
            row = db.execute(
                # The publish step's turns (the record's base), not the record as clinicians have changed it
                # since: the analysis shows what the polish pass changed.
                select(Session.status, Session.raw_turns,
                       func.coalesce(Session.polished_turns, Session.published_turns).label("base"))
                .where(Session.id == tid)
            ).one_or_none()
        ready = row is not None and row.status == SessionStatus.READY and row.raw_turns is not None
        specs = self.analyser(row.raw_turns, row.base) if ready and row is not None else []
        if self._cancel.is_set():
            raise Interrupted()
        with OrmSession(self.engine) as db, db.begin():
            # Locks the session row against a concurrent withdrawal: text is never stored for a
            # session that is gone.
            status = db.execute(select(Session.status).where(Session.id == tid).with_for_update()).scalar()
            if not complete_request(db, tid):
                return None
            if status != SessionStatus.READY:
                return 0
            return create_suggestions(db, tid, specs)

    def _failed(self, message: Message, event: AnalysisEvent, exc: Exception) -> None:
        decision = self.policy.decide(exc, event.retry_count)
        error = describe(exc)
        if decision.verdict is Verdict.RETRY:
            retry = event.retried()
            self.streams.schedule_retry(message.id, retry, error, decision.delay_s)
            messages_total.labels(outcome="retried").inc()
            self._progress(event.transcript_id, status="retry_scheduled", retry_count=retry.retry_count,
                           error=error, not_before_ts=time.time() + decision.delay_s)
            log.warning("analysis_retry_scheduled", transcript_id=str(event.transcript_id),
                        retry_count=retry.retry_count, delay_s=decision.delay_s, error=type(exc).__name__)
            return
        self._dead_letter(message, event, error if decision.reason == "permanent" else f"{decision.reason}: {error}")

    def _dead_letter(self, message: Message, event: AnalysisEvent, error: str) -> None:
        self.streams.dead_letter(message.id, event.to_fields(), error)
        messages_total.labels(outcome="dead_lettered").inc()
        self._progress(event.transcript_id, status="dead_lettered", error=error)
        log.error("analysis_dead_lettered", transcript_id=str(event.transcript_id), retry_count=event.retry_count)
        try:
            mark_dead_lettered(self.engine, event.transcript_id)
        except Exception as exc:  # noqa: BLE001 - PostgreSQL may be what failed; the sweep then retries it
            log.warning("analysis_mark_dead_lettered_failed", error=type(exc).__name__)

    def _progress(self, tid: uuid.UUID, **fields: object) -> None:
        # Progress is a convenience: the outcome is already durable when it is written.
        with contextlib.suppress(redis.RedisError):
            write_progress(self.redis, tid, self.settings.progress_ttl_seconds, consumer=self.consumer, **fields)


def main(database_url: str, redis_url: str, settings: ReliabilitySettings, consumer: str | None = None) -> int:
    """Run one worker process until SIGTERM; exit code 0 after a clean drain, 1 otherwise."""
    client = redis.Redis.from_url(
        redis_url, socket_timeout=settings.read_block_ms / 1000 + 10, socket_connect_timeout=5,
        health_check_interval=15,
    )
    worker = AnalysisWorker(settings, database_url, client, consumer=consumer)
    worker.install_signal_handlers()
    report = worker.run()
    client.close()
    if report.abandoned:
        # Threads that ignore the cancel would keep the interpreter from exiting; their
        # messages are pending in Redis and will be claimed, so leave now.
        os._exit(1)
    return 0 if report.clean else 1
