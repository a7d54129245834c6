"""Scoring helpers shared by the recognition tests, bench/asr.py and the demo.

* WER: reference and hypothesis are normalised the same way (lower-case; every
  character other than a-z, 0-9 and ``'`` becomes a space) and compared with jiwer.
* Speaker attribution: the fraction of recognised words whose speaker label is the
  speaker of the reference turn containing the word's midpoint, after mapping the
  recogniser's labels (S1, S2, ...) to reference speakers by the best one-to-one mapping.
  Words whose midpoint is in no turn are skipped; a label left unmapped counts as wrong.
* Gap splicing: rebuilds a dialogue with a chosen silence between turns, to test
  diarization when turns nearly touch.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jiwer
import numpy as np

_NOT_WORD_CHAR = re.compile(r"[^a-z0-9']")


def normalise(text: str) -> str:
    """Lower-case ``text``, turn every char other than a-z 0-9 ' into a space, squeeze spaces."""
    return " ".join(_NOT_WORD_CHAR.sub(" ", text.lower()).split())


def word_errors(reference: str, hypothesis: str) -> tuple[int, int]:
    """Return (edit errors, reference word count) after normalising both texts.

    Errors are substitutions + deletions + insertions; summing both numbers over files
    gives a pooled WER.
    """
    ref, hyp = normalise(reference), normalise(hypothesis)
    n_ref = len(ref.split())
    if n_ref == 0:
        return len(hyp.split()), 0
    if not hyp:
        return n_ref, n_ref
    out = jiwer.process_words(ref, hyp)
    return out.substitutions + out.deletions + out.insertions, n_ref


def word_error_rate(reference: str, hypothesis: str) -> float:
    """Word error rate of ``hypothesis`` against ``reference`` (both normalised first).

    An empty reference gives 0.0 for an empty hypothesis and 1.0 otherwise.
    """
    errors, n_ref = word_errors(reference, hypothesis)
    if n_ref == 0:
        return 0.0 if errors == 0 else 1.0
    return errors / n_ref


def pooled_wer(pairs: Iterable[tuple[str, str]]) -> float:
    """WER over several (reference, hypothesis) pairs: total errors / total reference words."""
    errors = n_ref = 0
    for ref, hyp in pairs:
        e, n = word_errors(ref, hyp)
        errors, n_ref = errors + e, n_ref + n
    return errors / n_ref if n_ref else 0.0


def results_text(results: Sequence[dict[str, Any]]) -> str:
    """The words of a json-v2 ``results`` list joined by spaces (punctuation left out)."""
    return " ".join(r["alternatives"][0]["content"] for r in results if r["type"] == "word")


@dataclass(frozen=True)
class Turn:
    """One reference speaker turn: ``speaker`` talks from ``start_s`` to ``end_s`` (seconds)."""

    speaker: str
    start_s: float
    end_s: float
    text: str = ""


def load_turns(path: str | Path) -> list[Turn]:
    """Read a turn file: a JSON list of {speaker, start_s, end_s, text}."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    return [Turn(t["speaker"], float(t["start_s"]), float(t["end_s"]), t.get("text", "")) for t in raw]


def speaker_attribution(results: Sequence[dict[str, Any]], turns: Sequence[Turn]) -> float:
    """Fraction (0..1) of words carrying the speaker of their reference turn.

    ``results`` is a json-v2 results list; a word belongs to the turn containing its
    midpoint ((start_time + end_time) / 2, seconds). Hypothesis labels are mapped to
    reference speakers by the one-to-one mapping that maximises matches. Returns 0.0
    when no word falls inside a turn.
    """
    pairs: list[tuple[str, str]] = []
    for r in results:
        if r["type"] != "word":
            continue
        mid = (float(r["start_time"]) + float(r["end_time"])) / 2
        turn = next((t for t in turns if t.start_s <= mid <= t.end_s), None)
        if turn is not None:
            pairs.append((r["alternatives"][0]["speaker"], turn.speaker))
    if not pairs:
        return 0.0
    counts = Counter(pairs)
    hyp_labels = sorted({h for h, _ in pairs})
    ref_labels = sorted({s for _, s in pairs})
    best = 0
    # Few labels on each side, so trying every injective mapping is cheap.
    n = max(len(hyp_labels), len(ref_labels))
    padded_ref: list[str | None] = [*ref_labels, *([None] * (n - len(ref_labels)))]
    for perm in itertools.permutations(padded_ref, len(hyp_labels)):
        best = max(best, sum(counts[(h, s)] for h, s in zip(hyp_labels, perm, strict=True) if s is not None))
    return best / len(pairs)


def splice_turns(
    audio: np.ndarray, turns: Sequence[Turn], gap_s: float, sample_rate: int = 16_000
) -> tuple[np.ndarray, list[Turn]]:
    """Rebuild a dialogue with exactly ``gap_s`` seconds of zeros between turns.

    ``audio`` is a 1-D sample array at ``sample_rate`` Hz and ``turns`` its reference
    turns. Returns the new audio (same dtype) and the turns with recomputed times.
    """
    gap = np.zeros(round(gap_s * sample_rate), dtype=audio.dtype)
    pieces: list[np.ndarray] = []
    new_turns: list[Turn] = []
    pos = 0
    for i, t in enumerate(turns):
        if i:
            pieces.append(gap)
            pos += gap.size
        seg = audio[round(t.start_s * sample_rate) : round(t.end_s * sample_rate)]
        pieces.append(seg)
        new_turns.append(Turn(t.speaker, pos / sample_rate, (pos + seg.size) / sample_rate, t.text))
        pos += seg.size
    return np.concatenate(pieces), new_turns
