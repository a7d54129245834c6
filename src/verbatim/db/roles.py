"""Database roles: migrations own the schema, the running processes may not rewrite history.

``verbatim_owner`` (NOLOGIN) owns every table; ``verbatim migrate`` creates both roles and then,
after the migrations, hands the tables to the owner and grants ``verbatim_app`` (LOGIN, not a
superuser, owns nothing) what the running processes need:

- SELECT, INSERT, UPDATE, DELETE on every table, but only SELECT and INSERT on the append-only
  tables (``audit_log``, ``reliability_actions``): as the runtime role, DELETE, UPDATE,
  TRUNCATE and disabling their triggers all fail (the triggers refuse the first three anyway;
  only an owner or superuser can disable a trigger);
- the sequences those inserts use; SELECT on ``alembic_version``.

Point ``VERBATIM_DATABASE_URL`` of the API, workers and sweep process at ``verbatim_app``
(``VERBATIM_DB_APP_PASSWORD`` sets its password when migrations run), and run migrations with
an administrator's URL. Roles are cluster-wide: creating them is safe when several migrators
(or parallel test processes, each migrating its own database) start together.

Why our own code: role and grant management is a few idempotent statements tied to our tables.
"""

from __future__ import annotations

from sqlalchemy import Connection, text
from sqlalchemy.engine import make_url

OWNER_ROLE = "verbatim_owner"
APP_ROLE = "verbatim_app"
APPEND_ONLY = ("audit_log", "reliability_actions")
GRANTS_LOCK_ID = 0x56524F4C45  # "VROLE": serialises grants on one database

# A concurrent CREATE ROLE of the same name raises duplicate_object or unique_violation: both
# mean "someone else made it", which is what we wanted.
_CREATE = """
DO $$ BEGIN
    CREATE ROLE {name} {options};
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
END $$;
"""


def runtime_url(admin_url: str, app_password: str | None = None) -> str:
    """``admin_url`` (a SQLAlchemy URL) with the runtime role as its user: what the API, workers,
    sweep process and analysis worker connect with. Same host, port and database; the password is
    ``app_password`` (``VERBATIM_DB_APP_PASSWORD``) or none (trust auth: the embedded server, CI)."""
    url = make_url(admin_url).set(username=APP_ROLE, password=app_password)
    return url.render_as_string(hide_password=False)


def ensure_roles(conn: Connection, app_password: str | None = None) -> None:
    """Create both roles if missing (cluster-wide, idempotent, safe in parallel); set the app password."""
    conn.execute(text(_CREATE.format(name=OWNER_ROLE, options="NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE")))
    conn.execute(text(_CREATE.format(name=APP_ROLE, options="LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT")))
    if app_password is not None:
        # Quoted by the server (format %L): the password never becomes SQL.
        conn.execute(text("SELECT set_config('verbatim.app_password', :pw, true)"), {"pw": app_password})
        conn.execute(text(f"DO $$ BEGIN EXECUTE format('ALTER ROLE {APP_ROLE} PASSWORD %L', "
                          "current_setting('verbatim.app_password')); END $$;"))


def apply_grants(conn: Connection) -> None:
    """Give every table to the owner and grant the runtime role its privileges (idempotent)."""
    conn.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": GRANTS_LOCK_ID})
    tables = list(conn.execute(text(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")).scalars())
    for table in tables:
        conn.execute(text(f'ALTER TABLE "{table}" OWNER TO {OWNER_ROLE}'))
    conn.execute(text(f"GRANT USAGE ON SCHEMA public TO {APP_ROLE}"))
    conn.execute(text(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {APP_ROLE}"))
    conn.execute(text(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {APP_ROLE}"))
    for table in (*APPEND_ONLY, "alembic_version"):
        if table in tables:
            conn.execute(text(f'REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON "{table}" FROM {APP_ROLE}'))
    for table in APPEND_ONLY:
        if table in tables:
            conn.execute(text(f'GRANT INSERT ON "{table}" TO {APP_ROLE}'))
    conn.execute(text(f"GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO {APP_ROLE}"))
