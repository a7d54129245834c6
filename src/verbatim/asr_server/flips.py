"""Words whose mishearing flips what a sentence means, and when the recognizer doubts them.

A wrong "can't" for "can" reads as fluently as the right word, so a clinician cannot spot it
from the text; with the audio deleted the doubt mark is their only defence. These words are
therefore judged by a stricter rule than every other word (`reliability` flags a word under its
global confidence threshold, 0.25): a word of one of these classes is doubtful when Whisper's
probability for it is under ``FLIP_DOUBT`` —

- a **negation or its positive twin** (can/can't, do/don't, will/won't, did/didn't, is/isn't,
  …): the rival reading is offered as the word's alternative;
- a **number** (digits or number words) or a **time** ("4:30", "pm");
- a **sound-alike** of one of those ("for" / four, "to" / two, "want" / won't): the word it may hide
  is offered as the alternative;
- a **name** (a capitalised word inside a sentence, other than "I").

Besides its probability, a word is judged by its **competing hypotheses**: the readings a second
decode of the same window leaves open (`whisper.recognise`: a greedy decode without timestamps,
its per-step distribution over the vocabulary — the top readings and every reading of
`FLIP_READINGS` however far down —, and where the two decodes disagree). A meaning-flip word whose
competitors hold at least ``ALT_DOUBT`` of the probability is doubtful however sure the first
decode was ("doesn't" at 0.97, with "isn't" at 0.12); any other word is doubtful when a competitor
that would flip the meaning — a negation or its twin, a number, a time — holds ``PLAIN_DOUBT``
("you" at 0.86, with "two" at 0.12), and the competitor is offered as the word's alternative. A
reading of the same words is no competitor ("10" for "ten"), and the word left out (the second
decode did not hear it) competes with a negation or its twin only.

A window already in doubt (a word under 0.8, or a flipping competitor: `whisper.in_doubt`) is decoded
a third time from the same encoder output: a beam search's n-best list, and the same after a
prompt that primes the decoder for numbers and negations. A reading one of those hypotheses holds
in a word's place (within ``BEAM_DOUBT``, or ``PROMPTED_DOUBT`` after the prompt, of its search's
best) judges the word as a competitor does: a meaning-flip word read otherwise is doubtful, and so
is any word read as a negation, number or time ("spend with hours" read "seven hours"). Without any reading,
a word where a number or a negation is expected (`in_flip_slot`: "at high on Thursday", "did it
hit") is doubtful under ``SLOT_DOUBT``: a number heard as an unrelated word gets no flip reading
any weight from the decoder.

The thresholds are calibrated by ``bench/flip_calibrate.py`` on the flip sets' calibration half
(``bench/sets/flips``, ``bench/sets/flips_more/calibration.json``, plus the shared audio for
precision) and reported on the held-out half (``bench/sets/flips_more/heldout.json``): held-out
``flip_flag_recall`` 0.84 (26 of 31; calibration 0.92), against 0.61 (19 of 31; calibration 0.73)
before the third decode and the slots, see README.

The mark is the json-v2 tag ``meaning_flip`` on the word (see `recognizer.turns`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from verbatim.asr_server.scoring import normalise

FLIP_DOUBT = 0.5
"""Whisper word probability under which a meaning-flip word is marked doubtful (a second decode ran)."""
ALT_DOUBT = 0.1
"""Probability a competing reading must hold (second decode) to leave a meaning-flip word in doubt."""
PLAIN_DOUBT = 0.1
"""Probability a competing reading that flips the meaning must hold (second decode) to put any other
word in doubt ("you" at 0.86 with "two" at 0.12)."""
BEAM_DOUBT = 0.05
"""How far (mean log-probability per token) behind the best an n-best hypothesis of the third decode
may fall and still put its reading of a word in doubt."""
PROMPTED_DOUBT = 0.5
"""The same as `BEAM_DOUBT` for the n-best lists after a priming prompt (`whisper.PRIMING_PROMPTS`)."""
SLOT_DOUBT = 0.5
"""Word probability under which a word where a number or a negation is expected (`in_flip_slot`) is
doubtful whatever it reads: a number heard as an unrelated word ("at high on Thursday" for "at nine")."""
ALONE_DOUBT = 0.9
"""Word probability under which a meaning-flip word is doubtful when no second decode ran (pocketsphinx,
a re-decoded stretch over 30 s): the probability is then all there is to judge by."""
MEANING_FLIP = "meaning_flip"


@dataclass(frozen=True)
class Doubt:
    """The thresholds of the rule, probabilities in [0, 1]: ``flip`` (`FLIP_DOUBT`), ``alt``
    (`ALT_DOUBT`), ``plain`` (`PLAIN_DOUBT`) and ``alone`` (`ALONE_DOUBT`); for the third decode
    ``beam`` (`BEAM_DOUBT`, a log-probability gap) and ``prompted`` (`PROMPTED_DOUBT`, a gap); ``slot``
    (`SLOT_DOUBT`) for a word where a number or a negation is expected.

    One value so a calibration (``bench/flip_calibrate.py``) can try others on recognised words
    without recognising them again; the recognizer always uses `DOUBT`.
    """

    flip: float = FLIP_DOUBT
    alt: float = ALT_DOUBT
    plain: float = PLAIN_DOUBT
    alone: float = ALONE_DOUBT
    beam: float = BEAM_DOUBT
    prompted: float = PROMPTED_DOUBT
    slot: float = SLOT_DOUBT


DOUBT = Doubt()

_TWINS = {
    "can": "can't", "do": "don't", "does": "doesn't", "did": "didn't", "will": "won't", "is": "isn't",
    "was": "wasn't", "are": "aren't", "were": "weren't", "could": "couldn't", "would": "wouldn't",
    "should": "shouldn't", "have": "haven't", "has": "hasn't", "had": "hadn't", "must": "mustn't",
}
RIVALS: dict[str, str] = {**_TWINS, **{neg: pos for pos, neg in _TWINS.items()}, "cannot": "can", "not": "",
                          "never": "ever", "ever": "never", "no": "", "none": ""}
"""A negation's positive twin and back ("" when the rival reading is the word left out)."""
_NUMBERS_AND_TIMES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million "
    "first second third fourth fifth sixth seventh eighth ninth tenth half once twice am pm noon midnight "
    "o'clock"
)
_NUMBER_WORDS = frozenset(_NUMBERS_AND_TIMES.split())
SOUND_ALIKES: dict[str, str] = {"for": "four", "fore": "four", "to": "two", "too": "two", "won": "one",
                                "ate": "eight", "want": "won't", "wont": "won't", "cant": "can't", "then": "ten"}
"""Everyday words that sound like a meaning-flip word, with the reading they may hide (measured on the
flip set: "five" heard "for", "won't" heard "want to", "two" heard "to")."""
_DIGITS = re.compile(r"\d")
FLIP_READINGS: tuple[str, ...] = (*RIVALS, *(w for w in _NUMBERS_AND_TIMES.split() if w != "o'clock"),
                                  *(str(n) for n in range(61)), "100")
"""Readings whose probability the second decode looks up at every word, however unlikely the
decoder found them (`whisper`): negations and their twins, number and time words, numbers."""


_BEFORE_NUMBER = frozenset({"at", "about", "around", "until", "till", "past"})
_AFTER_NUMBER = frozenset({"times", "minutes", "hours", "days", "nights", "weeks", "months", "years", "pills",
                           "tablets", "milligrams", "mg", "o'clock", "am", "pm", "percent"})
_TWIN_OF_NEGATION = frozenset(_TWINS)


def in_flip_slot(before: str | None, after: str | None) -> bool:
    """Whether a word between ``before`` and ``after`` (the words heard around it, None at an edge)
    stands where a number or a negation is expected: after "at", "about", "around", "until", "till",
    "past" (a time, an amount), before "times", "minutes", "hours", "days", "pills", "mg", "pm", …,
    or right after a negation's positive twin ("did it hit" for "didn't hit": the "'t" heard as a word).
    """
    b, a = (before or "").lower(), (after or "").lower()
    return b in _BEFORE_NUMBER or b in _TWIN_OF_NEGATION or a in _AFTER_NUMBER


def is_flip_word(text: str, *, sentence_start: bool) -> bool:
    """Whether ``text`` (one json-v2 word) is a negation, a number, a time or a name."""
    low = text.lower()
    if low in RIVALS or low in SOUND_ALIKES or low in _NUMBER_WORDS or _DIGITS.search(low):
        return True
    return not sentence_start and text[:1].isupper() and low not in ("i", "i'm", "i'll", "i've", "i'd")


def rival(text: str) -> str | None:
    """The other reading of a negation or its twin ("can" → "can't"), keeping a capital; None if none."""
    other = RIVALS.get(text.lower()) or SOUND_ALIKES.get(text.lower())
    if not other:
        return None
    return other[:1].upper() + other[1:] if text[:1].isupper() else other


def flips_meaning(text: str) -> bool:
    """Whether ``text``, offered as a competing reading, would flip what a sentence means: a negation
    or its twin, a number or a time (a sound-alike or a capital alone is not enough: "for" competing
    with "safe" or "High" with "high" changes no fact)."""
    low = text.lower()
    return bool(low) and (low in RIVALS or low in _NUMBER_WORDS or bool(_DIGITS.search(low)))


def doubtful(text: str, probability: float, *, sentence_start: bool,
             competitors: tuple[tuple[str, float], ...] | None = None,
             beam: tuple[tuple[str, float], ...] | None = None, prompted: tuple[tuple[str, float], ...] | None = None,
             doubt: Doubt = DOUBT) -> bool:
    """Whether a word heard with ``probability`` gets the meaning-flip mark.

    ``competitors``: (reading, probability) pairs a second decode leaves open for the word
    (``""`` = the word left out), None when no second decode ran; a reading of the same words as
    ``text`` (any case, a number in digits or words: "10" for "ten") is not a competitor.
    ``beam`` and ``prompted``: the third decode's readings (`engine.Word`), None where it did not run.
    """
    return suggestion(text, probability, sentence_start=sentence_start, competitors=competitors,
                      beam=beam, prompted=prompted, doubt=doubt) is not None


def suggestion(text: str, probability: float, *, sentence_start: bool,
               competitors: tuple[tuple[str, float], ...] | None = None,
               beam: tuple[tuple[str, float], ...] | None = None, prompted: tuple[tuple[str, float], ...] | None = None,
               slot: bool = False, doubt: Doubt = DOUBT) -> str | None:
    """The doubt of `doubtful` with what to offer: the strongest competing reading that flips the
    meaning, else the word's rival (`rival`), else ``""`` (doubtful with nothing to offer); None when
    the word is not doubtful.

    The third decode's readings (``beam`` within ``doubt.beam`` of the best hypothesis, ``prompted``
    within ``doubt.prompted``) judge a word as the second decode's
    competitors do, each at full weight: a meaning-flip word another reading of which is held is
    doubtful, and so is any word a reading that flips the meaning is held for.
    ``slot``: the word stands where a number or a negation is expected (`in_flip_slot`); under
    ``doubt.slot`` it is doubtful whatever it reads.
    """
    second = _second_decode(text, probability, sentence_start=sentence_start, competitors=competitors, doubt=doubt)
    if second is None and slot and probability < doubt.slot:
        second = rival(text) or ""
    if second is not None or (beam is None and prompted is None):
        return second
    said = normalise(text)
    held = [alt for alt, gap in beam or () if gap <= doubt.beam]
    held += [alt for alt, gap in prompted or () if gap <= doubt.prompted]
    held = [alt for alt in held if normalise(alt) != said and (alt or text.lower() in RIVALS)]
    flipping = [alt for alt in held if flips_meaning(alt)]
    if is_flip_word(text, sentence_start=sentence_start) and held:
        return (flipping[0] if flipping else None) or rival(text) or held[0]
    return flipping[0] if flipping else None


def _second_decode(text: str, probability: float, *, sentence_start: bool,
                   competitors: tuple[tuple[str, float], ...] | None, doubt: Doubt) -> str | None:
    """`suggestion` from the word's probability and the second decode's competitors alone."""
    if competitors is None:
        # Nothing to weigh it against: a flip word is judged by its probability alone.
        if is_flip_word(text, sentence_start=sentence_start) and probability < doubt.alone:
            return rival(text) or ""
        return None
    said = normalise(text)
    # A reading of the same words is no rival: "10" for "ten", "Four" for "four".
    rivals = sorted(((alt, p) for alt, p in competitors if p >= min(doubt.alt, doubt.plain) and normalise(alt) != said),
                    key=lambda ap: -ap[1])
    if is_flip_word(text, sentence_start=sentence_start):
        # The word left out ("" where only the first decode heard it) flips a negation only.
        rivals = [(alt, p) for alt, p in rivals if p >= doubt.alt and (alt or text.lower() in RIVALS)]
        flipping = [alt for alt, _ in rivals if flips_meaning(alt)]
        if probability >= doubt.flip and not rivals:
            return None
        return (flipping[0] if flipping else None) or rival(text) or (rivals[0][0] if rivals else "")
    flipping = [alt for alt, p in rivals if p >= doubt.plain and flips_meaning(alt)]
    return flipping[0] if flipping else None
