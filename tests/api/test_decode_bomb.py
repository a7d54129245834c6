"""Decode bombs (security issue, item 5, in part): a file that states no length is never decoded
past the duration limit — hours of 2-byte Opus packets cost the limit, not their whole length."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.api.conftest import Api
from tests.factories import token_for
from tests.security.media import opus_bomb
from verbatim import audio
from verbatim.errors import AudioTooLong


def test_probe_stops_decoding_at_the_limit(tmp_path: Path) -> None:
    bomb = opus_bomb(tmp_path / "bomb.webm", 20 * 60)
    assert audio.probe(bomb).duration_s == pytest.approx(1200, abs=1)  # no limit: measured whole
    with pytest.raises(AudioTooLong) as refused:
        audio.probe(bomb, max_duration_s=30)
    assert refused.value.duration_s < 60  # stopped right past the limit, not at 1200 s


def test_the_api_answers_413_for_a_bomb_and_stores_nothing(api_with: Callable[..., Api], tmp_path: Path) -> None:
    api = api_with(max_duration_s=30)
    alice = token_for(api.settings, "Alice", "North Clinic")
    r = api.upload(alice, opus_bomb(tmp_path / "bomb.webm", 10 * 60), filename="bomb.webm")
    assert (r.status_code, r.json()["error"]) == (413, "too_long"), r.text
    assert api.files_on_volume() == [] and api.enqueued() == 0
