"""The explorer's short profile (a few hundred steps over real PostgreSQL and Redis); ``bench/soak.py`` runs
the long one. Every violation it ever finds becomes a named regression test (``test_regressions.py``),
the shrunk steps in its docstring; a failure here prints its steps shrunk (``tests/explorer/shrink.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from tests.explorer.fresh import FreshWorlds
from tests.explorer.world import World, explore, explorer_settings


@pytest.mark.parametrize("seed", [1, 2])
def test_the_explorer_finds_no_violation(database_url: str, redis_url: str, data_dir: Path, pg_server_url: str,
                                         template_db: str, seed: int) -> None:
    settings = explorer_settings(database_url, redis_url, data_dir)
    template = make_url(pg_server_url).set(database=template_db).render_as_string(hide_password=False)
    report = explore(lambda s: World(settings, database_url, s), [seed], 150,
                     fresh=FreshWorlds(template, redis_url, data_dir / "replays"), shrink_s=240)
    assert report.steps == 150
    # Every invariant was checked on something (the profile is long enough to publish, sign and withdraw).
    assert {"a_never_none", "c_record_own_words", "d_due_or_leased"} <= set(report.invariants)
