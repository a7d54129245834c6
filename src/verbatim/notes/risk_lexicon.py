"""The risk lexicon: how people say, in speech, that they are at risk or being hurt.

Every entry is a regular expression over one lower-cased clause, filed under a category
(``suicide``, ``self_harm``, ``harm_to_others``, ``abuse``, ``neglect``) and a kind — the
clinical term a flag gives as its reason:

- suicide: ``active ideation``, ``passive ideation`` ("better off without me", "don't want to
  wake up"), ``method`` (pills, heights, trains, cars, guns, ropes), ``plan``, ``preparatory
  act`` (saving pills, a goodbye letter), ``intent``, ``past attempt``;
- self_harm: ``self-injury`` (cutting, burning, hitting oneself — "again" and "started" too);
- harm_to_others: ``thoughts of harming others``, ``preparatory act``;
- abuse: ``physical``, ``sexual``, ``emotional`` (degrading names, control of money, phone or
  friends, threats), ``abuse by the client``, ``abuse of someone else`` (a child, a parent);
- neglect: ``neglect`` (left alone, not fed, not taken to a doctor).

``LOOKALIKES`` are the harmless uses that share those words — idioms ("my back is killing
me", "I could kill him for eating my lunch"), literal accidents ("cut myself shaving",
"tripped and hurt myself") and media or campaigns ("a suicide prevention walk", "suicide
bombers"); ``SENTENCE_LOOKALIKES`` pair risk words with a context anywhere in the sentence that
makes them literal (a car in "the person who hit me", a gutter on "the edge of the roof");
``TRIVIAL`` marks a threat said in jest or about nothing ("…if I was late again, ha").
``QUESTION`` is the therapist's side: the second-person wording of a screening question (a
"safe at home" question is asked the other way round: no is the disclosure).

Entries are phrase patterns over grammatical slots (a pronoun, a relation, a pill word), not
sentences of any test set; the negation and speaker logic lives in ``verbatim.notes.risk``.
They are data, in ``risk_lexicon.toml`` beside this module (``[slots]``, ``[[entry]]``,
``[[lookalike]]``, ``[[sentence_lookalike]]``, ``[question]``, ``[patterns]``, ``[reading]``): a pattern may be
written over several lines, each continuation starting right after a ``|`` (the lines are
joined after their indentation is stripped), and ``{NAME}`` stands for a slot. Loaded once, at
import; a missing slot or a bad pattern raises at import (``KeyError``, ``re.error``).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
_SLOT = re.compile(r"\{([A-Z][A-Z_]*)\}")


def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.I)


@dataclass(frozen=True)
class Entry:
    """One lexicon entry: ``category``, ``kind`` (the reason's term), ``pattern``.

    ``needs_topic``: counts only where suicide was already in the air (the question being
    answered, or an earlier risk statement in the same turn) — "I have a plan" alone is not risk.
    ``other_person``: the words are about someone else's act ("died by suicide"): family history.
    ``strong``: no look-alike cancels it (a threat reported as said: "he said he'll kill me").
    ``sentence``: searched over the whole sentence, not one clause (a means and a place said in
    two clauses: "there's a bridge on my way to work…, thinking about jumping").
    """

    category: str
    kind: str
    pattern: re.Pattern[str]
    needs_topic: bool = False
    other_person: bool = False
    strong: bool = False
    sentence: bool = False


def load(name: str) -> dict[str, Any]:
    """The TOML table ``name`` beside this module (``risk_lexicon.toml``, ``risk_frames.toml``)."""
    with (HERE / name).open("rb") as fh:
        return tomllib.load(fh)


def text(written: str, slots: dict[str, str]) -> str:
    """A pattern as written in a table → its regular expression (lines joined, slots filled).

    Raises ``ValueError`` for a line that breaks a word (every line but the last ends in ``|``
    or a space), ``KeyError`` for an unknown slot."""
    lines = written.splitlines()
    for line in lines[:-1]:
        if not line.endswith(("|", " ")):
            raise ValueError(f"a pattern line must end in '|' or a space: {line[-40:]!r}")
    joined = "".join(line.lstrip() for line in lines)
    return _SLOT.sub(lambda m: slots[m[1]], joined)


def compiled(written: str, slots: dict[str, str]) -> re.Pattern[str]:
    return _re(text(written, slots))


def with_slots(table: dict[str, str], known: dict[str, str]) -> dict[str, str]:
    """``known`` and the slots of ``table`` (in order: a slot may use the ones before it)."""
    out = dict(known)
    for name, written in table.items():
        out[name] = text(written, out)
    return out


def entries(rows: list[dict[str, Any]], slots: dict[str, str]) -> list[Entry]:
    """``[[entry]]`` or ``[[frame]]`` rows → entries."""
    flags = ("needs_topic", "other_person", "strong", "sentence")
    return [Entry(r["category"], r["kind"], compiled(r["pattern"], slots), **{f: bool(r.get(f, False)) for f in flags})
            for r in rows]


_TABLE = load("risk_lexicon.toml")
#: the word slots (a pill word, a relation, a person): regular expressions frames reuse
SLOTS = with_slots(_TABLE["slots"], {})
ENTRIES: list[Entry] = entries(_TABLE["entry"], SLOTS)
#: look-alikes: a match inside one of these is not a risk statement
LOOKALIKES: list[re.Pattern[str]] = [compiled(r["pattern"], SLOTS) for r in _TABLE["lookalike"]]
#: look-alikes read over the whole sentence: (the risk words, a context that makes them literal)
SENTENCE_LOOKALIKES: list[tuple[re.Pattern[str], re.Pattern[str]]] = [
    (compiled(r["words"], SLOTS), compiled(r["literal"], SLOTS)) for r in _TABLE["sentence_lookalike"]]
#: categories a clinician's question asks about (second person; "like that" questions read the turn)
QUESTION: dict[str, re.Pattern[str]] = {k: compiled(v, SLOTS) for k, v in _TABLE["question"].items()}
_PATTERNS = {k: compiled(v, SLOTS) for k, v in _TABLE["patterns"].items()}
#: a threat or a wish to harm said about something trivial or in jest ("he'd kill me if I was late again, ha")
TRIVIAL = _PATTERNS["TRIVIAL"]
#: a question about an accident or an illness, not a screening question ("did you hurt yourself when you fell?")
QUESTION_LOOKALIKE = _PATTERNS["QUESTION_LOOKALIKE"]
#: questions where "no" is the disclosure ("Do you feel safe at home?" — "No.")
INVERTED_QUESTION = _PATTERNS["INVERTED_QUESTION"]
#: a question that asks about what was just said ("thoughts like that?", "has it gone that far?")
ANAPHORIC_QUESTION = _PATTERNS["ANAPHORIC_QUESTION"]
#: a follow-up question on method, plan or means: keeps the topic of the question before it
FOLLOW_UP_QUESTION = _PATTERNS["FOLLOW_UP_QUESTION"]
#: how ``verbatim.notes.risk`` reads a client's words: negation hedges, answers (yes, no, unsure,
#: a person named), fillers, clarifying questions, look-back phrases ("I did, though")
READING: dict[str, re.Pattern[str]] = {k: compiled(v, SLOTS) for k, v in _TABLE["reading"].items()}
