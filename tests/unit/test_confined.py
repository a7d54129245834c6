"""The confined probe: a child that dies before it reads the file is our overload (503), not the file's fault."""

from __future__ import annotations

import os
import wave
from pathlib import Path

import pytest

from verbatim.config import load_settings
from verbatim.confined import probe_confined
from verbatim.errors import AudioUnreadable, Overloaded


class _DiesWhenRebuilt:
    """Stands in for the key ring: the child dies as it unpickles it, before its limits or a byte read."""

    def __reduce__(self) -> tuple[object, tuple[int]]:
        return (os._exit, (3,))


def _wav(path: Path) -> Path:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\x00\x10" * 8000)
    return path


def test_a_probe_child_that_dies_starting_is_overload_not_an_unreadable_recording(tmp_path: Path) -> None:
    settings = load_settings(database_url="postgresql+psycopg://x@127.0.0.1/x", data_dir=tmp_path)
    good = _wav(tmp_path / "good.wav")
    assert probe_confined(good, None, settings).duration_s == pytest.approx(1.0, abs=0.01)
    with pytest.raises(Overloaded) as caught:
        probe_confined(good, _DiesWhenRebuilt(), settings)  # type: ignore[arg-type]
    assert caught.value.retry_after_s is not None and caught.value.retry_after_s > 0


def test_a_file_the_child_refuses_once_reading_is_still_unreadable(tmp_path: Path) -> None:
    settings = load_settings(database_url="postgresql+psycopg://x@127.0.0.1/x", data_dir=tmp_path)
    path = tmp_path / "not-audio.wav"
    path.write_bytes(b"RIFX" + b"\x01" * 1024)
    with pytest.raises(AudioUnreadable):
        probe_confined(path, None, settings)
