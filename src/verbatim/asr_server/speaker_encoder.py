"""Speaker embeddings: resemblyzer's LSTM speaker encoder, exported to ONNX, run by ONNX Runtime (CPU).

The model file ``models/speaker_encoder.onnx`` (5.7 MB, Apache-2.0, credit in
``models/NOTICE.md``) was exported once from resemblyzer 0.1.4 by
``scripts/export_speaker_encoder.py``, so running it needs no torch. It is pinned by SHA-256:
`verify_encoder` runs when the recognizer service starts and refuses a changed file.

`embed(mels)` maps windows of the mel power spectrogram (`speaker_mel.mel_spectrogram`) to
256-dimensional L2-normalised voice embeddings: windows of one voice have cosine similarity
near 1, of different voices markedly less. One ONNX Runtime session per process, loaded on first
use (~0.05 s), one intra-op thread (the service runs one recognition per pool process).
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

import numpy as np

from verbatim.errors import ConfigError

ENCODER_PATH = Path(__file__).resolve().parent / "models" / "speaker_encoder.onnx"
#: sha256 of models/speaker_encoder.onnx (5,700,111 bytes), printed by scripts/export_speaker_encoder.py
ENCODER_SHA256 = "afd0d4b3c08695c5ad367ae66bfea68d5e853d07c87f4fa55e2ff7ac72d34ca5"
WINDOW_FRAMES = 160
"""Frames (10 ms each) per embedded window: 1.6 s, the encoder's training length."""
EMBEDDING_DIM = 256
_BATCH = 32  # windows per ONNX call: bounds the LSTM's working memory

_lock = threading.Lock()
_session: dict[str, Any] = {}


def verify_encoder(path: Path | None = None) -> Path:
    """Check the encoder file (default ``ENCODER_PATH``) against its pinned SHA-256.

    Returns the path; raises ConfigError if the file changed or cannot be read.
    """
    path = ENCODER_PATH if path is None else path
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise ConfigError(f"cannot read the speaker encoder at {path}: {exc}") from exc
    if digest != ENCODER_SHA256:
        raise ConfigError(f"the speaker encoder at {path} is not the pinned one (sha256 {digest}, "
                          f"expected {ENCODER_SHA256}): refusing to load it")
    return path


def _onnx() -> Any:
    with _lock:
        if "s" not in _session:
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            # Verified bytes are what is loaded: read once, hash, then hand the same bytes over.
            model = ENCODER_PATH.read_bytes()
            if hashlib.sha256(model).hexdigest() != ENCODER_SHA256:
                verify_encoder()  # raises with the full message
            _session["s"] = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        return _session["s"]


def embed(windows: np.ndarray) -> np.ndarray:
    """(n, 256) float32 L2-normalised embeddings of (n, frames, 40) mel windows; (0, 256) for none."""
    if len(windows) == 0:
        return np.empty((0, EMBEDDING_DIM), dtype=np.float32)
    session = _onnx()
    out = [session.run(None, {"mels": np.ascontiguousarray(windows[i : i + _BATCH], dtype=np.float32)})[0]
           for i in range(0, len(windows), _BATCH)]
    emb = np.concatenate(out)
    return emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-9)
