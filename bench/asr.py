"""Score the local recognizer on any set of recordings; prints figures, asserts nothing.

Run from the repository root::

    python bench/asr.py --manifest bench/sets/shared.json [--manifest bench/sets/flips/manifest.json]
                        [--long-minutes 30] [--no-rss]

``--manifest FILE`` (repeatable; default ``bench/sets/shared.json``, the shared audio pack) is
``{"items": [{"id", "audio": path relative to the file, "text"?: reference words, "turns"?:
[{"speaker", "start_s", "end_s", "text"?}], "speakers"?: int, "synthetic"?: bool,
"flip_words"?: [word, ...]}]}``; unknown keys are ignored. ``speakers`` is passed as a session
passes it, the recognizer's ``max_speakers`` (2 when absent), never as an exact count.
``bench/make_sets.py`` builds our own sets (similar voices, meaning-flip pairs) in this format.

Each item is transcribed alone (`verbatim.asr_server.engine.transcribe`, diarization on). Per
item: words and errors (WER normalised with numbers spelled out, `scoring.normalise`), DER
(collar 0.25 s, our frame scorer `scoring.diarization_error_rate`; items with turns), speakers
expected/found, dropped turns (a reference turn — or a whole item without turns — of at least
3 s with no recognised word in its span).

``--long-minutes N`` also joins the items (1 s of silence between them, repeated to N
minutes), transcribes the whole in one go (diarization off: the point is the words, and an
hour of diarization is minutes of CPU) and compares it with the items heard alone:
``long_wer_delta`` (pooled long WER minus pooled alone WER) and ``long_dropped_turns``.
``--no-rss`` skips the 60-minute memory run (peak RSS of a child process recognising a
60-minute recording of the items, diarization on).

Meaning flips (items with ``flip_words``): a flip word heard wrongly (substituted or lost) counts
toward ``flip_flag_recall`` if the word heard in its place carries the recognizer's doubt: the
``meaning_flip`` tag or a confidence under the reliability threshold. ``flag_precision``: of all
flagged words of every item, the share that are wrong.

CPU: this process's CPU time (the recognizer runs in it; onnxruntime's and CTranslate2's threads
are counted) per second of audio heard alone. The last stdout line is one JSON object: per item
id under ``items`` ``{"words", "errors", "der", "speakers_expected", "speakers_found",
"dropped_turns"}``; overall ``wer_natural``, ``wer_synthetic``, ``wer_librivox`` (items whose
manifest entry says ``"source": "librivox"``), ``manifest_wer``, ``manifest_der`` (error frames over
scored speech frames summed over the items with turns) and ``manifest_speakers_ok_share`` (share of
items with turns whose speaker count was found exactly), all pooled over every item given, the
same three per manifest under ``manifests``; ``long_wer_delta``, ``long_dropped_turns``,
``flip_flag_recall``, ``flag_precision``, ``cpu_s_per_audio_s``, ``peak_rss_mib_60min``. A key
is null only where nothing given can score it (no turns, no flip set, no long run, ``--no-rss``).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from verbatim.asr_server.engine import transcribe
from verbatim.asr_server.pcm_wav import read_pcm16, write_pcm16
from verbatim.asr_server.scoring import (
    Turn,
    diarization_errors,
    flip_words_heard,
    word_errors,
    wrong_words,
)
from verbatim.recognizer.turns import MEANING_FLIP
from verbatim.reliability.settings import load_reliability_settings

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MANIFEST = ROOT / "bench" / "sets" / "shared.json"
RATE = 16000
DROP_MIN_S = 3.0
COLLAR_S = 0.25


@dataclass
class Item:
    id: str
    path: Path
    text: str | None
    turns: list[Turn]
    speakers: int | None
    synthetic: bool
    flip_words: list[str]
    source: str | None
    manifest: str


def load_manifest(path: Path) -> list[Item]:
    """Items of one manifest file (audio paths resolved against the file's folder)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    items = []
    for entry in raw["items"]:
        turns = [Turn(t["speaker"], float(t["start_s"]), float(t["end_s"]), t.get("text", ""))
                 for t in entry.get("turns") or []]
        text = entry.get("text")
        if text is None and turns and all(t.text for t in turns):
            text = " ".join(t.text for t in turns)
        items.append(Item(str(entry["id"]), (path.parent / entry["audio"]).resolve(), text, turns,
                          entry.get("speakers"), bool(entry.get("synthetic", False)),
                          list(entry.get("flip_words") or []), entry.get("source"), str(path)))
    return items


def read_wav(path: Path) -> np.ndarray:
    """16 kHz mono 16-bit WAV samples (int16); a set in another format ends the bench with its name."""
    try:
        return read_pcm16(path)
    except ValueError as exc:
        raise SystemExit(str(exc)) from exc




def words_in(results: list[dict[str, Any]], start: float, end: float) -> list[dict[str, Any]]:
    return [r for r in results if r["type"] == "word" and start <= (r["start_time"] + r["end_time"]) / 2 < end]


def text_of(results: list[dict[str, Any]]) -> str:
    return " ".join(r["alternatives"][0]["content"] for r in results if r["type"] == "word")


def spans_of(item: Item, duration: float) -> list[tuple[float, float]]:
    """The stretches a dropped turn is judged on: the reference turns, else the whole item."""
    return [(t.start_s, t.end_s) for t in item.turns] if item.turns else [(0.0, duration)]


def dropped(results: list[dict[str, Any]], spans: list[tuple[float, float]]) -> int:
    return sum(1 for a, b in spans if b - a >= DROP_MIN_S and not words_in(results, a, b))


def flagged(item: dict[str, Any], threshold: float) -> bool:
    alt = item["alternatives"][0]
    return MEANING_FLIP in (alt.get("tags") or []) or float(alt["confidence"]) < threshold


def truth(item: Item, results: list[dict[str, Any]]) -> tuple[list[bool] | None, list[int | None]]:
    """Per word item of ``results``, whether it is wrong (None without reference text); per flip
    word of the item, -1 if heard right, else the index of the word heard in its place (None: lost)."""
    words = [r for r in results if r["type"] == "word"]
    wrong = None if item.text is None else [w for _, w in wrong_words(item.text, results)]
    hits: list[int | None] = []
    for word, heard, where in flip_words_heard(item.text or "", results, item.flip_words):
        if heard is not None and where is not None and heard == word:
            hits.append(-1)
        else:
            hits.append(None if where is None else next(i for i, w in enumerate(words) if w is where))
    return wrong, hits


@dataclass
class Marks:
    """Doubt marks against the truth, summed over items: meaning-flip words (``flip_total``), those
    heard wrongly (``flip_wrong``) and of those the marked (``flip_marked``); flagged words
    (``flags``) and of those the wrong (``flags_wrong``)."""

    flip_total: int = 0
    flip_wrong: int = 0
    flip_marked: int = 0
    flags: int = 0
    flags_wrong: int = 0

    def add(self, item: Item, results: list[dict[str, Any]], threshold: float) -> None:
        """Count one item's recognised ``results`` (flags only where the item has reference text)."""
        wrong, flip_hits = truth(item, results)
        self.count(wrong, flip_hits, [flagged(r, threshold) for r in results if r["type"] == "word"])

    def count(self, wrong: list[bool] | None, flip_hits: list[int | None], flags: list[bool]) -> None:
        """Count one item from `truth` and whether each of its words is flagged."""
        if wrong is not None:
            self.flags += sum(flags)
            self.flags_wrong += sum(f and w for f, w in zip(flags, wrong, strict=True))
        for hit in flip_hits:
            self.flip_total += 1
            if hit is not None and hit < 0:
                continue  # heard right
            self.flip_wrong += 1
            self.flip_marked += hit is not None and flags[hit]

    @property
    def flip_recall(self) -> float | None:
        """Marked share of the wrongly heard flip words (1.0 if none was wrong; None without flip words)."""
        return self.flip_marked / self.flip_wrong if self.flip_wrong else (None if not self.flip_total else 1.0)

    @property
    def precision(self) -> float | None:
        """Wrong share of the flagged words (None if nothing was flagged)."""
        return self.flags_wrong / self.flags if self.flags else None


def long_run(items: list[Item], minutes: float, alone: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Join the items to ``minutes`` (1 s gaps), transcribe once, compare with the items alone."""
    gap = np.zeros(RATE, dtype=np.int16)
    pieces: list[np.ndarray] = []
    placed: list[tuple[Item, float, float]] = []
    pos = 0.0
    while pos < minutes * 60:
        for item in items:
            pcm = read_wav(item.path)
            placed.append((item, pos, pos + pcm.size / RATE))
            pieces += [pcm, gap]
            pos += pcm.size / RATE + 1.0
            if pos >= minutes * 60:
                break
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "long.wav"
        write_pcm16(path, np.concatenate(pieces))
        del pieces
        c0 = time.process_time()
        results = transcribe(path, diarization="none")
        cpu = time.process_time() - c0
    long_e = long_n = alone_e = alone_n = drops = 0
    lost: list[str] = []
    differ: list[tuple[int, str, str, str]] = []  # (long minus alone errors, where, heard long, heard alone)
    for item, a, b in placed:
        if item.text is None:
            continue
        heard = words_in(results, a, b)
        e_long, n = word_errors(item.text, text_of(heard))
        long_e, long_n = long_e + e_long, long_n + n
        e, n = word_errors(item.text, text_of(alone[item.id]))
        alone_e, alone_n = alone_e + e, alone_n + n
        if e_long != e:
            differ.append((e_long - e, f"{item.id}@{a:.1f}s", text_of(heard), text_of(alone[item.id])))
        shifted = [(a + s, a + t) for s, t in spans_of(item, b - a)]
        d = dropped(results, shifted)
        drops += d
        if d:
            lost.append(f"{item.id}@{a:.1f}s")
    gaps = [r for r in results if r["type"] == "gap"]
    if differ:
        # Where the long recording was heard otherwise than the item alone, worst first.
        print(f"long run: {len(differ)} of {len(placed)} placed items heard otherwise, net "
              f"{sum(d[0] for d in differ):+d} errors")
        for delta, where, long_text, alone_text in sorted(differ, key=lambda d: -d[0]):
            print(f"  {delta:+d} {where}\n     long : {long_text}\n     alone: {alone_text}")
    return {"seconds": pos, "cpu_s": cpu, "wer_long": long_e / max(long_n, 1),
            "wer_alone": alone_e / max(alone_n, 1), "dropped": drops, "lost": lost, "gaps": len(gaps),
            "gap_s": sum(g["end_time"] - g["start_time"] for g in gaps)}


def peak_rss_60min(items: list[Item]) -> float:
    """Peak RSS (MiB) of a fresh process recognising a 60-minute recording of the items."""
    gap = np.zeros(RATE // 2, dtype=np.int16)
    one_round = np.concatenate([x for it in items for x in (read_wav(it.path), gap)])
    pcm = np.tile(one_round, int(np.ceil(3600 * RATE / one_round.size)))[: 3600 * RATE]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "hour.wav"
        write_pcm16(path, pcm)
        del pcm, one_round
        code = ("import sys; from verbatim.asr_server.engine import transcribe; "
                "r = transcribe(sys.argv[1], max_speakers=4); print(sum(x['type'] == 'word' for x in r))")
        subprocess.run([sys.executable, "-c", code, str(path)], check=True, capture_output=True, text=True)
    # ru_maxrss of children is in KiB on Linux: the largest peak of any waited-for child.
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def _shown(manifest: str) -> str:
    """A manifest's path as given on the command line would name it: relative to the repository if inside."""
    path = Path(manifest).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def pooled_wer(pooled: list[tuple[Item, int, int, int, int]]) -> float | None:
    """Errors over reference words, summed over the items that have reference text (None if none)."""
    words = sum(p[1] for p in pooled if p[0].text is not None)
    return sum(p[2] for p in pooled if p[0].text is not None) / words if words else None


def pooled_scores(pooled: list[tuple[Item, int, int, int, int]], per_item: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Pooled WER, pooled DER (error frames over scored speech frames, collar 0.25 s) and the share of
    items with reference turns whose speaker count was found exactly; None where no item is scored."""
    wer = pooled_wer(pooled)
    der_n = sum(p[4] for p in pooled)
    counted = [per_item[p[0].id] for p in pooled if per_item[p[0].id]["speakers_expected"] is not None]
    return {"items": len(pooled), "wer": None if wer is None else round(wer, 4),
            "der": round(sum(p[3] for p in pooled) / der_n, 4) if der_n else None,
            "speakers_ok_share": round(sum(c["speakers_found"] == c["speakers_expected"] for c in counted)
                                       / len(counted), 4) if counted else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifest", action="append", type=Path, help="a set in the manifest format (repeatable)")
    parser.add_argument("--long-minutes", type=float, default=0.0, help="also join the items to N minutes")
    parser.add_argument("--no-rss", action="store_true", help="skip the 60-minute memory run")
    args = parser.parse_args()
    items = [it for m in (args.manifest or [DEFAULT_MANIFEST]) for it in load_manifest(m.resolve())]
    threshold = load_reliability_settings().confidence_threshold

    transcribe(items[0].path, diarization="none")  # warm-up: the model loads once per process
    per_item: dict[str, dict[str, Any]] = {}
    alone: dict[str, list[dict[str, Any]]] = {}
    audio_s = cpu_s = 0.0
    totals = {"natural": [0, 0], "synthetic": [0, 0]}
    marks = Marks()
    pooled: list[tuple[Item, int, int, int, int]] = []  # (item, words, errors, DER error frames, DER speech frames)
    print(f"{'item':44s} {'s':>6s} {'WER':>6s} {'DER':>6s} spk(exp/found) dropped")
    for item in items:
        duration = read_wav(item.path).size / RATE
        c0 = time.process_time()
        results = transcribe(item.path, max_speakers=item.speakers or 2)
        cpu_s += time.process_time() - c0
        audio_s += duration
        alone[item.id] = results
        errors = n_words = 0
        if item.text is not None:
            errors, n_words = word_errors(item.text, text_of(results))
            bucket = totals["synthetic" if item.synthetic else "natural"]
            bucket[0] += errors
            bucket[1] += n_words
        marks.add(item, results, threshold)
        found = len({r["alternatives"][0]["speaker"] for r in results if r["type"] == "word"} - {"UU"})
        der_e, der_n = diarization_errors(results, item.turns, collar_s=COLLAR_S) if item.turns else (0, 0)
        der = der_e / der_n if der_n else None
        drops = dropped(results, spans_of(item, duration))
        expected = len({t.speaker for t in item.turns}) if item.turns else None
        per_item[item.id] = {"words": n_words, "errors": errors, "der": None if der is None else round(der, 4),
                             "speakers_expected": expected, "speakers_found": found, "dropped_turns": drops}
        pooled.append((item, n_words, errors, der_e, der_n))
        print(f"{item.id:44s} {duration:6.1f} {errors / max(n_words, 1):6.3f} "
              f"{'' if der is None else f'{der:6.3f}':>6s} {expected or '-'}/{found} {drops}")

    long = long_run(items, args.long_minutes, alone) if args.long_minutes > 0 else None
    rss = None if args.no_rss else peak_rss_60min([it for it in items if not it.flip_words] or items)
    wer_nat = totals["natural"][0] / totals["natural"][1] if totals["natural"][1] else None
    wer_syn = totals["synthetic"][0] / totals["synthetic"][1] if totals["synthetic"][1] else None
    flip_recall, precision = marks.flip_recall, marks.precision
    print()
    print(f"WER natural speech  : {wer_nat if wer_nat is None else f'{wer_nat:.4f}'}   "
          f"synthetic voices: {wer_syn if wer_syn is None else f'{wer_syn:.4f}'}")
    print(f"CPU                 : {cpu_s / audio_s:.3f} s per audio s ({audio_s:.1f} s of audio, {len(items)} items)")
    print(f"flags               : {marks.flags} flagged, precision "
          f"{'n/a' if precision is None else f'{precision:.3f}'} (threshold {threshold})")
    print(f"meaning flips       : {marks.flip_total} flip words, {marks.flip_wrong} heard wrongly, "
          f"{marks.flip_marked} of those marked")
    if long is not None:
        print(f"long ({long['seconds'] / 60:.1f} min)     : WER {long['wer_long']:.4f} vs alone {long['wer_alone']:.4f}"
              f"  dropped turns {long['dropped']} {long['lost'][:10]}  gaps {long['gaps']} ({long['gap_s']:.1f} s)"
              f"  CPU {long['cpu_s'] / long['seconds']:.3f} s/s")
    overall = pooled_scores(pooled, per_item)
    by_manifest = {m: pooled_scores([p for p in pooled if p[0].manifest == m], per_item)
                   for m in dict.fromkeys(it.manifest for it in items)}
    wer_librivox = pooled_wer([p for p in pooled if p[0].source == "librivox"])
    print(f"LibriVox            : WER {'n/a' if wer_librivox is None else f'{wer_librivox:.4f}'}")
    for m, sc in by_manifest.items():
        print(f"manifest            : {_shown(m)}  "
              f"WER {sc['wer']}  DER {sc['der']}  speakers ok {sc['speakers_ok_share']}")
    print(f"60-min recording    : peak RSS {'n/a' if rss is None else f'{rss:.0f}'} MiB")
    sys.stdout.flush()
    print(json.dumps({
        "items": per_item,
        "wer_natural": None if wer_nat is None else round(wer_nat, 4),
        "wer_synthetic": None if wer_syn is None else round(wer_syn, 4),
        "wer_librivox": None if wer_librivox is None else round(wer_librivox, 4),
        "manifest_wer": overall["wer"],
        "manifest_der": overall["der"],
        "manifest_speakers_ok_share": overall["speakers_ok_share"],
        "manifests": {_shown(m): sc for m, sc in by_manifest.items()},
        "long_wer_delta": None if long is None else round(long["wer_long"] - long["wer_alone"], 4),
        "long_dropped_turns": None if long is None else long["dropped"],
        "flip_flag_recall": None if flip_recall is None else round(flip_recall, 4),
        "flag_precision": None if precision is None else round(precision, 4),
        "cpu_s_per_audio_s": round(cpu_s / audio_s, 4),
        "peak_rss_mib_60min": None if rss is None else round(rss, 1),
    }))


if __name__ == "__main__":
    main()
