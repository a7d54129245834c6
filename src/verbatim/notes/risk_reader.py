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
the answer to it is read as an answer — a "no" is then a denial shown, a "yes" a flag.
The weights are ``models/risk_reader.npz`` (plain arrays,
no pickle); ``ConfigError`` if they cannot be read.

It only adds: the rules' denials, family history, clinician speech and look-alikes they cleared are
never overruled (``risk.flags`` asks this reader only about a client turn the rules found nothing in).
Why our own code: what runs here is two matrix products and a softmax; scikit-learn (a development
dependency) trains the networks, and its pickles are not a format to load at run time.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from verbatim.errors import ConfigError
from verbatim.notes.meaning import encoder

WEIGHTS = Path(__file__).resolve().parent / "models" / "risk_reader.npz"
CLASSES = ("none", "suicide", "self_harm", "harm_to_others", "abuse", "neglect")
#: ``1 − P(none)`` above which a turn is flagged; chosen on sets whose authors had not seen the rules
#: (leave-one-set-out, then the never-trained-on sets): recall about 0.8 on their wording, about 3 %
#: more of ordinary therapy talk flagged than the rules alone, one ACI-BENCH line in 4,748
THRESHOLD = 0.9

#: a clinician question whose ``1 − P(none)`` exceeds this asks about the likeliest category
QUESTION_THRESHOLD = 0.8
#: the two readers in the weights file: client statements, and clinician questions (their topic)
STATEMENT, QUESTION = "", "q"

_loaded: dict[str, dict[str, np.ndarray]] = {}
_lock = threading.Lock()


def _weights(head: str) -> dict[str, np.ndarray]:
    with _lock:
        if head not in _loaded:
            try:
                with np.load(WEIGHTS, allow_pickle=False) as z:
                    w = {k: z[head + k] for k in ("w1", "b1", "w2", "b2")}
            except (OSError, KeyError, ValueError) as exc:
                raise ConfigError(f"cannot read the risk reader's weights at {WEIGHTS}: {exc}") from exc
            if w["w2"].shape[-1] != len(CLASSES):
                raise ConfigError(f"the risk reader at {WEIGHTS} has {w['w2'].shape[-1]} classes, "
                                  f"expected {len(CLASSES)}")
            _loaded[head] = w
        return _loaded[head]


def rate_vectors(vectors: np.ndarray, head: str = STATEMENT) -> np.ndarray:
    """Class probabilities (n, 6) of sentence vectors (n, 384): the mean of the networks' softmaxes."""
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


def readings(texts: list[str]) -> list[tuple[str, float] | None]:
    """``reading`` of each text, in one batch."""
    return _above(rate(texts), THRESHOLD)


def question_topic(text: str) -> tuple[str, float] | None:
    """``(category, share)`` a clinician's question asks about (``1 − P(none)`` above
    ``QUESTION_THRESHOLD``), else None: "Is anyone taking your money?" → abuse."""
    return _above(rate_vectors(encoder().embed([text]), QUESTION), QUESTION_THRESHOLD)[0]


def _above(rated: np.ndarray, threshold: float) -> list[tuple[str, float] | None]:
    out: list[tuple[str, float] | None] = []
    for p in rated:
        share = float(1.0 - p[0])
        out.append((CLASSES[1 + int(np.argmax(p[1:]))], share) if share > threshold else None)
    return out
