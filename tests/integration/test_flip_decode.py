"""The third decode of a doubtful window (`whisper._with_third_decode`) on real audio: it reads the
same window the same way whatever the process heard before, and never changes the words heard."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from verbatim.asr_server import whisper
from verbatim.asr_server.pcm_wav import RATE, read_pcm16

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

pytestmark = pytest.mark.timeout(600)  # four short windows decoded: scales with a loaded machine


def _clip(name: str, start_s: float, end_s: float) -> np.ndarray:
    pcm = read_pcm16(SAMPLES / name)
    return pcm[int(start_s * RATE) : int(end_s * RATE)].astype(np.float32) / 32768.0


def test_the_third_decode_is_the_same_after_other_audio_and_leaves_the_words_alone() -> None:
    doubtful = _clip("therapy_dialogue.wav", 12.0, 24.0)
    first = whisper.recognise(doubtful)
    assert whisper.in_doubt(first), "the clip must hold a doubtful word for the third decode to run"
    assert all(w.beam is not None and w.prompted is not None for w in first)
    # Other windows in between (a sampled decode would draw from the same generator by now).
    whisper.recognise(_clip("jfk.wav", 0.0, 11.0))
    whisper.recognise(_clip("therapy_dialogue.wav", 0.0, 12.0))
    again = whisper.recognise(doubtful)
    assert [(w.text, w.beam, w.prompted) for w in again] == [(w.text, w.beam, w.prompted) for w in first]
    # The readings are the third decode's alone: the words, times and probabilities are the first's.
    plain = [(w.text, w.start_s, w.end_s, w.confidence, w.competitors) for w in first]
    assert plain == [(w.text, w.start_s, w.end_s, w.confidence, w.competitors) for w in again]
    assert any(w.beam or w.prompted for w in first), "a doubtful window where no hypothesis read anything else"
