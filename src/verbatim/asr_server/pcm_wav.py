"""16 kHz mono 16-bit PCM WAV files as numpy int16 arrays: the format Verbatim's scored audio sets
(samples/, bench/sets/) are made in, spliced and joined by the benches and recognition tests.

The standard library's ``wave`` reads and writes them; this module only fixes the format in one
place, so a set made by one tool is read the same way by every other.
"""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np

RATE = 16_000  #: samples per second


def read_pcm16(path: Path) -> np.ndarray:
    """The samples of a 16 kHz mono 16-bit WAV (int16, shape ``(n,)``). Raises ValueError for another format."""
    with wave.open(str(path)) as w:
        if (w.getframerate(), w.getnchannels(), w.getsampwidth()) != (RATE, 1, 2):
            raise ValueError(f"{path}: expected 16 kHz mono 16-bit WAV")
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")


def write_pcm16(path: Path, pcm: np.ndarray) -> None:
    """Write ``pcm`` (samples, cast to int16) as a 16 kHz mono 16-bit WAV at ``path``."""
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm.astype("<i2").tobytes())
