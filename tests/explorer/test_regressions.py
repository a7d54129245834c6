"""The explorer's named regression tests: every violation the explorer (``bench/soak.py``, the short
profile) ever finds is replayed here from its shrunk steps, which the test's docstring gives.

A step is ``(rule, seed)`` (``tests/explorer/shrink.py``); ``replay`` takes them in a fresh world
(``FreshWorlds``: a database cloned from the migrated template, a flushed Redis, a new folder).

Found so far: none over real steps (see the soak's report). The first test keeps the replay path itself
honest, so that a shrunk example pasted here is replayed as the explorer took it.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select
from sqlalchemy.engine import make_url

from tests.explorer.fresh import FreshWorlds
from tests.explorer.shrink import Step
from tests.explorer.world import replay
from verbatim.db.models import Note, Session


def _fresh(pg_server_url: str, template_db: str, redis_url: str, data_dir: Path) -> FreshWorlds:
    template = make_url(pg_server_url).set(database=template_db).render_as_string(hide_password=False)
    return FreshWorlds(template, redis_url, data_dir)


def test_recorded_steps_replay_in_a_fresh_world_as_they_were_taken(pg_server_url: str, template_db: str,
                                                                   redis_url: str, data_dir: Path) -> None:
    """Steps: [('upload', 1), ('capture_step', 2), ('capture_step', 15), ('capture_step', 18),
    ('note_request', 7), ('note_step', 2), ('note_step', 15)] — the capture and note steps' seeds draw no
    crash point, so the session is published and its note asked for."""
    fresh = _fresh(pg_server_url, template_db, redis_url, data_dir)
    steps: list[Step] = [("upload", 1), *[("capture_step", s) for s in (2, 15, 18)], ("note_request", 7),
                         ("note_step", 2), ("note_step", 15)]
    world = fresh(0)
    try:
        for step in steps:
            assert world.step(step) == step
        assert world.report.trace == steps
        with world.db() as db:
            statuses = set(db.execute(select(Session.status)).scalars())
            notes = set(db.execute(select(Note.status)).scalars())
        assert statuses == {"ready"}  # the capture ran to a record
        assert notes  # a note was asked for
    finally:
        world.close()
    # The same steps again, in another fresh world: no violation either.
    assert replay(fresh, steps) is None
    assert fresh.made == 2
