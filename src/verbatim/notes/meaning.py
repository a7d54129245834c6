"""Sentence meaning as a vector: the all-MiniLM-L6-v2 sentence encoder, run by ONNX Runtime.

``SentenceEncoder.embed(texts)`` → float32 array (len(texts), 384), each row L2-normalised, so a dot
product is a cosine similarity. The encoder (``models/sentence_encoder.onnx``, int8 weights) and its
WordPiece tokenizer (``models/sentence_encoder_tokenizer.json``) were exported once by
``scripts/export_sentence_encoder.py``, after the encoder's weights were fine-tuned on the labelled risk
sets by ``scripts/finetune_sentence_encoder.py``; the file's SHA-256 is pinned and checked before it is loaded
(``ConfigError`` if it changed). Text is cut at 256 tokens, as sentence-transformers does.

Why not sentence-transformers itself: it needs PyTorch, which would make the install gigabytes;
ONNX Runtime and the Hugging Face ``tokenizers`` library are already here (faster-whisper uses both).
The model: sentence-transformers/all-MiniLM-L6-v2, Apache-2.0 (models/NOTICE.md).
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import numpy as np

from verbatim.errors import ConfigError

MODELS = Path(__file__).resolve().parent / "models"
ENCODER = MODELS / "sentence_encoder.onnx"
TOKENIZER = MODELS / "sentence_encoder_tokenizer.json"
#: sha256 of models/sentence_encoder.onnx, printed by scripts/export_sentence_encoder.py
ENCODER_SHA256 = "9eae5718d5094571b02a7434edeede080271f4921103fcc17f1cb5f8f7699824"
DIMENSIONS = 384
MAX_TOKENS = 256
_BATCH = 32


def _pinned(blob: bytes, model: Path) -> None:
    digest = hashlib.sha256(blob).hexdigest()
    if digest != ENCODER_SHA256:
        raise ConfigError(f"the sentence encoder at {model} is not the pinned one (sha256 {digest}, "
                          f"expected {ENCODER_SHA256}): refusing to load it")


def verify_encoder(model: Path = ENCODER, tokenizer: Path = TOKENIZER) -> None:
    """Check the pinned encoder's SHA-256 and that its tokenizer file is there, without loading either
    (a worker start does this); ``ConfigError`` naming the file otherwise."""
    try:
        blob = model.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read the sentence encoder at {model.parent}: {exc}") from exc
    _pinned(blob, model)
    if not tokenizer.is_file():
        raise ConfigError(f"cannot read the sentence encoder's tokenizer at {tokenizer}: no such file")


class SentenceEncoder:
    """One loaded encoder; ``embed`` is thread-safe (ONNX Runtime sessions are)."""

    def __init__(self, model: Path = ENCODER, tokenizer: Path = TOKENIZER, check_sha: bool = True) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        try:
            blob = model.read_bytes()
            self._tokenizer = Tokenizer.from_file(str(tokenizer))
        except Exception as exc:  # OSError, or the tokenizers library's own Exception type
            raise ConfigError(f"cannot read the sentence encoder at {model.parent}: {exc}") from exc
        if check_sha:
            _pinned(blob, model)
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.enable_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # a note run shares the worker's cores
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(blob, options, providers=["CPUExecutionProvider"])

    def embed(self, texts: list[str]) -> np.ndarray:
        """float32 (len(texts), 384), L2-normalised rows; an empty list gives shape (0, 384)."""
        out = [np.zeros((0, DIMENSIONS), dtype=np.float32)]
        # A lone surrogate (half an emoji) cannot be encoded as UTF-8: it is read as "?".
        clean = [t.encode("utf-8", "replace").decode("utf-8") for t in texts]
        for start in range(0, len(clean), _BATCH):
            batch = self._tokenizer.encode_batch(clean[start: start + _BATCH])
            ids = np.array([b.ids for b in batch], dtype=np.int64)
            mask = np.array([b.attention_mask for b in batch], dtype=np.int64)
            out.append(self._session.run(["embeddings"], {"input_ids": ids, "attention_mask": mask})[0])
        return np.concatenate(out).astype(np.float32)


_loaded: dict[str, SentenceEncoder] = {}
_lock = threading.Lock()


def encoder() -> SentenceEncoder:
    """The process's encoder, loaded once (about 0.3 s, 23 MB)."""
    with _lock:
        if "e" not in _loaded:
            _loaded["e"] = SentenceEncoder()
        return _loaded["e"]
