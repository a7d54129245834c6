"""Decoding windows and the re-decode of speech no word covers (fast: a scripted recogniser).

The scripted recogniser stands in for Whisper only to make its failure exact: it hears one word
per second of loud audio, except in the stretch a test tells it to skip (as Whisper's no-speech
skip and its lone-timestamp seek do on long recordings).
"""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import pytest

from verbatim.asr_server import vad, whisper, windows
from verbatim.asr_server.engine import Word, heard_in_speech, transcribe
from verbatim.audio import decode_pcm16k
from verbatim.recognizer.turns import INAUDIBLE, NO_SPEAKER, results_to_turns

RATE = 16000


def _speechlike(seconds: float, rng: np.random.Generator) -> np.ndarray:
    """Loud noise bursts of 0.5 s with 0.35 s pauses: the energy detector calls it speech."""
    out = np.zeros(int(seconds * RATE))
    pos = 0
    while pos < out.size:
        burst = min(int(0.5 * RATE), out.size - pos)
        out[pos : pos + burst] = rng.standard_normal(burst) * 0.2
        pos += burst + int(0.35 * RATE)
    return out


def _recording(tmp_path: Path, seconds: float = 70.0) -> Path:
    rng = np.random.default_rng(3)
    audio = np.concatenate([np.zeros(RATE // 2), _speechlike(seconds, rng), np.zeros(RATE // 2)])
    audio += rng.standard_normal(audio.size) * 0.001  # a faint floor: no two 10 ms frames alike
    path = tmp_path / "talk.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes((np.clip(audio, -1, 1) * 32767).astype("<i2").tobytes())
    return path


class Scripted:
    """One word per burst of loud audio; nothing inside ``deaf`` (seconds of the recording) on a
    first decode, nor on a second one when ``deaf_when_insisting``."""

    def __init__(self, path: Path, deaf: tuple[float, float], *, deaf_when_insisting: bool) -> None:
        full = decode_pcm16k(path)
        # Every slice the engine hands over starts on a 10 ms frame: its first samples say where.
        self.where = {full[k : k + 32].tobytes(): k / RATE for k in range(0, full.size - 32, 160)}
        self.deaf = deaf
        self.deaf_when_insisting = deaf_when_insisting
        self.calls: list[tuple[float, float, bool]] = []  # (start s, seconds, insist)

    def __call__(self, audio: np.ndarray, insist: bool = False) -> list[Word]:
        offset = self.where[audio[:32].tobytes()]
        self.calls.append((offset, audio.size / RATE, insist))
        frames = np.abs(audio[: audio.size // 160 * 160]).reshape(-1, 160).mean(axis=1) > 0.05
        words = []
        for run in vad.speech_spans(frames):
            start, end = run.start * 0.01, run.end * 0.01
            if self.deaf[0] <= offset + (start + end) / 2 < self.deaf[1] and (self.deaf_when_insisting or not insist):
                continue
            words.append(Word("word", start, end, 0.9))
        return words


def _install(monkeypatch: pytest.MonkeyPatch, path: Path, deaf: tuple[float, float],
             deaf_when_insisting: bool) -> Scripted:
    fake = Scripted(path, deaf, deaf_when_insisting=deaf_when_insisting)
    monkeypatch.setattr(whisper, "recognise", fake)
    return fake


def test_windows_tile_the_recording_and_stay_under_whispers_30_s() -> None:
    rng = np.random.default_rng(1)
    frames = np.abs(_speechlike(200.0, rng)[: 200 * RATE].reshape(-1, 160)).mean(axis=1) > 0.05
    speech = vad.speech_mask(np.where(frames, -10.0, -90.0))
    wins = windows.decoding_windows(speech)
    assert len(wins) >= 200 / windows.WINDOW_S
    assert all((w.end - w.context) * 0.01 <= windows.WINDOW_S + 1e-9 for w in wins)
    assert wins[0].start == 0 and wins[-1].end == speech.size
    owners = np.zeros(speech.size, dtype=int)
    for w in wins:
        owners[w.start : w.end] += 1
    assert (owners <= 1).all() and (owners[speech] == 1).all()  # every speech frame kept from one window
    assert all(w.context < w.start for w in wins[1:])  # each window hears the speech just before it


def test_speech_a_first_decode_skipped_is_decoded_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _recording(tmp_path)
    fake = _install(monkeypatch, path, (30.0, 36.0), deaf_when_insisting=False)
    results = transcribe(path, diarization="none")
    words = [r for r in results if r["type"] == "word"]
    assert any(30.0 <= r["start_time"] < 36.0 for r in words), "the skipped stretch was never heard again"
    assert not [r for r in results if r["type"] == "gap"]
    assert any(insist for _, _, insist in fake.calls)
    assert max(seconds for _, seconds, _ in fake.calls) <= 30.0


def test_speech_no_decode_makes_out_is_an_inaudible_gap_at_its_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _recording(tmp_path)
    _install(monkeypatch, path, (30.0, 36.0), deaf_when_insisting=True)
    results = transcribe(path, diarization="none")
    gaps = [r for r in results if r["type"] == "gap"]
    assert len(gaps) == 1
    gap = gaps[0]
    assert 29.0 <= gap["start_time"] <= 31.0 and 35.0 <= gap["end_time"] <= 37.0
    assert gap["alternatives"][0]["content"] == f"[inaudible {gap['end_time'] - gap['start_time']:.1f} s]"
    assert gap["alternatives"][0]["tags"] == [INAUDIBLE]
    times = [r["start_time"] for r in results]
    assert times == sorted(times)
    turns = results_to_turns(results)
    gap_turns = [t for t in turns if t["speaker"] == NO_SPEAKER]
    assert len(gap_turns) == 1 and gap_turns[0]["marks"] == [INAUDIBLE]
    assert gap_turns[0]["text"].startswith("[inaudible ") and gap_turns[0]["words"] == []
    # the words on both sides are still there
    assert any(t["speaker"] == "UU" and t["end_s"] <= gap["start_time"] for t in turns)
    assert any(t["speaker"] == "UU" and t["start_s"] >= gap["end_time"] for t in turns)


def test_uncovered_ignores_short_stretches_and_bridges_short_pauses() -> None:
    speech = np.zeros(1000, dtype=bool)
    speech[100:130] = True  # 0.3 s: too short to matter
    speech[300:400] = True
    speech[420:560] = True  # 0.2 s pause: one 2.6 s stretch with the run before
    stretches = windows.uncovered(speech, [])
    assert [(s.start, s.end) for s in stretches] == [(300, 560)]
    assert windows.uncovered(speech, [(3.0, 5.6)]) == []


def _mask(seconds: float, *spans: tuple[float, float]) -> np.ndarray:
    speech = np.zeros(int(round(seconds * 100)), dtype=bool)
    for a, b in spans:
        speech[int(round(a * 100)) : int(round(b * 100))] = True
    return speech


def _word(text: str, start: float, end: float) -> Word:
    return Word(text=text, start_s=start, end_s=end, confidence=0.9)


def test_a_word_whisper_timed_just_past_its_speech_is_kept() -> None:
    # jfk.wav as our detector hears it: "ask" is 3.30-3.74 s, "not" 3.99-4.34 s; Whisper timed
    # "ask" at 3.72-3.88 s, almost all in the pause between them.
    speech = _mask(6, (3.30, 3.74), (3.99, 4.34))
    words = [_word("ask", 3.72, 3.88), _word("not", 3.88, 4.52)]
    assert [w.text for w in heard_in_speech(words, speech)] == ["ask", "not"]


def test_a_word_invented_in_a_pause_is_still_dropped() -> None:
    speech = _mask(10, (1.0, 2.0), (7.0, 8.0))
    words = [_word("one", 1.0, 2.0), _word("thank", 4.0, 4.4), _word("you", 2.05, 2.3), _word("two", 7.0, 8.0)]
    # "thank": seconds from any speech; "you": beside speech that "one" already explains.
    assert [w.text for w in heard_in_speech(words, speech)] == ["one", "two"]
