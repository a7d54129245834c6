"""Celery tasks: thin calls into ``verbatim.pipeline``."""

from __future__ import annotations

import os
import uuid

from verbatim.config import get_settings
from verbatim.pipeline.context import CancelToken, RunContext
from verbatim.pipeline.run import run_capture
from verbatim.pipeline.sweeps import recheck, sweep_all
from verbatim.queue import CAPTURE_TASK, RECHECK_TASK, SWEEP_TASK
from verbatim.reliability.sweep import sweep as reliability_sweep
from workers.app import app

_context: dict[int, RunContext] = {}
_cancel = CancelToken()


def current_cancel() -> CancelToken:
    """The process's cancel token (set by the drain on SIGTERM), shared by every run."""
    return _cancel


def context() -> RunContext:
    """This process's RunContext, built on first use (after any fork)."""
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


@app.task(name=SWEEP_TASK, acks_late=False, ignore_result=True)
def sweep() -> dict[str, int]:
    """Run the sweeps (idempotent; two beats are safe)."""
    report = sweep_all(context())
    # Only the beat whose sweeps took the sweep lock re-emits: a second beat skips both.
    analysis = None if report.skipped else reliability_sweep(context().redis, context().repo.url)
    return {"requeued": len(report.requeued), "vendor_deleted": len(report.vendor_deleted),
            "audio_deleted": report.audio_deleted,
            "analysis_reemitted": len(analysis.reemitted) if analysis else 0}


@app.task(name=RECHECK_TASK, acks_late=False, ignore_result=True)
def recheck_session(session_id: str) -> bool:
    """At a lease's expiry: re-queue the session if its run died (idempotent)."""
    return recheck(context(), uuid.UUID(session_id))
