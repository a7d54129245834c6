"""A process paused inside a transaction cannot hold a session's row lock forever."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from tests.conftest import SAMPLES, AsrServer
from tests.factories import new_session
from verbatim.config import Settings
from verbatim.db.engine import engine
from verbatim.db.repo import Repo


def test_a_transaction_left_idle_is_ended_and_a_newer_run_proceeds(settings: Settings, asr: AsrServer) -> None:
    sid = new_session(settings, SAMPLES / "jfk.wav")
    zombie = engine(settings.database_url or "").connect()
    zombie.execute(text("UPDATE sessions SET updated_at = now() WHERE id = :id"), {"id": sid})  # row lock held
    started = time.monotonic()
    ticket = Repo(settings.database_url or "").start_run(sid)  # the newer run's fenced UPDATE waits…
    waited = time.monotonic() - started
    assert ticket is not None and ticket.run == 1
    assert 5 < waited < 25, waited  # …only until PostgreSQL ends the idle transaction (10 s)
    with pytest.raises(DBAPIError, match="idle-in-transaction"):
        zombie.commit()  # the paused process's write is gone, never applied late
    zombie.close()
