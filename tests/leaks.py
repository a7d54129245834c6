"""Patient words in logs: the check every test run ends with (``tests/conftest.py``'s ``scratch``).

No transcript words, note text or reasons may reach a log (the brief; issue 24 item 1: SQLAlchemy's
message with its bound parameters went to ``api.log``). The words the suite sends are known: the
sample dialogues and references under ``samples/`` (what the recognizer hears and the tests publish),
the sample notes, and the free text of the hostile-input table. Every run of ``SHINGLE`` consecutive
words of them is a phrase; a log line holding one is a leak. Five words: long enough that no log
message of ours says it by chance, short enough that a quoted fragment is caught.

The logs are every ``*.log`` file the suite writes (API, workers, sweepers, the recognizer, each
under the session's scratch folder or pytest's temporary folders).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
TABLE = Path(__file__).with_name("security") / "hostile_inputs.yaml"
SHINGLE = 5
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


def words(text: str) -> list[str]:
    """Lower-case words (letters, with an inner apostrophe) of ``text``."""
    return _WORD.findall(text.lower())


def shingles(text: str) -> Iterator[tuple[str, ...]]:
    ws = words(text)
    for i in range(len(ws) - SHINGLE + 1):
        yield tuple(ws[i:i + SHINGLE])


def _texts(value: Any) -> Iterator[str]:
    """Every string held in a JSON/YAML value, recursively."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _texts(v)
    elif isinstance(value, list):
        for v in value:
            yield from _texts(v)


def patient_texts() -> list[str]:
    """The words the suite sends as patient data."""
    texts: list[str] = []
    for path in sorted(SAMPLES.glob("*.json")) + sorted((SAMPLES / "notes").glob("*.json")):
        texts += [t["text"] for t in json.loads(path.read_text()) if isinstance(t, dict) and "text" in t]
    texts += [(SAMPLES / "jfk.txt").read_text()]
    texts += [line.split("\t", 1)[1] for line in (SAMPLES / "references.tsv").read_text().splitlines() if "\t" in line]
    for row in yaml.safe_load(TABLE.read_text()):
        texts += list(_texts((row.get("body") or {}).get("json"))) + list(_texts((row.get("body") or {}).get("form")))
    return texts


def phrases(texts: Iterable[str] | None = None) -> frozenset[tuple[str, ...]]:
    return frozenset(s for t in (patient_texts() if texts is None else texts) for s in shingles(t))


def leaks(folders: Iterable[Path], known: frozenset[tuple[str, ...]] | None = None) -> list[str]:
    """``file:line: phrase`` for every log line under ``folders`` holding a phrase of patient words."""
    known = phrases() if known is None else known
    found = []
    for folder in folders:
        if not folder.exists():
            continue
        for path in sorted(folder.rglob("*.log")):
            if not path.is_file():
                continue
            with open(path, encoding="utf-8", errors="replace") as fh:
                for number, line in enumerate(fh, start=1):
                    hit = next((s for s in shingles(line) if s in known), None)
                    if hit is not None:
                        found.append(f"{path}:{number}: {' '.join(hit)!r}")
    return found
