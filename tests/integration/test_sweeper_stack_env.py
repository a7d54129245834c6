"""`verbatim sweeper` finds a running local stack's servers in stack.env, like the other commands."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from verbatim.embedded import free_port
from verbatim.stack import STACK_ENV_FILE


def test_the_sweeper_reads_stack_env(database_url: str, redis_url: str, tmp_path: Path) -> None:
    (tmp_path / STACK_ENV_FILE).write_text(f"VERBATIM_DATABASE_URL={database_url}\nVERBATIM_REDIS_URL={redis_url}\n")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERBATIM_")}
    env.update(VERBATIM_MODE="development", VERBATIM_DATA_DIR=str(tmp_path), VERBATIM_METRICS_PORT=str(port))
    log = tmp_path / "sweeper.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "verbatim.cli", "sweeper"], env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        answered = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                answered = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5)
                if "verbatim_sweep_last_tick_age_seconds" in answered.text:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        assert proc.poll() is None, log.read_text()
        assert answered is not None and "verbatim_sweep_last_tick_age_seconds" in answered.text, log.read_text()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
