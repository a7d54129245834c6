"""The risk lexicon: how people say, in speech, that they are at risk or being hurt.

Every entry is a regular expression over one lower-cased clause, filed under a category
(``suicide``, ``self_harm``, ``harm_to_others``, ``abuse``, ``neglect``) and a kind — the
clinical term a flag gives as its reason:

- suicide: ``active ideation``, ``passive ideation`` ("better off without me", "don't want to
  wake up"), ``method`` (pills, heights, trains, cars, guns, ropes), ``plan``, ``preparatory
  act`` (saving pills, a goodbye letter), ``intent``, ``past attempt``;
- self_harm: ``self-injury`` (cutting, burning, hitting oneself — "again" and "started" too);
- harm_to_others: ``thoughts of harming others``, ``preparatory act``, ``violence toward others``
  (the client hurting a grown-up peer: "I hit my brother", set in ``verbatim.notes.risk``);
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
    #: a context anywhere in the sentence that cancels the entry ("chopping" for a cut to the hand)
    unless: re.Pattern[str] | None = None


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
    """``[[entry]]`` or ``[[frame]]`` rows → entries (``unless``: a pattern over the whole sentence)."""
    flags = ("needs_topic", "other_person", "strong", "sentence")
    return [Entry(r["category"], r["kind"], compiled(r["pattern"], slots),
                  unless=compiled(r["unless"], slots) if r.get("unless") else None,
                  **{f: bool(r.get(f, False)) for f in flags})
            for r in rows]


# --- word classes: synonym sets, every word in all its inflections ------------------------------
#: irregular forms (base → the others); regular ones are generated by ``inflections``
IRREGULAR: dict[str, tuple[str, ...]] = {
    "be": ("am", "is", "are", "was", "were", "been", "being", "'m", "'s", "'re"),
    "beat": ("beats", "beating", "beaten"), "bite": ("bit", "bitten"), "bleed": ("bled",),
    "break": ("broke", "broken"), "bring": ("brought",), "burn": ("burnt",), "buy": ("bought",),
    "come": ("came",), "creep": ("crept",), "do": ("did", "done", "does", "doing"), "drink": ("drank", "drunk"),
    "drive": ("drove", "driven"), "eat": ("ate", "eaten"), "fall": ("fell", "fallen"), "feed": ("fed",),
    "feel": ("felt",), "fight": ("fought",), "find": ("found",), "get": ("got", "gotten"),
    "give": ("gave", "given"), "go": ("went", "gone", "goes", "going"), "hang": ("hung",),
    "have": ("had", "has", "having"),
    "hide": ("hid", "hidden"), "hit": ("hits", "hitting"), "hold": ("held",), "hurt": ("hurts", "hurting"),
    "keep": ("kept",), "leave": ("left",), "lie": ("lay", "lying"), "make": ("made",), "put": ("puts", "putting"),
    "run": ("ran",), "say": ("said",), "see": ("saw", "seen"), "set": ("sets", "setting"),
    "shake": ("shook", "shaken"), "shoot": ("shot",), "sit": ("sat",), "sleep": ("slept",), "slit": ("slits",),
    "sneak": ("snuck",), "spit": ("spat",), "stick": ("stuck",), "steal": ("stole", "stolen"),
    "strike": ("struck",), "swear": ("swore", "sworn"), "take": ("took", "taken"), "tear": ("tore", "torn"),
    "tell": ("told",), "think": ("thought",), "throw": ("threw", "thrown"), "wake": ("woke", "woken"),
    "wear": ("wore", "worn"), "write": ("wrote", "written"), "cut": ("cuts", "cutting"),
}


def inflections(word: str) -> set[str]:
    """A word and its inflected forms ("hope" → hopes, hoped, hoping; "stab" → stabbed, stabbing;
    "cry" → cries, cried, crying; "die" → dies, died, dying), irregular forms from ``IRREGULAR``."""
    w = word.lower()
    if w in IRREGULAR:
        # irregular past forms replace the regular ones ("took", never "taked")
        regular = {x for x in _regular(w) if not x.endswith("ed")} if w not in ("be", "do", "go", "have") else set()
        return {w, *IRREGULAR[w], *regular}
    return _regular(w)


def _regular(w: str) -> set[str]:
    out = {w}
    if w.endswith("ie"):
        return out | {w + "s", w + "d", w[:-2] + "ying"}
    if w.endswith("e"):
        return out | {w + "s", w + "d", w[:-1] + "ing"}
    if w.endswith("y") and len(w) > 2 and w[-2] not in "aeiou":
        return out | {w[:-1] + "ies", w[:-1] + "ied", w + "ing"}
    if w.endswith(("s", "sh", "ch", "x", "z")):
        return out | {w + "es", w + "ed", w + "ing"}
    # one short syllable ending consonant-vowel-consonant doubles its last letter: stab, stabbed
    if len(w) <= 4 and len(w) >= 3 and w[-1] not in "aeiouwxy" and w[-2] in "aeiou" and w[-3] not in "aeiou":
        return out | {w + "s", w + w[-1] + "ed", w + w[-1] + "ing"}
    return out | {w + "s", w + "ed", w + "ing"}


def word_class(written: str) -> str:
    """A ``[classes]`` row (phrases separated by commas) → a regular expression for any of them.

    A one-word phrase is matched in all its ``inflections``; in a longer one, each word marked
    ``+`` ("my heart give+ out", "look+ forward to") is, and the other words as written."""
    alternatives: list[str] = []
    for phrase in (p.strip() for p in written.replace("\n", " ").split(",")):
        if not phrase:
            continue
        words = phrase.split()
        parts = []
        for w in words:
            if w.endswith("+") or len(words) == 1:
                forms = sorted((re.escape(f) for f in inflections(w.rstrip("+"))), key=len, reverse=True)
                parts.append("(?:" + "|".join(forms) + ")")
            else:
                parts.append(re.escape(w))
        alternatives.append(r"\s+".join(parts))
    return r"(?:\b(?:" + "|".join(sorted(alternatives, key=len, reverse=True)) + r")\b)"


def with_classes(table: dict[str, str], known: dict[str, str]) -> dict[str, str]:
    """``known`` and one slot per ``[classes]`` row (``word_class``)."""
    return {**known, **{name: word_class(written) for name, written in table.items()}}


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
#: people in general in a question's lead-in: what they think is what the anaphoric question asks about
GENERIC_PEOPLE = _PATTERNS["GENERIC_PEOPLE"]
#: a follow-up question on method, plan or means: keeps the topic of the question before it
FOLLOW_UP_QUESTION = _PATTERNS["FOLLOW_UP_QUESTION"]
#: how ``verbatim.notes.risk`` reads a client's words: negation hedges, answers (yes, no, unsure,
#: a person named), fillers, clarifying questions, look-back phrases ("I did, though")
READING: dict[str, re.Pattern[str]] = {k: compiled(v, SLOTS) for k, v in _TABLE["reading"].items()}
