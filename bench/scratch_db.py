"""Scratch servers for a benchmark: a migrated database on $VERBATIM_DATABASE_URL's server (else an
embedded one) and a Redis URL ($VERBATIM_REDIS_URL, else an embedded server)."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy.engine import make_url

from verbatim.db.engine import dispose_all
from verbatim.db.migrate import upgrade
from verbatim.embedded import EmbeddedPostgres, EmbeddedRedis, free_port


@contextlib.contextmanager
def database(scratch: Path) -> Iterator[str]:
    """Yield an administrator's URL of a database migrated to head; dropped (or its server stopped) after."""
    url = os.environ.get("VERBATIM_DATABASE_URL")
    if not url:
        pg = EmbeddedPostgres(scratch / "pg", free_port())
        pg.start()
        try:
            db_url = pg.create_database("verbatim")
            upgrade(db_url)
            yield db_url
        finally:
            dispose_all()
            pg.stop()
        return
    admin = make_url(url)
    name = f"verbatim_bench_{uuid.uuid4().hex[:10]}"
    params: dict[str, Any] = {"host": admin.host, "port": admin.port or 5432, "user": admin.username or "postgres",
                              "password": admin.password, "dbname": "postgres", "autocommit": True}
    with psycopg.connect(**params) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    db_url = admin.set(database=name).render_as_string(hide_password=False)
    try:
        upgrade(db_url)
        yield db_url
    finally:
        dispose_all()
        with psycopg.connect(**params) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def redis_server(scratch: Path) -> Iterator[str]:
    """Yield a Redis URL: $VERBATIM_REDIS_URL as it is, else an embedded server's (stopped after)."""
    url = os.environ.get("VERBATIM_REDIS_URL")
    if url:
        yield url
        return
    server = EmbeddedRedis(scratch / "redis", free_port())
    server.start()
    try:
        yield server.url
    finally:
        server.stop()
