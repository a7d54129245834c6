"""Decode bombs (security issue, item 5, in part): a file that states no length is never decoded
past the duration limit — hours of 2-byte Opus packets cost the limit, not their whole length."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.api.conftest import Api
from tests.conftest import SAMPLES
from tests.factories import token_for
from tests.security.media import opus_bomb
from verbatim import audio
from verbatim.errors import AudioTooLong, AudioUnreadable


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


def test_a_bomb_is_refused_by_bytes_per_second_before_the_duration_limit(tmp_path: Path) -> None:
    bomb = opus_bomb(tmp_path / "bomb.webm", 40 * 60)  # ~80 bytes per second of "audio"
    with pytest.raises(AudioUnreadable, match="decompression bomb"):
        audio.probe(bomb, max_duration_s=4 * 3600)
    clean = opus_bomb(tmp_path / "short.webm", 20 * 60)  # as thin, but not past the 30-minute grace
    assert audio.probe(clean).duration_s == pytest.approx(1200, abs=1)


def test_the_api_refuses_a_bomb_as_unreadable_and_stores_nothing(api: Api, tmp_path: Path) -> None:
    alice = token_for(api.settings, "Alice", "North Clinic")
    r = api.upload(alice, opus_bomb(tmp_path / "bomb.webm", 40 * 60), filename="bomb.webm")
    assert (r.status_code, r.json()["error"]) == (422, "unreadable_audio"), r.text
    assert "bomb" in r.json()["detail"]
    assert api.files_on_volume() == [] and api.enqueued() == 0


def test_a_probe_past_its_wall_clock_limit_is_killed_and_answered_503(api_with: Callable[..., Api]) -> None:
    """A good recording whose check ran out of wall clock (a loaded server) is never called unreadable:
    the CPU limit ends a hostile decode; the wall clock running out first is our overload."""
    api = api_with(probe_timeout_s=0.001)  # no probe finishes in a millisecond: the child is killed
    alice = token_for(api.settings, "Alice", "North Clinic")
    r = api.upload(alice, SAMPLES / "jfk.wav")
    assert (r.status_code, r.json()["error"]) == (503, "overloaded"), r.text
    assert int(r.headers["retry-after"]) >= 1
    assert "longer than" in r.json()["detail"]
    assert api.files_on_volume() == [] and api.enqueued() == 0
