"""`verbatim up`'s supervisor: a child that dies is restarted; stop leaves nothing behind."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx
import psycopg
from sqlalchemy.engine import make_url

from verbatim.config import load_settings
from verbatim.db.engine import dispose_all
from verbatim.db.roles import APP_ROLE
from verbatim.embedded import free_port
from verbatim.stack import Servers, Stack, running_stack_env


def test_stack_restarts_a_killed_worker_and_stops_cleanly(database_url: str, redis_url: str, data_dir: Path) -> None:
    settings = load_settings(database_url=database_url, redis_url=redis_url, data_dir=data_dir,
                             api_port=free_port(), asr_port=free_port())
    stack = Stack(settings, Servers(database_url, redis_url), data_dir / "logs", workers=1)
    try:
        stack.start()
        assert running_stack_env(data_dir)["VERBATIM_API_URL"] == stack.api_url
        # The sweep process alone serves the ops gauges, where `verbatim up` says (and stack.env too).
        assert running_stack_env(data_dir)["VERBATIM_METRICS_URL"] == stack.metrics_url
        assert "verbatim_sweep_last_tick_age_seconds" in httpx.get(stack.metrics_url, timeout=10).text
        sweeper = next(c for c in stack.children if c.name == "sweeper")
        assert sweeper.extra_env == {"VERBATIM_METRICS_PORT": str(stack.metrics_port)}
        assert "VERBATIM_METRICS_PORT" not in stack.env()
        # Every child connects as the runtime role; only the migration used the administrator.
        assert make_url(running_stack_env(data_dir)["VERBATIM_DATABASE_URL"]).username == APP_ROLE
        dispose_all()  # the migration's pooled administrator connections, held by this process
        users = _connected_users(database_url)
        assert users == {APP_ROLE}, users
        worker = next(c for c in stack.children if c.name == "worker-1")
        os.killpg(worker.proc.pid, signal.SIGKILL)
        worker.proc.wait(10)
        assert stack.respawn_exited() == ["worker-1 (exit -9)"]
        assert {c.name for c in stack.children} == {"asr-server", "api", "worker-1", "analysis-worker", "sweeper"}
        stack.wait_worker("capture-1")
    finally:
        procs = [c.proc for c in stack.children]
        stack.stop()
    assert all(p.poll() is not None for p in procs)
    assert running_stack_env(data_dir) == {}


def _connected_users(database_url: str) -> set[str]:
    """The roles of every other connection to this test's database (the stack's children)."""
    u = make_url(database_url)
    with psycopg.connect(host=u.host, port=u.port or 5432, user=u.username, dbname=u.database,
                         autocommit=True) as conn:
        rows = conn.execute("SELECT DISTINCT usename FROM pg_stat_activity WHERE datname = %s AND pid <> "
                            "pg_backend_pid()", (u.database,)).fetchall()
    return {row[0] for row in rows}
