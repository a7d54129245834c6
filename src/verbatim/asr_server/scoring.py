"""Scoring helpers shared by the recognition tests, bench/asr.py and the demo.

* WER: reference and hypothesis are normalised the same way (lower-case; numbers spelled out
  with num2words, so "10" = "ten"; every character other than a-z, 0-9 and ``'`` becomes a
  space) and compared with jiwer.
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
from num2words import num2words

_NOT_WORD_CHAR = re.compile(r"[^a-z0-9']")
_NUMBER = re.compile(r"(\d+)(?::(\d\d))?(st|nd|rd|th)?")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")


def _spell(match: re.Match[str]) -> str:
    whole, minutes, suffix = match.group(1), match.group(2), match.group(3)
    if suffix:
        return f" {num2words(int(whole), to='ordinal')} "
    words = num2words(int(whole))
    if minutes is not None:  # a clock time: "4:30" is said "four thirty", "4:00" "four"
        words += "" if minutes == "00" else " oh " + num2words(int(minutes)) if minutes[0] == "0" \
            else " " + num2words(int(minutes))
    return f" {words} "


def normalise(text: str) -> str:
    """Lower-case ``text``, spell numbers out, turn every char other than a-z 0-9 ' into a space.

    Numbers are words, not spellings: "10" and "ten" are the same word ("10th" is "tenth",
    "4:30" is "four thirty", "1,000" is "one thousand"; num2words' English, hyphens become spaces).
    """
    text = _NUMBER.sub(_spell, _THOUSANDS.sub("", text.lower()))
    return " ".join(_NOT_WORD_CHAR.sub(" ", text).split())


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


def wrong_words(reference: str, results: Sequence[dict[str, Any]]) -> list[tuple[float, bool]]:
    """(confidence, wrong) for every recognised word, aligned to ``reference`` with jiwer.

    A word is wrong when the alignment substitutes or inserts it (after `normalise`, so casing
    and punctuation never count). A json-v2 word that normalises into several tokens ("o'clock"
    stays one; "check-in" was already split) is wrong if any of its tokens is.
    """
    words = [(float(r["alternatives"][0]["confidence"]), normalise(r["alternatives"][0]["content"]).split())
             for r in results if r["type"] == "word"]
    tokens = [t for _, toks in words for t in toks]
    ref = normalise(reference)
    if not tokens or not ref:
        return [(c, True) for c, _ in words]
    out = jiwer.process_words(ref, " ".join(tokens))
    ok = [False] * len(tokens)
    for chunk in out.alignments[0]:
        if chunk.type == "equal":
            for j in range(chunk.hyp_start_idx, chunk.hyp_end_idx):
                ok[j] = True
    flags: list[tuple[float, bool]] = []
    pos = 0
    for conf, toks in words:
        flags.append((conf, not all(ok[pos : pos + len(toks)])))
        pos += len(toks)
    return flags


def flag_scores(scored: Iterable[tuple[float, bool]], threshold: float) -> tuple[int, float | None, float | None]:
    """(flags, precision, recall) of flagging words with confidence below ``threshold``.

    ``scored`` holds (confidence, wrong) pairs (see `wrong_words`). Precision: share of flagged
    words that are wrong (None when nothing is flagged); recall: share of wrong words flagged
    (None when no word is wrong).
    """
    pairs = list(scored)
    flagged = [wrong for conf, wrong in pairs if conf < threshold]
    wrong_total = sum(wrong for _, wrong in pairs)
    precision = sum(flagged) / len(flagged) if flagged else None
    recall = sum(flagged) / wrong_total if wrong_total else None
    return len(flagged), precision, recall


def diarization_error_rate(results: Sequence[dict[str, Any]], turns: Sequence[Turn], frame_s: float = 0.01,
                           collar_s: float = 0.0, fill_s: float = 0.5) -> float:
    """Frame-level DER (0..): (missed + false alarm + speaker confusion) / scored reference speech time.

    See `diarization_errors` for the scoring rules; 0.0 when no reference speech is scored.
    """
    errors, speech = diarization_errors(results, turns, frame_s, collar_s, fill_s)
    return errors / speech if speech else 0.0


def diarization_errors(results: Sequence[dict[str, Any]], turns: Sequence[Turn], frame_s: float = 0.01,
                       collar_s: float = 0.0, fill_s: float = 0.5) -> tuple[int, int]:
    """(missed + false alarm + speaker confusion, scored reference speech), both in ``frame_s`` frames.

    Summing both over recordings gives a pooled DER (NIST's: errors over total scored speech).

    Our own scorer (it fills a speaker's pauses between words and maps "UU" to nobody, which
    pyannote.metrics' segment scorer does not), on a ``frame_s`` grid; on plain segments it gives
    pyannote.metrics' DER exactly (tests/unit/test_der_scorer.py; pyannote's collar = 2 × ours). Reference speech
    is the turns' spans; hypothesis speech the recognised words' spans, with a pause shorter than
    ``fill_s`` between two words of one label filled (a speaker is speaking in the pause between
    their words, as in the segments a diarization system outputs). ``collar_s``: frames within
    this many seconds of a reference turn's start or end are not scored (NIST md-eval's collar;
    0.25 is the usual). Overlap is not modelled. Hypothesis labels map to reference speakers by
    the one-to-one mapping that maximises agreeing frames (tried exhaustively: few labels); "UU"
    maps to nobody.
    """
    end = max([t.end_s for t in turns] + [float(r["end_time"]) for r in results] + [0.0])
    n = int(np.ceil(end / frame_s)) + 1
    ref_names = sorted({t.speaker for t in turns})
    ref = np.full(n, -1)
    scored = np.ones(n, dtype=bool)
    collar = int(round(collar_s / frame_s))
    for t in turns:
        a, b = int(round(t.start_s / frame_s)), int(round(t.end_s / frame_s))
        ref[a:b] = ref_names.index(t.speaker)
    for t in turns:
        for edge in (int(round(t.start_s / frame_s)), int(round(t.end_s / frame_s))):
            scored[max(0, edge - collar) : edge + collar] = False
    hyp_names: list[str] = []
    hyp = np.full(n, -1)
    last: tuple[int, int] | None = None  # (label index, end frame) of the previous word
    for r in results:
        if r["type"] != "word":
            continue
        label = r["alternatives"][0]["speaker"]
        if label not in hyp_names:
            hyp_names.append(label)
        k = hyp_names.index(label)
        a, b = int(round(float(r["start_time"]) / frame_s)), int(round(float(r["end_time"]) / frame_s))
        if last is not None and last[0] == k and 0 < a - last[1] < fill_s / frame_s:
            a = last[1]
        hyp[a:b] = k
        last = (k, b)
    ref_speech = int(((ref >= 0) & scored).sum())
    if ref_speech == 0:
        return 0, 0
    missed = int(((ref >= 0) & (hyp < 0) & scored).sum())
    false_alarm = int(((ref < 0) & (hyp >= 0) & scored).sum())
    both = (ref >= 0) & (hyp >= 0) & scored
    joint = np.zeros((len(hyp_names), len(ref_names)), dtype=np.int64)
    np.add.at(joint, (hyp[both], ref[both]), 1)
    if "UU" in hyp_names:
        joint[hyp_names.index("UU")] = 0
    size = max(len(hyp_names), len(ref_names))
    best = 0
    for perm in itertools.permutations(range(size), len(hyp_names)):
        best = max(best, sum(int(joint[h, r]) for h, r in enumerate(perm) if r < len(ref_names)))
    confusion = int(both.sum()) - best
    return missed + false_alarm + confusion, ref_speech


def flip_words_heard(reference: str, results: Sequence[dict[str, Any]],
                     flip_words: Iterable[str]) -> list[tuple[str, str | None, dict[str, Any] | None]]:
    """For each reference token in ``flip_words``: (the word, what was heard there, its result item).

    Aligned with jiwer after `normalise`; "heard" is None (and the item None) when the alignment
    deletes the word. Used to score whether wrongly heard meaning-flip words carry a doubt mark.
    """
    wanted = {normalise(w) for w in flip_words}
    items = [r for r in results if r["type"] == "word"]
    owner: list[int] = []
    tokens: list[str] = []
    for i, r in enumerate(items):
        for tok in normalise(r["alternatives"][0]["content"]).split():
            tokens.append(tok)
            owner.append(i)
    ref = normalise(reference).split()
    if not ref:
        return []
    if not tokens:
        return [(w, None, None) for w in ref if w in wanted]
    out: list[tuple[str, str | None, dict[str, Any] | None]] = []
    for chunk in jiwer.process_words(" ".join(ref), " ".join(tokens)).alignments[0]:
        if chunk.type == "insert":
            continue
        for k in range(chunk.ref_start_idx, chunk.ref_end_idx):
            if ref[k] not in wanted:
                continue
            j = chunk.hyp_start_idx + (k - chunk.ref_start_idx)
            if chunk.type == "delete" or j >= chunk.hyp_end_idx:
                out.append((ref[k], None, None))
            else:
                out.append((ref[k], tokens[j], items[owner[j]]))
    return out
