"""Run Alembic migrations programmatically (``verbatim migrate``, ``demo`` and ``up``)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

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


def upgrade(database_url: str, revision: str = "head") -> None:
    """Bring the schema to ``revision``; safe to call from several processes at once."""
    command.upgrade(alembic_config(database_url), revision)
