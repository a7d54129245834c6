"""A process paused inside a transaction cannot hold a session's row lock forever."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from tests.conftest import SAMPLES, AsrServer
from tests.factories import new_session
from verbatim.config import Settings
from verbatim.db.engine import db_session, engine
from verbatim.db.repo import Repo


def test_a_transaction_left_idle_is_ended_and_a_newer_run_proceeds(settings: Settings, asr: AsrServer) -> None:
    sid = new_session(settings, SAMPLES / "jfk.wav")
    zombie = engine(settings.database_url or "").connect()
    # A fenced write in flight: the run row held FOR SHARE, the session row updated.
    zombie.execute(text("SELECT fence FROM durable_runs WHERE subject_id = :id FOR SHARE"), {"id": sid})
    zombie.execute(text("UPDATE sessions SET updated_at = now() WHERE id = :id"), {"id": sid})
    started = time.monotonic()
    repo = Repo(settings.database_url or "")
    with db_session(repo.url) as db:
        counted = repo.runs.count(db, sid, 60.0, 3600.0)  # the newer run's count waits…
    waited = time.monotonic() - started
    assert counted.run == 1
    assert 5 < waited < 25, waited  # …only until PostgreSQL ends the idle transaction (10 s)
    with pytest.raises(DBAPIError, match="idle-in-transaction"):
        zombie.commit()  # the paused process's write is gone, never applied late
    zombie.close()
