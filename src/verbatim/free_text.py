"""What a free-text field may hold: the one rule every request model's text fields use.

Free text (note sentences and section names, amendment and break-glass reasons, template names and
instructions, segment corrections, client ids) ends up in PostgreSQL, in signed records and in
exports. Three kinds of character are refused (422, naming the position, never echoing the text):

- **control characters** (Unicode ``Cc``: C0, DEL and C1) other than tab and newline. PostgreSQL
  refuses NUL in text outright, and the others have no place in a clinical record. A carriage
  return is not refused but folded: ``\\r\\n`` and a lone ``\\r`` become ``\\n`` (a browser sends a
  textarea's lines with CRLF).
- **lone surrogates** (``Cs``): a JSON ``"\\ud800"`` decodes to one, and no encoder can store it.
- **format characters** (``Cf``): bidi embeddings, overrides and isolates, zero-width spaces and
  joiners, the BOM, the soft hyphen. They are invisible, and they let a record read differently
  from what it holds (Trojan Source: "No risk of harm to self." with "harm" inside a right-to-left
  override). Refused in every field, as client ids always were.

A *reason* (why a signed note is amended, why break-glass is opened) must moreover hold readable
words: at least ``REASON_MIN_LETTERS`` letters (Unicode ``L*``), so eight zero-width spaces, a row
of punctuation or only bidi controls are no reason.

A model's field adds one of the validators below after its length constraints:
``Annotated[str, StringConstraints(strip_whitespace=True, max_length=4000), FREE_TEXT]`` strips
surrounding whitespace, checks the length and then these rules, in that order (``REASON`` for a
reason, ``ONE_LINE`` for names and identifiers).

Why our own code: the rule is ours (which categories a clinical record may hold); the standard
library's ``unicodedata`` does the classifying.
"""

from __future__ import annotations

import unicodedata

from pydantic import AfterValidator

#: characters allowed although Unicode calls them controls
ALLOWED_CONTROLS = frozenset("\t\n")
#: categories refused in every free-text field (see the module docstring)
REFUSED_CATEGORIES = {
    "Cc": "a control character (tab and newline are the only ones allowed)",
    "Cs": "a lone surrogate (not a character)",
    "Cf": "an invisible format character (bidi controls and zero-width characters are not allowed)",
}
#: the fewest letters a reason must hold
REASON_MIN_LETTERS = 4


def _fold_returns(value: str) -> str:
    return value.replace("\r\n", "\n").replace("\r", "\n")


#: characters that render as nothing though Unicode does not call them format characters: the Hangul
#: fillers (letters!), the braille blank, the combining grapheme joiner, variation selectors, and the
#: line and paragraph separators (a line break no reader of the record sees as one)
INVISIBLE = frozenset({"\u115f", "\u1160", "\u3164", "\uffa0", "\u2800", "\u034f", "\u2028", "\u2029",
                       *(chr(c) for c in range(0xFE00, 0xFE10))})


def problem(value: str) -> str | None:
    """Why ``value`` may not be stored as free text (a sentence naming the first bad character by its
    code point and position, never quoting the text), or None when it may."""
    for position, ch in enumerate(value, start=1):
        if ch in ALLOWED_CONTROLS:
            continue
        if ch in INVISIBLE:
            return (f"holds U+{ord(ch):04X} at character {position}, a character that shows as nothing; remove it "
                    "and send the text again")
        kind = REFUSED_CATEGORIES.get(unicodedata.category(ch))
        if kind is not None:
            return f"holds U+{ord(ch):04X} at character {position}, {kind}; remove it and send the text again"
    return None


def check(value: str) -> str:
    """``value`` with carriage returns folded to newlines; ValueError (pydantic → 422) if it holds a
    refused character."""
    value = _fold_returns(value)
    reason = problem(value)
    if reason is not None:
        raise ValueError(reason)
    return value


def check_reason(value: str) -> str:
    """``check`` plus: at least ``REASON_MIN_LETTERS`` letters (ValueError otherwise)."""
    value = check(value)
    letters = sum(1 for ch in value if unicodedata.category(ch).startswith("L"))
    if letters < REASON_MIN_LETTERS:
        raise ValueError(f"a reason needs readable words (at least {REASON_MIN_LETTERS} letters); this one has "
                         f"{letters}")
    return value


def check_single_line(value: str) -> str:
    """``check`` plus: no tab or newline either (identifiers and names shown on one line)."""
    value = check(value)
    if "\n" in value or "\t" in value:
        raise ValueError("must be on one line (no tab or newline)")
    return value


#: pydantic validators, placed after the field's ``StringConstraints`` so they see the stripped value:
#: ``Annotated[str, StringConstraints(strip_whitespace=True, max_length=4000), FREE_TEXT]``
FREE_TEXT = AfterValidator(check)
REASON = AfterValidator(check_reason)
ONE_LINE = AfterValidator(check_single_line)
