"""One-time export of resemblyzer's speaker encoder to ONNX, and a check that it still hears alike.

Run in a throw-away virtualenv, never in the project's (torch must not become a dependency;
webrtcvad, which resemblyzer imports, still needs setuptools' pkg_resources)::

    python3.11 -m venv /tmp/exportvenv
    /tmp/exportvenv/bin/pip install torch==2.13.0 resemblyzer==0.1.4 onnx onnxruntime "setuptools<81"
    /tmp/exportvenv/bin/python scripts/export_speaker_encoder.py

It writes ``src/verbatim/asr_server/models/speaker_encoder.onnx`` (input ``mels``: float32
(batch, frames, 40) mel power spectrogram; output ``embeddings``: float32 (batch, 256),
L2-normalised) and prints its SHA-256, to be pinned in
`verbatim.asr_server.speaker_encoder.ENCODER_SHA256`. Then, on the shared sample clips, it
compares (a) our numpy mel front-end with librosa's, and (b) the embeddings of ONNX Runtime fed
with our mel against torch fed with librosa's mel, window by window; it fails unless every
cosine similarity exceeds 0.99.

The model: resemblyzer 0.1.4 (Resemble AI, Corentin Jemine), ``pretrained.pt``, Apache-2.0.
"""

from __future__ import annotations

import hashlib
import sys
import wave
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch
from resemblyzer import VoiceEncoder
from resemblyzer.audio import wav_to_mel_spectrogram

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
from verbatim.asr_server.speaker_mel import mel_spectrogram  # noqa: E402  (numpy only)

OUT = ROOT / "src" / "verbatim" / "asr_server" / "models" / "speaker_encoder.onnx"
SAMPLES = ROOT / "samples"
CLIPS = ("jfk.wav", "therapy_dialogue.wav", "therapy_dialogue_two_male.wav", "hartmann_12_fawcett_0088.wav")
WINDOW = 160  # frames (1.6 s), resemblyzer's partial utterance


def read_wav(path: Path) -> np.ndarray:
    with wave.open(str(path)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768.0


def export(encoder: VoiceEncoder) -> None:
    dummy = torch.zeros(2, WINDOW, 40)
    torch.onnx.export(
        encoder, (dummy,), str(OUT), input_names=["mels"], output_names=["embeddings"],
        dynamic_axes={"mels": {0: "batch", 1: "frames"}, "embeddings": {0: "batch"}},
        opset_version=17, dynamo=False,
    )


def check(encoder: VoiceEncoder) -> float:
    session = ort.InferenceSession(str(OUT), providers=["CPUExecutionProvider"])
    worst = 1.0
    for name in CLIPS:
        audio = read_wav(SAMPLES / name)[: 16000 * 30]
        ref_mel = wav_to_mel_spectrogram(audio)
        our_mel = mel_spectrogram(audio)
        assert ref_mel.shape == our_mel.shape, (ref_mel.shape, our_mel.shape)
        mel_err = float(np.abs(ref_mel - our_mel).max() / (np.abs(ref_mel).max() + 1e-12))
        starts = range(0, len(our_mel) - WINDOW, 80)
        with torch.no_grad():
            ref = encoder(torch.from_numpy(np.stack([ref_mel[s : s + WINDOW] for s in starts]))).numpy()
        ours = session.run(None, {"mels": np.stack([our_mel[s : s + WINDOW] for s in starts])})[0]
        cos = (ref * ours).sum(axis=1) / np.linalg.norm(ref, axis=1) / np.linalg.norm(ours, axis=1)
        worst = min(worst, float(cos.min()))
        print(f"{name:34s} windows {len(cos):3d}  mel max rel err {mel_err:.2e}  cosine min {cos.min():.6f}")
    return worst


def main() -> None:
    encoder = VoiceEncoder(device="cpu", verbose=False).eval()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    export(encoder)
    print(f"{OUT.relative_to(ROOT)}: {OUT.stat().st_size} bytes, sha256 {hashlib.sha256(OUT.read_bytes()).hexdigest()}")
    worst = check(encoder)
    if worst <= 0.99:
        raise SystemExit(f"ONNX embeddings differ from torch's (worst cosine {worst:.4f})")
    print(f"OK: worst cosine {worst:.6f}")


if __name__ == "__main__":
    main()
