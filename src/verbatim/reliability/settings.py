"""Settings of the reliability analysis, read from ``RELIABILITY_*`` environment variables.

These names carry no ``VERBATIM_`` prefix (the contract of issue 7 fixes them); everything
else about the process (database and Redis URLs, logs) still comes from
``verbatim.config.Settings``. Every timing is a setting so tests run the whole machinery
in seconds. Unsafe combinations raise ConfigError at start-up.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from verbatim.errors import ConfigError


class ReliabilitySettings(BaseSettings):
    """Reliability-analysis configuration. Times are seconds unless the name says otherwise."""

    model_config = SettingsConfigDict(env_prefix="RELIABILITY_", env_file=None, extra="ignore")

    # --- streams (Redis) ------------------------------------------------------------------
    stream_key: str = Field("reliability:events", min_length=1, description="Main stream of analysis requests")
    retry_stream_key: str = Field(
        "reliability:events:retry", min_length=1, description="Retries waiting for their not_before_ts"
    )
    dlq_stream_key: str = Field("reliability:events:dlq", min_length=1, description="Dead letters")
    consumer_group: str = Field("reliability", min_length=1, description="Consumer group of analysis workers")
    stream_max_len: int = Field(
        100_000, ge=1000, description="Main stream trimmed to about this many entries (XADD MAXLEN ~)"
    )
    dlq_max_len: int = Field(5000, ge=1, description="Dead-letter stream trimmed to about this many entries")

    # --- retries --------------------------------------------------------------------------
    max_retries: int = Field(3, ge=0, description="Transient failures retried this often, then dead-lettered")
    retry_backoff_s: float = Field(10.0, gt=0, description="Delay before the first retry; doubles per retry")
    retry_backoff_max_s: float = Field(300.0, gt=0, description="Longest delay before a retry")
    retry_poll_s: float = Field(1.0, gt=0, description="How often the scheduler promotes due retries")
    busy_delay_s: float = Field(
        30.0, gt=0,
        description="A message whose transcript another consumer has locked waits this long (at most until "
        "the lock expires) and is tried again, its retry_count unchanged",
    )

    # --- consumer -------------------------------------------------------------------------
    concurrency: int = Field(4, ge=1, description="Messages analysed at once per worker process (threads)")
    read_block_ms: int = Field(2000, ge=10, description="XREADGROUP BLOCK; also bounds how fast SIGTERM is seen")
    claim_idle_ms: int = Field(
        60_000, ge=100, description="A message pending this long without a heartbeat is claimed (XAUTOCLAIM)"
    )
    claim_interval_s: float = Field(15.0, gt=0, description="How often a worker looks for stalled messages")
    max_deliveries: int = Field(
        5, ge=1, description="A message claimed from dead consumers this many times is dead-lettered (poison)"
    )
    lock_ttl_seconds: int = Field(1800, ge=1, description="Per-transcript lock TTL (SET NX EX)")
    progress_ttl_seconds: int = Field(86400, ge=1, description="TTL of the reliability_progress:{id} hash")
    shutdown_drain_s: float = Field(60.0, ge=0, description="SIGTERM: work in progress may finish for this long")

    # --- database pool of the worker --------------------------------------------------------
    use_dedicated_pool: bool = Field(True, description="The worker gets its own SQLAlchemy pool")
    db_pool_size: int = Field(5, ge=1)
    db_max_overflow: int = Field(2, ge=0)
    db_pool_recycle: int = Field(1800, ge=1, description="Seconds before a pooled connection is replaced")
    db_pool_timeout: float = Field(30.0, gt=0, description="Seconds to wait for a pooled connection")

    # --- the analysis -----------------------------------------------------------------------
    # Calibrated on the local recognizer (Whisper tiny.en word probabilities) against the shared
    # references by bench/asr.py: below 0.25 half the flagged words are wrong (6 of 770 words
    # flagged); at the former 0.6, 41 were flagged and 41 % of them wrong.
    confidence_threshold: float = Field(
        0.25, ge=0, le=1, description="Words the recognizer heard with less confidence become suggestions"
    )
    short_turn_max_s: float = Field(
        1.0, gt=0, description="A turn this short between two turns of another speaker is doubtful"
    )
    mid_sentence_gap_s: float = Field(
        0.5, ge=0, description="A speaker change within this gap, mid-sentence, is doubtful"
    )

    # --- the re-emit sweep (the sweep process) -----------------------------------------------
    sweep_grace_s: float = Field(60.0, ge=0, description="A never-emitted request younger than this is left alone")
    reemit_after_s: float = Field(
        3600.0, gt=0, description="An emitted request not analysed after this long is emitted again"
    )
    sweep_batch: int = Field(500, ge=1, description="At most this many requests re-emitted per sweep")

    # --- test-only hooks (inert unless set) -------------------------------------------------
    test_delay_s: float = Field(0.0, ge=0, description="The analysis first waits this long (tests: a held message)")

    @model_validator(mode="after")
    def _refuse_unsafe(self) -> ReliabilitySettings:
        keys = {self.stream_key, self.retry_stream_key, self.dlq_stream_key}
        if len(keys) != 3:
            raise ValueError("the main, retry and dead-letter stream keys must differ")
        if self.read_block_ms * 3 > self.claim_idle_ms:
            # The consumer loop heartbeats between reads: a read must not outlast a third of
            # the idle time after which another consumer may claim our messages.
            raise ValueError(f"read_block_ms={self.read_block_ms} must be at most claim_idle_ms / 3")
        if self.retry_backoff_s > self.retry_backoff_max_s:
            raise ValueError("retry_backoff_s must not exceed retry_backoff_max_s")
        if self.use_dedicated_pool and self.concurrency > self.db_pool_size + self.db_max_overflow:
            raise ValueError(
                f"concurrency={self.concurrency} exceeds db_pool_size + db_max_overflow = "
                f"{self.db_pool_size + self.db_max_overflow}: analysis threads would queue for connections"
            )
        # A request still travelling through Redis must not be emitted a second time by the
        # sweep: it would be analysed twice (harmless) and, if it keeps failing, dead-lettered
        # twice (confusing). Its longest trip: waiting out a dead consumer's lock (busy
        # deferrals stop at the lock's expiry), every retry at the longest backoff, one claim.
        in_flight_s = (
            self.lock_ttl_seconds + self.max_retries * self.retry_backoff_max_s + self.claim_idle_ms / 1000
        )
        if self.reemit_after_s <= in_flight_s:
            raise ValueError(
                f"reemit_after_s={self.reemit_after_s} must exceed the longest time a request can spend in "
                f"Redis, lock_ttl_seconds + max_retries * retry_backoff_max_s + claim_idle = {in_flight_s}"
            )
        return self


def load_reliability_settings(**overrides: object) -> ReliabilitySettings:
    """Read settings from the environment (plus explicit overrides); raises ConfigError when unsafe."""
    try:
        return ReliabilitySettings(**overrides)  # type: ignore[arg-type]
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc


@lru_cache(maxsize=1)
def get_reliability_settings() -> ReliabilitySettings:
    """The process-wide reliability settings, read once."""
    return load_reliability_settings()
