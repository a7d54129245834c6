"""``verbatim deploy-drill``: a rolling restart of the capture workers under load, measured.

Starts a local stack, uploads N sessions, restarts the workers one at a time (each after
the previous replacement is healthy), waits for every session, and reports sessions lost,
extra runs caused, and time added to the slowest session against an undisturbed baseline.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import func, select

from verbatim.auth import create_token
from verbatim.client import ApiClient
from verbatim.db.engine import db_session
from verbatim.db.models import SessionEvent
from verbatim.stack import Stack, ensure_servers, settings_for_stack


@dataclass
class DrillResult:
    sessions: int
    sessions_lost: int
    extra_runs: int
    slowest_s: float
    drains_s: list[float]


def _submit_and_wait(stack: Stack, token: str, clips: list[Path], n: int, restart: bool,
                     timeout_s: float = 900) -> DrillResult:
    drains: list[float] = []
    with ApiClient(stack.api_url, token) as api:
        started = time.monotonic()
        ids = [api.upload(clips[i % len(clips)], [f"client-{i}"])["id"] for i in range(n)]
        if restart:
            time.sleep(1.0)
            for name in [c.name for c in stack.children if c.name.startswith("worker")]:
                drains.append(stack.restart_worker(name))
        done: dict[str, dict[str, object]] = {}
        while len(done) < n and time.monotonic() - started < timeout_s:
            for sid in ids:
                if sid not in done:
                    s = api.session(sid)
                    if s["status"] in ("ready", "failed", "blocked"):
                        done[sid] = s
            time.sleep(0.3)
        slowest = time.monotonic() - started
    lost = sum(1 for sid in ids if done.get(sid, {}).get("status") != "ready")
    runs = sum(int(str(done[sid]["runs"])) for sid in done)
    # A cancelled run gives its count back (a deploy must not push a session towards
    # `interrupted`), so count the cancellations from the event log as the extra runs they were.
    with db_session(stack.servers.database_url) as db:
        cancelled = db.execute(
            select(func.count()).select_from(SessionEvent).where(
                SessionEvent.session_id.in_([uuid.UUID(s) for s in ids]), SessionEvent.kind == "run_cancelled"
            )
        ).scalar_one()
    return DrillResult(n, lost, runs - len(done) + cancelled, slowest, drains)


def run_drill(
    sessions: int = 20, clips: list[Path] | None = None, drain_s: float = 2.0
) -> tuple[DrillResult, DrillResult]:
    """(baseline without restarts, rolling restart) for ``sessions`` sessions on a local stack."""
    from verbatim.demo import samples_dir

    clips = clips or sorted(samples_dir().glob("*_0*.wav"))
    os.environ.setdefault("VERBATIM_DRAIN_S", str(drain_s))
    os.environ.setdefault("VERBATIM_SHUTDOWN_WINDOW_S", str(drain_s + 30))
    os.environ.setdefault("VERBATIM_TEARDOWN_BUDGET_S", "10")
    settings = settings_for_stack()
    servers = ensure_servers(settings)
    stack = Stack(settings, servers, settings.data_dir / "logs")
    try:
        stack.start()
        token = create_token(servers.database_url, therapist="Drill", clinic="Drill Clinic", expires_in_days=1)
        baseline = _submit_and_wait(stack, token, clips, sessions, restart=False)
        drilled = _submit_and_wait(stack, token, clips, sessions, restart=True)
        return baseline, drilled
    finally:
        stack.stop()
        servers.stop()
