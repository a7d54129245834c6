"""The explorer's short profile (a few hundred steps over real PostgreSQL and Redis); ``bench/soak.py`` runs
the long one. Every violation it ever finds becomes a named regression test (see the note in the module
``tests/explorer/world.py`` and the tests it lists)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FAST
from tests.explorer.world import World, explore
from verbatim.config import load_settings
from verbatim.db.roles import runtime_url


@pytest.mark.parametrize("seed", [1, 2])
def test_the_explorer_finds_no_violation(database_url: str, redis_url: str, data_dir: Path, seed: int) -> None:
    settings = load_settings(**{**FAST, "database_url": runtime_url(database_url), "redis_url": redis_url,
                                "recognizer_url": "http://vendor.invalid/v2", "recognizer_api_key": "k",
                                "data_dir": data_dir, "log_json": True})
    report = explore(lambda s: World(settings, database_url, s), [seed], 150)
    assert report.steps == 150
    # Every invariant was checked on something (the profile is long enough to publish, sign and withdraw).
    assert {"a_never_none", "c_record_own_words", "d_due_or_leased"} <= set(report.invariants)
