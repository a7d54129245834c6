"""`verbatim up` as a developer runs it (embedded PostgreSQL and Redis): it prints where the sweep
process serves its gauges, and when its embedded PostgreSQL or Redis is SIGKILLed it says so and
starts it again; a server that keeps dying stops the stack with a non-zero exit."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psycopg

from verbatim.embedded import free_port

SLOW = float(os.environ.get("VERBATIM_TEST_SLOWDOWN", "1"))


def _until(what: str, ok: Callable[[], object], timeout_s: float, proc: subprocess.Popen[bytes], log: Path) -> object:
    deadline = time.monotonic() + timeout_s * SLOW
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"verbatim up exited ({proc.returncode}) waiting for {what}:\n{log.read_text()}"
        found = ok()
        if found:
            return found
        time.sleep(0.5)
    raise AssertionError(f"no {what} within {timeout_s * SLOW:.0f} s:\n{log.read_text()[-4000:]}")


def _get(url: str) -> httpx.Response | None:
    try:
        return httpx.get(url, timeout=5)
    except httpx.HTTPError:
        return None


def _pid(path: Path) -> int:
    return int(path.read_text().splitlines()[0].strip())


def test_up_prints_its_gauges_and_restarts_a_killed_embedded_server(scratch: Path) -> None:
    data = scratch / f"up-{os.getpid()}"
    data.mkdir()
    data.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERBATIM_")}  # no URLs: embedded servers
    api_port = free_port()
    env.update(VERBATIM_DATA_DIR=str(data), VERBATIM_MODE="development", VERBATIM_API_PORT=str(api_port),
               VERBATIM_ASR_PORT=str(free_port()), VERBATIM_DRAIN_S="5", COLUMNS="400", NO_COLOR="1", TERM="dumb")
    log = data / "up.out"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "verbatim.cli", "up"], env=env, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        found = _until("metrics address", lambda: re.search(r"Ops gauges .*: (http://127\.0\.0\.1:\d+/metrics)",
                                                             log.read_text()), 300, proc, log)
        assert isinstance(found, re.Match)
        metrics = found.group(1)

        def gauges() -> bool:
            r = _get(metrics)
            return r is not None and "verbatim_sweep_last_tick_age_seconds" in r.text and "verbatim_runs{" in r.text

        _until("the sweep's gauges", gauges, 60, proc, log)
        assert "VERBATIM_METRICS_URL=" + metrics in (data / "stack.env").read_text()
        pg_dir = next(data.glob("servers-*/postgres"))
        pg_port = int((pg_dir / "postmaster.pid").read_text().splitlines()[3])
        with psycopg.connect(host="127.0.0.1", port=pg_port, user="postgres", dbname="verbatim") as conn:
            tokens = conn.execute("SELECT count(*) FROM api_tokens").fetchone()
        assert tokens is not None and tokens[0] >= 1  # the banner's sign-in token, committed before the kill

        os.kill(_pid(pg_dir / "postmaster.pid"), signal.SIGKILL)
        _until("word of PostgreSQL's restart",
               lambda: re.search(rf"embedded PostgreSQL on port {pg_port} died \(killed by SIGKILL\); restarted it",
                                 log.read_text()), 120, proc, log)
        with psycopg.connect(host="127.0.0.1", port=pg_port, user="postgres", dbname="verbatim") as conn:
            assert conn.execute("SELECT count(*) FROM api_tokens").fetchone() == tokens  # nothing committed lost

        def ready() -> bool:
            r = _get(f"http://127.0.0.1:{api_port}/readyz")
            return r is not None and r.status_code == 200

        _until("the API ready again", ready, 120, proc, log)
        _until("the gauges again", gauges, 120, proc, log)

        # Redis: restarted too, until it keeps dying — then the stack stops, and says why.
        rd_dir = next(data.glob("servers-*/redis"))
        for n in range(1, 4):
            os.kill(_pid(rd_dir / "redis.pid"), signal.SIGKILL)
            _until(f"word of Redis's restart {n}",
                   lambda n=n: log.read_text().count("embedded Redis on port") == n  # type: ignore[misc]
                   and (rd_dir / "redis.pid").exists(), 60, proc, log)
        assert _until("the API ready after Redis came back", ready, 120, proc, log)
        os.kill(_pid(rd_dir / "redis.pid"), signal.SIGKILL)
        proc.wait(timeout=300 * SLOW)
        said = log.read_text()
        assert proc.returncode == 2, said[-4000:]
        assert "the embedded Redis keeps dying (killed by SIGKILL; restarted 3 times" in said
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=300)
    # Stopped: nothing of the stack is left listening.
    assert not (data / "stack.env").exists()
