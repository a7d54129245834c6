"""Voices alike in pitch stay apart: a three-person couples dialogue in three close espeak-ng voices.

The dialogue comes from ``bench/make_sets.py`` (exact turn times written as it is joined); it
needs ``espeak-ng`` and ``sox`` (Debian packages), and the test skips without them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from verbatim.asr_server.engine import transcribe
from verbatim.asr_server.scoring import Turn, diarization_error_rate

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.timeout(900),  # ~45 s of audio recognised and diarized: scales with a loaded machine
    pytest.mark.skipif(not (shutil.which("espeak-ng") and shutil.which("sox") and shutil.which("flite")),
                       reason="needs espeak-ng, flite and sox (apt-get install espeak-ng flite sox)"),
]


def test_three_similar_voices_give_three_speakers_and_no_client_turn_goes_to_the_therapist(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(ROOT / "bench" / "make_sets.py"), str(tmp_path)], check=True,
                   capture_output=True)
    item = json.loads((tmp_path / "alike" / "manifest.json").read_text())["items"][0]
    turns = [Turn(t["speaker"], t["start_s"], t["end_s"], t["text"]) for t in item["turns"]]
    # A couples session asks for at most three voices (two clients and the therapist).
    results = transcribe(tmp_path / "alike" / item["audio"], max_speakers=3)
    words = [r for r in results if r["type"] == "word"]
    labels = {r["alternatives"][0]["speaker"] for r in words} - {"UU"}
    assert len(labels) == 3, labels

    def label_of(turn: Turn) -> str:
        said = Counter(r["alternatives"][0]["speaker"] for r in words
                       if turn.start_s <= (r["start_time"] + r["end_time"]) / 2 <= turn.end_s)
        return said.most_common(1)[0][0]

    therapist = Counter(label_of(t) for t in turns if t.speaker == "therapist").most_common(1)[0][0]
    for turn in turns:
        if turn.speaker != "therapist":
            assert label_of(turn) != therapist, f"{turn.speaker}'s turn {turn.text!r} labelled the therapist"
    assert diarization_error_rate(results, turns, collar_s=0.25) <= 0.15
