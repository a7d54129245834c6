"""The speaker encoder is pinned: a changed ONNX file stops the recognizer service from starting."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from verbatim.asr_server import speaker_encoder
from verbatim.asr_server.app import create_app
from verbatim.asr_server.speaker_mel import mel_spectrogram
from verbatim.config import Settings
from verbatim.errors import ConfigError


def test_tampered_encoder_is_refused_at_start_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(data_dir=tmp_path / "data", mode="development")
    copy = tmp_path / "speaker_encoder.onnx"
    shutil.copyfile(speaker_encoder.ENCODER_PATH, copy)
    monkeypatch.setattr(speaker_encoder, "ENCODER_PATH", copy)
    create_app(settings)  # the pinned file starts
    with copy.open("r+b") as fh:  # one byte changed, deep inside the weights
        fh.seek(copy.stat().st_size // 2)
        byte = fh.read(1)
        fh.seek(-1, 1)
        fh.write(bytes([byte[0] ^ 0x01]))
    with pytest.raises(ConfigError, match="speaker encoder .* is not the pinned one"):
        create_app(settings)
    copy.unlink()
    with pytest.raises(ConfigError, match="cannot read the speaker encoder"):
        create_app(settings)


def test_embeddings_are_unit_vectors_and_tell_a_tone_from_noise() -> None:
    t = np.arange(16000 * 2) / 16000
    tone = (0.1 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    noise = np.random.default_rng(0).normal(0, 0.1, t.size).astype(np.float32)
    mels = np.stack([mel_spectrogram(x)[:160] for x in (tone, tone * 0.5, noise)])
    emb = speaker_encoder.embed(mels)
    assert emb.shape == (3, speaker_encoder.EMBEDDING_DIM)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, rtol=1e-5)
    assert emb[0] @ emb[1] > emb[0] @ emb[2]
    assert speaker_encoder.embed(np.empty((0, 160, 40), dtype=np.float32)).shape == (0, 256)
