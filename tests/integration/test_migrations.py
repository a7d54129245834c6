"""`alembic upgrade head` yields exactly the models' schema; two migrators at once are safe."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import psycopg
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import text
from sqlalchemy.engine import make_url

import verbatim.reliability.models  # noqa: F401  - the reliability tables join Base.metadata
import verbatim.web.models  # noqa: F401  - the web page tables join Base.metadata
from tests.conftest import _admin_conn
from verbatim.db.engine import engine
from verbatim.db.migrate import upgrade
from verbatim.db.models import Base


@pytest.fixture
def empty_db(pg_server_url: str):  # type: ignore[no-untyped-def]
    name = f"verbatim_m_{uuid.uuid4().hex[:10]}"
    with _admin_conn(pg_server_url) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield make_url(pg_server_url).set(database=name).render_as_string(hide_password=False)
    from verbatim.db.engine import dispose_all

    dispose_all()
    with _admin_conn(pg_server_url) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_upgrade_head_matches_the_models(empty_db: str) -> None:
    upgrade(empty_db)
    with engine(empty_db).connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata)
    assert diff == []


def test_two_migrators_at_once(empty_db: str) -> None:
    """Two `verbatim migrate` processes started together: the advisory lock serialises them."""
    env = dict(os.environ, VERBATIM_DATABASE_URL=empty_db, VERBATIM_REDIS_URL="redis://127.0.0.1:1/0")
    procs = [subprocess.Popen([sys.executable, "-m", "verbatim.cli", "migrate"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for _ in range(2)]
    outputs = [p.communicate(timeout=120)[0].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    with engine(empty_db).connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one() == "0013"


def test_migrate_needs_only_the_administrators_database_url(empty_db: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The Kubernetes migrate Job carries the admin URL and the app password, no Redis URL."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERBATIM_")}
    # (No VERBATIM_DB_APP_PASSWORD: roles are cluster-wide, and this server is shared with other tests.)
    env.update(VERBATIM_MODE="production", VERBATIM_DATABASE_URL=empty_db, VERBATIM_DATA_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-m", "verbatim.cli", "migrate"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    with engine(empty_db).connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM alembic_version")).scalar_one() == 1
    env.pop("VERBATIM_DATABASE_URL")
    refused = subprocess.run([sys.executable, "-m", "verbatim.cli", "migrate"], env=env, capture_output=True,
                             text=True, timeout=300)
    assert refused.returncode == 2 and "VERBATIM_DATABASE_URL" in refused.stdout


def test_audit_log_is_append_only_in_the_database(empty_db: str) -> None:
    upgrade(empty_db)
    u = make_url(empty_db)
    with psycopg.connect(host=u.host, port=u.port, user=u.username, dbname=u.database, autocommit=True) as conn:
        conn.execute("INSERT INTO audit_log (action) VALUES ('transcript_read')")
        with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
            conn.execute("UPDATE audit_log SET action = 'x'")
        with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
            conn.execute("DELETE FROM audit_log")
        assert conn.execute("SELECT count(*) FROM audit_log").fetchone() == (1,)
