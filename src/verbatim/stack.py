"""Run the whole stack on one machine: ``verbatim up`` and ``verbatim demo``.

Starts (or uses) PostgreSQL and Redis, migrates, then runs the local recognizer service,
the API, two capture workers and the sweep process as child processes, each in its own process group,
and stops them in order: API first (no new sessions), workers (SIGTERM: drain), the sweep process,
recognizer, then the embedded servers.

While it runs, ``verbatim up`` supervises: a child that exits is started again
(``Stack.respawn_exited``), and so is an embedded PostgreSQL or Redis that dies
(``Servers.revive_dead``); one that keeps dying stops the stack with a non-zero exit. The sweep
process serves the ops gauges on ``Stack.metrics_url``, which ``up`` prints.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from verbatim.config import Settings, load_settings
from verbatim.db.migrate import upgrade
from verbatim.db.roles import runtime_url
from verbatim.embedded import EmbeddedPostgres, EmbeddedRedis, default_data_root, free_port, port_free
from verbatim.errors import EmbeddedServerError


@dataclass
class Servers:
    """The PostgreSQL and Redis URLs in use, and any embedded servers we started for them.

    ``database_url`` is an administrator's (it migrates, creating the roles); the child processes
    connect as the runtime role (``app_url``), which cannot rewrite the audit log.
    """

    database_url: str
    redis_url: str
    embedded: list[EmbeddedPostgres | EmbeddedRedis] = field(default_factory=list)
    app_password: str | None = None
    _revived: dict[str, list[float]] = field(default_factory=dict, repr=False)

    @property
    def app_url(self) -> str:
        """The runtime role's URL (``verbatim.db.roles.runtime_url``) on the same database."""
        return runtime_url(self.database_url, self.app_password)

    def stop(self) -> None:
        for server in reversed(self.embedded):
            server.stop()

    def revive_dead(self) -> list[str]:
        """Restart every embedded server that died on its own, on its port and data; returns what to
        tell the user, one line per restart. What a developer expects of ``verbatim up``: the stack
        carries on (the children ride out the gap as they ride out any outage, and reconnect).

        PostgreSQL comes back through crash recovery with every committed row; Redis comes back empty
        (no persistence), and the sweep re-queues due work from PostgreSQL. Raises EmbeddedServerError
        — ``verbatim up`` then stops the stack and exits non-zero — when a server died
        ``REVIVE_MAX`` times within ``REVIVE_WINDOW_S`` seconds, or cannot be started again
        within ``REVIVE_START_S`` seconds (the message carries the last lines of its log).
        """
        said = []
        for server in self.embedded:
            ended = server.died()
            if ended is None:
                continue
            name = "PostgreSQL" if isinstance(server, EmbeddedPostgres) else "Redis"
            now = time.monotonic()
            recent = [t for t in self._revived.get(name, []) if now - t < REVIVE_WINDOW_S]
            if len(recent) >= REVIVE_MAX:
                raise EmbeddedServerError(
                    f"the embedded {name} keeps dying ({ended}; restarted {len(recent)} times in the last "
                    f"{REVIVE_WINDOW_S:.0f} s), so the stack stops. Last lines of {server.log_path}:\n"
                    f"{_tail(server.log_path)}")
            self._revived[name] = [*recent, now]
            _start_again(server, name, ended)
            after = ("crash recovery kept every committed row" if name == "PostgreSQL"
                     else "it came back empty (no persistence): the sweep re-queues due work from PostgreSQL")
            said.append(f"embedded {name} on port {server.port} died ({ended}); restarted it on the same port "
                        f"({after})")
        return said


#: a dead embedded server is restarted at most this many times within REVIVE_WINDOW_S seconds
REVIVE_MAX = 3
REVIVE_WINDOW_S = 300.0
#: how long a dead server may take to start again (a killed postmaster's backends must let go first)
REVIVE_START_S = 60.0


def _tail(path: Path, chars: int = 2000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return "(no log)"


def _start_again(server: EmbeddedPostgres | EmbeddedRedis, name: str, ended: str) -> None:
    """Start a dead server again, retrying while it refuses: a SIGKILLed postmaster's backends hold its
    shared memory until they notice and exit, and a new postmaster refuses to start beside them."""
    deadline = time.monotonic() + REVIVE_START_S
    while True:
        try:
            server.start(timeout_s=max(5.0, deadline - time.monotonic()))
            return
        except EmbeddedServerError as exc:
            if time.monotonic() >= deadline:
                raise EmbeddedServerError(f"the embedded {name} died ({ended}) and did not start again within "
                                          f"{REVIVE_START_S:.0f} s, so the stack stops: {exc}") from exc
            time.sleep(1.0)


def ensure_servers(settings: Settings, say: Callable[[str], object] = print) -> Servers:
    """Use the configured URLs, or start embedded servers for the missing ones."""
    embedded: list[EmbeddedPostgres | EmbeddedRedis] = []
    # One pair of servers per data directory (per checkout by default): two checkouts never share
    # a database, while `verbatim up` and another command in the same checkout do.
    tag = hashlib.sha256(str(settings.data_dir.resolve()).encode()).hexdigest()[:10]
    root = default_data_root() / f"servers-{tag}"
    database_url = settings.database_url
    if not database_url:
        # No port given: a server already running on this data directory is used on its port.
        pg = EmbeddedPostgres(root / "postgres")
        say(f"starting embedded PostgreSQL (data in {pg.data_dir})")
        pg.start()
        embedded.append(pg)
        database_url = pg.create_database("verbatim")
    redis_url = settings.redis_url
    if not redis_url:
        rd = EmbeddedRedis(root / "redis")
        say("starting embedded Redis")
        rd.start()
        embedded.append(rd)
        redis_url = rd.url
    return Servers(database_url, redis_url, embedded, settings.db_app_password)


@dataclass
class Child:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path
    args: tuple[str, ...]
    #: environment of this child alone (the sweep process's metrics port), kept for a restart
    extra_env: dict[str, str] = field(default_factory=dict)


class Stack:
    """The child processes of a local Verbatim stack."""

    def __init__(self, settings: Settings, servers: Servers, log_dir: Path, workers: int = 2,
                 worker_names: str = "capture"):
        self.settings = settings
        # Worker identities are leased machine-wide (verbatim.identity): a demo beside a running
        # `up` takes names of its own, or its workers would refuse to start.
        self.worker_names = worker_names
        self.servers = servers
        self.log_dir = log_dir
        self.workers = workers
        self.children: list[Child] = []
        self._restarts: dict[str, list[float]] = {}
        self.api_port = settings.api_port if settings.api_port else free_port()
        self.asr_port = settings.asr_port if settings.asr_port else free_port()
        #: the sweep process's Prometheus port (its ops gauges, ``verbatim.telemetry.ops``)
        self.metrics_port = settings.metrics_port if settings.metrics_port else free_port()

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def metrics_url(self) -> str:
        """Where the sweep process serves the ops gauges (Prometheus text format)."""
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        # A local stack stops on Ctrl-C: drain 30 s (cancelled runs are re-queued and resume on
        # the next start), unless VERBATIM_DRAIN_S says otherwise (production default: 600 s).
        env.setdefault("VERBATIM_DRAIN_S", str(LOCAL_DRAIN_S))
        # A local stack is a developer's: development mode (default keys allowed, /docs on), unless
        # VERBATIM_MODE says otherwise.
        env.setdefault("VERBATIM_MODE", "development")
        # One process binds the metrics port (the sweep process: spawn's extra_env), not every child.
        env.pop("VERBATIM_METRICS_PORT", None)
        env.update(
            VERBATIM_DATABASE_URL=self.servers.app_url,
            VERBATIM_REDIS_URL=self.servers.redis_url,
            VERBATIM_DATA_DIR=str(self.settings.data_dir.resolve()),
            VERBATIM_API_PORT=str(self.api_port),
            VERBATIM_ASR_PORT=str(self.asr_port),
        )
        if self.settings.recognizer_url == Settings.model_fields["recognizer_url"].default:
            env["VERBATIM_RECOGNIZER_URL"] = f"http://127.0.0.1:{self.asr_port}/v2"
        return env

    def spawn(self, name: str, *args: str, extra_env: dict[str, str] | None = None) -> Child:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_dir / f"{name}.log"
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "verbatim.cli", *args], env={**self.env(), **(extra_env or {})}, stdout=out,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )
        child = Child(name, proc, log, args, dict(extra_env or {}))
        self.children.append(child)
        return child

    def respawn_exited(self) -> list[str]:
        """Restart every child that has exited (as an orchestrator would); returns their names.

        A killed worker's session is not waiting on this: its lease expires and the sweep hands the
        session to the other worker. Restarting keeps the stack at full strength.
        """
        restarted = []
        for child in [c for c in self.children if c.proc.poll() is not None]:
            recent = [t for t in self._restarts.get(child.name, []) if time.monotonic() - t < 60]
            if len(recent) >= 5:
                tail = child.log.read_text(errors="replace")[-2000:]
                raise EmbeddedServerError(f"{child.name} keeps exiting (5 restarts in 60 s):\n{tail}")
            self._restarts[child.name] = [*recent, time.monotonic()]
            # The child led its own process group: whatever it left (a recognizer's pool processes)
            # goes with it, so a restart never runs beside its predecessor's orphans.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.proc.pid, signal.SIGKILL)
            self.children.remove(child)
            self.spawn(child.name, *child.args, extra_env=child.extra_env)
            restarted.append(f"{child.name} (exit {child.proc.returncode})")
        return restarted

    def start(self) -> None:
        """Migrate, then start recognizer, API, workers and the sweep process; wait until the HTTP ones answer.

        Raises EmbeddedServerError at once when the API's or the recognizer's port is taken
        (another stack on this machine): never "up" while pointing at someone else's servers.
        """
        for role, port, var in (("API", self.api_port, "API_PORT"), ("recognizer", self.asr_port, "ASR_PORT"),
                                ("sweep process's metrics", self.metrics_port, "METRICS_PORT")):
            if not port_free(port):
                raise EmbeddedServerError(
                    f"port {port} for the {role} is in use (another `verbatim up` on this machine?); "
                    f"set VERBATIM_{var} to a free port")
        # Migrations (and the roles they create) come first, as the administrator: the children
        # connect as the runtime role, which exists and holds its grants only after this.
        upgrade(self.servers.database_url, app_password=self.servers.app_password)
        self.spawn("asr-server", "asr-server")
        self.spawn("api", "api")
        for i in range(1, self.workers + 1):
            self.spawn(f"worker-{i}", "worker", "--name", f"{self.worker_names}-{i}")
        self.spawn("analysis-worker", "analysis-worker")
        self.spawn("sweeper", "sweeper", extra_env={"VERBATIM_METRICS_PORT": str(self.metrics_port)})
        self.wait_http(f"http://127.0.0.1:{self.asr_port}/healthz", "asr-server")
        self.wait_http(f"{self.api_url}/readyz", "api")
        self.wait_http(self.metrics_url, "sweeper")
        self.write_env_file()

    @property
    def env_file(self) -> Path:
        """``<data dir>/stack.env``: how the CLI finds a running local stack (removed at stop)."""
        return self.settings.data_dir / STACK_ENV_FILE

    def write_env_file(self) -> None:
        # The runtime role's URL: `verbatim token create`, `sessions`, `clinic` need no more than the
        # running processes do (`verbatim migrate` takes an administrator's URL explicitly).
        lines = [f"VERBATIM_DATABASE_URL={self.servers.app_url}", f"VERBATIM_REDIS_URL={self.servers.redis_url}",
                 f"VERBATIM_API_URL={self.api_url}", f"VERBATIM_METRICS_URL={self.metrics_url}"]
        self.env_file.write_text("\n".join(lines) + "\n")
        self.env_file.chmod(0o600)
        self._wrote_env = True

    def restart_worker(self, name: str, timeout_s: float | None = None) -> float:
        """Rolling-restart one worker: SIGTERM (it drains), wait for exit, start its replacement,
        wait until the replacement answers a Celery ping. Returns the seconds the drain took."""
        child = next(c for c in self.children if c.name == name)
        started = time.monotonic()
        os.killpg(child.proc.pid, signal.SIGTERM)
        child.proc.wait(timeout_s or self.settings.shutdown_window_s)
        drained = time.monotonic() - started
        self.children.remove(child)
        node = f"{name.replace('worker', self.worker_names)}"
        self.spawn(name, "worker", "--name", node)
        self.wait_worker(node)
        return drained

    def wait_worker(self, node: str, timeout_s: float = 90) -> None:
        """Wait until the Celery worker ``node`` answers a ping (it is consuming)."""
        from verbatim.queue import celery_app

        app = celery_app(self.servers.redis_url)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            replies = app.control.ping(timeout=1.0)
            if any(key.startswith(f"{node}@") for reply in replies for key in reply):
                return
        raise EmbeddedServerError(f"worker {node} did not become healthy within {timeout_s:.0f} s")

    def wait_http(self, url: str, name: str, timeout_s: float = 90) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for child in self.children:
                if child.proc.poll() is not None:
                    tail = child.log.read_text(errors="replace")[-2000:]
                    raise EmbeddedServerError(f"{child.name} exited with {child.proc.returncode}:\n{tail}")
            try:
                if httpx.get(url, timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise EmbeddedServerError(f"{name} did not become ready at {url} within {timeout_s:.0f} s")

    def stop(self) -> None:
        """Stop role by role, each group after the previous one has exited: the API (no new
        sessions), then the workers (they drain: a run past the drain window saves, keeps the
        vendor's copy and re-queues), then the sweep process, then the recognizer — last, so no running job
        loses its recognizer while a worker still waits on it."""
        drain_s = float(os.environ.get("VERBATIM_DRAIN_S", LOCAL_DRAIN_S))
        worker_wait = drain_s + self.settings.teardown_budget_s + 10
        for role, wait_s in (("api", 15.0), ("worker", worker_wait), ("analysis", 75.0), ("sweeper", 10.0),
                             ("asr", 15.0)):
            group = [c for c in self.children if c.name.split("-")[0] == role]
            for child in group:
                if child.proc.poll() is None:
                    os.killpg(child.proc.pid, signal.SIGTERM)
            deadline = time.monotonic() + wait_s
            for child in group:
                try:
                    child.proc.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    os.killpg(child.proc.pid, signal.SIGKILL)
                    child.proc.wait()
        self.children.clear()
        # Only our own: a stack that failed to start beside a running one must not hide that one.
        if getattr(self, "_wrote_env", False):
            self.env_file.unlink(missing_ok=True)


STACK_ENV_FILE = "stack.env"
LOCAL_DRAIN_S = 30.0


def running_stack_env(data_dir: Path) -> dict[str, str]:
    """The URLs a running ``verbatim up``/``demo`` wrote to ``<data dir>/stack.env`` ({} if none)."""
    path = data_dir / STACK_ENV_FILE
    if not path.exists():
        return {}
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


@contextmanager
def local_stack(settings: Settings, say: Callable[[str], object] = print, workers: int = 2,
                worker_names: str = "capture") -> Iterator[Stack]:
    """Servers (embedded if needed) and a started Stack; everything stopped on exit.

    SIGTERM is turned into KeyboardInterrupt *before* anything starts, so a stop at any moment —
    even during start-up — runs the clean-up below instead of leaving orphans behind.
    """
    signal.signal(signal.SIGTERM, _interrupt)
    servers: Servers | None = None
    stack: Stack | None = None
    try:
        servers = ensure_servers(settings, say)
        stack = Stack(settings, servers, settings.data_dir / "logs", workers, worker_names)
        stack.start()
        yield stack
    finally:
        if stack is not None:
            stack.stop()
        if servers is not None:
            servers.stop()


def settings_for_stack(**overrides: object) -> Settings:
    """Settings for a local stack: ports chosen free unless configured via the environment."""
    env_api = os.environ.get("VERBATIM_API_PORT")
    env_asr = os.environ.get("VERBATIM_ASR_PORT")
    overrides.setdefault("api_port", int(env_api) if env_api else free_port())
    overrides.setdefault("asr_port", int(env_asr) if env_asr else free_port())
    return load_settings(**overrides)
