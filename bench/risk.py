"""Benchmark the risk check (``verbatim.notes.risk.flags``) on labelled utterances and dialogues.

Run from the repository root: ``.venv/bin/python bench/risk.py [--items FILE] [--out FILE]
[--dialogues FILE --dialogue-labels FILE]``. Prints figures per category and, as its last line,
one JSON object. Asserts nothing.

``--items FILE`` (default ``bench/data/risk_items.json``, the set the rules were tuned on; the
held-out ``bench/data/risk_holdout5.json`` … ``risk_holdout8.json`` were never tuned on —
``risk_holdout8.json`` was written after the rules it was scored on; session 31 used 5–8 as
development data and wrote ``risk_holdout9.json`` before its rules, see the README):
a JSON list of ``{"id", "speaker": "client"|"therapist", "text", "context"?: [{"speaker",
"text"}], "label": "suicide"|"self_harm"|"harm_to_others"|"abuse"|"neglect"|"none",
"denied": bool}``; other keys are ignored. Each item becomes a tiny transcript — its context
turns, then the item — split into the client's record and run through the detector exactly as
the note run does (``evidence.units`` then ``risk.flags``).

``--out FILE``: one JSON object per line and item: ``{"id", "flags": [categories flagged on the
item's own turn], "denials": [categories shown as denied on it], "family_history": bool}``.

Figures (shares 0–1, counts integers): genuine = client items, label not ``none``, ``denied``
false; ``risk_recall`` = genuine items with any flag; ``risk_recall_right_category`` = genuine
items flagged with their label; ``risk_false_flag`` = ``none`` items (client and therapist)
with any flag; ``therapist_false_flags`` = therapist items with any flag (count);
``denials_shown`` = denied items shown as a denial and not flagged; ``genuine_found_by_meaning_check``
and ``false_flags_by_meaning_check`` (counts): of those, the items only the meaning check
(``verbatim.notes.risk_reader``) flagged. The meaning check was trained on the sets named in
``bench/train_risk_reader.py`` (``TRAIN_SETS``): its figures on them are training figures;
``MEASURE_SETS`` there never were. A malformed ``--items`` file (not a non-empty JSON list of items of
this shape) is rejected before any item runs: a message on stderr naming the item and key, exit code 2.

``--dialogues FILE``: whole dialogues in the ACI-BENCH shape ``{"data": [{"src", "file"}]}``
(``[doctor]`` lines read as the clinician's, ``[patient]`` lines as the client's); every
patient line counts as ``none`` unless ``--dialogue-labels`` (default
``bench/data/risk_aci_labels.json``: ``[{"file", "line", "label", "denied"}]``, ``line`` the
0-based line of ``src``) says otherwise. Default: the aci-bench train and valid sets in
``shared/data/notes/aci-bench`` — ACI-BENCH, Yim et al., Scientific Data 10, 586 (2023),
CC BY 4.0; ``risk_aci_labels.json`` is derived from it under the same licence.
"""

from __future__ import annotations

import argparse
import json
import re
import stat
import sys
from pathlib import Path
from typing import Any

from verbatim.notes import text as tx
from verbatim.notes.evidence import units
from verbatim.notes.risk import MEANING_KINDS, flags

HERE = Path(__file__).resolve().parent
ITEMS = HERE / "data" / "risk_items.json"
ACI_LABELS = HERE / "data" / "risk_aci_labels.json"
_LINE = re.compile(r"^\[(doctor|patient)\]\s*(.*)$")
CATEGORY_NAMES = ("suicide", "self_harm", "harm_to_others", "abuse", "neglect")


def aci_dir() -> Path | None:
    """shared/data/notes/aci-bench beside the checkout (or beside one of its parents)."""
    for parent in HERE.parents:
        candidate = parent / "shared" / "data" / "notes" / "aci-bench"
        if candidate.is_dir():
            return candidate
    return None


def judge(segments: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Segment id → ``{"flags", "denials", "family_history"}`` on that segment, as the note run sees it."""
    risk = flags(units(segments, "client", spoken=True))
    out: dict[str, dict[str, Any]] = {s["id"]: {"flags": [], "denials": [], "family_history": False, "by_meaning": []}
                                      for s in segments}
    for f in risk["flags"]:
        out[f["segment_id"]]["flags"].append(f["category"])
        if f["kind"] in MEANING_KINDS:
            out[f["segment_id"]]["by_meaning"].append(f["category"])
    for d in risk["denials"]:
        out[d["segment_id"]]["denials"].append(d["category"])
    for h in risk.get("family_history", []):
        out[h["segment_id"]]["family_history"] = True
    return out


def transcript(item: dict[str, Any]) -> list[dict[str, Any]]:
    """The item as a tiny transcript: its context turns, then the item (the last segment)."""
    turns = [*(item.get("context") or []), {"speaker": item["speaker"], "text": item["text"]}]
    return [{"id": f"seg-{n}", "speaker": "therapist" if t["speaker"] == "therapist" else "client",
             "start_s": 6.0 * n, "end_s": 6.0 * n + 5.0, "text": str(t["text"])} for n, t in enumerate(turns)]


def score(rows: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
    """The figures over (item, result) pairs (see the module docstring)."""
    genuine = [(i, r) for i, r in rows if i["speaker"] == "client" and i["label"] != "none" and not i["denied"]]
    none = [(i, r) for i, r in rows if i["label"] == "none"]
    denied = [(i, r) for i, r in rows if i["denied"]]
    therapist = [(i, r) for i, r in rows if i["speaker"] == "therapist"]
    out: dict[str, Any] = {
        "items": len(rows), "genuine": len(genuine), "none_items": len(none), "denied_items": len(denied),
        "risk_recall": _share(sum(bool(r["flags"]) for _, r in genuine), len(genuine)),
        "risk_recall_right_category": _share(sum(i["label"] in r["flags"] for i, r in genuine), len(genuine)),
        "risk_false_flag": _share(sum(bool(r["flags"]) for _, r in none), len(none), empty=0.0),
        "therapist_false_flags": sum(bool(r["flags"]) for _, r in therapist),
        "false_flags": sum(bool(r["flags"]) for _, r in none),
        "denials_shown": _share(sum(bool(r["denials"]) and not r["flags"] for _, r in denied), len(denied)),
        # of the above, what only the meaning check (verbatim.notes.risk_reader) flagged
        "genuine_found_by_meaning_check": sum(_by_meaning_only(r) for _, r in genuine),
        "false_flags_by_meaning_check": sum(_by_meaning_only(r) for _, r in none),
    }
    per: dict[str, Any] = {}
    for cat in CATEGORY_NAMES:
        mine = [(i, r) for i, r in genuine if i["label"] == cat]
        den = [(i, r) for i, r in denied if i["label"] == cat]
        per[cat] = {"genuine": len(mine), "recall": _share(sum(bool(r["flags"]) for _, r in mine), len(mine)),
                    "right_category": _share(sum(cat in r["flags"] for _, r in mine), len(mine)),
                    "denied": len(den),
                    "denials_shown": _share(sum(bool(r["denials"]) and not r["flags"] for _, r in den), len(den)),
                    "false_flags_as_this": sum(cat in r["flags"] for _, r in none)}
    out["per_category"] = per
    return out


def _by_meaning_only(r: dict[str, Any]) -> bool:
    return bool(r["flags"]) and r["flags"] == r.get("by_meaning", [])


def _share(n: int, d: int, empty: float = 1.0) -> float:
    # An empty group scores its best value (nothing to miss: 1.0; nothing to flag falsely: 0.0), so no
    # figure is ever null.
    return round(n / d, 3) if d else empty


LABELS = ("suicide", "self_harm", "harm_to_others", "abuse", "neglect", "none")
SPEAKERS = ("client", "therapist")


class BadItems(ValueError):
    """An input file (``--items``, ``--dialogues``, ``--dialogue-labels``) or ``--out`` path that cannot be used;
    the message names the file, and the item and key where there is one."""


def _short(value: Any) -> str:
    """A value as a message shows it: its repr, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


#: the largest input file read (bytes): a labelled set of thousands of items is a few megabytes
MAX_FILE_BYTES = 64 * 1024 * 1024
#: a letter or a digit: text of only spaces or invisible characters says nothing
_VISIBLE = re.compile(r"[^\W_]")


def _read_json(path: Path, what: str) -> Any:
    """``path``'s JSON, or ``BadItems`` saying why not (unreadable, a directory or device or pipe, larger than
    ``MAX_FILE_BYTES``, not UTF-8, not JSON, nested too deep, a number too long to read)."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise BadItems(f"the {what} {path} is not a regular file")
        if info.st_size > MAX_FILE_BYTES:
            raise BadItems(f"the {what} {path} is {info.st_size:,} bytes; the most read is {MAX_FILE_BYTES:,}")
        return json.loads(path.read_text(encoding="utf-8"))
    except BadItems:
        raise
    except OSError as e:
        raise BadItems(f"cannot read the {what} {path}: {e.strerror or e}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadItems(f"the {what} {path} is not a JSON file: {e}") from None
    except RecursionError:
        raise BadItems(f"the {what} {path} is nested too deeply to read") from None
    except ValueError as e:  # an integer of more digits than Python reads
        raise BadItems(f"the {what} {path} holds a value that cannot be read: {e}") from None


def load_items(path: Path) -> list[dict[str, Any]]:
    """The items of an ``--items`` file, checked before any is run (module docstring: the format).

    Raises ``BadItems`` naming the first problem: unreadable or not JSON, not a non-empty list, an item
    that is not an object or lacks ``id``/``speaker``/``text``/``label``/``denied``, a speaker or label
    outside the format, empty text, ``denied`` not true/false, ``context`` not a list of
    ``{"speaker", "text"}``, an id used twice, a therapist item labelled with a risk, a denied item
    labelled ``none``."""
    items = _read_json(path, "items file")
    if not isinstance(items, list) or not items:
        raise BadItems(f"{path} must hold a non-empty JSON list of items, not {type(items).__name__}"
                       + (" (empty)" if items == [] else ""))
    seen: dict[Any, int] = {}
    for n, item in enumerate(items):
        where = f"item {n}"
        if not isinstance(item, dict):
            raise BadItems(f"{where} is {type(item).__name__}, not an object")
        where = f'item {n} (id {_short(item.get("id"))})'
        for key in ("id", "speaker", "text", "label", "denied"):
            if key not in item:
                raise BadItems(f'{where} has no "{key}"')
        if not isinstance(item["id"], (str, int)) or isinstance(item["id"], bool):
            raise BadItems(f'{where}: "id" must be a string or a whole number')
        if item["speaker"] not in SPEAKERS:
            raise BadItems(f'{where}: "speaker" is {_short(item["speaker"])}; it must be one of {", ".join(SPEAKERS)}')
        if not isinstance(item["text"], str) or not _VISIBLE.search(item["text"]):
            raise BadItems(f'{where}: "text" must be a non-empty string (it has no letter or digit)')
        if item["label"] not in LABELS:
            raise BadItems(f'{where}: "label" is {_short(item["label"])}; it must be one of {", ".join(LABELS)}')
        if not isinstance(item["denied"], bool):
            raise BadItems(f'{where}: "denied" must be true or false, not {_short(item["denied"])}')
        if item["speaker"] == "therapist" and item["label"] != "none":
            raise BadItems(f'{where}: a therapist item is labelled "none" (therapist speech is never the client\'s '
                           f'risk), not {_short(item["label"])}')
        if item["denied"] and item["label"] == "none":
            raise BadItems(f'{where}: "denied" is true, so "label" must be the category asked about and denied, '
                           f'not "none"')
        if item["id"] in seen:
            raise BadItems(f'{where}: the id is used twice (items {seen[item["id"]]} and {n}); the --out lines are '
                           f'matched to items by id')
        seen[item["id"]] = n
        context = item.get("context")
        if context is not None and not (isinstance(context, list) and all(
                isinstance(t, dict) and t.get("speaker") in SPEAKERS and isinstance(t.get("text"), str)
                for t in context)):
            raise BadItems(f'{where}: "context" must be a list of {{"speaker", "text"}} objects, each speaker one '
                           f'of {", ".join(SPEAKERS)}')
    return items


def run_items(path: Path, out_path: Path | None, show_misses: bool) -> dict[str, Any]:
    items = load_items(path)
    rows = []
    for item in items:
        segs = transcript(item)
        rows.append((item, judge(segs)[segs[-1]["id"]]))
    if out_path is not None:
        try:
            with out_path.open("w", encoding="utf-8") as fh:
                for item, r in rows:
                    fh.write(json.dumps({"id": item["id"], "flags": r["flags"], "denials": r["denials"],
                                         "family_history": r["family_history"]}) + "\n")
        except OSError as e:  # a full disk, a device that refuses writes: said before any figure is printed
            raise BadItems(f"--out {out_path} could not be written: {e.strerror or e}") from None
    if show_misses:
        for item, r in rows:
            genuine = item["label"] != "none" and not item["denied"] and item["speaker"] == "client"
            wrong = ((genuine and item["label"] not in r["flags"]) or (item["label"] == "none" and r["flags"])
                     or (item["denied"] and (r["flags"] or not r["denials"])))
            if wrong:
                label = item["label"] + (" denied" if item["denied"] else "")
                print(f'  miss {json.dumps(item["id"])} [{label}] {r} {item["text"]!r}', file=sys.stderr)
    return score(rows)


def dialogue_segments(src: str) -> list[dict[str, Any]]:
    out = []
    for n, line in enumerate(src.splitlines()):
        match = _LINE.match(line.strip())
        if match is None:
            continue
        who, said = match.groups()
        out.append({"id": f"line-{n}", "speaker": "therapist" if who == "doctor" else "client",
                    "start_s": 5.0 * n, "end_s": 5.0 * n + 4.5, "text": tx.tidy(said)})
    return out


def load_dialogues(paths: list[Path]) -> list[dict[str, str]]:
    """The dialogues of ``--dialogues`` files, checked before any is run: each file a JSON object whose
    ``"data"`` is a list of ``{"src": str, "file": str}`` objects (other keys ignored); ``BadItems`` otherwise."""
    out: list[dict[str, str]] = []
    for path in paths:
        doc = _read_json(path, "dialogues file")
        data = doc.get("data") if isinstance(doc, dict) else None
        if not isinstance(data, list):
            raise BadItems(f'the dialogues file {path} must be a JSON object with a "data" list (the ACI-BENCH shape)')
        for n, d in enumerate(data):
            if not (isinstance(d, dict) and isinstance(d.get("src"), str) and isinstance(d.get("file"), str)):
                raise BadItems(f'dialogue {n} of {path} must be an object with string "src" and "file"')
            out.append({"src": d["src"], "file": d["file"]})
    return out


def load_labels(path: Path | None) -> dict[tuple[str, int], dict[str, Any]]:
    """``--dialogue-labels``: ``[{"file", "line", "label", "denied"?}]`` keyed by (file, line); {} if absent."""
    if path is None:
        return {}
    rows = _read_json(path, "dialogue labels file")  # a missing file is an error: every line would count as none
    if not isinstance(rows, list):
        raise BadItems(f"the dialogue labels file {path} must hold a JSON list")
    labels: dict[tuple[str, int], dict[str, Any]] = {}
    for n, x in enumerate(rows):
        ok = (isinstance(x, dict) and isinstance(x.get("file"), str) and isinstance(x.get("line"), int)
              and not isinstance(x.get("line"), bool) and x.get("label") in LABELS
              and isinstance(x.get("denied", False), bool))
        if not ok:
            raise BadItems(f'label {n} of {path} must be {{"file": str, "line": int, "label": one of '
                           f'{", ".join(LABELS)}, "denied"?: bool}}')
        labels[(x["file"], x["line"])] = x
    return labels


def writable(path: Path | None) -> None:
    """``BadItems`` unless ``--out`` names a file that can be written (checked before anything is scored)."""
    if path is None:
        return
    if path.is_dir():
        raise BadItems(f"--out {path} is a directory; give a file name")
    if not path.parent.is_dir():
        raise BadItems(f"--out {path}: {path.parent} is not a folder that exists")
    existed = path.exists()
    try:
        # opened to append, so an existing file is neither emptied nor changed by a run that fails later; it is
        # replaced only once the items are scored
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as e:
        raise BadItems(f"--out {path} cannot be written: {e.strerror or e}") from None
    if not existed:
        path.unlink(missing_ok=True)


def run_dialogues(dialogues_: list[dict[str, str]], labels: dict[tuple[str, int], dict[str, Any]],
                  show_misses: bool) -> dict[str, Any]:
    rows = []
    for d in dialogues_:
        segs = dialogue_segments(d["src"])
        results = judge(segs)
        for s in segs:
            n = int(s["id"].split("-")[1])
            lab = labels.get((d["file"], n), {})
            item = {"id": f'{d["file"]}:{n}', "speaker": s["speaker"], "text": s["text"],
                    "label": lab.get("label", "none"), "denied": bool(lab.get("denied", False))}
            rows.append((item, results[s["id"]]))
            r = results[s["id"]]
            if show_misses and (r["flags"] or r["denials"] or r["family_history"]):
                print(f'  {item["id"]} [{item["label"]}] {r} {s["text"][:160]!r}', file=sys.stderr)
    out = score(rows)
    out["dialogues"] = len(dialogues_)
    out["turns_with_denials"] = sum(bool(r["denials"]) for _, r in rows)
    return out


def report(name: str, figures: dict[str, Any]) -> None:
    print(f"== {name}: {figures['items']} items/turns, {figures['genuine']} genuine, {figures['none_items']} none, "
          f"{figures['denied_items']} denied")
    print(f"   risk recall {figures['risk_recall']:.3f} (right category {figures['risk_recall_right_category']:.3f}), "
          f"false flags {figures['risk_false_flag']:.3f}, therapist false flags {figures['therapist_false_flags']}, "
          f"denials shown {figures['denials_shown']:.3f}")
    for cat, f in figures["per_category"].items():
        print(f"   {cat:15s} genuine {f['genuine']:3d} recall {f['recall']:.3f} right {f['right_category']:.3f} | "
              f"denied {f['denied']:2d} shown {f['denials_shown']:.3f} | "
              f"false flags as this {f['false_flags_as_this']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=Path, default=ITEMS, help="labelled utterances (JSON list)")
    parser.add_argument("--out", type=Path, default=None, help="write per-item results (JSON lines)")
    parser.add_argument("--dialogues", type=Path, nargs="*", default=None,
                        help="ACI-BENCH-shaped dialogue files (default: the aci-bench train and valid sets)")
    parser.add_argument("--dialogue-labels", type=Path, default=ACI_LABELS, help="labels of dialogue lines")
    parser.add_argument("--no-dialogues", action="store_true", help="score the items only")
    parser.add_argument("--misses", action="store_true", help="print each wrong item to stderr")
    args = parser.parse_args(argv)

    result: dict[str, Any] = {"items_file": str(args.items)}
    paths: list[Path] = []
    if not args.no_dialogues:
        paths = args.dialogues
        if paths is None:
            base = aci_dir()
            paths = [base / "train.json", base / "valid.json"] if base is not None else []
    # Every input is checked before anything is scored (run_items reads and checks the items first): a bad
    # file costs nothing and prints no half report.
    try:
        if args.out is not None and args.out.exists() and args.items.exists() and args.out.samefile(args.items):
            raise BadItems(f"--out {args.out} is the items file; give another name so the items are not overwritten")
        writable(args.out)
        dialogues = load_dialogues(paths)
        labels = load_labels(args.dialogue_labels) if paths else {}
        items = run_items(args.items, args.out, args.misses)
    except BadItems as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    report(args.items.name, items)
    result.update({k: v for k, v in items.items() if k != "per_category"})
    result["per_category"] = {c: {"recall": f["recall"], "denials_shown": f["denials_shown"]}
                              for c, f in items["per_category"].items()}
    if not args.no_dialogues:
        if paths:
            dial = run_dialogues(dialogues, labels, args.misses)
            report("dialogues " + "+".join(p.name for p in paths), dial)
            keys = ("dialogues", "items", "genuine", "risk_recall", "risk_false_flag", "therapist_false_flags",
                    "denied_items", "denials_shown", "turns_with_denials")
            result["dialogues"] = {k: dial[k] for k in keys}
            # Counted, not recovered from the rounded share (one line in 4,746 rounds to 0.000).
            result["dialogues"]["false_flags"] = dial["false_flags"]
        else:
            print("   (no aci-bench data found beside the checkout: dialogues skipped)")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
