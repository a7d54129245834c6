"""Fresh worlds for the explorer: each on a database of its own (a clone of a migrated template),
a flushed Redis database and a new data folder — what a replay of recorded steps starts from."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import psycopg
import redis
from sqlalchemy.engine import make_url

from tests.explorer.world import World, explorer_settings
from verbatim.db.engine import dispose_all


class FreshWorlds:
    """``FreshWorlds(template_url, redis_url, scratch)(seed)`` → a new World; its database goes when it closes.

    ``template_url``: an administrator's URL of a database migrated to head that nothing is
    connected to (PostgreSQL clones only an idle template). ``redis_url``: a Redis database of the
    caller's own (flushed for every world).
    """

    def __init__(self, template_url: str, redis_url: str, scratch: Path):
        self.template = make_url(template_url)
        self.redis_url = redis_url
        self.scratch = scratch
        self.made = 0

    def _admin(self) -> Any:
        u = self.template
        return psycopg.connect(host=u.host, port=u.port or 5432, user=u.username or "postgres", password=u.password,
                               dbname="postgres", autocommit=True)

    def __call__(self, seed: int) -> World:
        name = f"verbatim_x_{uuid.uuid4().hex[:12]}"
        dispose_all()  # the previous world's pools (it is closed) and any left on the template
        with self._admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{self.template.database}"')
        url = self.template.set(database=name).render_as_string(hide_password=False)
        client = redis.Redis.from_url(self.redis_url)
        client.flushdb()
        client.close()
        self.made += 1
        data = self.scratch / f"data-{name}"
        data.mkdir(parents=True)

        def drop() -> None:
            dispose_all()
            with self._admin() as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

        return World(explorer_settings(url, self.redis_url, data), url, seed, on_close=drop)
