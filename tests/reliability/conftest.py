"""Reliability-analysis fixtures: fast settings, ready sessions published through the real
``Repo.publish``, in-process workers (threads) and ``verbatim analysis-worker`` processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session as OrmSession

from tests.conftest import FAST
from tests.factories import token_for
from verbatim.api.app import create_app
from verbatim.auth import ensure_therapist
from verbatim.config import Settings, load_settings
from verbatim.db.engine import db_session, engine
from verbatim.db.models import Session, Transcript
from verbatim.db.repo import Repo
from verbatim.db.roles import runtime_url
from verbatim.embedded import EmbeddedRedis
from verbatim.polish.rules import RulePolisher, rule_therapist
from verbatim.polish.split import speaker_roles
from verbatim.reliability.analysis import analyse
from verbatim.reliability.models import ReliabilityAnalysis, ReliabilitySuggestion
from verbatim.reliability.settings import ReliabilitySettings, load_reliability_settings
from verbatim.reliability.streams import Streams
from verbatim.reliability.suggestions import create_suggestions
from verbatim.reliability.sweep import complete_request
from verbatim.reliability.worker import Analyser, AnalysisWorker, DrainReport

# Every timing short: claims after 1 s idle, retries after 0.3 s, locks that expire in 3 s.
FAST_RELIABILITY: dict[str, Any] = {
    "read_block_ms": 100,
    "claim_idle_ms": 1000,
    "claim_interval_s": 0.3,
    "retry_poll_s": 0.1,
    "retry_backoff_s": 0.3,
    "retry_backoff_max_s": 1.0,
    "busy_delay_s": 0.3,
    "lock_ttl_seconds": 3,
    "shutdown_drain_s": 2.0,
    "concurrency": 2,
    "db_pool_size": 2,
    "db_max_overflow": 1,
    "sweep_grace_s": 0.0,
    "reemit_after_s": 60.0,
}


# --- speaker turns as the recognizer gives them --------------------------------------------------


def word(content: str, start: float, confidence: float = 0.95, alternatives: list[str] | None = None) -> dict:
    return {"type": "word", "content": content, "start_s": start, "end_s": start + 0.3, "confidence": confidence,
            "alternatives": alternatives or []}


def punct(mark: str, at: float) -> dict:
    return {"type": "punctuation", "content": mark, "start_s": at, "end_s": at, "confidence": 1.0,
            "alternatives": []}


def turn(speaker: str, start: float, end: float, words: list[dict]) -> dict:
    text = ""
    for w in words:
        text += w["content"] if not text or w["type"] == "punctuation" else " " + w["content"]
    return {"speaker": speaker, "start_s": start, "end_s": end, "text": text, "words": words}


def sample_turns() -> list[dict]:
    """Four turns: a doubtful word with an alternative, a short interjection, a mid-sentence change."""
    return [
        turn("S1", 0.0, 3.0, [word("um", 0.1), word("how", 0.5), word("have", 0.8), word("you", 1.1),
                              word("been", 1.4, 0.2, ["bean"]), punct("?", 1.7)]),
        turn("S2", 3.2, 3.6, [word("fine", 3.2), punct(".", 3.5)]),
        turn("S1", 3.8, 6.0, [word("tell", 3.8), word("me", 4.1), word("about", 4.4), word("the", 4.7)]),
        turn("S2", 6.1, 9.0, [word("week", 6.1, 0.15, ["weak", "wake"]), word("at", 6.5), word("work", 6.8),
                              punct(".", 7.1)]),
    ]


def polished(raw: list[dict]) -> list[dict]:
    shown = [{k: t[k] for k in ("speaker", "start_s", "end_s", "text")} for t in raw]
    return RulePolisher().readability(shown)


# --- sessions ------------------------------------------------------------------------------------


def publish_session(
    database_url: str, raw: list[dict] | None = None, *, therapist: str = "Alice", clinic: str = "North Clinic",
    client_ids: list[str] | None = None, polish: bool = True,
) -> uuid.UUID:
    """A session published by the real ``Repo.publish`` (which records its analysis request)."""
    raw = raw if raw is not None else sample_turns()
    clients = client_ids or ["client-a"]
    therapist_id, clinic_id = ensure_therapist(database_url, therapist, clinic)
    sid = uuid.uuid4()
    with db_session(database_url) as db:
        db.add(Session(
            id=sid, therapist_id=therapist_id, clinic_id=clinic_id, status="publishing", client_ids=clients,
            recorded_at=datetime.now(UTC), session_type="individual", audio_sha256="0" * 64,
            audio_bytes=1, audio_duration_s=10.0, audio_format="wav", raw_turns=raw,
        ))
        db.flush()
        Repo(database_url).runs.count(db, sid, 60.0, 86400.0)  # run 1, fence 1
    shown = polished(raw) if polish else [{k: t[k] for k in ("speaker", "start_s", "end_s", "text")} for t in raw]
    roles = speaker_roles(shown, clients, rule_therapist(shown), None)
    Repo(database_url).publish(sid, 1, 1, polish, [{**t, "role": roles[t["speaker"]]} for t in shown])
    return sid


def analyse_now(url: str, sid: uuid.UUID) -> None:
    """What a worker commits for the session, done synchronously (no Redis)."""
    row = session_row(url, sid)
    assert row.raw_turns is not None
    with OrmSession(engine(url)) as db, db.begin():
        assert complete_request(db, sid)
        create_suggestions(db, sid, analyse(row.raw_turns, row.published_turns))


def session_row(database_url: str, sid: uuid.UUID) -> Session:
    return Repo(database_url).get(sid)


def analysis_row(database_url: str, sid: uuid.UUID) -> ReliabilityAnalysis | None:
    with db_session(database_url) as db:
        return db.get(ReliabilityAnalysis, sid)


def suggestions_of(database_url: str, sid: uuid.UUID) -> list[ReliabilitySuggestion]:
    with db_session(database_url) as db:
        return list(db.execute(
            select(ReliabilitySuggestion).where(ReliabilitySuggestion.session_id == sid)
            .order_by(ReliabilitySuggestion.turn_index, ReliabilitySuggestion.kind)
        ).scalars())


def records_of(database_url: str, sid: uuid.UUID) -> dict[str, list[dict]]:
    with db_session(database_url) as db:
        return {t.client_id: t.segments
                for t in db.execute(select(Transcript).where(Transcript.session_id == sid)).scalars()}


def wait_for(predicate: Callable[[], object], timeout_s: float, what: str, logs: Callable[[], str] = str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}\n{logs()}")


# --- settings and clients ------------------------------------------------------------------------


@pytest.fixture
def redis_url(private_redis: EmbeddedRedis) -> str:
    """A Redis server of the test's own (overrides the shared one's database number).

    Other test runs on the machine share those numbers, and their capture runs emit real
    analysis events there: consumers under test must see only this test's events.
    """
    return private_redis.url


@pytest.fixture
def rsettings() -> ReliabilitySettings:
    return load_reliability_settings(**FAST_RELIABILITY)


@pytest.fixture
def app_settings(database_url: str, redis_url: str, data_dir: Path) -> Settings:
    """Verbatim settings without a recognizer (the analysis never calls one)."""
    return load_settings(**FAST, database_url=runtime_url(database_url), redis_url=redis_url,
                         data_dir=data_dir)


@pytest.fixture
def rclient(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture
def streams(rclient: redis.Redis, rsettings: ReliabilitySettings) -> Streams:
    s = Streams(rclient, rsettings)
    s.ensure_group()
    return s


class RunningWorker:
    """An AnalysisWorker on a thread of the test process."""

    def __init__(self, worker: AnalysisWorker):
        self.worker = worker
        self.report: DrainReport | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.report = self.worker.run()

    def stop(self, timeout_s: float = 15) -> DrainReport | None:
        self.worker.stop()
        self.thread.join(timeout_s)
        return self.report


@pytest.fixture
def start_worker(database_url: str, rclient: redis.Redis, rsettings: ReliabilitySettings,
                 ) -> Iterator[Callable[..., RunningWorker]]:
    """``start_worker(analyser=…, client=…, **settings overrides)`` → a worker running on a thread."""
    running: list[RunningWorker] = []

    def start(analyser: Analyser | None = None, client: redis.Redis | None = None, **overrides: Any) -> RunningWorker:
        s = load_reliability_settings(**{**FAST_RELIABILITY, **overrides}) if overrides else rsettings
        w = RunningWorker(AnalysisWorker(s, database_url, client or rclient, analyser=analyser,
                                         consumer=f"test-{len(running)}"))
        running.append(w)
        return w

    yield start
    for w in running:
        w.stop()


@pytest.fixture
def api(app_settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(app_settings), raise_server_exceptions=False) as client:
        yield client


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


@pytest.fixture
def alice(app_settings: Settings) -> str:
    return token_for(app_settings, "Alice", "North Clinic")


@pytest.fixture
def bob(app_settings: Settings) -> str:
    return token_for(app_settings, "Bob", "North Clinic")


@pytest.fixture
def admin(app_settings: Settings) -> str:
    return token_for(app_settings, "", "North Clinic", scope="admin")


# --- worker processes ------------------------------------------------------------------------------


class WorkerProcess:
    """``verbatim analysis-worker`` in its own process group, logging to a file."""

    def __init__(self, name: str, env: dict[str, str], log: Path):
        self.name = name
        self.log = log
        with open(log, "ab") as out:
            self.popen = subprocess.Popen(
                [sys.executable, "-m", "verbatim.cli", "analysis-worker", "--name", name], env=env, stdout=out,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )

    def signal(self, sig: int) -> None:
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, sig)

    def wait(self, timeout_s: float) -> int | None:
        try:
            return self.popen.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def text(self) -> str:
        return self.log.read_text(errors="replace")


@pytest.fixture
def worker_procs(database_url: str, data_dir: Path) -> Iterator[Callable[..., WorkerProcess]]:
    """``spawn(redis_url, **RELIABILITY overrides)`` → a running worker process (killed at teardown)."""
    procs: list[WorkerProcess] = []

    def spawn(redis_url: str, **overrides: Any) -> WorkerProcess:
        env = dict(os.environ, VERBATIM_DATABASE_URL=runtime_url(database_url),
                   VERBATIM_REDIS_URL=redis_url, VERBATIM_DATA_DIR=str(data_dir), VERBATIM_LOG_JSON="true")
        env.update({f"RELIABILITY_{k.upper()}": str(v) for k, v in {**FAST_RELIABILITY, **overrides}.items()})
        name = f"analysis-{len(procs)}"
        proc = WorkerProcess(name, env, data_dir / f"{name}.log")
        procs.append(proc)
        return proc

    yield spawn
    for p in procs:
        p.signal(signal.SIGKILL)
        p.wait(10)


def all_logs(procs: list[WorkerProcess]) -> Callable[[], str]:
    return lambda: "\n".join(f"--- {p.name}\n{p.text()[-3000:]}" for p in procs)
