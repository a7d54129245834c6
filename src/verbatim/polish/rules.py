"""The offline rule-based polisher (the default): no model, no network, deterministic.

Readability: drops filler words (um, uh, erm, hmm…), capitalises sentence starts and "I",
ends each turn with a full stop or — when it opens like a question — a question mark.
Roles: the therapist is the speaker who opens the session and asks the most questions
(one point for opening, one per question-like sentence).
"""

from __future__ import annotations

import re

from verbatim.polish.base import Turn

FILLERS = frozenset({"um", "umm", "uh", "uhh", "uhm", "er", "erm", "hmm", "mm", "ah"})
QUESTION_OPENERS = frozenset(
    {
        "what", "how", "why", "when", "where", "who", "which", "whose", "do", "does",
        "did", "is", "are", "was", "were", "can", "could", "would", "will", "should",
        "have", "has", "shall", "may", "might", "tell",
    }
)
_WORD = re.compile(r"[A-Za-z']+")


def is_question(sentence: str) -> bool:
    """Whether a sentence reads as a question (ends with ? or opens with an interrogative)."""
    s = sentence.strip()
    if s.endswith("?"):
        return True
    words = _WORD.findall(s.lower())
    return bool(words) and words[0] in QUESTION_OPENERS


def clean_text(text: str) -> str:
    """Drop fillers, fix casing, and end each sentence with ``?`` when it reads as a question."""
    words = [w for w in text.split() if w.lower().strip(".,?!") not in FILLERS]
    if not words:
        return ""
    words = ["I" + w[1:] if w.lower() == "i" or w.lower().startswith("i'") else w for w in words]
    out = " ".join(words)
    if out[-1] not in ".?!":
        out += "."
    sentences = re.split(r"(?<=[.?!])\s+", out)
    fixed = []
    for sentence in sentences:
        sentence = sentence[0].upper() + sentence[1:]
        if sentence.endswith(".") and is_question(sentence):
            sentence = sentence[:-1] + "?"
        fixed.append(sentence)
    return " ".join(fixed)


class RulePolisher:
    """Offline default Polisher."""

    name = "rules"

    def readability(self, turns: list[Turn]) -> list[Turn]:
        return [{**t, "text": clean_text(t["text"])} for t in turns]

    def therapist_speaker(self, turns: list[Turn]) -> str | None:
        return rule_therapist(turns)


def rule_therapist(turns: list[Turn]) -> str | None:
    """Speaker who opens and asks most questions; ties go to the one who spoke first."""
    if not turns:
        return None
    order: list[str] = []
    score: dict[str, float] = {}
    for turn in turns:
        speaker = turn["speaker"]
        if speaker not in score:
            order.append(speaker)
            score[speaker] = 0.0
        sentences = re.split(r"(?<=[.?!])\s+", turn["text"]) if turn["text"] else []
        score[speaker] += sum(1 for s in sentences if is_question(s))
    score[order[0]] += 1.0
    return max(order, key=lambda s: (score[s], -order.index(s)))
