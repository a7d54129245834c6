"""Every Redis key of the reliability analysis, and every operation on its streams.

Redis holds only what PostgreSQL can rebuild: if it is flushed, the sweep re-emits every
request ``reliability_analyses`` says was never analysed (``verbatim.reliability.sweep``).

``reliability:events`` (``RELIABILITY_STREAM_KEY``)
    Main stream of ``reliability.analysis.requested`` events, consumed by the group
    ``reliability`` (``RELIABILITY_CONSUMER_GROUP``). Written by publish (``emit_requested``),
    the sweep, retry promotion and dead-letter re-injection. No TTL; trimmed to about
    ``stream_max_len`` entries by every XADD.
``reliability:events:retry`` (``RELIABILITY_RETRY_STREAM_KEY``)
    Events waiting to be retried: the event's fields plus ``not_before_ts`` (unix seconds)
    and ``last_error``. Written by workers; each worker's scheduler moves due entries to the
    main stream and deletes them (one Lua call, so two schedulers never promote one entry
    twice). No TTL: pending retries survive a restart.
``reliability:events:dlq`` (``RELIABILITY_DLQ_STREAM_KEY``)
    Dead letters: the event's fields plus ``error`` and ``failed_at`` (unix seconds). Written
    by workers, trimmed to about ``dlq_max_len`` entries; listed, counted and re-injected by
    the admin endpoints.
``reliability_lock:{transcript_id}``
    The token of the attempt analysing that transcript. TTL ``lock_ttl_seconds``. Written
    with SET NX EX, deleted by compare-and-DEL (``verbatim.reliability.lock``).
``reliability_progress:{transcript_id}``
    Hash: ``status`` (queued, running, retry_scheduled, deferred, done, dead_lettered,
    interrupted), ``retry_count``, ``consumer``, ``suggestions``, ``error``, ``updated_at``
    (unix seconds) … TTL ``progress_ttl_seconds``, refreshed by every write. Written by
    publish and workers, read by ``GET /v1/reliability/transcripts/{id}/progress``.

Stream field values are strings: ``retry_count`` a decimal, ``metadata`` JSON,
``timestamp_requested`` unix seconds.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

import redis
import sqlalchemy.exc

from verbatim.errors import PolishTransient, VerbatimError
from verbatim.reliability.settings import ReliabilitySettings

EVENT_TYPE = "reliability.analysis.requested"
#: Fields the retry and dead-letter streams add to an event; stripped when it returns to the main stream.
RETRY_FIELDS = ("not_before_ts", "last_error")
DLQ_FIELDS = ("error", "failed_at")


class MalformedEvent(VerbatimError):
    """Raised when a stream entry is not a ``reliability.analysis.requested`` event we can read."""


class AnalysisTransient(VerbatimError):
    """Raised when an analysis failed on a fault worth retrying (an LLM timeout, a dependency briefly down)."""


# --- keys ------------------------------------------------------------------------------------


def lock_key(transcript_id: uuid.UUID | str) -> str:
    """The per-transcript analysis lock."""
    return f"reliability_lock:{transcript_id}"


def progress_key(transcript_id: uuid.UUID | str) -> str:
    """The per-transcript progress hash."""
    return f"reliability_progress:{transcript_id}"


# --- the event ---------------------------------------------------------------------------------


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def decode_fields(fields: Mapping[Any, Any]) -> dict[str, str]:
    """A stream entry's fields as ``str → str``."""
    return {_text(k): _text(v) for k, v in fields.items()}


@dataclass(frozen=True)
class AnalysisEvent:
    """``reliability.analysis.requested``: analyse one transcript (= session) of one user (= therapist).

    ``timestamp_requested`` is unix seconds as a string; ``retry_count`` counts retries of
    transient failures (0 on first emission and after a dead letter is re-injected).
    """

    transcript_id: uuid.UUID
    user_id: uuid.UUID
    retry_count: int = 0
    timestamp_requested: str = field(default_factory=lambda: f"{time.time():.6f}")
    metadata: dict[str, Any] = field(default_factory=dict)
    event_type: str = EVENT_TYPE

    def to_json(self) -> dict[str, Any]:
        """The event as the contract shows it (uuids as strings, retry_count an int)."""
        return {
            "event_type": self.event_type,
            "transcript_id": str(self.transcript_id),
            "user_id": str(self.user_id),
            "retry_count": self.retry_count,
            "timestamp_requested": self.timestamp_requested,
            "metadata": self.metadata,
        }

    def to_fields(self) -> dict[str, str]:
        """Stream fields (every value a string)."""
        out = self.to_json()
        out["retry_count"] = str(self.retry_count)
        out["metadata"] = json.dumps(self.metadata, separators=(",", ":"))
        return out

    @classmethod
    def parse(cls, fields: Mapping[Any, Any]) -> AnalysisEvent:
        """Read an entry's fields; raises MalformedEvent when they are not such an event."""
        f = decode_fields(fields)
        if f.get("event_type") != EVENT_TYPE:
            raise MalformedEvent(f"event_type is {f.get('event_type')!r}, expected {EVENT_TYPE!r}")
        try:
            metadata = json.loads(f.get("metadata") or "{}")
            if not isinstance(metadata, dict):
                raise ValueError("metadata is not a JSON object")
            return cls(
                transcript_id=uuid.UUID(f["transcript_id"]),
                user_id=uuid.UUID(f["user_id"]),
                retry_count=int(f.get("retry_count", "0")),
                timestamp_requested=f.get("timestamp_requested") or f"{time.time():.6f}",
                metadata=metadata,
            )
        except (KeyError, ValueError) as exc:
            raise MalformedEvent(f"unreadable event: {type(exc).__name__}: {exc}") from exc

    def retried(self) -> AnalysisEvent:
        """The same event with retry_count + 1."""
        return replace(self, retry_count=self.retry_count + 1)


def public_fields(fields: Mapping[Any, Any]) -> dict[str, Any]:
    """A dead letter's fields for the admin API: the event typed as the contract shows it,
    plus ``error`` and ``failed_at``; unreadable entries are returned as they are."""
    raw = decode_fields(fields)
    try:
        out: dict[str, Any] = AnalysisEvent.parse(raw).to_json()
    except MalformedEvent:
        out = {k: v for k, v in raw.items() if k not in DLQ_FIELDS}
    out.update({k: raw.get(k, "") for k in DLQ_FIELDS})
    return out


# --- the retry policy --------------------------------------------------------------------------

#: Faults worth retrying: our own transient class, an LLM's, Redis or PostgreSQL briefly
#: unreachable (a refused connection, a timeout, a pool that gave no connection in time).
#: Everything else (a bug, bad turns in the checkpoint, an illegal transition) would fail
#: the same way again: it is dead-lettered at once, for a human to look at.
TRANSIENT: tuple[type[BaseException], ...] = (
    AnalysisTransient,
    PolishTransient,
    redis.ConnectionError,
    redis.TimeoutError,
    sqlalchemy.exc.OperationalError,
    sqlalchemy.exc.TimeoutError,
    TimeoutError,
    ConnectionError,
)


class Verdict(StrEnum):
    """What to do with a message whose analysis raised."""

    RETRY = "retry"  #: schedule on the retry stream with retry_count + 1 after ``delay_s``
    DEAD_LETTER = "dead_letter"  #: move to the dead-letter stream for an admin


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    delay_s: float = 0.0
    reason: str = ""


@dataclass(frozen=True)
class RetryPolicy:
    """Transient faults are retried ``max_retries`` times with doubling backoff, then dead-lettered."""

    max_retries: int
    backoff_s: float
    backoff_max_s: float
    transient: tuple[type[BaseException], ...] = TRANSIENT

    @classmethod
    def from_settings(cls, s: ReliabilitySettings) -> RetryPolicy:
        return cls(s.max_retries, s.retry_backoff_s, s.retry_backoff_max_s)

    def decide(self, exc: BaseException, retry_count: int) -> Decision:
        """``retry_count`` is the failed event's (retries already spent)."""
        if not isinstance(exc, self.transient):
            return Decision(Verdict.DEAD_LETTER, reason="permanent")
        if retry_count >= self.max_retries:
            return Decision(Verdict.DEAD_LETTER, reason="retries_exhausted")
        delay = min(self.backoff_max_s, self.backoff_s * 2**retry_count)
        return Decision(Verdict.RETRY, delay_s=delay, reason="transient")


# --- stream operations -------------------------------------------------------------------------

# KEYS[1] = retry stream, KEYS[2] = main stream; ARGV = entry id, main maxlen, now (unix s).
# Re-reads the entry so that two schedulers racing for it promote it once.
_PROMOTE = """
local entries = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1])
if #entries == 0 then return 0 end
local fields = entries[1][2]
local out = {}
for i = 1, #fields, 2 do
    local k, v = fields[i], fields[i + 1]
    if k == 'not_before_ts' then
        local due = tonumber(v)
        if due and due > tonumber(ARGV[3]) then return 0 end
    elseif k ~= 'last_error' then
        out[#out + 1] = k
        out[#out + 1] = v
    end
end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', unpack(out))
redis.call('XDEL', KEYS[1], ARGV[1])
return 1
"""

# KEYS[1] = dead-letter stream, KEYS[2] = main stream; ARGV = entry id, main maxlen.
# Returns the transcript id re-injected (or false when the entry is gone).
_REINJECT = """
local entries = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1])
if #entries == 0 then return false end
local fields = entries[1][2]
local out = {}
local tid = ''
for i = 1, #fields, 2 do
    local k, v = fields[i], fields[i + 1]
    if k == 'retry_count' then v = '0' end
    if k == 'transcript_id' then tid = v end
    if k ~= 'error' and k ~= 'failed_at' then
        out[#out + 1] = k
        out[#out + 1] = v
    end
end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', unpack(out))
redis.call('XDEL', KEYS[1], ARGV[1])
return tid
"""


def _due_at(fields: Mapping[str, str]) -> float:
    """An entry's ``not_before_ts``; an unreadable one is due now (better early than stuck forever)."""
    try:
        return float(fields.get("not_before_ts") or 0)
    except ValueError:
        return 0.0


@dataclass(frozen=True)
class Message:
    """One delivered stream entry: its id, raw fields and how often it was delivered (1 = first)."""

    id: str
    fields: dict[str, str]
    deliveries: int = 1


class Streams:
    """The main, retry and dead-letter streams of one configuration, over one Redis client."""

    def __init__(self, client: redis.Redis, settings: ReliabilitySettings):
        # Any: redis-py types stream replies as unions of bytes/str/None per call; the decode
        # helpers here are what give them one shape.
        self.redis: Any = client
        self.settings = settings
        self.main = settings.stream_key
        self.retry = settings.retry_stream_key
        self.dlq = settings.dlq_stream_key
        self.group = settings.consumer_group
        self._promote = client.register_script(_PROMOTE)
        self._reinject = client.register_script(_REINJECT)

    # -- main stream --------------------------------------------------------------------------
    def ensure_group(self) -> None:
        """Create the consumer group (and the stream) if missing.

        The group starts at id 0, not ``$``: events emitted before the first worker ever
        started (or after Redis lost the group) are consumed, not skipped.
        """
        try:
            self.redis.xgroup_create(self.main, self.group, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    def publish(self, event: AnalysisEvent, pipe: Any = None) -> str | None:
        """XADD the event on the main stream; returns its id (None inside a pipeline)."""
        target = pipe if pipe is not None else self.redis
        entry = target.xadd(self.main, event.to_fields(), maxlen=self.settings.stream_max_len, approximate=True)
        return None if pipe is not None else _text(entry)

    def read(self, consumer: str, count: int, block_ms: int) -> list[Message]:
        """New messages for ``consumer`` (XREADGROUP >), waiting up to ``block_ms``."""
        try:
            answer = self.redis.xreadgroup(self.group, consumer, {self.main: ">"}, count=count, block=block_ms)
        except redis.ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            # Redis lost the group (flushed, restarted without persistence): make it again.
            self.ensure_group()
            return []
        out = []
        for _stream, entries in answer or []:
            for entry_id, fields in entries:
                if fields is not None:
                    out.append(Message(_text(entry_id), decode_fields(fields)))
        return out

    def ack(self, message_id: str) -> None:
        self.redis.xack(self.main, self.group, message_id)

    def heartbeat(self, consumer: str, message_ids: Iterable[str]) -> None:
        """Reset the idle time of messages this consumer is still working on (XCLAIM … JUSTID).

        JUSTID leaves the delivery count alone, so a slow analysis is never mistaken for a
        poison message; and a message that stays idle past ``claim_idle_ms`` really has nobody.
        """
        ids = list(message_ids)
        if ids:
            self.redis.xclaim(self.main, self.group, consumer, 0, ids, justid=True)

    def claim_stalled(self, consumer: str, count: int) -> list[Message]:
        """Take over messages idle longer than ``claim_idle_ms`` (their consumer died): XAUTOCLAIM.

        Each carries its delivery count (XAUTOCLAIM adds one per claim).
        """
        answer = self.redis.xautoclaim(
            self.main, self.group, consumer, self.settings.claim_idle_ms, start_id="0-0", count=count
        )
        entries = answer[1] if answer else []
        out = []
        for entry_id, fields in entries:
            if fields is None:
                continue
            mid = _text(entry_id)
            pending = self.redis.xpending_range(self.main, self.group, min=mid, max=mid, count=1)
            deliveries = int(pending[0]["times_delivered"]) if pending else 1
            out.append(Message(mid, decode_fields(fields), deliveries))
        return out

    def pending_count(self, consumer: str | None = None) -> int:
        """Messages delivered and not yet acknowledged (of one consumer, or of the group)."""
        if consumer is None:
            summary = self.redis.xpending(self.main, self.group)
            return int(summary["pending"])
        return len(self.redis.xpending_range(self.main, self.group, min="-", max="+", count=10_000,
                                             consumername=consumer))

    def forget_consumer(self, consumer: str) -> None:
        """Remove a consumer with nothing pending from the group (clean shutdown)."""
        if self.pending_count(consumer) == 0:
            self.redis.xgroup_delconsumer(self.main, self.group, consumer)

    # -- retries ------------------------------------------------------------------------------
    def schedule_retry(self, message_id: str, event: AnalysisEvent, error: str, delay_s: float) -> None:
        """Put ``event`` on the retry stream, due in ``delay_s`` seconds, and ack the original.

        One MULTI/EXEC: the message is never both gone from the main stream and missing
        from the retry stream.
        """
        fields = {**event.to_fields(), "not_before_ts": f"{time.time() + delay_s:.6f}", "last_error": error[:500]}
        pipe = self.redis.pipeline(transaction=True)
        pipe.xadd(self.retry, fields)
        pipe.xack(self.main, self.group, message_id)
        pipe.execute()

    def promote_due(self, now: float | None = None, scan: int = 1000) -> int:
        """Move retries whose ``not_before_ts`` has passed to the main stream; returns how many.

        Entries are not ordered by due time (backoff varies), so the scan reads up to ``scan``
        entries oldest first; each due one is moved and deleted from the retry stream in one
        Lua call, which keeps the retry stream trimmed to the retries still waiting.
        """
        now = time.time() if now is None else now
        moved = 0
        start = "-"
        seen = 0
        while seen < scan:
            batch = self.redis.xrange(self.retry, min=start, max="+", count=min(200, scan - seen))
            if not batch:
                break
            for entry_id, fields in batch:
                if _due_at(decode_fields(fields)) <= now:
                    moved += int(self._promote(keys=[self.retry, self.main],
                                               args=[_text(entry_id), self.settings.stream_max_len, f"{now:.6f}"]))
            seen += len(batch)
            start = "(" + _text(batch[-1][0])
        return moved

    # -- dead letters -------------------------------------------------------------------------
    def dead_letter(self, message_id: str, fields: Mapping[str, str], error: str) -> None:
        """Move a message to the dead-letter stream (trimmed, approximately) and ack it: one MULTI/EXEC."""
        body = {k: v for k, v in fields.items() if k not in RETRY_FIELDS and k not in DLQ_FIELDS}
        body.update(error=error[:2000], failed_at=f"{time.time():.6f}")
        pipe = self.redis.pipeline(transaction=True)
        pipe.xadd(self.dlq, body, maxlen=self.settings.dlq_max_len, approximate=True)
        pipe.xack(self.main, self.group, message_id)
        pipe.execute()

    def dlq_list(self, limit: int) -> list[tuple[str, dict[str, str]]]:
        """Up to ``limit`` dead letters, oldest first: ``(id, fields)``."""
        return [(_text(i), decode_fields(f)) for i, f in self.redis.xrange(self.dlq, count=limit)]

    def dlq_stats(self) -> dict[str, Any]:
        """``{"count", "stream", "oldest_id", "newest_id"}`` (ids None when empty)."""
        count = int(self.redis.xlen(self.dlq))
        oldest = self.redis.xrange(self.dlq, count=1)
        newest = self.redis.xrevrange(self.dlq, count=1)
        return {
            "count": count,
            "stream": self.dlq,
            "oldest_id": _text(oldest[0][0]) if oldest else None,
            "newest_id": _text(newest[0][0]) if newest else None,
        }

    def dlq_reinject(self, message_ids: Iterable[str] | None) -> list[str]:
        """Re-inject dead letters onto the main stream with retry_count 0 and delete them.

        ``None`` means all of them. Each entry moves in one Lua call (never lost, never
        doubled). Returns the transcript ids re-injected ("" for unreadable entries).
        """
        if message_ids is not None:
            return self._reinject_ids(list(message_ids))
        newest = self.redis.xrevrange(self.dlq, count=1)
        if not newest:
            return []
        # Only what is dead now: a message that fails again while we work must not loop here.
        last = _text(newest[0][0])
        done: list[str] = []
        start = "-"
        while True:
            batch = [_text(i) for i, _ in self.redis.xrange(self.dlq, min=start, max=last, count=200)]
            if not batch:
                return done
            done += self._reinject_ids(batch)
            start = "(" + batch[-1]

    def _reinject_ids(self, ids: list[str]) -> list[str]:
        out = []
        for mid in ids:
            tid = self._reinject(keys=[self.dlq, self.main], args=[mid, self.settings.stream_max_len])
            if tid is not None:
                out.append(_text(tid))
        return out


# --- progress --------------------------------------------------------------------------------


def write_progress(client: Any, transcript_id: uuid.UUID | str, ttl_s: int, **fields: object) -> None:
    """Set fields of the transcript's progress hash (plus ``updated_at``) and refresh its TTL.

    ``client`` may be a pipeline (then nothing is sent until it executes).
    """
    key = progress_key(transcript_id)
    values = {k: "" if v is None else str(v) for k, v in fields.items()}
    values["updated_at"] = f"{time.time():.6f}"
    own = isinstance(client, redis.Redis)
    pipe: Any = client.pipeline(transaction=True) if own else client
    pipe.hset(key, mapping=values)
    pipe.expire(key, ttl_s)
    if own:
        pipe.execute()


def read_progress(client: redis.Redis, transcript_id: uuid.UUID | str) -> dict[str, str]:
    """The transcript's progress hash (empty when it expired or was never written)."""
    found: Any = client.hgetall(progress_key(transcript_id))
    return decode_fields(found)
