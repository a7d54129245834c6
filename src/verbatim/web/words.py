"""Words for the pages: statuses, failure reasons, durations and times as a clinician reads them."""

from __future__ import annotations

from datetime import datetime

from jinja2 import Environment

from verbatim.notes import risk_box
from verbatim.states import SessionStatus

#: The capture run's steps, in order, as the sessions page shows its progress.
STEPS = (SessionStatus.QUEUED, SessionStatus.RECOGNIZING, SessionStatus.CHECKPOINTED, SessionStatus.PUBLISHING,
         SessionStatus.READY)

STATUS_WORDS = {
    "queued": "Queued",
    "recognizing": "Recognizing speech",
    "checkpointed": "Words saved",
    "publishing": "Preparing transcript",
    "ready": "Ready",
    "blocked": "Blocked — an administrator must act",
    "failed": "Failed",
    "deleted": "Withdrawn",
}

#: failure_code → what happened, in words a therapist can act on.
FAILURE_WORDS = {
    "interrupted": "Recognition was interrupted too many times (workers restarted). Upload the recording again "
                   "if you still have it, or ask your administrator.",
    "deadline_exceeded": "Recognition took longer than allowed and was stopped.",
    "recognizer_unavailable": "The speech recognizer could not be reached for too long.",
    "recognizer_auth": "The speech recognizer refused our credentials; an administrator must fix the "
                       "configuration, then the session is retried with its recording.",
    "recognizer_error": "The speech recognizer reported an error for this recording.",
    "audio_rejected": "The speech recognizer could not use this recording (unsupported or damaged audio).",
    "recognizer_job_lost": "The speech recognizer lost the job before it finished.",
}


def status_words(status: str) -> str:
    return STATUS_WORDS.get(status, status)


def failure_words(code: str | None) -> str:
    if not code:
        return ""
    return FAILURE_WORDS.get(code, f"Stopped with reason “{code.replace('_', ' ')}”.")


def step_index(status: str) -> int:
    """0…4 along STEPS (how far the capture run got), -1 for a status off that path."""
    for i, step in enumerate(STEPS):
        if step.value == status:
            return i
    return -1


def duration(seconds: float | None) -> str:
    """``1 h 02 min`` / ``12 min 05 s`` / ``40 s``."""
    if seconds is None:
        return ""
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    if h:
        return f"{h} h {m:02d} min"
    return f"{m} min {sec:02d} s" if m else f"{sec} s"


def clock(seconds: float) -> str:
    """A position in the recording: ``m:ss`` or ``h:mm:ss``."""
    s = int(seconds)
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


def day(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value else ""


def register(env: Environment) -> None:
    env.filters.update(status_words=status_words, failure_words=failure_words, duration=duration, clock=clock,
                       day=day, step_index=step_index, risk_headline=risk_box.headline, risk_state=risk_box.state)
    env.globals["STEPS"] = STEPS
