"""Recognizer adapter over the maintained Speechmatics batch client (``speechmatics-batch``).

We use its synchronous ``Client``: it streams the audio file to the API from an open file
handle (the 1.1.0 ``AsyncClient`` reads the whole file into memory first, which an hour of
audio must not). The same code talks to Speechmatics' SaaS and to ``verbatim asr-server``.

Errors are mapped into ``verbatim.errors``: RecognizerTransient (429 with Retry-After, 5xx,
timeouts, connection errors), RecognizerAuth (401/403), AudioRejected, RecognizerJobLost
(410 expired, 404 deleted). Every call except submit is retried on transient faults under
``RetryPolicy``; submit is not idempotent, so its caller first looks for a job to adopt.

Retry-After: the client raises ``TransportError(status_code=429)`` without the response
headers, so we register an httpx response hook on the client's own httpx.Client and keep
the last Retry-After we saw (tests/integration/test_recognizer_contract.py proves it works).
"""

from __future__ import annotations

import dataclasses
import email.utils
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

import httpx
from speechmatics import batch as sm

from verbatim.errors import (
    AudioRejected,
    RecognizerAuth,
    RecognizerError,
    RecognizerJobLost,
    RecognizerTransient,
    SealedDataError,
)
from verbatim.retry import RetryPolicy
from verbatim.sealed import KeyRing, open_plain

T = TypeVar("T")
TAG = "verbatim"


class JobState(StrEnum):
    """A vendor job's state as the batch API reports it (expired = HTTP 410).

    Speechmatics' ``created`` (accepted, not started) is RUNNING here: both mean "not done yet".
    """

    RUNNING = "running"
    DONE = "done"
    REJECTED = "rejected"
    DELETED = "deleted"
    EXPIRED = "expired"


@dataclass(frozen=True)
class VendorJob:
    """A job in the vendor's list: its id, creation time (UTC) and our session id if tagged."""

    job_id: str
    created_at: datetime | None
    session_id: uuid.UUID | None
    state: JobState


#: the header carrying a job's callback secret in its notification (Speechmatics ``auth_headers``)
CALLBACK_SECRET_HEADER = "X-Verbatim-Callback-Secret"


@dataclass(frozen=True)
class Notify:
    """Where the vendor tells us a job finished: our callback URL and the job's secret (sent as a header)."""

    url: str
    secret: str


def session_tag(session_id: uuid.UUID) -> str:
    return f"session:{session_id}"


class Recognizer:
    """One recognizer connection: ``submit``, ``state``, ``transcript``, ``delete``, ``list_jobs``."""

    def __init__(
        self,
        url: str,
        api_key: str,
        *,
        language: str = "en",
        request_timeout_s: float = 30.0,
        retry: RetryPolicy | None = None,
        ring: KeyRing | None = None,
        list_page_size: int = 100,
    ) -> None:
        self.language = language
        #: jobs per ``GET /v2/jobs`` page (Speechmatics caps ``limit`` at 100)
        self.list_page_size = list_page_size
        self.ring = ring  # opens the sealed recordings submit() sends
        self.retry = retry or RetryPolicy(attempts=8, budget_s=120.0)
        conn = sm.ConnectionConfig(connect_timeout=min(10.0, request_timeout_s), operation_timeout=request_timeout_s)
        self._client = sm.Client(api_key=api_key, url=url, conn_config=conn)
        self._retry_after: float | None = None
        self._install_retry_after_hook()

    def _install_retry_after_hook(self) -> None:
        transport = self._client._transport  # noqa: SLF001 - the client hides response headers
        transport._ensure_client()  # noqa: SLF001
        http = transport._client  # noqa: SLF001
        assert http is not None
        http.event_hooks["response"].append(self._remember_retry_after)

    def _remember_retry_after(self, response: httpx.Response) -> None:
        self._retry_after = _parse_retry_after(response.headers.get("retry-after"))

    def close(self) -> None:
        self._client.close()

    # --- calls -------------------------------------------------------------------------
    def submit(self, audio: Path, session_id: uuid.UUID, max_speakers: int | None = None,
               notify: Notify | None = None) -> str:
        """Submit one recording (sealed files are opened with the ring) with speaker diarization; returns the job id.

        ``max_speakers``: how many voices the session implies (clients + therapist), sent as
        Speechmatics' ``speaker_diarization_config.max_speakers``.

        Not retried here (a submit that timed out may still have created a job): raises
        RecognizerTransient, and the caller looks for the job by its tag before trying again.
        Raises AudioRejected when the API refuses the audio (4xx other than 401/403/429), and
        SealedDataError (KeyMissing: a key id the ring lacks) when our recording cannot be read.
        ``notify``: ask for Speechmatics' ``notification_config`` (a POST to ``notify.url`` with the
        job id and status as query parameters and the secret in ``CALLBACK_SECRET_HEADER``).
        """
        config = sm.JobConfig(
            type=sm.JobType.TRANSCRIPTION,
            transcription_config=sm.TranscriptionConfig(
                language=self.language, diarization="speaker",
                speaker_diarization_config={"max_speakers": max_speakers} if max_speakers else None,
            ),
            tracking=sm._models.TrackingConfig(  # noqa: SLF001 - not re-exported in 1.1.0
                title=f"verbatim session {session_id}",
                reference=str(session_id),
                tags=[TAG, session_tag(session_id)],
            ),
            notification_config=[sm.NotificationConfig(
                url=notify.url, auth_headers=[f"{CALLBACK_SECRET_HEADER}: {notify.secret}"])] if notify else None,
        )
        # Decrypted a chunk at a time as the upload streams: no clear copy is written anywhere.
        with open_plain(audio, self.ring) as fh:
            job = self._call(lambda: self._client.submit_job(fh, config=config), on_4xx=AudioRejected)
        return job.id

    def state(self, job_id: str) -> JobState:
        """The job's state; EXPIRED for HTTP 410, DELETED for 404 (gone before we asked)."""
        try:
            info = self._retrying(lambda: self._client.get_job_info(job_id))
        except RecognizerJobLost as exc:
            return JobState.EXPIRED if "expired" in str(exc) else JobState.DELETED
        return job_state(info.status.value)

    def transcript(self, job_id: str) -> list[dict[str, Any]]:
        """The job's json-v2 ``results`` as Speechmatics documents them (list of dicts, times in seconds).

        Raises RecognizerJobLost when the job expired or was deleted.
        """
        result = self._retrying(lambda: self._client.get_transcript(job_id))
        assert isinstance(result, sm.Transcript)
        return [_strip_none(dataclasses.asdict(r)) for r in result.results]

    def delete(self, job_id: str, *, once: bool = False) -> bool:
        """Delete (force) a job and its data. True if deleted now, False if it was already gone.

        ``once``: a single attempt (the outbox retries); otherwise retried under the policy.
        """
        drop = lambda: self._client.delete_job(job_id, force=True)  # noqa: E731
        try:
            self._call(drop) if once else self._retrying(drop)
        except RecognizerJobLost:
            return False
        return True

    def list_jobs(self, created_before: datetime | None = None, *, once: bool = False,
                  max_pages: int = 10_000) -> list[VendorJob]:
        """Every job in the vendor's list, optionally only those created before a UTC time.

        The API answers one page (newest first, at most ``list_page_size`` jobs, or fewer if the
        vendor caps pages lower); the rest are read page by page, each asking for jobs created
        before the oldest one seen (plus 1 µs, so jobs that share that timestamp are not skipped;
        ids seen twice are kept once), until a page brings no job not seen yet. Orphan adoption and
        the tagged delete must see a session's oldest jobs too. ``once``: one attempt per page
        (the caller retries later); otherwise each page is retried under the policy.
        """
        before = _vendor_time(created_before) if created_before else None
        size = self.list_page_size
        found: dict[str, VendorJob] = {}
        for _ in range(max_pages):
            fetch = lambda b=before: self._client.list_jobs(created_before=b, limit=size)  # noqa: E731
            page = self._call(fetch) if once else self._retrying(fetch)
            fresh = [j for j in page if j.id not in found]
            for job in fresh:
                found[job.id] = _vendor_job(job)
            times = [t for t in (found[j.id].created_at for j in fresh) if t is not None]
            oldest = min(times, default=None)
            # Not "a short page is the last": a vendor may cap pages below what we ask for.
            if not fresh or oldest is None:
                break
            before = _vendor_time(oldest + timedelta(microseconds=1))
        return list(found.values())

    def states(self, since: datetime | None, limit: int = 100, max_pages: int = 10) -> dict[str, JobState]:
        """Job id → state for our jobs created after ``since`` (UTC), newest first: the parked-job poller.

        One ``GET /v2/jobs`` per page of ``limit`` jobs (one call per tick when everything fits),
        each a single attempt: a 429 or 5xx raises RecognizerTransient (with ``retry_after_s``)
        and the caller backs off. At most ``max_pages`` calls.
        """
        after = since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ") if since else None
        found: dict[str, JobState] = {}
        before: str | None = None
        for _ in range(max_pages):
            page = self._call(lambda b=before: self._client.list_jobs(  # type: ignore[misc]
                limit=limit, created_before=b, created_after=after))
            for job in page:
                try:
                    found[job.id] = job_state(job.status.value)
                except RecognizerTransient:
                    found[job.id] = JobState.RUNNING
            if len(page) < limit or not page[-1].created_at:
                break
            before = page[-1].created_at
        return found

    def find_session_job(self, session_id: uuid.UUID, exclude: set[str] | frozenset[str] = frozenset()) -> str | None:
        """The id of a live job tagged with this session (orphan adoption), newest first, or None.

        ``exclude``: job ids known to be retired (being deleted), never adopted.
        """
        for job in self.list_jobs():
            if job.job_id in exclude:
                continue
            if job.session_id == session_id and job.state in (JobState.RUNNING, JobState.DONE):
                return job.job_id
        return None

    # --- plumbing ------------------------------------------------------------------------
    def _retrying(self, fn: Callable[[], T]) -> T:
        for attempt in self.retry.attempts_iter():
            with attempt:
                return self._call(fn)
        raise AssertionError("unreachable: stamina re-raises the last error")

    def _call(self, fn: Callable[[], T], on_4xx: type[RecognizerError] = RecognizerJobLost) -> T:
        self._retry_after = None
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - every client error is mapped below
            sealed = _sealed_cause(exc)
            if sealed is not None:
                # Our recording could not be read while it streamed (a key we lack, a damaged
                # file): our fault, not the vendor's — never a transient to retry, never "rejected".
                raise sealed from None
            raise self._map(exc, on_4xx) from exc

    def _map(self, exc: Exception, on_4xx: type[RecognizerError]) -> RecognizerError:
        if isinstance(exc, sm.AuthenticationError):
            return RecognizerAuth(f"recognizer refused the API key: {exc}")
        if isinstance(exc, sm.JobExpiredError):
            return RecognizerJobLost(f"vendor job expired: {exc}")
        transport = _transport_error(exc)
        if transport is None:
            # No HTTP response at all (connection refused/reset, timeout): worth retrying.
            if _is_connection_fault(exc):
                return RecognizerTransient(f"recognizer unreachable: {exc}", retry_after_s=self._retry_after)
            # An answer we cannot read (truncated JSON, a body without `job`, a status we do not
            # know) says nothing about the job: transient, never "deleted".
            return RecognizerTransient(f"recognizer answer not understood: {type(exc).__name__}: {exc}")
        status = transport.status_code
        if status is None or status in (408, 429) or status >= 500:
            return RecognizerTransient(f"recognizer unavailable: {exc}", retry_after_s=self._retry_after)
        if status == 410:
            return RecognizerJobLost(f"vendor job expired: {exc}")
        if status == 404:
            return RecognizerJobLost(f"vendor job not found (deleted): {exc}")
        return on_4xx(f"recognizer answered {status}: {exc}")


def job_state(value: str) -> JobState:
    """Our JobState for a status the API sent; ``created`` is RUNNING. Raises RecognizerTransient if unknown."""
    if value == "created":
        return JobState.RUNNING
    try:
        return JobState(value)
    except ValueError:
        raise RecognizerTransient(f"recognizer answered an unknown job status {value!r}") from None


def _vendor_time(when: datetime) -> str:
    """A UTC time as the batch API's list filters take it (ISO 8601, microseconds, ``Z``)."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _sealed_cause(exc: BaseException) -> SealedDataError | None:
    """The SealedDataError behind a client exception (the upload reads the file lazily, inside the client)."""
    seen: BaseException | None = exc
    for _ in range(20):
        if seen is None:
            return None
        if isinstance(seen, SealedDataError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _transport_error(exc: BaseException) -> sm.TransportError | None:
    """The TransportError behind a client exception (the client wraps it as __cause__)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, sm.TransportError):
            return seen
        seen = seen.__cause__
    return None


def _is_connection_fault(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, sm.ConnectionError | sm.TimeoutError | httpx.TransportError | OSError):
            return True
        seen = seen.__cause__
    return False


def _parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value)
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def _strip_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_strip_none(v) for v in value]
    return value


def _vendor_job(job: sm.JobDetails) -> VendorJob:
    session_id = None
    tracking = job.config.tracking if job.config else None
    if tracking is not None and tracking.tags and TAG in tracking.tags and tracking.reference:
        try:
            session_id = uuid.UUID(tracking.reference)
        except ValueError:
            session_id = None
    created = None
    if job.created_at:
        try:
            created = datetime.fromisoformat(job.created_at.replace("Z", "+00:00"))
        except ValueError:
            created = None
    try:
        state = job_state(job.status.value)
    except RecognizerTransient:
        state = JobState.RUNNING  # not done, not ours to judge: adoption and sweeps treat it as live
    return VendorJob(job_id=job.id, created_at=created, session_id=session_id, state=state)
