"""Tests for verbatim.audio: probing by content and decoding to 16 kHz mono float32."""

from __future__ import annotations

import wave
from pathlib import Path

import av
import numpy as np
import pytest

from verbatim.audio import SAMPLE_RATE, AudioInfo, decode_pcm16k, probe
from verbatim.errors import AudioUnreadable

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
JFK = SAMPLES / "jfk.wav"
JFK_S = 11.0


def _jfk_pcm() -> np.ndarray:
    with wave.open(str(JFK)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")


def _encode(
    dest: Path, fmt: str, codec: str, rate: int, layout: str = "mono", options: dict[str, str] | None = None
) -> Path:
    """Encode jfk.wav into ``dest`` with PyAV (container ``fmt``, audio ``codec`` at ``rate`` Hz)."""
    pcm = _jfk_pcm()
    with av.open(str(dest), mode="w", format=fmt, options=options or {}) as out:
        stream = out.add_stream(codec, rate=rate, layout=layout)
        assert isinstance(stream, av.audio.stream.AudioStream)
        resampler = av.AudioResampler(format=stream.format, layout=layout, rate=rate)
        src = av.AudioFrame.from_ndarray(pcm.reshape(1, -1), format="s16", layout="mono")
        src.sample_rate = SAMPLE_RATE
        src.pts = 0
        for frame in [*resampler.resample(src), *resampler.resample(None)]:
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return dest


def test_wav_sample_probe_and_decode() -> None:
    info = probe(JFK)
    assert info == AudioInfo(container="wav", codec="pcm_s16le", duration_s=JFK_S, sample_rate=16000, channels=1)
    pcm = decode_pcm16k(JFK)
    assert pcm.dtype == np.float32 and pcm.ndim == 1
    assert pcm.size == int(JFK_S * SAMPLE_RATE)
    np.testing.assert_allclose(pcm, _jfk_pcm() / 32768.0, atol=1e-6)


@pytest.mark.parametrize(
    ("name", "fmt", "codec", "rate", "layout", "container"),
    [
        ("a.flac", "flac", "flac", 16000, "mono", "flac"),
        ("a.ogg", "ogg", "libopus", 48000, "mono", "ogg"),
        ("a.mp3", "mp3", "libmp3lame", 44100, "stereo", "mp3"),
        ("a.m4a", "ipod", "aac", 44100, "stereo", "mp4"),
        ("a.webm", "webm", "libopus", 48000, "stereo", "webm"),
    ],
)
def test_encoded_formats_accepted(
    tmp_path: Path, name: str, fmt: str, codec: str, rate: int, layout: str, container: str
) -> None:
    path = _encode(tmp_path / name, fmt, codec, rate, layout)
    info = probe(path)
    assert info.container == container
    assert info.sample_rate == rate
    assert info.duration_s == pytest.approx(JFK_S, abs=0.15)
    pcm = decode_pcm16k(path)
    assert pcm.dtype == np.float32 and pcm.ndim == 1
    assert pcm.size / SAMPLE_RATE == pytest.approx(JFK_S, abs=0.15)
    assert 0.01 < float(np.sqrt(np.mean(pcm**2))) < 1.0  # real audio, not silence


def test_content_not_name_decides(tmp_path: Path) -> None:
    # FLAC bytes in a file called .wav are still FLAC.
    path = _encode(tmp_path / "really_flac.wav", "flac", "flac", 16000)
    assert probe(path).container == "flac"


def test_mp3_without_length_header_measured(tmp_path: Path) -> None:
    # No Xing/Info header: FFmpeg would guess the length from the bitrate; probe counts frames.
    path = _encode(tmp_path / "a.mp3", "mp3", "libmp3lame", 16000, options={"write_xing": "0"})
    assert b"Xing" not in path.read_bytes()[:4096] and b"Info" not in path.read_bytes()[:4096]
    assert probe(path).duration_s == pytest.approx(JFK_S, abs=0.15)


def test_truncated_compressed_file_rejected(tmp_path: Path) -> None:
    full = _encode(tmp_path / "a.m4a", "ipod", "aac", 44100).read_bytes()
    cut = tmp_path / "cut.m4a"
    cut.write_bytes(full[: len(full) // 2])
    with pytest.raises(AudioUnreadable):
        probe(cut)


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("empty.wav", b""),
        ("notes.txt", b"Session notes: client reports better sleep.\n" * 50),
        ("text_named.wav", b"this is not audio at all, just some words in a text file\n" * 40),
        ("random.bin", np.random.default_rng(7).integers(0, 256, 200_000, dtype=np.uint8).tobytes()),
        ("random.mp3", np.random.default_rng(8).integers(0, 256, 200_000, dtype=np.uint8).tobytes()),
    ],
)
def test_not_audio_rejected(tmp_path: Path, name: str, data: bytes) -> None:
    path = _write(tmp_path, name, data)
    with pytest.raises(AudioUnreadable):
        probe(path)
    with pytest.raises(AudioUnreadable):
        decode_pcm16k(path)


def test_truncated_wav_rejected(tmp_path: Path) -> None:
    data = JFK.read_bytes()
    path = _write(tmp_path, "half.wav", data[: len(data) // 2])
    with pytest.raises(AudioUnreadable, match="truncated"):
        probe(path)


def test_missing_file_rejected(tmp_path: Path) -> None:
    with pytest.raises(AudioUnreadable):
        probe(tmp_path / "nope.wav")


def test_wav_without_audio_frames_rejected(tmp_path: Path) -> None:
    path = tmp_path / "silent0.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"")
    with pytest.raises(AudioUnreadable):
        probe(path)


def test_big_wav_probe_is_header_only(tmp_path: Path) -> None:
    # A 64 MiB sparse WAV: probing must not read the samples (would be slow for 1 GiB).
    n_bytes = 64 * 1024 * 1024
    path = tmp_path / "big.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"\0\0" * 1600)
    header = bytearray(path.read_bytes()[:44])
    header[4:8] = (36 + n_bytes).to_bytes(4, "little")
    header[40:44] = n_bytes.to_bytes(4, "little")
    with path.open("wb") as f:
        f.write(header)
        f.truncate(44 + n_bytes)
    info = probe(path)
    assert info.duration_s == pytest.approx(n_bytes / 2 / 16000)
