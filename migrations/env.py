"""Alembic environment: one connection, serialised by a PostgreSQL advisory lock.

Several processes may run ``verbatim migrate`` at once (two containers starting); the
advisory lock makes the second wait and then find nothing to do.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import text

import verbatim.reliability.models  # noqa: F401  - the reliability tables join Base.metadata
import verbatim.web.models  # noqa: F401  - the web page tables join Base.metadata
from verbatim.db.engine import engine
from verbatim.db.models import Base

MIGRATION_LOCK_ID = 0x5645524241  # "VERBA": any constant shared by every migrator

config = context.config
url = config.attributes.get("database_url") or config.get_main_option("sqlalchemy.url")


def run_migrations_online() -> None:
    with engine(url).connect() as connection:
        connection.execute(text("SELECT pg_advisory_lock(:id)"), {"id": MIGRATION_LOCK_ID})
        connection.commit()
        try:
            context.configure(connection=connection, target_metadata=Base.metadata, compare_type=True)
            with context.begin_transaction():
                context.run_migrations()
            connection.commit()
        finally:
            connection.execute(text("SELECT pg_advisory_unlock(:id)"), {"id": MIGRATION_LOCK_ID})
            connection.commit()


run_migrations_online()
