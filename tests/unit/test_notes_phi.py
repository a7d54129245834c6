"""PHI placeholders: recall on a written set, exact restoration, consistency across calls."""

from __future__ import annotations

import json
from pathlib import Path

from verbatim.notes.phi import Redactor

SET = Path(__file__).resolve().parents[2] / "samples" / "notes" / "phi_set.json"


def recall() -> tuple[int, int]:
    found = total = 0
    for item in json.loads(SET.read_text()):
        redacted = Redactor(list(item["known"])).redact(item["text"])
        for span in item["phi"]:
            total += 1
            found += span not in redacted
    return found, total


def test_recall_on_the_written_set() -> None:
    found, total = recall()
    assert total >= 30
    assert found / total >= 0.9, f"recall {found}/{total}"


def test_placeholders_are_restored_exactly_and_reused() -> None:
    r = Redactor(["alex", "Sam"])
    text = "alex called 555-201-3344; Sam wrote to sam@example.org from 18 Willow Lane."
    out = r.redact(text)
    for phi in ("alex", "555-201-3344", "Sam", "sam@example.org", "18 Willow Lane"):
        assert phi not in out
    assert r.restore(out) == text
    assert r.redact("alex again") == f"{out.split()[0]} again"
