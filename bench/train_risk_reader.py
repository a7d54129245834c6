"""Train the risk reader (``verbatim.notes.risk_reader``): five small networks over sentence vectors.

Run from the repository root: ``.venv/bin/python bench/train_risk_reader.py [--sets NAME,…]
[--out FILE]``. Writes ``src/verbatim/notes/models/risk_reader.npz`` by default (arrays ``w1``
(5, 384, 256), ``b1`` (5, 256), ``w2`` (5, 256, 6), ``b2`` (5, 6), ``classes``) and prints, as its
last line, one JSON object with what it was trained on.

Training items (``TRAIN_SETS`` in ``bench/data``, format of ``bench/risk.py --items``): every
client item, its text alone, labelled with its category — a denied item (``"denied": true``) as
``none``, since a denial is not a risk statement; a short answer to a question (``ANSWER_WORDS``)
is left out, its meaning is in the question — and every patient line of three words or more
in the ACI-BENCH *train* dialogues (Yim et al., Scientific Data 10, 586 (2023), CC BY 4.0) as
``none`` (ordinary clinical talk; lines ``risk_aci_labels.json`` labels are left out). Clinician
items are not used: the reader never reads clinician speech. The networks: scikit-learn
``MLPClassifier``, one hidden layer of 256 ReLU units, L2 penalty 1e-3, Adam, seeds 0–4; the same
data gives the same weights.

Sets written for measuring and never trained on: ``risk_holdout14.json`` and ``risk_holdout15.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np
from sklearn.neural_network import MLPClassifier

from verbatim.notes.meaning import encoder
from verbatim.notes.risk_reader import CLASSES, WEIGHTS

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
TRAIN_SETS = ("risk_items", "risk_holdout", "risk_holdout2", "risk_holdout3", "risk_holdout4", "risk_holdout5",
              "risk_holdout6", "risk_holdout7", "risk_holdout8", "risk_holdout9", "risk_holdout10", "risk_holdout11",
              "risk_holdout12", "risk_holdout13")
SEEDS = 5
HIDDEN = 256
ALPHA = 1e-3
#: a risk item with context turns and fewer words than this is an answer, left out of training
ANSWER_WORDS = 8
_LINE = re.compile(r"^\[(doctor|patient)\]\s*(.*)$")


def aci_patient_lines() -> list[str]:
    """Patient lines (three words or more) of the ACI-BENCH train dialogues, minus labelled ones."""
    sys.path.insert(0, str(HERE))
    from risk import ACI_LABELS, aci_dir  # the bench's own finder of shared/data

    base = aci_dir()
    if base is None:
        return []
    labelled = {(x["file"], int(x["line"])) for x in json.loads(ACI_LABELS.read_text(encoding="utf-8"))}
    out = []
    for d in json.loads((base / "train.json").read_text(encoding="utf-8"))["data"]:
        for n, line in enumerate(d["src"].split("\n")):
            m = _LINE.match(line.strip())
            if m and m.group(1) == "patient" and (d["file"], n) not in labelled and len(m.group(2).split()) >= 3:
                out.append(m.group(2))
    return out


def examples(sets: list[str]) -> tuple[list[str], list[int]]:
    texts: list[str] = []
    labels: list[int] = []
    for name in sets:
        for item in json.loads((DATA / f"{name}.json").read_text(encoding="utf-8")):
            if item["speaker"] != "client":
                continue
            if item.get("context") and len(item["text"].split()) < ANSWER_WORDS and not item["denied"] \
                    and item["label"] != "none":
                continue  # "Um... kind of, yeah": risk only with the question it answers (the rules' part)
            texts.append(item["text"])
            labels.append(0 if item["denied"] else CLASSES.index(item["label"]))
    return texts, labels


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=",".join(TRAIN_SETS), help="comma-separated names in bench/data")
    ap.add_argument("--out", type=Path, default=WEIGHTS)
    args = ap.parse_args(argv)
    sets = [s for s in args.sets.split(",") if s]
    texts, labels = examples(sets)
    aci = aci_patient_lines()
    vectors = encoder().embed(texts + aci)
    y = np.array(labels + [0] * len(aci))
    nets = [MLPClassifier(hidden_layer_sizes=(HIDDEN,), alpha=ALPHA, max_iter=500, random_state=seed).fit(vectors, y)
            for seed in range(SEEDS)]
    for net in nets:
        if list(net.classes_) != list(range(len(CLASSES))):
            raise SystemExit(f"training data lacks a class: has {list(net.classes_)}")
    np.savez(args.out, w1=np.stack([n.coefs_[0] for n in nets]).astype(np.float32),
             b1=np.stack([n.intercepts_[0] for n in nets]).astype(np.float32),
             w2=np.stack([n.coefs_[1] for n in nets]).astype(np.float32),
             b2=np.stack([n.intercepts_[1] for n in nets]).astype(np.float32), classes=np.array(CLASSES))
    counts = {c: int((y == i).sum()) for i, c in enumerate(CLASSES)}
    print(json.dumps({"out": str(args.out), "sets": sets, "items": len(texts), "aci_lines": len(aci),
                      "per_class": counts, "seeds": SEEDS}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
