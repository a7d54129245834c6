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
#: verbs that open a yes/no question when a subject follows ("do you", "is it", "can we")
AUXILIARIES = frozenset({"do", "does", "did", "is", "are", "was", "were", "am", "can", "could", "would", "will",
                         "should", "have", "has", "shall", "may", "might", "must", "won't", "don't", "didn't",
                         "isn't", "aren't", "can't", "wouldn't", "haven't", "doesn't"})
#: words that open a wh-question — or a statement ("When I get home I switch off")
WH_WORDS = frozenset({"what", "how", "why", "when", "where", "who", "which", "whose"})
#: a subject after an auxiliary ("is it", "do you", "was the")
SUBJECTS = frozenset({"i", "you", "he", "she", "it", "we", "they", "that", "this", "there", "the", "your", "my",
                      "anyone", "anything", "someone", "something", "everything", "everyone", "a", "any"})
_WORD = re.compile(r"[A-Za-z']+")


def is_question(sentence: str) -> bool:
    """Whether a sentence reads as a question: it ends with ``?``, or opens as one — an auxiliary then a
    subject ("did you sleep"), or a wh-word then an auxiliary or "about"/"much"/"many"/"long"/"often"
    ("how did you sleep", "what about work"). A wh-word before a subject opens a statement as often
    ("When I get home I just switch off"): not a question by its shape."""
    s = sentence.strip()
    if s.endswith("?"):
        return True
    words = _WORD.findall(s.lower())
    if len(words) < 2:
        return False
    first, second = words[0], words[1]
    if first in AUXILIARIES:
        return second in SUBJECTS
    return first in WH_WORDS and (second in AUXILIARIES or second in {"about", "much", "many", "long", "often"}
                                  or second.endswith(("'s", "'re")))


def clean_text(text: str) -> str:
    """Drop fillers, fix casing, and close each sentence; a question mark only where the recognizer gave
    no punctuation at all and the sentence opens as a question (``is_question``): a full stop the
    recognizer wrote is its reading of the voice and is kept."""
    words = [w for w in text.split() if w.lower().strip(".,?!") not in FILLERS]
    if not words:
        return ""
    punctuated = any(c in text for c in ".?!")
    words = ["I" + w[1:] if w.lower() == "i" or w.lower().startswith("i'") else w for w in words]
    out = " ".join(words)
    if out[-1] not in ".?!":
        out += "."
    sentences = re.split(r"(?<=[.?!])\s+", out)
    fixed = []
    for sentence in sentences:
        sentence = sentence[0].upper() + sentence[1:]
        if not punctuated and sentence.endswith(".") and is_question(sentence):
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
