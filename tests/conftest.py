"""Shared fixtures: real PostgreSQL, Redis, the local recognizer service, worker processes.

Servers: ``VERBATIM_DATABASE_URL`` / ``VERBATIM_REDIS_URL`` when set (CI uses the machine's
servers), embedded ones otherwise — so ``make test`` passes on a machine with neither.
Isolation: every test gets its own database cloned from a migrated template, and its own
Redis database number (flushed) or, where processes are killed or servers restarted, its
own private server.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import psycopg
import pytest
import redis
from sqlalchemy.engine import make_url

from tests.leaks import leaks
from verbatim.config import Settings, load_settings
from verbatim.db.roles import runtime_url
from verbatim.embedded import EmbeddedPostgres, EmbeddedRedis, free_port

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
API_KEY = "test-key"

# Short timings: the durability machinery runs in seconds under test.
FAST = {
    "mode": "development",
    "lease_ttl_s": 4.0,
    "heartbeat_s": 1.0,
    "sweep_interval_s": 1.0,
    "recognizer_poll_min_s": 0.1,
    "recognizer_poll_max_s": 0.5,
    "recognizer_request_timeout_s": 3.0,
    "recognizer_retry_budget_s": 15.0,
    "stall_s": 3.0,
    "retry_later_s": 1.0,
    "sweep_tick_s": 0.5,
    "outbox_backoff_max_s": 1.0,
    "orphan_audio_grace_s": 3600.0,
    "drain_s": 2.0,
    "shutdown_window_s": 30.0,
    "teardown_budget_s": 5.0,
    "teardown_attempt_timeout_s": 1.0,
    "webhook_timeout_s": 2.0,
    "recognizer_park_after_s": 60.0,  # in-worker waits, as before parking (parking tests set 0)
    "min_free_bytes": 0,  # a nearly full CI disk must not turn every upload into a 507
}

#: For a test whose run must neither park nor lose its lease however loaded the machine is (FAST's
#: 4 s lease is lost when the process is not scheduled for 4 s; its 60 s in-worker wait for the vendor
#: parks a run whose recognition is slow): a lease that outlives any stall of the machine, and a run
#: that waits in its worker for as long as the vendor takes.
STEADY = {"lease_ttl_s": 120.0, "heartbeat_s": 2.0, "recognizer_park_after_s": 3600.0}


@pytest.fixture(scope="session")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A world-traversable scratch folder (embedded PostgreSQL runs as another user under root).

    At the end of the run every log written under it or under pytest's temporary folders is scanned
    for patient words (``tests/leaks.py``); a leak fails the run, naming file, line and phrase.
    """
    path = Path(tempfile.mkdtemp(prefix="verbatim-test-"))
    path.chmod(0o755)
    yield path
    found = leaks([path, tmp_path_factory.getbasetemp()])
    if not os.environ.get("VERBATIM_KEEP_TEST_FILES"):
        shutil.rmtree(path, ignore_errors=True)
    if found:
        pytest.fail(f"patient words in {len(found)} log line(s) the suite wrote:\n" + "\n".join(found[:20]),
                    pytrace=False)


@pytest.fixture(scope="session")
def pg_server_url(scratch: Path) -> Iterator[str]:
    """SQLAlchemy URL of a PostgreSQL server (the configured one, or an embedded one)."""
    url = os.environ.get("VERBATIM_DATABASE_URL")
    if url:
        yield url
        return
    server = EmbeddedPostgres(scratch / "pg", free_port(), fast=True)
    server.start()
    yield server.url
    server.stop()


def _admin_conn(url: str) -> psycopg.Connection:
    u = make_url(url)
    return psycopg.connect(host=u.host, port=u.port or 5432, user=u.username or "postgres",
                           password=u.password, dbname=u.database or "postgres", autocommit=True)


@pytest.fixture(scope="session")
def template_db(pg_server_url: str) -> Iterator[str]:
    """Name of a database migrated to head, cloned by every test (dropped at the end)."""
    from verbatim.db.migrate import upgrade

    name = f"verbatim_tpl_{os.getpid()}"
    with _admin_conn(pg_server_url) as conn:
        # Templates left by test processes that were killed: drop them.
        for (old,) in conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'verbatim\\_tpl\\_%'"):
            if not psutil.pid_exists(int(old.rsplit("_", 1)[1])):
                conn.execute(f'DROP DATABASE IF EXISTS "{old}" WITH (FORCE)')
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    url = make_url(pg_server_url).set(database=name).render_as_string(hide_password=False)
    upgrade(url)
    from verbatim.db.engine import dispose_all

    dispose_all()
    yield name
    with _admin_conn(pg_server_url) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def database_url(pg_server_url: str, template_db: str) -> Iterator[str]:
    """A fresh database for this test, cloned from the migrated template."""
    name = f"verbatim_t_{uuid.uuid4().hex[:12]}"
    with _admin_conn(pg_server_url) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template_db}"')
    yield make_url(pg_server_url).set(database=name).render_as_string(hide_password=False)
    from verbatim.db.engine import dispose_all

    dispose_all()
    with _admin_conn(pg_server_url) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def redis_server_url(scratch: Path) -> Iterator[str]:
    """Base URL of a Redis server (the configured one, or an embedded one)."""
    url = os.environ.get("VERBATIM_REDIS_URL")
    if url:
        yield url
        return
    server = EmbeddedRedis(scratch / "redis", free_port())
    server.start()
    yield server.url
    server.stop()


@pytest.fixture(scope="session")
def redis_db(redis_server_url: str) -> Iterator[int]:
    """A Redis database number claimed by this test process alone.

    Concurrent pytest runs (xdist workers, a developer's second terminal) share the server;
    each claims a free database with SET NX in db 0, so one run's FLUSHDB never hits another.
    """
    base = redis_server_url.rsplit("/", 1)[0]
    claims = redis.Redis.from_url(f"{base}/0")
    for n in range(1, 16):
        key = f"verbatim-test-db:{n}"
        owner = claims.get(key)
        if owner is not None and not psutil.pid_exists(int(owner)):
            claims.delete(key)  # left by a test process that was killed
        if claims.set(key, os.getpid(), nx=True, ex=6 * 3600):
            yield n
            claims.delete(key)
            claims.close()
            return
    raise RuntimeError("no free Redis database for this test process (all 15 claimed)")


@pytest.fixture
def redis_url(redis_server_url: str, redis_db: int) -> Iterator[str]:
    """This test process's own Redis database, flushed before and after the test."""
    url = f"{redis_server_url.rsplit('/', 1)[0]}/{redis_db}"
    client = redis.Redis.from_url(url)
    client.flushdb()
    yield url
    client.flushdb()
    client.close()


@pytest.fixture
def private_redis(scratch: Path) -> Iterator[EmbeddedRedis]:
    """A Redis server of this test's own, for tests that flush, kill or restart it."""
    server = EmbeddedRedis(scratch / f"redis-{uuid.uuid4().hex[:8]}", free_port())
    server.start()
    yield server
    server.stop()


class AsrServer:
    """A running ``verbatim asr-server`` with fault injection on."""

    def __init__(self, data_dir: Path, port: int, **env: str):
        self.data_dir = data_dir
        self.port = port
        self.extra_env = {f"VERBATIM_{k.upper()}": v for k, v in env.items()}
        self.url = f"http://127.0.0.1:{port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = dict(os.environ, VERBATIM_ASR_PORT=str(self.port), VERBATIM_ASR_API_KEY=API_KEY,
                   VERBATIM_ASR_FAULTS="true", VERBATIM_DATA_DIR=str(self.data_dir), VERBATIM_ASR_WORKERS="2",
                   VERBATIM_MODE="development",  # its key ring is generated under data_dir
                   **self.extra_env)
        log = open(self.data_dir / "asr.log", "ab")  # noqa: SIM115 - lives as long as the process
        self.proc = subprocess.Popen([sys.executable, "-m", "verbatim.cli", "asr-server"], env=env,
                                     stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise RuntimeError("asr-server did not start: " + (self.data_dir / "asr.log").read_text()[-2000:])

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def fault(self, path: str, **body: object) -> dict[str, object]:
        response = httpx.post(f"{self.url}/_faults/{path}", json=body, timeout=5)
        response.raise_for_status()
        return response.json()  # type: ignore[no-any-return]

    def last_config(self) -> dict[str, Any]:
        """The job config of the last submission (what the capture run asked the recognizer for)."""
        return httpx.get(f"{self.url}/_faults/last_config", timeout=5).json()  # type: ignore[no-any-return]

    def submissions(self) -> dict[str, int]:
        return httpx.get(f"{self.url}/_faults/submissions", timeout=5).json()  # type: ignore[no-any-return]

    def jobs(self) -> list[dict[str, object]]:
        r = httpx.get(f"{self.url}/v2/jobs", headers={"authorization": f"Bearer {API_KEY}"}, timeout=5)
        return r.json()["jobs"]  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def asr_server(scratch: Path) -> Iterator[AsrServer]:
    """One local recognizer service per test process (faults are reset before each use)."""
    folder = scratch / f"asr-{uuid.uuid4().hex[:6]}"
    folder.mkdir()
    server = AsrServer(folder, free_port())
    server.start()
    yield server
    server.stop()


@pytest.fixture
def asr(asr_server: AsrServer) -> Iterator[AsrServer]:
    """The recognizer service with no armed faults."""
    asr_server.fault("reset")
    yield asr_server
    asr_server.fault("reset")


@pytest.fixture
def data_dir(scratch: Path) -> Path:
    path = scratch / f"data-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    return path


def make_settings(database_url: str, redis_url: str, asr: AsrServer, data_dir: Path, **extra: object) -> Settings:
    """Settings of the processes under test: they connect as the runtime role, as in production
    (``database_url``, the administrator's, stays the tests' own for arranging and inspecting).

    No password: the test servers trust local users, and setting one from every test process
    would race (two ALTER ROLE of one role at once fail with "tuple concurrently updated").
    """
    values: dict[str, object] = {
        **FAST,
        "database_url": runtime_url(database_url),
        "redis_url": redis_url,
        "recognizer_url": asr.url + "/v2",
        "recognizer_api_key": API_KEY,
        "data_dir": data_dir,
        "log_json": True,
    }
    values.update(extra)
    return load_settings(**values)


@pytest.fixture
def settings(database_url: str, redis_url: str, asr: AsrServer, data_dir: Path) -> Settings:
    return make_settings(database_url, redis_url, asr, data_dir)


def settings_env(s: Settings) -> dict[str, str]:
    """The environment that gives a child process the same settings."""
    env = dict(os.environ)
    for name, value in s.model_dump().items():
        if value is not None:
            env[f"VERBATIM_{name.upper()}"] = str(value)
    return env
