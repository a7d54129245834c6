"""Database engines and sessions, created per process (never at import time).

An engine shared across a fork breaks in odd ways (DESIGN.md), so ``engine()`` keys its
cache on the process id: a forked child builds its own.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, create_engine
from sqlalchemy.orm import Session as OrmSession
from sqlalchemy.orm import sessionmaker

_engines: dict[tuple[int, str], Engine] = {}

# A hung server must not hang a run forever: connect and statements are bounded. And a process
# paused inside a transaction (GC, SIGSTOP, a zombie run) must not hold a session's row lock
# forever: PostgreSQL ends such a session after 10 s idle in a transaction (our transactions never
# wait on anything but the database), so the newer run's fenced UPDATE goes through and the
# zombie's COMMIT fails.
# A network that drops packets silently (a partition: bench/partition.py) is bounded too: without
# these, a query sent into it waits on the kernel's retransmissions (about 15 minutes) while the
# run's heartbeat, which only talks to Redis, keeps its lease alive. tcp_user_timeout fails a
# request whose bytes go unacknowledged for 30 s (the statement timeout: a slow query is not
# affected, the server acknowledges it at once); keepalives find a pooled connection whose peer
# went away while it was idle.
CONNECT_ARGS = {
    "connect_timeout": 10,
    "options": "-c statement_timeout=30000 -c idle_in_transaction_session_timeout=10000",
    "tcp_user_timeout": 30000,
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
}


def engine(url: str) -> Engine:
    """This process's engine for ``url`` (pool_pre_ping: survives a PostgreSQL restart)."""
    key = (os.getpid(), url)
    eng = _engines.get(key)
    if eng is None:
        eng = create_engine(
            url,
            pool_pre_ping=True,
            pool_size=5,
            max_overflow=5,
            pool_recycle=1800,
            connect_args=CONNECT_ARGS,
            # An error's message must never carry the values it was given: they are transcript
            # words, note text, reasons and client ids, and the message goes to the logs.
            hide_parameters=True,
        )
        _engines[key] = eng
    return eng


@contextmanager
def db_session(url: str) -> Iterator[OrmSession]:
    """A unit of work: commits on success, rolls back on error, always closes."""
    factory = sessionmaker(engine(url), expire_on_commit=False)
    with factory() as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise


def dispose_all() -> None:
    """Drop this process's pooled connections (tests, shutdown)."""
    for key in [k for k in _engines if k[0] == os.getpid()]:
        _engines.pop(key).dispose()
