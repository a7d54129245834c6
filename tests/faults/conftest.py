"""Fault drills with real processes: capture workers and the sweep process as subprocesses, killed with real signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import settings_env
from tests.factories import SessionView, view
from verbatim.config import Settings
from verbatim.db.repo import Repo
from verbatim.runtime import make_queue, redis_client


class Proc:
    """One child process in its own process group (so a kill reaches all of it)."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], log: Path):
        self.name = name
        self.log = log
        with open(log, "ab") as out:
            self.popen = subprocess.Popen([sys.executable, "-m", "verbatim.cli", *args], env=env, stdout=out,
                                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def signal(self, sig: int) -> None:
        if self.alive():
            os.killpg(self.popen.pid, sig)

    def wait(self, timeout_s: float) -> int | None:
        try:
            return self.popen.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> None:
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGKILL)
        self.wait(10)


class Cluster:
    """Workers and sweep processes for one test, all with the test's settings (plus per-process extras)."""

    def __init__(self, settings: Settings, log_dir: Path):
        self.settings = settings
        self.log_dir = log_dir
        self.procs: list[Proc] = []
        self.repo = Repo(settings.database_url or "")
        self.redis = redis_client(settings.redis_url or "")
        self.queue = make_queue(settings)

    def env(self, **extra: object) -> dict[str, str]:
        env = settings_env(self.settings)
        env.update({f"VERBATIM_{k.upper()}": str(v) for k, v in extra.items()})
        return env

    def worker(self, name: str | None = None, **extra: object) -> Proc:
        """A capture worker; ``name``: its stable worker name (a restart under the same name), else a new one."""
        name = name or f"worker-{len(self.procs)}-{uuid.uuid4().hex[:4]}"
        proc = Proc(name, ["worker", "--name", name], self.env(**extra), self.log_dir / f"{name}.log")
        self.procs.append(proc)
        return proc

    def sweeper(self, **extra: object) -> Proc:
        name = f"sweeper-{len(self.procs)}"
        proc = Proc(name, ["sweeper"], self.env(**extra), self.log_dir / f"{name}.log")
        self.procs.append(proc)
        return proc

    def wait_for(self, predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.2)
        logs = "\n".join(f"--- {p.name}\n{p.log.read_text(errors='replace')[-3000:]}" for p in self.procs)
        raise AssertionError(f"timed out after {timeout_s} s waiting for {what}\n{logs}")

    def view(self, sid: uuid.UUID) -> SessionView:
        """The session with its capture run's count and fencing token."""
        return view(self.repo, sid)

    def status(self, sid: uuid.UUID) -> str:
        return self.repo.get(sid).status

    def wait_status(self, sid: uuid.UUID, statuses: set[str], timeout_s: float = 90) -> str:
        self.wait_for(lambda: self.status(sid) in statuses, timeout_s, f"session {sid} in {statuses}")
        return self.status(sid)

    def stop(self) -> None:
        for p in self.procs:
            p.stop()


@pytest.fixture
def cluster(settings: Settings, data_dir: Path) -> Iterator[Cluster]:
    logs = data_dir / "logs"
    logs.mkdir()
    c = Cluster(settings, logs)
    yield c
    c.stop()
