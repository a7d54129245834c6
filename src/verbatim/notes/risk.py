"""Risk flags: statements about suicide, self-harm, harm to others, abuse or neglect in the record.

Found, never invented: each flag quotes the sentence with its segment id, speaker and time. A
clinician's question about risk is not a flag; a negative answer to it is a denial (recorded
as such, with both segments); the client's own statement is a flag unless it negates itself
("I would never hurt myself" is listed as a denial, not a flag). A record with none says
"none found" — never "no risk": a lexicon finds what is said in its words, not what is meant.
"""

from __future__ import annotations

import re
from typing import Any

from verbatim.notes import text as tx
from verbatim.notes.evidence import CLIENT, CLINICIAN, Unit, follows

CATEGORIES: dict[str, re.Pattern[str]] = {
    "suicide": re.compile(
        r"\b(suicid\w*|kill(?:ing)? (?:myself|themselves|yourself|himself|herself)|"
        r"end(?:ing)? (?:my|your) (?:own )?life|"
        r"take (?:my|your) (?:own )?life|end it all|(?:don't|do not) want to (?:be alive|live|wake up)|"
        r"better off (?:dead|without me)|no reason to live|want(?:ed)? to die|wish i (?:was|were) dead)\b", re.I),
    "self_harm": re.compile(
        r"\b(self[- ]?harm\w*|cut(?:ting)? (?:myself|yourself|my (?:arms?|wrists?|legs?))|"
        r"hurt(?:ing)? (?:myself|yourself)|burn(?:ing|ed)? (?:myself|yourself)|scratch(?:ing)? (?:myself|yourself)|"
        r"harm(?:ing)? (?:myself|yourself))\b", re.I),
    "harm_to_others": re.compile(
        r"\b(kill(?:ing)? (?:him|her|them|you|someone|somebody|anyone)|"
        r"hurt(?:ing)? (?:him|her|them|someone|somebody|anyone|other people)|"
        r"harm(?:ing)? (?:him|her|them|someone|anyone|others)|make (?:him|her|them) pay|get back at (?:him|her|them)|"
        r"(?:stab|shoot|strangle) (?:him|her|them))\b", re.I),
    "abuse": re.compile(
        r"\b(abus\w*|hits? me|hit me|beat(?:s|ing)? me|slap(?:s|ped)? me|push(?:es|ed)? me|choke[sd]? me|"
        r"molest\w*|touched me|forced me|rape[ds]?|threaten(?:s|ed)? (?:me|to (?:hurt|kill)))\b", re.I),
    "neglect": re.compile(
        r"\b(neglect\w*|left (?:home )?alone (?:for days|overnight|all weekend)|no food|not enough (?:food|to eat)|"
        r"went hungry|nobody (?:takes care|looks after|feeds)|(?:doesn't|don't|didn't) feed)\b", re.I),
}

NONE_FOUND = "none found"


def categories_in(sentence: str) -> list[str]:
    """The risk categories whose words ``sentence`` contains."""
    return [name for name, pattern in CATEGORIES.items() if pattern.search(sentence)]


def flags(items: list[Unit]) -> dict[str, Any]:
    """``{"status": "found"|"none found", "flags": [...], "denials": [...]}`` for a client's record.

    A flag: ``{category, quote, segment_id, speaker, start_s, end_s}`` (and ``question`` when
    it answers the clinician's question). A denial: the same for a negative answer, with the question.
    """
    found: list[dict[str, Any]] = []
    denied: list[dict[str, Any]] = []
    for i, unit in enumerate(items):
        cats = categories_in(unit.text)
        if not cats:
            continue
        if unit.role == CLINICIAN and unit.question:
            answer = next((u for u in items[i + 1:] if u.segment_id != unit.segment_id), None)
            if answer is None or answer.role != CLIENT or not follows(answer, unit):
                continue
            entry = {"question": _quote(unit), **_quote(answer)}
            if tx.negative_answer(answer.text):
                denied.extend({"category": c, **entry} for c in cats)
            elif not tx.negated(answer.text) and _affirms(answer.text):
                found.extend({"category": c, **entry} for c in cats)
            continue
        for c in cats:
            target = denied if (unit.role == CLIENT and _self_negated(unit.text, CATEGORIES[c])) else found
            target.append({"category": c, **_quote(unit)})
    return {"status": "found" if found else NONE_FOUND, "flags": found, "denials": denied}


_CLAUSE = re.compile(r"[,;:]\s+|\s+(?:but|although|though)\s+", re.I)
_NOT = re.compile(r"\b(not|never|no|don't|do not|won't|wouldn't|would never|haven't|didn't|isn't|wasn't)\b", re.I)


def _self_negated(sentence: str, pattern: re.Pattern[str]) -> bool:
    """Whether the clause holding the risk words is itself negated ("I would never hurt myself")."""
    for clause in _CLAUSE.split(sentence):
        if pattern.search(clause):
            return bool(_NOT.search(clause))
    return False


def _affirms(answer: str) -> bool:
    tokens = tx.words(answer)
    return bool(tokens) and tokens[0] in {"yes", "yeah", "sometimes", "maybe", "once", "a", "kind", "i", "honestly"}


def _quote(unit: Unit) -> dict[str, Any]:
    return {"quote": unit.text, "segment_id": unit.segment_id, "speaker": unit.speaker, "start_s": unit.start_s,
            "end_s": unit.end_s}
