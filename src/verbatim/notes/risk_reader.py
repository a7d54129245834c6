"""The meaning check: a second reader of client turns, for risk said in words no rule knows.

The rules (``verbatim.notes.risk``) read negation, questions and answers, other people's history
and look-alikes, but only for wordings someone wrote down; on statements written by people who
never saw the rules they found 45–59 % of genuine risk statements. This reader rates a client turn
by meaning: the sentence encoder (``verbatim.notes.meaning``, all-MiniLM-L6-v2) turns it into a
384-vector, and five small neural networks (one hidden layer of 256 ReLU units each, trained with
scikit-learn by ``bench/train_risk_reader.py`` on the labelled risk sets and on ACI-BENCH patient
lines as harmless speech) give the probability of each category; their mean is the rating.

``rate(texts)`` → float array (len(texts), 6), rows summing to 1, columns ``CLASSES``.
``reading(text)`` → ``(category, share)`` when the turn reads as risk with
``1 − P(none) > THRESHOLD``, else None. A second set of networks reads a clinician's question the
rules found no topic in (``question_topic``: "Is anyone taking your money?" asks about abuse), so
the answer to it is read as an answer — a "no" is then a denial shown, a "yes" a flag. A third reads
an answer the rules could not read beside its question (``answer_readings``: denies, discloses or
neither). The encoder was fine-tuned on the same labelled sets (``scripts/finetune_sentence_encoder.py``).
The weights are ``models/risk_reader.npz`` (plain arrays,
no pickle, SHA-256 pinned); ``ConfigError`` if they cannot be read or changed.

It only adds: the rules' denials, family history, clinician speech and look-alikes they cleared are
never overruled (``risk.flags`` asks this reader only about a client turn the rules found nothing in).
Why our own code: what runs here is two matrix products and a softmax; scikit-learn (a development
dependency) trains the networks, and its pickles are not a format to load at run time.
"""

from __future__ import annotations

import hashlib
import io
import threading
import zipfile
from pathlib import Path

import numpy as np

from verbatim.errors import ConfigError
from verbatim.notes.meaning import DIMENSIONS, encoder, verify_encoder

WEIGHTS = Path(__file__).resolve().parent / "models" / "risk_reader.npz"
#: sha256 of models/risk_reader.npz, printed by bench/train_risk_reader.py
WEIGHTS_SHA256 = "816a094fa2a14a332b19e09f0e4212b137ece0944ab6e079a2b8bbe56f94e965"
CLASSES = ("none", "suicide", "self_harm", "harm_to_others", "abuse", "neglect")
#: ``1 − P(none)`` above which a turn is flagged; chosen, with ``PART_THRESHOLD``, on never-trained-on sets
#: (holdout14/15/28/29/31, talk_d/h) once the reader had learnt that a sentence of ordinary talk is ordinary alone
#: too (``bench/train_risk_reader.fragments``): low, because a safety net's misses cost more than its false flags,
#: and the reader now puts ordinary sentences near 0 (README, "Parts of ordinary talk")
THRESHOLD = 0.4
#: the same for one or two sentences read out of a longer turn: stricter, since every turn of several
#: sentences gives several such chances (0.95 since session 36's encoder: on the threshold sets as many genuine
#: statements as at 0.85, fewer false flags)
PART_THRESHOLD = 0.95

#: ``P(none)`` of a whole client turn at or above which the rules' flags on its earlier sentences are dropped:
#: the rest of the turn explains them ("I'm going to hang myself. Well, my portrait, at the art show.") — only
#: when the sentence after the flagged one reads it again (``risk._REREAD``: "Well, …", "I mean …"). Chosen on
#: holdout14/15/28/29 and talk_d/h: at 0.99 it also dropped "…I've only burned myself twice this week. Personal
#: best." and a ramble's "…I'm running her over. Anyway, …"; at this share only those two, for ten false flags
CLEARED = 0.9999

#: a clinician question whose ``1 − P(none)`` exceeds this asks about the likeliest category
QUESTION_THRESHOLD = 0.8
#: the three readers in the weights file: client statements, clinician questions (their topic), and a
#: client's answer to a question about risk (with the question: does it deny, disclose, or neither)
STATEMENT, QUESTION, ANSWER = "", "q", "a"
#: what the answer reader tells apart, its classes in order
ANSWER_CLASSES = ("neither", "denies", "discloses")
#: the answer reader's share above which an answer the rules could not read is a denial, or a disclosure
ANSWER_THRESHOLD = 0.97
#: each reader's input width (the answer reader reads the question's vector and the answer's, side by side)
#: and its classes
_SHAPE = {STATEMENT: (DIMENSIONS, len(CLASSES)), QUESTION: (DIMENSIONS, len(CLASSES)),
          ANSWER: (2 * DIMENSIONS, len(ANSWER_CLASSES))}

_loaded: dict[str, dict[str, dict[str, np.ndarray]]] = {}
_lock = threading.Lock()


def _read(path: Path) -> dict[str, dict[str, np.ndarray]]:
    """The readers' arrays (``STATEMENT``, ``QUESTION``, ``ANSWER``), read once and checked: ``ConfigError`` if the
    file is unreadable, changed, damaged or mis-shaped."""
    try:
        blob = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read the risk reader's weights at {path}: {exc}") from exc
    digest = hashlib.sha256(blob).hexdigest()
    if digest != WEIGHTS_SHA256:
        raise ConfigError(f"the risk reader's weights at {path} are not the pinned ones (sha256 {digest}, "
                          f"expected {WEIGHTS_SHA256}): refusing to load them")
    try:
        with np.load(io.BytesIO(blob), allow_pickle=False) as z:
            heads = {head: {k: np.asarray(z[head + k], dtype=np.float32) for k in ("w1", "b1", "w2", "b2")}
                     for head in _SHAPE}
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise ConfigError(f"cannot read the risk reader's weights at {path}: {exc}") from exc
    for head, w in heads.items():
        _check_shapes(path, head, w)
    return heads


def _check_shapes(path: Path, head: str, w: dict[str, np.ndarray]) -> None:
    nets, hidden = w["b1"].shape if w["b1"].ndim == 2 else (0, 0)
    width, classes = _SHAPE[head]
    shapes = {"w1": (nets, width, hidden), "b1": (nets, hidden), "w2": (nets, hidden, classes), "b2": (nets, classes)}
    wrong = [f"{head}{k} {w[k].shape} (expected {s})" for k, s in shapes.items() if w[k].shape != s]
    if not nets or wrong:
        raise ConfigError(f"the risk reader's weights at {path} have the wrong shape: "
                          f"{', '.join(wrong) or 'no networks'}")


def _weights(head: str) -> dict[str, np.ndarray]:
    with _lock:
        if "w" not in _loaded:
            _loaded["w"] = _read(WEIGHTS)
        return _loaded["w"][head]


def verify() -> None:
    """Check, at worker start, the encoder's pinned SHA-256 and that both readers' weights load; raises
    ``ConfigError`` naming the file. Keeps nothing loaded (a worker may fork after it)."""
    verify_encoder()
    _read(WEIGHTS)


def rate_vectors(vectors: np.ndarray, head: str = STATEMENT) -> np.ndarray:
    """Class probabilities (n, classes) of sentence vectors (n, width): the mean of the networks'
    softmaxes; ``STATEMENT`` and ``QUESTION``: (n, 384) → (n, 6); ``ANSWER``: (n, 768) → (n, 3)."""
    w = _weights(head)
    hidden = np.maximum(np.einsum("nd,mdh->mnh", vectors, w["w1"]) + w["b1"][:, None, :], 0.0)
    logits = np.einsum("mnh,mhc->mnc", hidden, w["w2"]) + w["b2"][:, None, :]
    logits -= logits.max(axis=-1, keepdims=True)
    soft = np.exp(logits)
    soft /= soft.sum(axis=-1, keepdims=True)
    return np.asarray(soft.mean(axis=0))


def rate(texts: list[str]) -> np.ndarray:
    """Class probabilities (len(texts), 6) of client turns, columns ``CLASSES``."""
    if not texts:
        return np.zeros((0, len(CLASSES)))
    return rate_vectors(encoder().embed(texts))


def reading(text: str) -> tuple[str, float] | None:
    """``(category, share)``: the likeliest risk category and ``1 − P(none)``, when above ``THRESHOLD``."""
    return readings([text])[0]


def readings(texts: list[str], thresholds: list[float] | None = None) -> list[tuple[str, float] | None]:
    """``reading`` of each text, in one batch; ``thresholds``: one per text (default ``THRESHOLD``)."""
    rated = rate(texts)
    limits = thresholds or [THRESHOLD] * len(texts)
    return [_above(p[None, :], t)[0] for p, t in zip(rated, limits, strict=True)]


def question_topic(text: str) -> tuple[str, float] | None:
    """``(category, share)`` a clinician's question asks about (``1 − P(none)`` above
    ``QUESTION_THRESHOLD``), else None: "Is anyone taking your money?" → abuse."""
    return _above(rate_vectors(encoder().embed([text]), QUESTION), QUESTION_THRESHOLD)[0]


def answer_readings(pairs: list[tuple[str, str]]) -> list[tuple[str, float] | None]:
    """For each ``(question, answer)`` — the clinician's question, the client's turn —
    ``("denies"|"discloses", share)`` when the answer reader's share for one of them exceeds
    ``ANSWER_THRESHOLD``, else None ("Lost too many mates to it. I'd never put my family through
    that." to a suicide question → denies); all pairs in one batch."""
    if not pairs:
        return []
    vectors = encoder().embed([text for pair in pairs for text in pair]).reshape(len(pairs), 2 * DIMENSIONS)
    out: list[tuple[str, float] | None] = []
    for p in rate_vectors(vectors, ANSWER):
        best = 1 + int(np.argmax(p[1:]))
        out.append((ANSWER_CLASSES[best], float(p[best])) if p[best] > ANSWER_THRESHOLD else None)
    return out


def _above(rated: np.ndarray, threshold: float) -> list[tuple[str, float] | None]:
    out: list[tuple[str, float] | None] = []
    for p in rated:
        share = float(1.0 - p[0])
        out.append((CLASSES[1 + int(np.argmax(p[1:]))], share) if share > threshold else None)
    return out
