"""Asked-and-answered negations: "Client denies X" only when X was asked and the answer was no.

A negation is never inferred from silence: the clinician's yes/no question must name the topic
and the client's next turn must be a plain no ("No.", "Not really.", "No, never." — not "no,
but …"). Both segments are cited. A "no" the same turn takes back ("Not now. Back in college I
did, though.", "No. Well, actually…") or that the risk check reads as a disclosure is not a
denial, and nor is a "no" to a question asked the other way round ("Do you feel safe at home?"), nor
one in a turn whose speaker the recognizer could not tell (``speaker_uncertain``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from verbatim.notes import risk
from verbatim.notes import text as tx
from verbatim.notes.evidence import CLIENT, CLINICIAN, Unit, follows
from verbatim.notes.risk_lexicon import INVERTED_QUESTION

_LEAD = re.compile(
    r"^(?:(?:and|so|okay|ok|now|also|um|uh)[, ]+)*(?:have you (?:had|been having|noticed|felt|experienced|been)|"
    r"do you (?:have|get|feel|ever have|ever feel)|did you (?:have|notice|feel|get)|are you (?:having|feeling|getting)|"
    r"any|is there any|has there been any|have there been any|were there any|any other)\s+(?:any\s+)?",
    re.I)


@dataclass(frozen=True)
class Denial:
    """A topic the client was asked about and said no to (or, with ``endorsed``, yes to)."""

    topic: str
    question: Unit
    answer: Unit
    endorsed: bool = False


_TAIL = re.compile(r"(?:\s*,?\s*\b(?:at all|right now|today|lately|recently|currently|though|then|or not|okay)\b)+$",
                   re.I)
#: a topic naming the speakers or the place is not a symptom ("me touch you down here")
_NOT_TOPIC_WORD = frozenset((
    "i", "i'm", "i've", "me", "my", "you", "you're", "we", "us", "our", "here", "there", "this", "that", "it",
    "he", "she", "him", "her",
))
#: "any questions?" is not a review of systems
_NOT_TOPIC = re.compile(r"^(?:other |more |further )?(?:questions?|concerns?|anything|something|problems?|issues?|"
                        r"comments?)\b", re.I)
_PLAIN_NO = frozenset((
    "no", "nope", "nah", "not", "never", "none", "really", "at", "all", "i", "don't", "haven't", "didn't", "have",
    "do", "did", "sir", "ma'am",
))


def topic_of(question: str) -> str | None:
    """The topic of a yes/no question ("Any fevers or chills?" → "fevers or chills"), else None.

    None too when the topic names the speakers or the place ("… me touch you down here") or is
    not a symptom at all ("any questions?").
    """
    q = tx.tidy(question).rstrip("?").strip().rsplit(":", 1)[-1].strip()
    match = _LEAD.match(q)
    if match is None:
        return None
    topic = _TAIL.sub("", q[match.end():].strip(" ,.")).strip(" ,.")
    if _NOT_TOPIC.match(topic) or set(tx.words(topic)) & _NOT_TOPIC_WORD:
        return None
    topic = re.sub(r"\b(yourself)\b", "themselves", re.sub(r"\byour\b", "their", topic, flags=re.I), flags=re.I)
    return topic if 1 <= len(topic.split()) <= 12 else None


def plain_no(answer: str) -> bool:
    """A plain "no" ("No.", "Nope, not really.", "No, I haven't."): nothing said beside it — "no, not
    really, but I'm still getting some chest pains" is not a denial."""
    tokens = tx.words(answer)
    return tx.negative_answer(answer) and len(tokens) <= 5 and all(t in _PLAIN_NO for t in tokens)


def denials(items: list[Unit], *, endorsements: bool = False) -> list[Denial]:
    """Every clinician question with a topic whose very next client sentence is a negative answer
    (and, with ``endorsements``, a positive one: "Client endorses …")."""
    found = []
    disclosed = {f["segment_id"] for f in risk.flags(items)["flags"]}
    for i, unit in enumerate(items):
        if unit.role != CLINICIAN or not unit.question:
            continue
        topic = topic_of(unit.text)
        if topic is None:
            continue
        answer = next((u for u in items[i + 1:] if u.segment_id != unit.segment_id), None)
        if answer is not None and (answer.speaker_uncertain or unit.speaker_uncertain):
            continue  # whose "no" it was is not known: the risk box shows it with its caution, the note says nothing
        if (answer is not None and answer.role == CLIENT and follows(answer, unit) and plain_no(answer.text)
                and not INVERTED_QUESTION.search(unit.text) and answer.segment_id not in disclosed
                and not _taken_back(answer, items)):
            found.append(Denial(topic, unit, answer))
        elif (endorsements and answer is not None and answer.role == CLIENT and follows(answer, unit)
              and tx.positive_answer(answer.text)):
            found.append(Denial(topic, unit, answer, endorsed=True))
    return found


_TAKE_BACK = re.compile(r"^(?:(?:um+|uh+|so|and|oh)\W+)*(?:well,? actually|actually|but|though|except|"
                        r"well,? i (?:did|have|do|was)|i (?:did|have|do|was|used to)\b.*\b(?:though|once|before|"
                        r"back then)\b|(?:back|once|one time)\b)", re.I)


def _taken_back(answer: Unit, items: list[Unit]) -> bool:
    """Whether a later sentence of the answer's turn takes the "no" back ("No. Well, actually…")."""
    rest = [u for u in items[answer.order + 1:] if u.segment_id == answer.segment_id]
    return any(_TAKE_BACK.search(u.text.strip()) for u in rest)
