"""One shallow exception hierarchy for Verbatim.

Domain code raises these; only the API edge maps them to HTTP status codes.
Recognizer errors carry the failure class DESIGN.md names: transient (retried inside
the run, never spends a run), configuration (session blocked, audio kept), permanent
(session failed with a named failure code).
"""

from __future__ import annotations

from collections.abc import Sequence


class VerbatimError(Exception):
    """Base of every error Verbatim raises on purpose."""


class ConfigError(VerbatimError):
    """Raised when settings are invalid or an unsafe combination is asked for."""


class AudioUnreadable(VerbatimError):
    """Raised when a file is not audio we can decode (unknown container, no audio stream, corrupt or truncated data)."""


class AudioTooLong(VerbatimError):
    """Raised when a recording is longer than the accepted maximum (``max_duration_s``).

    ``duration_s`` is how far decoding got (at least) or the stated length; ``limit_s`` the maximum.
    """

    def __init__(self, duration_s: float, limit_s: float):
        super().__init__(f"recording is at least {duration_s:.0f} s long; the limit is {limit_s:.0f} s")
        self.duration_s = duration_s
        self.limit_s = limit_s


class SealedDataError(VerbatimError):
    """Raised when a sealed (encrypted) file cannot be opened: a tampered or corrupt chunk, a file
    cut short, or a key id the key ring does not hold. Never silently answered with partial data.

    Our own fault (a key or a disk), never the audio's or the vendor's: a capture run that meets
    one blocks the session with its audio kept (``failure_code``) for an admin retry.
    """

    failure_code = "sealed_audio_unreadable"


class KeyMissing(SealedDataError):
    """Raised when a sealed file names a key id the key ring does not hold (not yet imported, or a
    process that has not seen a rotation): the session blocks as ``encryption_key_missing``."""

    failure_code = "encryption_key_missing"


class KeyRingError(VerbatimError):
    """Raised when the key ring cannot be loaded, changed or imported (missing, malformed, conflicting)."""


class EmbeddedServerError(VerbatimError):
    """Raised when an embedded PostgreSQL or Redis cannot be started.

    (Missing binary, port taken, unusable data directory.)
    """


class Overloaded(VerbatimError):
    """Raised when our own capacity ran out for a request (every probe slot busy, a probe that could
    not finish in time on a loaded machine): not the caller's fault — the API answers 503 with
    ``Retry-After: retry_after_s`` and stores nothing."""

    def __init__(self, message: str, *, retry_after_s: float = 5.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class UploadExpired(VerbatimError):
    """Raised when a resumable (tus) upload is used after its expiry time (``tus_expiry_s`` after creation)."""


class UploadBusy(VerbatimError):
    """Raised when another request holds a resumable upload's lock (a PATCH still writing, or a finalize)."""


class IllegalTransition(VerbatimError):
    """Raised when a session is asked to move between states the state machine does not connect."""


class NotFound(VerbatimError):
    """Raised when a session, transcript or token does not exist or is not visible to the caller."""


class RunStopped(VerbatimError):
    """Raised inside a capture run when it must stop at once and write nothing more.

    Subclasses say why; the run releases what it holds and leaves the session to whoever
    is newer.
    """


class LeaseLost(RunStopped):
    """Raised when the run's Redis lease expired or was taken by another run (heartbeat failed)."""


class FenceLost(RunStopped):
    """Raised when a fenced write matched zero rows: a newer run has bumped the session's fence."""


class RunCancelled(RunStopped):
    """Raised when the worker is draining and the run passed its cancel deadline (SIGTERM + drain window)."""


class RecognizerError(VerbatimError):
    """Base of errors from the recognizer (Speechmatics batch API or the local service)."""

    failure_code: str = "recognizer_error"


class RecognizerTransient(RecognizerError):
    """Raised on a fault worth retrying: 429, 5xx, timeouts, connection errors.

    ``retry_after_s`` is the server's Retry-After in seconds when it sent one.
    """

    failure_code = "recognizer_unavailable"

    def __init__(self, message: str, *, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class RecognizerAuth(RecognizerError):
    """Raised when the recognizer refuses our API key (401/403): a configuration fault, audio is kept."""

    failure_code = "recognizer_auth"


class AudioRejected(RecognizerError):
    """Raised when the recognizer rejected the audio (job status ``rejected`` or a 4xx on submit)."""

    failure_code = "audio_rejected"


class RecognizerJobLost(RecognizerError):
    """Raised when a vendor job expired or was deleted before its speaker turns were saved."""

    failure_code = "recognizer_job_lost"


class NotificationFailed(VerbatimError):
    """Raised when a webhook endpoint did not acknowledge a delivery (the outbox retries it)."""


class PolishError(VerbatimError):
    """Raised when a polish (model) pass fails; publish falls back to the transcript as heard."""


class PolishTransient(PolishError):
    """Raised on an LLM fault worth retrying (429, 5xx, timeout)."""


class NoteRequestInvalid(VerbatimError):
    """Raised when a note cannot be requested as asked; ``code`` names why (an API maps it to a 4xx).

    Codes: ``unknown_format``, ``client_not_in_session``, ``not_ready``, ``transcript_expired``.
    """

    def __init__(self, code: str, detail: str):
        super().__init__(detail)
        self.code = code


class WriterError(VerbatimError):
    """Raised when a note writer (a model) gives no usable section; the offline drafter writes it instead."""


class WriterTransient(WriterError):
    """Raised when the note writer's endpoint times out, rate-limits (429) or fails (5xx); retried on a budget."""


class RecordUnavailable(VerbatimError):
    """Raised when a session's record cannot be changed or read now; ``code`` names why.

    Codes: ``session_withdrawn`` (410), ``transcript_expired`` (410), ``not_ready`` (409: not
    published yet, or failed). Nothing was written.
    """

    def __init__(self, code: str, detail: str):
        super().__init__(detail)
        self.code = code


class RecordMoved(VerbatimError):
    """Raised when a note run's write finds the client's record at another version than the one it
    drafted from (a speaker fix or correction meanwhile): the run starts again from the new version."""


class SignedNotesBlock(VerbatimError):
    """Raised when a session is withdrawn while a signed note that is not amended quotes it.

    ``note_ids``: the blocking notes. A signed note is a clinical record: it changes by an
    amendment that says why, never silently.
    """

    def __init__(self, note_ids: Sequence[object]):
        super().__init__("this session has a signed note: amend it first (POST /v1/notes/{id}/amend with the reason "
                         f"for the withdrawal), then withdraw; notes: {', '.join(str(n) for n in note_ids)}")
        self.note_ids = list(note_ids)


class StaffInvalid(VerbatimError):
    """Raised when a clinic's staff record cannot be changed as asked; ``code`` names why (API: 422).

    Codes: ``unknown_therapist``, ``own_supervisor``, ``supervision_cycle``, ``unknown_time_zone``.
    """

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
