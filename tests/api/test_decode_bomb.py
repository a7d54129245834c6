"""Decode bombs (security issue, item 5, in part): a file that states no length is never decoded
past the duration limit — hours of 2-byte Opus packets cost the limit, not their whole length."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from tests.api.conftest import Api
from tests.factories import token_for
from verbatim import audio
from verbatim.errors import AudioTooLong


def opus_bomb(path: Path, seconds: int) -> Path:
    """A WebM with no Duration (live mode) of ``seconds`` of 2-byte silent Opus packets (20 ms each)."""
    with av.open(str(path), "w", format="webm", options={"live": "1"}) as out:
        stream = out.add_stream("libopus", rate=48000)
        stream.layout = "mono"
        first = av.AudioFrame.from_ndarray(np.zeros((1, 960), dtype=np.int16), format="s16", layout="mono")
        first.sample_rate, first.pts = 48000, 0
        list(stream.encode(first))  # initialises the codec's header
        for i in range(seconds * 50):
            packet = av.Packet(b"\xf8\xff")
            packet.stream, packet.pts, packet.dts, packet.duration = stream, i * 960, i * 960, 960
            packet.time_base = Fraction(1, 48000)
            out.mux(packet)
    return path


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
