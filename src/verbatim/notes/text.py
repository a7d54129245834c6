"""Sentences, content tokens and negation cues of transcript text (English).

Why our own code: the drafter and the verifier need the same few, predictable rules (a
sentence splitter that keeps "Dr." whole, a light suffix stemmer, first/second person folded
to one token so "I sleep" supports "Client reports they sleep"); NLP libraries with models
(spaCy, NLTK data) do not install here and would make the offline drafter non-deterministic
across versions.
"""

from __future__ import annotations

import re

_SPACED = [(re.compile(r"\s+([,.;:?!])"), r"\1"), (re.compile(r"\b(\w+) n't\b"), r"\1n't"),
           (re.compile(r"\b(\w+) '(s|re|ve|ll|d|m)\b"), r"\1'\2"), (re.compile(r"\s{2,}"), " ")]
_SENTENCE = re.compile(r"(?<=[.?!])\s+(?=[\"'A-Za-z0-9])")
_ABBREV = re.compile(r"\b(?:Dr|Mr|Mrs|Ms|St|vs|e\.g|i\.e)\.$", re.I)
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_FILLER = re.compile(r"^(?:(?:um+|uh+|so|well|okay|ok|honestly|yeah|like|you know|i mean|and|but|oh)\s*,?\s+)+", re.I)

NEGATION = frozenset({"no", "not", "never", "nothing", "none", "nobody", "neither", "nor", "without", "denies",
                      "denied", "deny", "cannot", "nope", "noone"})

NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "thirteen": "13", "fourteen": "14",
    "fifteen": "15", "sixteen": "16", "seventeen": "17", "eighteen": "18", "nineteen": "19", "twenty": "20",
    "thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "hundred": "100", "half": "0.5",
}

#: words that carry no evidence: function words, the note's own lead-ins, and person (folded below)
_STOP_WORDS = """
a an the and or but if then so as of to in on at by for with from about into over after before than that this
these those there here is am are was were be been being do does did doing have has had having will would shall
should can could may might must it its it's i'm i've i'd i'll you're you've you'd you'll we they them their theirs
he she him her his hers we're they're client clients patient patients therapist doctor clinician reports reported
reporting endorses endorsed states stated noted notes note said says suggested suggests asked asks discussed
describes described directed voice assistant
explained mentioned also just really very quite some any much many more most what which who whom when where why
how all each both few other such only own same too s t just don't also um uh mm hmm okay ok yeah yes well like
know mean kind sort lot get got go going gone thing things one's person person's
"""
STOP = frozenset(_STOP_WORDS.split())
#: first and second person fold to one token: a note rewrites "I" as "they" and "you" as "the client"
_PERSON_WORDS = "i me my mine myself you your yours yourself they them their theirs themselves"
PERSON = frozenset(_PERSON_WORDS.split())


def tidy(text: str) -> str:
    """Undo tokenised spacing ("do n't", "word ,") and collapse runs of spaces."""
    for pattern, repl in _SPACED:
        text = pattern.sub(repl, text)
    return text.strip()


_DISFLUENCY = re.compile(r"(?:,\s*)?\b(?:um+|uh+|uh-huh|mm-hmm|hmm+|you know)\b,?\s*", re.I)
_REPEAT = re.compile(r"\b(\w+)(?:\s*,?\s+\1\b)+", re.I)


def clean(sentence: str) -> str:
    """Drop disfluencies ("um", "uh", "you know") and stutters ("i , i just" → "i just")."""
    out = _REPEAT.sub(r"\1", _DISFLUENCY.sub(" ", sentence))
    out = re.sub(r"\s+([,.;:?!])", r"\1", re.sub(r"\s{2,}", " ", out)).strip(" ,")
    return out[:1].upper() + out[1:] if out and sentence[:1].isupper() else out


def sentences(text: str) -> list[str]:
    """Split ``text`` into sentences (keeps abbreviations such as "Dr." whole)."""
    parts: list[str] = []
    for piece in _SENTENCE.split(tidy(text)):
        if parts and _ABBREV.search(parts[-1]):
            parts[-1] = f"{parts[-1]} {piece}"
        else:
            parts.append(piece)
    return [p.strip() for p in parts if p.strip()]


def strip_fillers(sentence: str) -> str:
    """Drop leading discourse fillers ("Um, so, honestly, …") and capitalise what is left."""
    rest = _FILLER.sub("", sentence).strip()
    return rest[:1].upper() + rest[1:] if rest else sentence


def words(text: str) -> list[str]:
    """Lower-case word tokens (apostrophes kept inside words)."""
    return _WORD.findall(tidy(text).lower().replace("’", "'"))


def stem(token: str) -> str:
    """A light suffix stemmer: feelings/feeling/felt → feel is not attempted; -ing/-ed/-s/-ly are."""
    if token in NUMBER_WORDS:
        return NUMBER_WORDS[token]
    for suffix in ("ingly", "edly", "ing", "ed", "ies", "es", "ly", "s"):
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            base = token[: -len(suffix)]
            return base + "y" if suffix == "ies" else base
    return token


def content(text: str) -> set[str]:
    """The evidence-bearing stems of ``text`` (no function words, no person, no negation cues)."""
    out = set()
    for token in words(text):
        token = token.split("'")[0] if token.endswith(("'s", "'ll", "'re", "'ve", "'d", "'m")) else token
        if token in STOP or token in PERSON or token in NEGATION or token.endswith("n't"):
            continue
        out.add(stem(token))
    return out


def numbers(text: str) -> set[str]:
    """Numbers mentioned, as digits ("seven" → "7", "45%" → "45")."""
    found = set()
    for token in words(text):
        if token in NUMBER_WORDS:
            found.add(NUMBER_WORDS[token])
        elif token.isdigit():
            found.add(str(int(token)))
    return found


def negated(text: str) -> bool:
    """Whether ``text`` carries a negation cue (no, not, never, denies, …n't)."""
    return any(t in NEGATION or t.endswith("n't") for t in words(text))


def positive_answer(text: str) -> bool:
    """A short answer that says yes ("Yes.", "Yeah, a little.", "I have.", "Sometimes.")."""
    tokens = words(text)
    return bool(tokens) and len(tokens) <= 8 and not negated(text) and (
        tokens[0] in {"yes", "yeah", "yep", "sometimes", "definitely", "mm-hmm"}
        or " ".join(tokens[:2]) in {"i have", "i do", "i did", "a little", "i am", "a bit"})


def negative_answer(text: str) -> bool:
    """A short answer that says no ("No.", "Nope, never.", "Not really.", "No, I haven't.")."""
    tokens = words(text)
    return bool(tokens) and len(tokens) <= 8 and (tokens[0] in {"no", "nope", "never", "nah", "not", "none"}
                                                  or " ".join(tokens[:2]) in {"i haven't", "i don't", "i didn't"})
