"""Celery tasks: thin calls into ``verbatim.pipeline``."""

from __future__ import annotations

import os
import uuid

from verbatim.config import get_settings
from verbatim.context import CancelToken, ProcessContext
from verbatim.pipeline.run import run_capture
from verbatim.queue import CAPTURE_TASK, NOTE_TASK
from workers.app import app

_context: dict[int, ProcessContext] = {}
_cancel = CancelToken()


def current_cancel() -> CancelToken:
    """The process's cancel token (set by the drain on SIGTERM), shared by every run."""
    return _cancel


def context() -> ProcessContext:
    """This process's ProcessContext, built on first use (after any fork)."""
    pid = os.getpid()
    if pid not in _context:
        from verbatim.runtime import build_context

        _context[pid] = build_context(get_settings())
        _context[pid].cancel = _cancel
    return _context[pid]


@app.task(name=CAPTURE_TASK, acks_late=True)
def capture(session_id: str) -> str:
    """Run one capture run for a session; returns the outcome's name."""
    return run_capture(context(), uuid.UUID(session_id)).value


@app.task(name=NOTE_TASK, acks_late=True)
def note(note_id: str) -> str:
    """Run one note run for a note; returns the outcome's name."""
    from verbatim.notes.run import run_note

    return run_note(context(), uuid.UUID(note_id)).value
