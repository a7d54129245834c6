"""Calibrate the meaning-flip doubt thresholds on one half of the flip sets; report the other half.

Run from the repository root::

    python bench/flip_calibrate.py --calibration bench/sets/flips/manifest.json \
        --calibration bench/sets/flips_more/calibration.json --heldout bench/sets/flips_more/heldout.json \
        [--precision-only bench/sets/shared.json] [--min-recall 0.9] [--cache FILE] [--confidence-threshold P]

Every item is recognised once (`engine.hear`, diarization on with the item's ``speakers`` or 2, as
``bench/asr.py`` does); the json-v2 results are then rebuilt for every set of thresholds of the
grid (`flips.Doubt`: ``flip`` = `FLIP_DOUBT`, ``alt`` = `ALT_DOUBT`, ``plain`` = `PLAIN_DOUBT`, and for
the third decode and the flip slots ``beam`` = `BEAM_DOUBT`, ``prompted`` = `PROMPTED_DOUBT`, ``slot`` =
`SLOT_DOUBT`) and
scored as ``bench/asr.py`` scores them (`asr.Marks`): ``flip_flag_recall`` (wrongly heard flip
words that carry a doubt) and ``flag_precision`` (the wrong share of every flagged word).
``--precision-only`` manifests (items without flip words, e.g. the shared audio) count toward the
precision of both halves.

The set chosen is the one of highest calibration precision among those whose calibration recall
is at least ``--min-recall`` (default 0.9: a margin over the 0.8 aim, since a held-out half holds only
~30 wrongly heard flip words; ties: the fewer flags; if none reaches it, among those of the highest
recall reached); the held-out half is scored at that set
only, and at the thresholds in use (`flips.DOUBT`). ``--cache FILE`` keeps what was heard
(pickle), so another grid costs no recognition; delete it after a change to the recognizer.
``--confidence-threshold`` scores as if the reliability settings' global threshold (a word under it
is flagged whatever its kind) were another.

Prints a table; the last stdout line is one JSON object: ``chosen`` {flip, alt, plain, alone, beam,
prompted, slot}, ``calibration``
and ``heldout`` at the chosen set and ``heldout_current`` at the thresholds in use, each
{flip_flag_recall, flag_precision, flip_wrong, flip_marked, flags}.
"""

from __future__ import annotations

import argparse
import itertools
import json
import pickle
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from asr import Item, Marks, flagged, load_manifest, truth  # noqa: E402

from verbatim.asr_server import flips  # noqa: E402
from verbatim.asr_server.engine import Heard, hear, to_results  # noqa: E402
from verbatim.reliability.settings import load_reliability_settings  # noqa: E402

FLIP_GRID = (0.5, 0.6, 0.7, 0.9)
ALT_GRID = (0.01, 0.03, 0.05, 0.1)
PLAIN_GRID = (0.02, 0.05, 0.1, 1.01)  # 1.01: never
BEAM_GRID = (-1.0, 0.05, 0.1, 0.2)  # -1: never
PROMPTED_GRID = (-1.0, 0.05, 0.1, 0.2, 0.5, 1.0)  # -1: never
SLOT_GRID = (0.0, 0.5, 0.6, 0.7)  # 0: never


def heard_items(items: list[Item], cache: Path | None) -> dict[str, Heard]:
    """What the recognizer heard in each item, by id (from ``cache`` where it holds the item)."""
    kept: dict[str, Heard] = pickle.loads(cache.read_bytes()) if cache and cache.exists() else {}
    for n, item in enumerate(items):
        if item.id not in kept:
            kept[item.id] = hear(item.path, max_speakers=item.speakers or 2)
            if cache and n % 50 == 49:
                cache.write_bytes(pickle.dumps(kept))
    if cache:
        cache.write_bytes(pickle.dumps(kept))
    return kept


Truth = dict[str, tuple[list[bool] | None, list[int | None]]]


def truths(items: list[Item], heard: dict[str, Heard]) -> Truth:
    """`asr.truth` of each item: which words are wrong does not depend on the doubt marks."""
    out: Truth = {}
    for item in items:
        h = heard[item.id]
        out[item.id] = truth(item, to_results(h.words, h.speakers, "en", h.gaps, h.unsure))
    return out


def score(items: list[Item], heard: dict[str, Heard], known: Truth, doubt: flips.Doubt, threshold: float) -> Marks:
    """`asr.Marks` of ``items`` with the doubt marks ``doubt`` gives."""
    marks = Marks()
    for item in items:
        h = heard[item.id]
        results = to_results(h.words, h.speakers, "en", h.gaps, h.unsure, doubt=doubt)
        marks.count(*known[item.id], [flagged(r, threshold) for r in results if r["type"] == "word"])
    return marks


def figures(m: Marks) -> dict[str, Any]:
    return {"flip_flag_recall": None if m.flip_recall is None else round(m.flip_recall, 4),
            "flag_precision": None if m.precision is None else round(m.precision, 4),
            "flip_wrong": m.flip_wrong, "flip_marked": m.flip_marked, "flags": m.flags}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calibration", action="append", type=Path, required=True)
    parser.add_argument("--heldout", action="append", type=Path, required=True)
    parser.add_argument("--precision-only", action="append", type=Path, default=[])
    parser.add_argument("--min-recall", type=float, default=0.9)
    parser.add_argument("--cache", type=Path)
    parser.add_argument("--confidence-threshold", type=float,
                        help="score as if the reliability threshold were this (default: the settings')")
    args = parser.parse_args()
    calib = [it for m in args.calibration for it in load_manifest(m.resolve())]
    held = [it for m in args.heldout for it in load_manifest(m.resolve())]
    extra = [it for m in args.precision_only for it in load_manifest(m.resolve())]
    if {it.id for it in calib} & {it.id for it in held}:
        raise SystemExit("an item is in both halves")
    threshold = args.confidence_threshold
    if threshold is None:
        threshold = load_reliability_settings().confidence_threshold
    heard = heard_items(calib + held + extra, args.cache)
    known = truths(calib + held + extra, heard)

    print(f"{'flip':>6s} {'alt':>6s} {'plain':>6s} {'beam':>6s} {'prompt':>6s} {'slot':>6s} {'recall':>7s} "
          f"{'prec':>6s} {'flags':>6s}   (calibration: {len(calib)} items, {len(extra)} for precision only)")
    tried: list[tuple[flips.Doubt, Marks]] = []
    for f, a, q, b, n, s in itertools.product(FLIP_GRID, ALT_GRID, PLAIN_GRID, BEAM_GRID, PROMPTED_GRID, SLOT_GRID):
        doubt = flips.Doubt(flip=f, alt=a, plain=q, beam=b, prompted=n, slot=s)
        m = score(calib + extra, heard, known, doubt, threshold)
        recall, precision = m.flip_recall or 0.0, m.precision or 0.0
        print(f"{f:6.3f} {a:6.3f} {q:6.3f} {b:6.3f} {n:6.3f} {s:6.3f} {recall:7.3f} {precision:6.3f} {m.flags:6d}")
        tried.append((doubt, m))
    reached = max(m.flip_recall or 0.0 for _, m in tried)
    floor = args.min_recall
    if reached < floor:
        print(f"\nno set of the grid reaches a calibration recall of {floor}: choosing among those at {reached:.3f}")
        floor = reached
    chosen, calib_marks = max(((d, m) for d, m in tried if (m.flip_recall or 0.0) >= floor),
                              key=lambda dm: (dm[1].precision or 0.0, -dm[1].flags))
    held_marks = score(held + extra, heard, known, chosen, threshold)
    current = score(held + extra, heard, known, flips.DOUBT, threshold)
    print(f"\nchosen              : flip {chosen.flip}  alt {chosen.alt}  plain {chosen.plain}  beam {chosen.beam}  "
          f"prompted {chosen.prompted}  slot {chosen.slot}")
    for name, m in (("calibration", calib_marks), ("held-out", held_marks), ("held-out, in use", current)):
        print(f"{name:20s}: recall {m.flip_recall}  ({m.flip_marked}/{m.flip_wrong} wrong flip words marked)  "
              f"precision {m.precision}  ({m.flags_wrong}/{m.flags} flags wrong)")
    print(json.dumps({"chosen": vars(chosen), "calibration": figures(calib_marks),
                      "heldout": figures(held_marks), "heldout_current": figures(current),
                      "current": vars(flips.DOUBT)}))


if __name__ == "__main__":
    main()
