"""Our DER scorer (verbatim.asr_server.scoring) agrees with pyannote.metrics, the field's reference.

The bench scores diarization with our own frame scorer (it fills a speaker's pauses between words
as a diarization system's segments would, and maps "UU" to nobody); on plain segments both must
give the same DER, with and without the usual 0.25 s collar. pyannote's ``collar`` is the whole
width removed around a boundary (md-eval's collar on each side, twice over).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyannote.metrics", reason="pyannote.metrics is a dev dependency (make install)")

from pyannote.core import Annotation, Segment, Timeline  # noqa: E402
from pyannote.metrics.diarization import DiarizationErrorRate  # noqa: E402

from verbatim.asr_server.scoring import Turn, diarization_error_rate  # noqa: E402


def _case(rng: np.random.Generator) -> tuple[list[Turn], list[tuple[float, float, str]]]:
    """Reference turns of up to three speakers, and a hypothesis with shifted edges, a missed turn,
    a wrong label and a false alarm now and then (segments never overlap, as ours cannot)."""
    t, turns = 0.0, []
    for _ in range(int(rng.integers(4, 12))):
        t += float(rng.uniform(0.0, 1.5))
        d = float(rng.uniform(0.5, 6.0))
        turns.append(Turn(f"spk{int(rng.integers(0, 3))}", round(t, 2), round(t + d, 2)))
        t += d
    hyp: list[tuple[float, float, str]] = []
    for turn in turns:
        if rng.random() < 0.1:
            continue
        a = max(0.0, turn.start_s + float(rng.uniform(-0.4, 0.4)))
        b = turn.end_s + float(rng.uniform(-0.4, 0.4))
        label = turn.speaker.replace("spk", "S") if rng.random() > 0.2 else f"S{int(rng.integers(0, 4))}"
        if hyp and a < hyp[-1][1]:
            a = hyp[-1][1]
        if b - a > 0.05:
            hyp.append((round(a, 2), round(b, 2), label))
    if rng.random() < 0.5:
        hyp.append((round(t + 1, 2), round(t + 2, 2), "S9"))
    return turns, hyp


@pytest.mark.parametrize("collar_s", [0.0, 0.25])
def test_our_der_is_pyannotes(collar_s: float) -> None:
    rng = np.random.default_rng(1)
    for _ in range(30):
        turns, hyp = _case(rng)
        results = [{"type": "word", "start_time": a, "end_time": b,
                    "alternatives": [{"content": "w", "speaker": label}]} for a, b, label in hyp]
        # fill_s=0: plain segments, no pause filled (pyannote has no words to fill between).
        ours = diarization_error_rate(results, turns, collar_s=collar_s, fill_s=0.0)
        reference, hypothesis = Annotation(), Annotation()
        for turn in turns:
            reference[Segment(turn.start_s, turn.end_s)] = turn.speaker
        for a, b, label in hyp:
            hypothesis[Segment(a, b)] = label
        end = max([turn.end_s for turn in turns] + [b for _, b, _ in hyp])
        theirs = DiarizationErrorRate(collar=2 * collar_s, skip_overlap=False)(
            reference, hypothesis, uem=Timeline([Segment(0.0, end)]))
        assert ours == pytest.approx(theirs, abs=0.005), (turns, hyp)
