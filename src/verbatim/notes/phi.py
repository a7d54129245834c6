"""PHI placeholders: names, phone numbers, e-mail and street addresses out before text leaves the machine.

Best effort, stated plainly: no NER model installs here, so this is patterns (e-mail, phone
numbers, street addresses), the session's known names (client ids, the therapist's name, any
name the caller adds) and a heuristic for names (a capitalised word that does not start a
sentence and is not a common capitalised word). It misses names written in lower case and
names that start a sentence unless they are known; its recall on ``phi_set.json`` is measured
by tests/unit/test_notes_phi.py and reported in the README. Placeholders are restored in the
model's answer before anything is stored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_PHONE = re.compile(r"(?<!\w)(?:\+?\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)[\s.-]?|\d{2,4}[\s.-])\d{3,4}[\s.-]?\d{3,4}(?!\w)")
_ADDRESS = re.compile(
    r"\b\d{1,5}\s+(?:[A-Z][a-z]+\s+){1,3}(?:Street|St|Road|Rd|Avenue|Ave|Lane|Ln|Drive|Dr|Boulevard|Blvd|Way|"
    r"Court|Ct|Place|Pl|Terrace|Close|Crescent)\b\.?")
_CAPITALISED = re.compile(r"(?<=[A-Za-z,;:]\s)([A-Z][a-z]{1,20}(?:'s)?)\b")
_TITLED = re.compile(r"\b(?:Dr|Mr|Mrs|Ms|Miss|Prof)\.?\s+([A-Z][a-z]+)")
_SUBJECT = re.compile(r"(?:^|(?<=[.!?]\s))([A-Z][a-z]+)(?=\s+(?:and I|and me|from|was|is|has|had|said|says|told|"
                      r"called|keeps|kept|wants|thinks|never|always|shouted|started|came|left|lives)\b)")
#: sentence starters that are not names (the subject heuristic above)
_STARTER_WORDS = """
The This That It He She We They There What When Then My Our Your His Her And But So Everyone Nobody Someone
Everything Nothing Work School Money Life Today Yesterday Tomorrow Mum Mom Dad Grandma Grandpa One Each Nothing
"""
STARTERS = frozenset(_STARTER_WORDS.split())
#: capitalised words that are not names (days, months, pronouns, places of speech, common nouns in titles)
_COMMON_WORDS = """
I I'm I've I'd I'll Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May
June July August September October November December Christmas Easter God Mom Mum Dad English Spanish French
OK Okay Doctor Dr Mr Mrs Ms Miss Therapist Client Patient Internet TV Google Facebook Instagram Zoom PHQ GAD CBT
DBT EMDR ADHD OCD PTSD ER ICU Covid COVID
"""
COMMON = frozenset(_COMMON_WORDS.split())


@dataclass
class Redactor:
    """Replaces PHI by placeholders (``[NAME_1]``, ``[PHONE_1]``, ``[EMAIL_1]``, ``[ADDRESS_1]``) consistently.

    ``known``: names the session knows (client ids, the therapist's name). One redactor per note,
    so the same name gets the same placeholder in every call.
    """

    known: list[str] = field(default_factory=list)
    mapping: dict[str, str] = field(default_factory=dict)  #: placeholder → original

    def _placeholder(self, kind: str, original: str) -> str:
        for ph, value in self.mapping.items():
            if value == original and ph.startswith(f"[{kind}_"):
                return ph
        count = sum(1 for ph in self.mapping if ph.startswith(f"[{kind}_")) + 1
        ph = f"[{kind}_{count}]"
        self.mapping[ph] = original
        return ph

    def redact(self, text: str) -> str:
        """``text`` with every PHI span found replaced by its placeholder."""
        out = _EMAIL.sub(lambda m: self._placeholder("EMAIL", m.group(0)), text)
        out = _ADDRESS.sub(lambda m: self._placeholder("ADDRESS", m.group(0)), out)
        out = _PHONE.sub(lambda m: self._placeholder("PHONE", m.group(0)), out)
        for name in sorted((n for n in self.known if n and len(n) > 1), key=len, reverse=True):
            for part in {name, *name.replace("-", " ").replace("_", " ").split()}:
                if len(part) < 2 or part.lower() in {"client", "therapist"}:
                    continue
                out = re.sub(rf"(?<![\w\[]){re.escape(part)}(?![\w\]])",
                             lambda m: self._placeholder("NAME", m.group(0)), out, flags=re.I)
        out = _TITLED.sub(lambda m: m.group(0).replace(m.group(1), self._placeholder("NAME", m.group(1))), out)
        out = _SUBJECT.sub(lambda m: m.group(1) if m.group(1) in STARTERS else self._placeholder("NAME", m.group(1)),
                           out)
        return _CAPITALISED.sub(self._maybe_name, out)

    def _maybe_name(self, match: re.Match[str]) -> str:
        word = match.group(1)
        if word in COMMON or word.removesuffix("'s") in COMMON:
            return word
        return self._placeholder("NAME", word)

    def restore(self, text: str) -> str:
        """Put the originals back in place of the placeholders."""
        for ph, original in self.mapping.items():
            text = text.replace(ph, original)
        return text
