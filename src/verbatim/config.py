"""The one settings object, read from ``VERBATIM_*`` environment variables.

Every timing is a setting so tests can run the whole durability machinery in seconds.
Unsafe combinations raise ConfigError at start-up (pydantic validation) instead of
failing later at 3 a.m. `.env.example` lists every field with its default.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from verbatim.errors import ConfigError

#: secrets that ship in the code: fine on a developer machine, refused in production
DEFAULT_SECRETS = frozenset({"", "local-dev-key"})


class Settings(BaseSettings):
    """Verbatim configuration. Times are seconds, sizes bytes, unless the name says otherwise."""

    model_config = SettingsConfigDict(env_prefix="VERBATIM_", env_file=None, extra="ignore")

    mode: Literal["production", "development"] = Field(
        "production",
        description="production refuses default or missing secrets and hides /docs; development (set by "
        "`verbatim demo`, `verbatim up` and the tests) allows them",
    )

    # --- where things live -------------------------------------------------------------
    database_url: str | None = Field(
        None, description="SQLAlchemy URL of PostgreSQL; unset → an embedded server is started"
    )
    db_app_password: str | None = Field(
        None, description="`verbatim migrate` sets this password on the runtime role verbatim_app"
    )
    redis_url: str | None = Field(None, description="Redis URL (broker, leases); unset → embedded server")
    data_dir: Path = Field(Path(".verbatim"), description="Audio volume, embedded servers' data, job store")

    # --- API ----------------------------------------------------------------------------
    api_host: str = "127.0.0.1"
    api_port: int = 8000
    # --- data at rest ------------------------------------------------------------------
    encryption_keys: SecretStr | None = Field(
        None, description="Key ring as id:base64key[,id:base64key…], newest last (32-byte AES-256 keys); "
        "takes precedence over key_file"
    )
    key_file: Path | None = Field(
        None, description="Key ring file (`verbatim keys rotate` adds keys to it); unset in development → "
        "<data_dir>/keys/ring.json, generated"
    )

    # --- probing uploads in a child process --------------------------------------------
    probe_timeout_s: float = Field(
        30.0, gt=0, description="Wall-clock limit of one upload's probe, from when it got its slot (→ 503, retry)"
    )
    probe_concurrency: int = Field(
        0, ge=0, description="Probes one API process runs at once (0: one per CPU core); others wait for a slot"
    )
    probe_wait_s: float = Field(
        60.0, gt=0, description="How long an upload waits for a probe slot before 503 with Retry-After"
    )
    probe_cpu_s: int = Field(20, ge=1, description="CPU-seconds limit of the probe child (RLIMIT_CPU)")
    probe_memory_mib: int = Field(
        512, ge=64, description="Address space the probe child may add to what it starts with (RLIMIT_AS, MiB)"
    )

    api_docs: bool | None = Field(None, description="Serve /docs and /openapi.json (default: development mode only)")
    metrics_token: str | None = Field(
        None, description="Bearer token for the API's /metrics (production without one: /metrics is off)"
    )
    break_glass_s: float = Field(
        3600.0, gt=0, le=24 * 3600.0,
        description="How long a break-glass grant lets a colleague read one session's transcript",
    )
    web_idle_s: float = Field(
        900.0, gt=0, le=12 * 3600.0,
        description="A signed-in web page session ends after this long without a request (15 min)",
    )
    sign_in_link_s: float = Field(
        900.0, gt=0, le=7 * 86400.0, description="How long a one-time sign-in link (token create --link) works",
    )
    auth_failures_per_min: int = Field(
        10, ge=1, description="Failed sign-ins, link codes and bearer tokens one client address may send a minute "
        "before it is answered 429 (Retry-After) until the minute is over",
    )
    trusted_proxies: str = Field(
        "", description="Comma-separated addresses or networks (10.0.0.0/8) of the proxies whose X-Forwarded-For "
        "names the client; empty: none, the connection's address is the client's (set the Ingress controller's "
        "pod network)",
    )
    public_url: str | None = Field(
        None, description="Address clinicians open (sign-in links); unset → http://API_HOST:API_PORT",
    )
    upload_idle_s: float = Field(30.0, gt=0, description="An upload that sends nothing for this long is refused (408)")
    header_timeout_s: float = Field(
        10.0, gt=0, description="A connection whose request line and headers are not all in after this long is closed"
    )
    api_max_connections: int = Field(
        256, ge=1, description="Concurrent connections one API process serves; more are answered 503 at once"
    )
    max_upload_bytes: int = Field(2 * 1024**3, gt=0, description="Largest accepted recording (2 GiB)")
    max_duration_s: float = Field(4 * 3600, gt=0, description="Longest accepted recording (4 h)")
    max_concurrent_uploads: int = Field(
        8, ge=1, description="Upload bodies one token may send to one API process at once; more are 429"
    )
    max_open_uploads: int = Field(
        20, ge=1, description="Resumable uploads one therapist may have open at once (a bulk import needs more)"
    )
    max_open_upload_bytes: int = Field(
        20 * 1024**3, gt=0, description="Bytes one therapist's open resumable uploads may declare in total (20 GiB)"
    )
    min_free_bytes: int = Field(
        256 * 1024**2, ge=0, description="Free space the audio volume keeps: an upload that would eat into it is 507"
    )
    tus_expiry_s: float = Field(
        86400.0, gt=0, description="An unfinished resumable (tus) upload expires this long after creation (24 h)"
    )
    recording_stall_s: float = Field(
        7200.0, gt=0, description="A deferred-length upload (a phone recording) that receives no byte for this long "
        "is finished with what arrived and processed as a partial recording (2 h)"
    )

    # --- recognizer (Speechmatics batch API or the local asr-server) ----------------------
    recognizer_url: str = Field(
        "http://127.0.0.1:8700/v2", description="Speechmatics batch API base URL (…/v2)"
    )
    recognizer_api_key: str = Field("local-dev-key", description="Speechmatics API key")
    recognizer_language: str = "en"
    recognizer_request_timeout_s: float = Field(30.0, gt=0, description="Per-attempt HTTP timeout")
    recognizer_retry_budget_s: float = Field(
        120.0, gt=0, description="Wall-clock budget for retrying one transient recognizer call"
    )
    recognizer_max_attempts: int = Field(8, ge=1)
    recognizer_poll_min_s: float = Field(0.5, gt=0, description="First wait between job-status polls")
    recognizer_poll_max_s: float = Field(10.0, gt=0, description="Longest wait between job-status polls")
    recognizer_job_timeout_s: float = Field(
        6 * 3600.0, gt=0, description="Give up waiting for one vendor job after this long"
    )

    # --- parking: waiting on the vendor without a worker -----------------------------------
    recognizer_park_after_s: float = Field(
        0.0, ge=0,
        description="How long a capture run waits in its worker for the vendor's job before it parks "
        "(0: park at once after submitting; the worker is free, the session is due again when notified or looked up)",
    )
    recognizer_park_s: float = Field(30.0, gt=0, description="A parked session's first look-up time (seconds)")
    recognizer_park_max_s: float = Field(
        300.0, gt=0, description="Longest wait between two look-ups of a parked session (the poller backs off to it)"
    )
    recognizer_list_limit: int = Field(
        100, ge=1, le=10000, description="Jobs per GET /v2/jobs page when the sweep looks up parked jobs"
    )
    callback_base_url: str | None = Field(
        None, description="Our API's base URL as the recognizer reaches it (e.g. https://verbatim.example.org); "
        "set: every job asks for a notification (notification_config) at /v1/recognizer/callbacks/{submission}",
    )

    # --- the local recognizer service (verbatim asr-server) -------------------------------
    asr_host: str = "127.0.0.1"
    asr_port: int = 8700
    asr_api_key: str = Field("local-dev-key", description="Key the asr-server accepts")
    asr_engine: Literal["whisper", "pocketsphinx"] = Field(
        "whisper", description="Words from faster-whisper (tiny.en, packaged) or the older pocketsphinx"
    )
    asr_model_dir: Path | None = Field(
        None, description="Another CTranslate2 Whisper model folder (default: the packaged tiny.en)"
    )
    asr_model_sha256: str | None = Field(None, description="SHA-256 of that folder's model.bin (required with it)")
    asr_workers: int = Field(2, ge=1, description="Recognition processes in the asr-server's pool")
    asr_job_ttl_s: float = Field(7 * 86400.0, gt=0, description="asr-server jobs expire this long after they finish")
    asr_faults: bool = Field(False, description="Enable the asr-server's fault-injection endpoints (tests)")
    asr_fixed_delay_s: float | None = Field(
        None, ge=0, description="Test/bench mode: every job finishes this long after submission with an empty "
        "transcript, without recognising anything (None: recognise for real)",
    )

    # --- capture run --------------------------------------------------------------------
    lease_ttl_s: float = Field(60.0, gt=0, description="Lease time-to-live (SET NX PX)")
    heartbeat_s: float = Field(15.0, gt=0, description="Lease renewal period")
    max_runs: int = Field(5, ge=1, description="Runs past this fail the session as `interrupted`")
    polished_runs: int = Field(3, ge=1, description="Runs past this publish without model passes")

    retry_later_s: float = Field(
        30.0, gt=0, description="A run that ended on a transient fault (refunded) is due again after this"
    )
    session_deadline_s: float = Field(
        24 * 3600.0, gt=0,
        description="Wall-clock bound per session from upload: past it the session fails as `deadline_exceeded`",
    )

    transcript_retention_days: int = Field(
        365, ge=1, le=3650,
        description="Days a transcript is kept once ready, unless its clinic sets its own (verbatim clinic retention)",
    )

    # --- note runs (a clinician's request for a drafted note) -------------------------------
    note_writer: Literal["offline", "openai"] = Field(
        "offline",
        description="Who drafts notes: the offline deterministic drafter, or the LLM endpoint (VERBATIM_LLM_*)",
    )
    note_deadline_s: float = Field(
        6 * 3600.0, gt=0, description="Wall-clock bound per note from its request: past it the note fails"
    )
    note_retention_days: int = Field(
        3650, ge=365, le=36500,
        description="Days a signed note is kept from signing, unless its clinic sets its own (a clinical record)",
    )

    # --- the sweep process (verbatim sweeper) ----------------------------------------------
    sweep_tick_s: float = Field(
        2.0, gt=0, description="How often the sweep process looks at due runs and the outbox"
    )
    stall_s: float = Field(
        180.0, gt=0,
        description="A session with work outstanding, no lease and no write for this long is re-queued "
        "(also how long a queued message may wait before it is sent again)",
    )
    sweep_interval_s: float = Field(
        60.0, gt=0, description="How often the periodic sweeps run (stranded vendor jobs, orphan audio)"
    )
    outbox_backoff_max_s: float = Field(60.0, gt=0, description="Longest wait between two attempts of an outbox item")
    outage_backoff_max_s: float = Field(
        10.0, gt=0,
        description="PostgreSQL or Redis unreachable: longest wait between two tries of a process's loop",
    )
    outage_refund_budget_s: float = Field(
        300.0, ge=0,
        description="A run cut off by our own outage keeps its lease and tries to give its run back for this long",
    )
    vendor_job_max_age_s: float = Field(6 * 3600.0, gt=0, description="Unreferenced vendor jobs older → deleted")
    orphan_audio_grace_s: float = Field(3600.0, gt=0, description="Audio with no live session older → deleted")

    # --- deploys and teardown -------------------------------------------------------------
    drain_s: float = Field(600.0, ge=0, description="SIGTERM: running sessions may finish for this long")
    # The invariant DESIGN.md asks for, checked below:
    #   teardown_budget_s + teardown_attempt_timeout_s < shutdown_window_s - drain_s
    #   defaults: 20 + 5 = 25 < 660 - 600 = 60, so a teardown that starts at the very end of
    #   the drain window still finishes before the orchestrator's SIGKILL (stop_grace_period 11m).
    shutdown_window_s: float = Field(660.0, gt=0, description="Stop grace period (SIGTERM → SIGKILL)")
    teardown_budget_s: float = Field(20.0, gt=0, description="Total wall-clock budget of each teardown write")
    teardown_attempt_timeout_s: float = Field(5.0, gt=0, description="Per-attempt timeout of a teardown write")

    # --- polish (model passes) ---------------------------------------------------------
    polisher: Literal["rules", "openai"] = "rules"
    llm_base_url: str | None = Field(None, description="OpenAI-compatible endpoint, e.g. https://api.openai.com/v1")
    llm_model: str = "gpt-4o-mini"
    llm_api_key: str | None = None
    llm_timeout_s: float = Field(60.0, gt=0)
    llm_retry_budget_s: float = Field(120.0, gt=0)

    # --- notifications -------------------------------------------------------------------
    webhook_url: str | None = Field(None, description="POSTed on transcript ready / session failed")
    webhook_secret: str | None = Field(None, description="HMAC-SHA256 key for the X-Verbatim-Signature header")
    webhook_timeout_s: float = Field(5.0, gt=0, description="Per-attempt timeout of a webhook delivery")

    # --- workers -------------------------------------------------------------------------
    metrics_port: int | None = Field(None, description="Prometheus port of a worker or the sweeper (None: off)")
    worker_name: str | None = Field(
        None, description="This worker's stable identity (host + slot, e.g. capture-1); held under a lease of its "
        "own, so two live processes never share it. Default: capture-<host>-<pid> (no fast recovery on restart)",
    )
    worker_lease_ttl_s: float = Field(15.0, gt=0, description="Time-to-live of a worker's identity lease")
    log_level: str = "INFO"
    log_json: bool = True

    # --- test-only fault hooks (inert unless set) -----------------------------------------
    crash_point: str | None = Field(None, description="Named point at which the worker SIGKILLs itself (tests)")
    crash_marker: Path | None = Field(None, description="File that makes a crash point fire only once")

    @model_validator(mode="after")
    def _refuse_unsafe(self) -> Settings:
        if self.heartbeat_s * 2 > self.lease_ttl_s:
            raise ValueError(
                f"heartbeat_s={self.heartbeat_s} must be at most half of lease_ttl_s={self.lease_ttl_s}: "
                "one missed heartbeat must not lose the lease"
            )
        if self.polished_runs > self.max_runs:
            raise ValueError("polished_runs must not exceed max_runs")
        left = self.shutdown_window_s - self.drain_s
        if not self.teardown_budget_s + self.teardown_attempt_timeout_s < left:
            raise ValueError(
                f"teardown_budget_s + teardown_attempt_timeout_s = "
                f"{self.teardown_budget_s + self.teardown_attempt_timeout_s} must be < shutdown_window_s - "
                f"drain_s = {left}: a teardown write must finish before the orchestrator kills the worker"
            )
        if self.polisher == "openai" and not self.llm_base_url:
            raise ValueError("polisher=openai needs VERBATIM_LLM_BASE_URL")
        if self.note_writer == "openai" and not self.llm_base_url:
            raise ValueError("note_writer=openai needs VERBATIM_LLM_BASE_URL")
        if self.sweep_tick_s * 2 > self.lease_ttl_s:
            raise ValueError(
                f"sweep_tick_s={self.sweep_tick_s} must be at most half of lease_ttl_s={self.lease_ttl_s}: "
                "a dead run is found within a tick of its lease's expiry"
            )
        if self.recognizer_poll_min_s > self.recognizer_poll_max_s:
            raise ValueError("recognizer_poll_min_s must not exceed recognizer_poll_max_s")
        return self

    @property
    def development(self) -> bool:
        return self.mode == "development"

    @property
    def docs_enabled(self) -> bool:
        return self.api_docs if self.api_docs is not None else self.development

    def refuse_default_secrets(self, role: str) -> None:
        """Raise ConfigError when a process of ``role`` would run with a default or missing secret.

        Checked when a long-running process starts (``api``, ``worker``, ``sweeper``,
        ``asr-server``), not by every command: ``migrate`` or ``token create`` need no vendor key.
        Development mode allows the defaults.
        """
        if self.development:
            return
        problems = []
        if role in ("worker", "sweeper", "api") and self.recognizer_api_key in DEFAULT_SECRETS:
            problems.append("VERBATIM_RECOGNIZER_API_KEY is the development default: set your recognizer's key")
        if role in ("worker", "sweeper") and self.webhook_url and not self.webhook_secret:
            problems.append("VERBATIM_WEBHOOK_URL is set without VERBATIM_WEBHOOK_SECRET: deliveries would be "
                            "unsigned")
        if role in ("worker", "sweeper", "api", "asr-server") and self.encryption_keys is None \
                and self.key_file is None:
            problems.append("no encryption key: set VERBATIM_KEY_FILE (see `verbatim keys`) or "
                            "VERBATIM_ENCRYPTION_KEYS")
        if role == "asr-server" and self.asr_api_key in DEFAULT_SECRETS:
            problems.append("VERBATIM_ASR_API_KEY is the development default: set a key of your own")
        if problems:
            raise ConfigError("refusing to start in production mode: " + "; ".join(problems)
                              + " (or set VERBATIM_MODE=development on a developer machine)")

    @property
    def audio_dir(self) -> Path:
        """Finished recordings, one file per session (`<session id>.audio`)."""
        return self.data_dir / "audio"

    @property
    def incoming_dir(self) -> Path:
        """Uploads being written; renamed into audio_dir only once complete and fsynced."""
        return self.data_dir / "incoming"

    @property
    def tus_dir(self) -> Path:
        """Resumable (tus) uploads in progress, kept apart from finished audio until finalized."""
        return self.data_dir / "tus"

    @property
    def asr_dir(self) -> Path:
        """The local recognizer service's durable job store."""
        return self.data_dir / "asr-jobs"


def load_settings(**overrides: object) -> Settings:
    """Read settings from the environment (plus explicit overrides); raises ConfigError when unsafe."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return load_settings()
