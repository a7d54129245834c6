"""The runtime role cannot rewrite the audit log; migrations own the schema (security issue, item 11)."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy.engine import make_url

from verbatim.db.roles import APP_ROLE, OWNER_ROLE


def connect_as(database_url: str, role: str) -> psycopg.Connection:
    u = make_url(database_url)
    return psycopg.connect(host=u.host, port=u.port or 5432, user=role, dbname=u.database, autocommit=True)


@pytest.mark.parametrize("statement", [
    "DELETE FROM audit_log",
    "UPDATE audit_log SET action = 'x'",
    "TRUNCATE audit_log",
    "ALTER TABLE audit_log DISABLE TRIGGER USER",
    "ALTER TABLE audit_log DISABLE TRIGGER ALL",
    "DROP TRIGGER audit_log_no_update_delete ON audit_log",
    "DELETE FROM reliability_actions",
    "ALTER TABLE reliability_actions DISABLE TRIGGER USER",
])
def test_the_runtime_role_cannot_bypass_the_append_only_log(database_url: str, statement: str) -> None:
    with connect_as(database_url, APP_ROLE) as conn:
        conn.execute("INSERT INTO audit_log (action) VALUES ('probe')")  # it may append…
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(statement)  # …but never rewrite or switch the guard off
        assert conn.execute("SELECT count(*) FROM audit_log").fetchone()[0] == 1  # type: ignore[index]


def test_the_runtime_role_is_no_superuser_owns_nothing_and_does_its_work(database_url: str) -> None:
    with connect_as(database_url, APP_ROLE) as conn:
        rolsuper, = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()  # type: ignore[misc]
        assert rolsuper is False
        owned, = conn.execute(  # type: ignore[misc]
            "SELECT count(*) FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner WHERE r.rolname = %s",
            (APP_ROLE,)).fetchone()
        assert owned == 0
        conn.execute("UPDATE sessions SET status = status")  # the capture run's writes are allowed
        conn.execute("INSERT INTO sweep_schedule (name) VALUES ('probe')")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("DELETE FROM alembic_version")
    with connect_as(database_url, "postgres") as admin:
        owners = {row[0] for row in admin.execute(
            "SELECT tableowner FROM pg_tables WHERE schemaname = 'public'").fetchall()}
    assert owners == {OWNER_ROLE}
