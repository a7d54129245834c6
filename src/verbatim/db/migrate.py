"""Run Alembic migrations programmatically (``verbatim migrate``, ``demo`` and ``up``)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

from verbatim.db.engine import engine
from verbatim.db.roles import apply_grants, ensure_roles
from verbatim.errors import ConfigError


def _migrations_dir() -> Path:
    # Next to the checkout (editable install, Docker image's /app) or the current directory.
    for root in (Path(__file__).resolve().parents[3], Path.cwd()):
        if (root / "migrations" / "env.py").exists():
            return root / "migrations"
    raise ConfigError("cannot find the migrations/ folder; run Verbatim from its checkout")


def alembic_config(database_url: str) -> Config:
    """An Alembic Config pointed at ``database_url`` without touching alembic.ini's URL."""
    cfg = Config()
    cfg.set_main_option("script_location", str(_migrations_dir()))
    cfg.attributes["database_url"] = database_url
    return cfg


def upgrade(database_url: str, revision: str = "head", app_password: str | None = None) -> None:
    """Bring the schema to ``revision``, then the roles and grants (``verbatim.db.roles``).

    Safe to call from several processes at once. ``database_url`` must be an administrator's
    (or the owner role's member's): the running processes connect as ``verbatim_app``.
    """
    with engine(database_url).begin() as conn:
        ensure_roles(conn, app_password)
    command.upgrade(alembic_config(database_url), revision)
    with engine(database_url).begin() as conn:
        apply_grants(conn)
