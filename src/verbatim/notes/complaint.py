"""The reason for the visit, where it is stated: "presents today with an upper respiratory infection".

Looked for in the order said, in either role's words: a clinician's dictated opening ("… who
presents today for follow-up of his chronic problems"), a referral ("referred by Dr. Nelson for
iron deficiency anemia", "sent you over for a nonhealing foot ulcer"), or the client's own
framing ("I'm doing okay aside from this left shoulder pain"). The phrase is taken as said (its
own words, so it is cited and verified like any sentence), trimmed to the complaint: leading
articles and "an evaluation of" go, the clause ends at the next clause word. Nothing stated →
None: the section says it has no evidence rather than guess.
"""

from __future__ import annotations

import re

from verbatim.notes.evidence import Unit

_LEAD = re.compile(
    r"\b(?:presents?|presenting|(?:is|are|you're|he's|she's|they're) here|here today|here(?= for )|"
    r"came in|coming in|come in|came to see us|"
    r"referred(?: to (?:me|us))?(?: by (?:dr\.? )?\w+(?: \w+)?)?|referral from the \w+|sent you (?:over|in)|"
    r"(?:is|are) being seen|(?:is|are) seen|aside from|other than|except for|told me that you have|"
    r"newly diagnosed|the reason for (?:your|the|today's) visit(?: today)? is|brings? you in (?:today )?(?:is|for))"
    r"(?: today| in| to see (?:me|us)(?: today)?)?(?: (?:for|with|because of|due to|of|about))?\s+", re.I)
_TRIM = re.compile(r"^(?:(?:a|an|the|some|this|that|these|his|her|their|your|my|our|an evaluation of|"
                   r"evaluation of|consultation (?:for|of)|a consultation for|further evaluation of)\s+)+", re.I)
_STOP = re.compile(r"\s*(?:[,.;:?!]|\b(?:and (?:i|you|we|he|she|they|it)|but|so|okay|can you|is that|which|"
                   r"that (?:i|you|he|she|they|we)|who|because|since|when|where|we're|i'm|you're|"
                   r"i've|you've|how|during|i|you|he|she|we|they|it's)\b)", re.I)
_NOT_A_COMPLAINT = re.compile(r"^(?:i|i'm|i've|me|you|us|it|that|this|here|today|now|a (?:second|minute|bit)|"
                              r"what|why|how)\b", re.I)


def reason(items: list[Unit]) -> tuple[str, Unit] | None:
    """(the complaint as said, the sentence it was said in), the first one stated; else None."""
    for unit in items:
        for match in _LEAD.finditer(unit.text):
            rest = unit.text[match.end():]
            stop = _STOP.search(rest)
            phrase = _TRIM.sub("", (rest[:stop.start()] if stop else rest).strip()).strip(" -")
            words = phrase.split()
            if 1 <= len(words) <= 10 and not _NOT_A_COMPLAINT.match(phrase):
                return phrase[:1].upper() + phrase[1:], unit
    return None
