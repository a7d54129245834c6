"""The offline verifier: is a note sentence supported by the segments it cites?

``support`` = the share of the sentence's content stems found in the cited segments (first
and second person folded, the note's lead-ins ignored). Then:

- ``contradicted``: well covered (≥ ``SUPPORTED_AT``) but the polarity differs (a negation in
  the sentence and none in the best-matching clause of the evidence, or the reverse; a
  negative answer to a cited question counts as negation), or a number is not in the evidence;
- ``supported``: well covered, same polarity, every number in the evidence;
- ``unsupported``: otherwise (including no citation at all).

``SUPPORTED_AT`` is calibrated on ``verifier_labelled.json`` (≥ 60 sentences with reasons;
``calibrate``); tests/unit/test_notes_verifier.py checks the committed value is the
calibrated one. With a model configured the model is the judge (``verbatim.notes.openai_writer``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources

from verbatim.notes import text as tx

SUPPORTED = "supported"
UNSUPPORTED = "unsupported"
CONTRADICTED = "contradicted"
LABELS = (SUPPORTED, UNSUPPORTED, CONTRADICTED)

#: calibrated on verifier_labelled.json (see ``calibrate``)
SUPPORTED_AT = 0.5

_CLAUSE = re.compile(r"[,;:.?!]\s+|\s+(?:but|and|because|although|though|while)\s+", re.I)


@dataclass(frozen=True)
class Verdict:
    """A label and its support score (0–1)."""

    label: str
    support: float


def support(sentence: str, evidence: list[str]) -> float:
    """Share (0–1) of the sentence's content stems found in ``evidence``; 0 when it has none or no evidence."""
    # Numbers are judged by their own rule (a changed number contradicts), not as overlap.
    want = {t for t in tx.content(sentence) if not t.replace(".", "").isdigit()}
    if not want or not evidence:
        return 0.0
    have: set[str] = set()
    for e in evidence:
        have |= tx.content(e)
    return len(want & have) / len(want)


def _scopes(text: str) -> tuple[set[str], set[str]]:
    """(stems said plainly, stems said under a negation): a cue's scope runs to the end of its clause."""
    plain: set[str] = set()
    negative: set[str] = set()
    for clause in _CLAUSE.split(tx.tidy(text)):
        under = False
        for token in tx.words(clause):
            if token in tx.NEGATION or token.endswith("n't"):
                under = True
                continue
            for stem in tx.content(token):
                (negative if under else plain).add(stem)
    return plain, negative


def _polarity_differs(sentence: str, evidence: list[str]) -> bool:
    """Whether the sentence says under a negation what the evidence says plainly, or the reverse.

    Negated words of the sentence must be negated somewhere in the evidence; plain words of the
    sentence must be said plainly somewhere in it. A negative answer among the evidence (to a
    cited question) makes the whole evidence negative.
    """
    if any(tx.negative_answer(e) for e in evidence):
        return not tx.negated(sentence)
    s_plain, s_negative = _scopes(sentence)
    e_plain: set[str] = set()
    e_negative: set[str] = set()
    for e in evidence:
        plain, negative = _scopes(e)
        e_plain |= plain
        e_negative |= negative
    shared_negative = s_negative & (e_plain | e_negative)
    if shared_negative and not shared_negative & e_negative:
        return True
    return bool((s_plain - s_negative) & (e_negative - e_plain))


def label(sentence: str, evidence: list[str], supported_at: float = SUPPORTED_AT) -> Verdict:
    """Label ``sentence`` against the texts of its cited segments (see the module docstring)."""
    score = support(sentence, evidence)
    if score < supported_at:
        return Verdict(UNSUPPORTED, round(score, 3))
    said = set()
    for e in evidence:
        said |= tx.numbers(e)
    if not tx.numbers(sentence) <= said or _polarity_differs(sentence, evidence):
        return Verdict(CONTRADICTED, round(score, 3))
    return Verdict(SUPPORTED, round(score, 3))


def labelled_set() -> list[dict[str, object]]:
    """The committed calibration set: ``[{sentence, evidence: [str], label, reason}]``."""
    raw = resources.files("verbatim.notes").joinpath("verifier_labelled.json").read_text(encoding="utf-8")
    return list(json.loads(raw))


def calibrate(items: list[dict[str, object]] | None = None) -> tuple[float, float]:
    """(threshold, accuracy): the support threshold (0.30–0.90, step 0.05) that labels the set best.

    Ties go to the higher threshold (stricter: flagging beats silently keeping).
    """
    data = items if items is not None else labelled_set()
    best = (0.0, -1.0)
    for step in range(30, 91, 5):
        at = step / 100
        right = 0
        for d in data:
            evidence = d["evidence"]
            assert isinstance(evidence, list)
            right += label(str(d["sentence"]), [str(e) for e in evidence], at).label == d["label"]
        accuracy = right / len(data)
        if accuracy >= best[1]:
            best = (at, accuracy)
    return best
