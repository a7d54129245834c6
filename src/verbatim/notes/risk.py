"""Risk flags: what a client says about suicide, self-harm, harm to others, abuse or neglect.

A safety net, not an assessment. Found, never invented: each flag quotes the client's exact
words (the sentence as said, fillers and all) with segment id, speaker, time, category, the
clinical kind ("passive ideation", "past attempt", "emotional") and why it was flagged.

How a client turn is read:

- **Speaker.** Only the client's words are flagged. A clinician's screening question or safety
  advice is never a flag; a question gives its topic to the client's answer, which is read with
  it: "Um... kind of, yeah" is a yes (the fillers are not the answer), "No, never" is a denial,
  "What, like suicidal?" is a clarification and the next answer still answers the question.
  "Do you feel safe at home?" is asked the other way round: "No" is the disclosure. A question
  whose question mark the recognizer lost ("have you had any thoughts of suicide") is read by its
  interrogative shape; contractions without apostrophes ("i dont") and fillers inside a phrase
  ("i want to like die") are normalised before anything is matched.
- **Clauses and negation scope.** A sentence is cut into clauses; a negation cue governs a
  risk phrase only when nothing but function words, intent or belief verbs ("I would never
  really think about killing myself") stand between them. So "My ex forced me to have sex when
  I said no" and "If things don't change by the end of the month I'm going to kill myself"
  stay disclosures, and a negation that *is* the risk ("I don't want to live like this
  anymore") is part of the phrase, not a denial. "I'm not sure I want to live" is a hedge;
  "he doesn't hit me anymore" says it happened.
- **Denials.** A topic asked about and denied is a denial (with the question); a denial and
  then a disclosure in the same turn ("Not now. Back in college I did, though.") is a flag.
- **Look-alikes.** Idioms, literal accidents and media (``risk_lexicon.LOOKALIKES``) are not
  risk. Another person's suicide or self-harm ("my uncle died by suicide") is family history.
- **Meaning check.** A client turn no rule's phrase occurs in at all is also rated by meaning
  (``risk_reader``: a sentence encoder and small networks trained on the labelled sets); above its
  threshold it is a flag of kind ``MEANING_KIND`` that says so. A clinician question no rule gives a
  topic is read the same way, so its answer is read as an answer. It only adds: what the rules
  read — a denial, family history, a look-alike, a jest — stands.

Why our own code: clinical negation libraries (NegEx/ConText, e.g. negspacy, medspaCy) scope a
cue over a fixed window of written-note text ("denies SI"); spoken first-person risk talk
carries negation inside the risk phrase itself and across question and answer turns, and
spaCy would add a large dependency for a tokenizer. The rules here are small and deterministic;
the meaning check is what generalises to wording nobody wrote a rule for.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
import unicodedata
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from verbatim.notes import risk_reader
from verbatim.notes import text as tx
from verbatim.notes.evidence import CLIENT, CLINICIAN, Unit
from verbatim.notes.risk_frames import FRAMES
from verbatim.notes.risk_lexicon import (
    ANAPHORIC_QUESTION,
    ENTRIES,
    FOLLOW_UP_QUESTION,
    GENERIC_PEOPLE,
    INVERTED_QUESTION,
    LOOKALIKES,
    QUESTION,
    QUESTION_LOOKALIKE,
    READING,
    SENTENCE_LOOKALIKES,
    SLOTS,
    TRIVIAL,
    Entry,
)

T = TypeVar("T")

#: phrase entries, then compositional frames (``risk_frames``): both read the same way
_ENTRIES: tuple[Entry, ...] = (*ENTRIES, *FRAMES)

CATEGORY_NAMES = ("suicide", "self_harm", "harm_to_others", "abuse", "neglect")
#: ``status`` of a record with no flag (kept for stored notes and clients); the words a note
#: shows are ``NOTHING_DETECTED``
NONE_FOUND = "none found"
FOUND = "found"
#: what a note says when no flag was raised: what was checked, never an assessment
NOTHING_DETECTED = ("No risk statements detected by the automatic check (suicide, self-harm, harm to others, "
                    "abuse, neglect); this is not a risk assessment.")


@dataclass(frozen=True)
class Finding:
    """One risk phrase in one clause: ``negated`` (a denial), ``other_person`` (family history)."""

    category: str
    kind: str
    words: str
    negated: bool = False
    other_person: bool = False
    past: bool = False


# --- clause reading ------------------------------------------------------------------------
_CLAUSE = re.compile(r"\s*[;:!?]\s*|\s*,\s*|\s+[-–—]+\s+|\.\s+|\.{2,}\s*|(?<!even)\s+(?=(?:but|though|although|except|"
                     r"whereas|because|cause|'cause|so that|unless)\b)", re.I)
_ADVERB_COMMA = re.compile(r"\b(never|not|no|ever|really|honestly|seriously),\s+(?=(?:ever|never|really|not|"
                           r"no)\b)", re.I)
_TOKEN = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")
_NEG_CUES = frozenset({"not", "never", "no", "nobody", "nothing", "none", "noone", "neither", "nor", "nah", "nope",
                       "cannot", "without", "hardly"})
#: words a negation reaches across to the risk phrase (function words, intent and belief verbs)
_TRANSPARENT = frozenset(re.findall(r"\S+", """
i i'd i'm i'll i've im id ive would will could should might may must shall ever really actually even honestly
seriously truly think thinking thought thoughts believe feel felt feeling like want wanted wanting wanna going
gonna to plan planning planned intend intending intention have has had having been be being am is are was were
any of about do did does doing done it that anything something consider considered considering urge urges
desire try tried trying again so just at all a an the there he she they my me you your his her their one ones
kind sort certainly definitely absolutely currently now right lately recently much more mean yet quite still
once or anybody anyone someone somebody ever-- physically also thing things those these this other people else
"""))
_SUBJECT = frozenset({"i", "i'm", "i've", "i'd", "i'll", "im", "ive"})
#: words a negation reaches over a new subject through ("don't think i", "never said that i")
_RAISING = frozenset(re.findall(r"\S+", """
think thought believe believed feel felt say said know knew guess suppose mean meant that reckon expect imagine
sure want wanted wish like would will could should did do does was am is 've 'd 'll
"""))
_PAST = re.compile(r"\b(?:anymore|any more|no longer|not since|since then|these days)\b", re.I)
_IF = re.compile(r"\b(?:if|in case|whenever|should i)\b", re.I)
_ME = frozenset({"i", "i'm", "i've", "i'd", "i'll", "im", "ive", "me", "myself"})
_THEM = frozenset(re.findall(r"\S+", """
he she they he's she's they're they've he'd she'd his their mom mum mother dad father brother sister uncle aunt
cousin grandma grandpa grandmother grandfather nan son daughter wife husband partner boyfriend girlfriend friend
friends roommate ex kid child nephew niece stepdad stepmom stepfather stepmother neighbor neighbour colleague
coworker classmate parents family someone somebody people patient student man woman guy girl boy lady bloke
character person mate mates pal buddy bestie fiance fiancé fiancee fiancée flatmate housemate teammate client
resident tenant grandson granddaughter grandchild stepson stepdaughter twin godson goddaughter nan nana gran granny
fella fellow chap lad lass lads blokes guys men women teen teenager teenagers
"""))


#: contractions a recognizer or a hurried typist writes without their apostrophe ("i dont", "cant",
#: "im"): restored, so negation scope and every pattern read them as written English. Only forms
#: that are not also words of their own ("wont", "ill", "were", "its", "id", "hell" are left alone).
_BARE_CONTRACTION = re.compile(
    r"\b(do|does|did|ca|could|would|should|is|are|was|were|have|has|had|ai|must|need)nt\b"
    r"|\b(i)m\b|\b(i|you|they|we)ve\b|\b(you|they)re\b|\b(that|what|there|she|he|it)s(?=\s+(?:a|an|the|not|no|"
    r"been|going|gonna|gone|just|so|all|what|when|like|how|why|really|never|always|my|me|him|her|it|okay|ok)\b)")


def _restore(m: re.Match[str]) -> str:
    if m.group(1) is not None:
        return {"ca": "can't", "ai": "ain't"}.get(m.group(1), m.group(1) + "n't")
    if m.group(2) is not None:
        return "i'm"
    if m.group(3) is not None:
        return m.group(3) + "'ve"
    if m.group(4) is not None:
        return m.group(4) + "'re"
    return m.group(5) + "'s"


#: a word said twice or more in a row, as a recognizer writes a stammer ("i i had the the belt"): said once
_REPEATED = re.compile(r"\b([a-z]+(?:'[a-z]+)?)(?:\s+\1\b)+")


#: characters that show nothing (zero-width space and joiners, soft hyphen, direction marks, word joiner, BOM):
#: "sui\u200bcidal" reads as "suicidal"
_INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")


def normalise(text: str) -> str:
    """Lower case, straight apostrophes, "gon na" → "gonna", "mm hmm" → "mm-hmm", apostrophe-less contractions restored
    ("i dont" → "i don't", "cant" → "can't"), a stammer's repeated word said once ("the the" → "the"),
    no comma between negation adverbs; compatibility forms
    folded (NFKC: fullwidth "ｋｉｌｌ" is "kill") and invisible characters dropped (``_INVISIBLE``)."""
    out = _INVISIBLE.sub("", unicodedata.normalize("NFKC", tx.tidy(text))).replace("’", "'").replace("‘", "'").lower()
    out = re.sub(r"\b(gon|wan|got) na\b", r"\1na", out)
    out = re.sub(r"\b(mm|uh) (hmm|hm|huh)\b", r"\1-\2", out)  # a recognizer's "mm hmm" / "uh huh" is the yes
    out = _BARE_CONTRACTION.sub(_restore, out)
    out = _REPEATED.sub(r"\1", out)
    return _ADVERB_COMMA.sub(r"\1 ", out)


#: spoken fillers inside a phrase ("i want to like die", "i've been kind of thinking about…",
#: "i wish i was, like, dead"): dropped before the patterns read a sentence (the quote keeps them).
#: "like" is a filler only after a word it cannot follow as a verb or preposition ("to like
#: die"), never in "i'd like to", "feel like", "i like".
_FILLERS = (
    (re.compile(r",\s*(?:like|you know|kind of|sort of|kinda|sorta)\s*,\s*"), " "),
    (re.compile(r"\b(to|was|were|be|been|about|of|just|and|really|so|am|i'm|i've|it's|is|gonna|wanna|would|"
                r"could|might|keep|kept) like\b(?!\s+(?:to|it|that|this|a|an|the|him|her|them|me|you|my|his|"
                r"their)\b)"), r"\1"),
    (re.compile(r"\b(i|i'm|i've|i'd|to|was|am|be|been|just|really|and|it's|he|she|they|would|'d) "
                r"(?:kind of|sort of|kinda|sorta|literally|basically|actually|honestly|seriously|totally|"
                r"genuinely|truly)\b(?! (?:a|an|the|like|thing|things|stuff|person|day|days)\b)"), r"\1"),
    # "i don't even know if i want to live": "even" after a negation or the subject
    (re.compile(r"\b(don't|didn't|doesn't|not|never|can't|couldn't|wouldn't|won't|i) even\b"
                r"(?! (?:if|though|when|close)\b)"), r"\1"),
    # "want it to just stop", "could just disappear": "just" between a modal or "to" and its verb
    (re.compile(r"\b(to|could|would|'d|might|will|'ll|all|everything) just\b"), r"\1"),
    # "if i just was not around": "just" between a subject pronoun and a verb of being, feeling or
    # wanting (not before a belief verb: "i just think about dying" keeps its own subject)
    (re.compile(r"\b(i|we|he|she|they) just (?=(?:was|were|am|wasn't|weren't|feel|felt|wish|wished|want|wanted|"
                r"don't|can't|couldn't)\b)"), r"\1 "),
    # "a part of me wants to die": the client's own wish, said in the third person
    (re.compile(r"\b(?:a |some |the )?(?:part|bit|side) of me (?:that |just |really |kind of )*"
                r"(want|wish|hope|think|feel|keep|wonder|need)(?:s|es)\b"), r"i \1"),
)


def unfilled(sentence: str) -> str:
    """A normalised sentence without the fillers that break a phrase apart (``_FILLERS``)."""
    for pattern, repl in _FILLERS:
        sentence = pattern.sub(repl, sentence)
    return re.sub(r"\s{2,}", " ", sentence)


def clauses(sentence: str) -> list[str]:
    """The clauses of a normalised sentence (punctuation and contrastive or causal conjunctions)."""
    return [c.strip() for c in _CLAUSE.split(sentence) if c and c.strip()]


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


#: words right before a "no" that is quoted, not negating ("if I say no", "when I told him no")
_SAYING = frozenset({"say", "says", "said", "saying", "tell", "tells", "told", "answer", "answered", "him", "her",
                     "them"})


def _is_cue(token: str) -> bool:
    return token in _NEG_CUES or token.endswith("n't")


#: an intensifier a negation reaches across ("i would never in a million years hurt my kids")
_INTENSIFIER = re.compile(r"\b(?:in a (?:million|thousand|hundred|billion|zillion) years|under any circumstances|"
                          r"for (?:anything|the world))\b")


def _negated(before: str) -> bool:
    """Whether a negation cue governs what follows ``before`` (walk back over transparent words)."""
    tokens = _tokens(_INTENSIFIER.sub(" ", before))
    for i in range(len(tokens) - 1, -1, -1):
        t = tokens[i].removesuffix("'s")
        if t in ("or", "nor"):
            # "he's never laid a hand on me or threatened me": a negation before the "or" spans the
            # alternatives, when no new subject comes between ("i'm not sure whether to leave or…" is a hedge)
            window = tokens[max(0, i - 8): i]
            cue = next((k for k in range(len(window) - 1, -1, -1) if _is_cue(window[k])), None)
            return cue is not None and not any(x in _SUBJECT for x in window[cue + 1:]) and \
                not READING["HEDGE"].search(" ".join(window[max(0, cue - 3): cue + 2]))
        if t == "no" and i > 0 and tokens[i - 1] in _SAYING:
            return False  # "if I say no he shouts in my face": the word "no" said, not a negation
        if _is_cue(t) or (t == "one" and i > 0 and tokens[i - 1] == "no"):
            if READING["DOUBLE_NEGATION"].search(" ".join(tokens[max(0, i - 7): i])):
                return False  # "I'd be lying if I said I haven't…": the negation is itself denied
            return not READING["HEDGE"].search(" ".join(tokens[max(0, i - 3): i + 2]))
        if t in _SUBJECT and i > 0 and tokens[i - 1] not in _RAISING:
            # a new subject starts a new clause the recognizer did not punctuate ("i don't have a plan
            # or anything i just think about dying"); a belief verb or "that" raises the negation over
            # it ("i don't think i want to die")
            return False
        if t not in _TRANSPARENT:
            return False
    return False


def _someone_else(before: str) -> bool:
    """Whether the nearest subject before the phrase is another person ("my uncle", "she")."""
    for t in reversed(_tokens(before)):
        if t in _ME:
            return False
        if t in _THEM:
            return True
    return False


def _agent_is_client(before: str) -> bool:
    for t in reversed(_tokens(before)):
        if t in _ME:
            return True
        if t in _THEM or t in {"it", "that", "this"}:
            return False
    return False


#: how far back from a risk phrase its context is read (characters): a negation, subject or condition
#: governs a phrase from well within this; bounding it keeps a clause of many risk phrases (a run-on turn,
#: a phrase said over and over) linear in its length
_BEFORE = 400


def _before(clause: str, start: int) -> str:
    """The clause's words before ``start``, at most ``_BEFORE`` characters of them (from a word's start)."""
    if start <= _BEFORE:
        return clause[:start]
    window = clause[start - _BEFORE: start]
    return window[window.find(" ") + 1:]


@functools.lru_cache(maxsize=256)
def _has(pattern: re.Pattern[str], text: str) -> bool:
    """``pattern.search(text)``, remembered: the sentence- and clause-wide tests asked once per risk phrase."""
    return pattern.search(text) is not None


def _hypothetical(clause: str, start: int) -> bool:
    """A phrase inside an "if I ever…" clause or a safety-plan condition is not a statement of risk."""
    before = _before(clause, start)
    cond = list(_IF.finditer(before))
    if not cond:
        return False
    rest = before[cond[-1].end():]
    # A second subject after the condition's own starts the main clause ("if she leaves me I'm going to…").
    if len(re.findall(r"\b(?:i|i'm|i'll|i'd|i've|then)\b", rest)) > 1:
        return False
    return _has(READING["SAFETY_IF"], clause)


@functools.lru_cache(maxsize=64)
def _lookalike_spans(clause: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The look-alike spans of a clause, as their starts (sorted) and the running maximum of their ends:
    found once per clause, so a clause with many risk phrases costs no more than one with a single one."""
    spans = sorted((m.start(), m.end()) for pattern in LOOKALIKES for m in pattern.finditer(clause))
    ends = tuple(itertools.accumulate((e for _, e in spans), max))
    return tuple(s for s, _ in spans), ends


def _lookalike(clause: str, start: int, end: int) -> bool:
    """Whether a look-alike (``risk_lexicon.LOOKALIKES``) overlaps ``clause[start:end]``."""
    starts, ends = _lookalike_spans(clause)
    # the spans starting before ``end``; one of them overlaps when the furthest of their ends passes ``start``
    k = bisect.bisect_left(starts, end)
    return k > 0 and ends[k - 1] > start


#: a hedge right after a negated phrase: "not … exactly" keeps the wish it seems to deny
_HEDGED_AFTER = re.compile(r"[\s,]*(?:exactly|as such|per se|necessarily)\b")
#: the client quoting their own earlier words ("like I said I'd kill him…") …
_REPORTED = re.compile(r"\bi (?:said|say|told (?:you|him|her|them|people)|was saying|keep saying)"
                       r"(?: that)?(?: i'd| i)?\s*$")
#: … and taking them back in the same sentence
_RETRACTED = re.compile(r"\b(?:didn't|did not|don't|do not) (?:really |actually |literally )?mean (?:it|that)\b|"
                        r"\bjust (?:how i talk|a figure of speech|an expression|a saying|something (?:i|people) say)\b|"
                        r"\b(?:was|i'm|i was|am) (?:only |just )?(?:joking|kidding|venting|exaggerating|"
                        r"being dramatic)\b|"
                        r"\bnot (?:literally|seriously|for real)\b")


def _finding(entry: Entry, clause: str, m: re.Match[str]) -> Finding | None:
    before = _before(clause, m.start())
    category, kind = entry.category, entry.kind
    other = entry.other_person
    mine = bool(_ME & set(_tokens(m.group(0)))) or "my" in _tokens(m.group(0))
    if category in ("suicide", "self_harm") and not other and not mine and _someone_else(before):
        other = True
    if category == "self_harm" and not other and not re.search(r"\bmy ?self\b|\bmy own\b", m.group(0)) \
            and _someone_else(before):
        category, kind = "abuse", "physical"  # "he slammed the car door on my hand on purpose"
    if category == "harm_to_others" and kind == "thoughts of harming others":
        if not _agent_is_client(before) and m.group(0).split(" ")[0] not in _SUBJECT and not re.search(
                r"\b(?:want|wanted|thoughts?|thinking|urge|picture|imagine|fantasi[sz]e|going to|gonna|i'll|could|"
                r"tempted)\b", before):
            return None
        if re.search(r"\b(?:hit|beat|beating|punch|punching|hurt|hurting|choke|choking)\b", m.group(0)) and re.search(
                r"\b(?:my|our|the) (?:little |youngest |oldest )?(?:son|daughter|baby|kids?|child|children|toddler|"
                r"wife|husband|partner|girlfriend|boyfriend|mom|mother|dad|father)\b", m.group(0)) and not re.search(
                r"\b(?:want|thoughts?|thinking|urge|picture|imagine|fantasi[sz]e|going to|gonna|scared|"
                r"afraid)\b", before):
            category, kind = "abuse", "abuse by the client"
    if category in ("self_harm", "abuse") and READING["ANIMAL_AGENT"].search(before):
        return None  # "the cat scratched my arm until it bled"
    if category == "abuse" and kind == "physical" and " my " in f" {m.group(0)} " and _agent_is_client(before):
        return None  # "I banged my head on the door": the client's own accident
    if category == "abuse" and kind == "abuse of someone else" and _agent_is_client(before):
        kind = "abuse by the client"
    if category == "abuse" and kind in ("abuse by the client", "physical") and _agent_is_client(before) and \
            _PEER.search(m.group(0)):
        # "I hit my brother with a cricket bat": violence against a peer, not abuse of a dependent or partner
        category, kind = "harm_to_others", "violence toward others"
    if _hypothetical(clause, m.start()):
        return None
    # "I don't want to die exactly, I just want it all to stop": a negation hedged after the phrase is no denial
    negated = _negated(before) and not _HEDGED_AFTER.match(clause[m.end():])
    past = False
    if negated and _has(_PAST, clause):
        negated, past = False, True
    return Finding(category, kind, m.group(0), negated=negated, other_person=other, past=past)


#: a grown-up the client is no carer or partner of (``risk_lexicon`` slot ``PEER``)
_PEER = re.compile(rf"\b{SLOTS['PEER']}\b")

#: a means put to the client's own neck, throat or wrist: no context elsewhere in the sentence ("my dog",
#: "camping") makes it literal
_SELF_AIMED = re.compile(r"\b(?:around|round|over|on|to|against|into|at|across) my (?:own )?(?:neck|throat|wrists?|"
                         r"temple)\b")

#: someone else as the subject right before an answer's "did it" ("my cousin did it", "he tried that")
_OTHER_SUBJECT = re.compile(r"\b(?:he|she|they|someone|somebody|(?:my|his|her|their|our|a|one of my) [\w'-]+)\s+"
                            r"(?:(?:also|actually|really|once|finally|then|just|nearly|almost)\s+)?$")


def read(sentence: str, topic: frozenset[str] = frozenset(), kin_topic: frozenset[str] = frozenset(),
         then: str = "") -> list[Finding]:
    """The risk findings of one client sentence; ``topic``: categories already in the air (the
    question being answered, or an earlier statement in the turn) — they give "I did" its meaning
    and let plan words ("I have a plan") count; ``kin_topic``: another person's suicide or self-harm
    just told (family history), which "I think about doing the same" refers to. At most one finding
    per category: a plain one wins over a negated one (a denial and a disclosure in one sentence is a
    disclosure). ``then``: the sentence after it in the same turn, which may say the words were literal
    ("I cut myself pretty badly. Mandoline slicer, making a gratin."): a look-alike's literal context
    counts there too, unless this sentence says it was meant (``_MEANT``)."""
    found: dict[str, Finding] = {}
    whole = unfilled(normalise(sentence))
    parts = clauses(whole)
    explained = [whole] if _MEANT.search(whole) or not then else [whole, unfilled(normalise(then))]
    # an entry's "unless" reads the whole sentence: read once here, not once per clause (a long turn has hundreds)
    entries = [e for e in _ENTRIES if (not e.needs_topic or "suicide" in topic)
               and (e.unless is None or not e.unless.search(whole))]
    # likewise which sentence look-alikes have their literal context here ("my dog", "camping"), and whether the
    # sentence is said in jest: each found once, when a risk phrase first asks
    literal_words = functools.cache(lambda: [words for words, literal in SENTENCE_LOOKALIKES
                                             if any(literal.search(x) for x in explained)])
    trivial = functools.cache(lambda: TRIVIAL.search(whole) is not None and not READING["IN_EARNEST"].search(whole))
    for n, clause in enumerate([*parts, whole]):
        hits: list[Finding] = []
        for entry in entries:
            if entry.sentence != (n == len(parts)):
                continue  # clause entries read each clause; sentence entries the whole sentence, once
            for m in entry.pattern.finditer(clause):
                if not entry.strong and (_lookalike(clause, m.start(), m.end()) or (
                        not _SELF_AIMED.search(m.group(0)) and any(w.search(m.group(0)) for w in literal_words()))):
                    continue
                hyperbole = re.search(r"\b(?:kill|murder|strangle)", m.group(0)) or entry.kind == "abuse"
                if entry.category in ("harm_to_others", "abuse") and hyperbole and trivial():
                    continue  # "my boss said he'd kill me if I was late again, ha"
                f = _finding(entry, clause, m)
                if f is not None and not f.negated and _REPORTED.search(_before(clause, m.start())) and \
                        _has(_RETRACTED, whole):
                    f = replace(f, negated=True)  # "I know I said I wish I was dead, but that's just how I talk"
                if f is not None:
                    hits.append(f)
        if not hits and topic and n < len(parts):
            a = READING["ANAPHOR"].search(clause)
            if a is not None and not _hypothetical(clause, a.start()) and not _lookalike(clause, a.start(), a.end()):
                negated = _negated(_before(clause, a.start())) or a.group(0).startswith("nothing")
                words = re.sub(r"^.*?\b(?=i\b|i'|nothing\b)", "", a.group(0))
                # "My cousin did it." to "Have you ever thought about killing yourself?": another's act
                other = _OTHER_SUBJECT.search(_before(clause, a.start())) is not None
                hits = [Finding(c, "answer about the topic asked", words, negated=negated, other_person=other)
                        for c in sorted(topic)]
        for f in hits:
            key = f"{f.category}/other" if f.other_person else f.category
            if key not in found or (found[key].negated and not f.negated):
                found[key] = f
    if _PAST_THEN.search(whole) and _RESOLVED.search(whole):
        # "I used to think about dying when I was nineteen, but that was twenty years ago": thoughts long
        # resolved are history, not risk; a past attempt, plan, method or abuse told stays a flag.
        found = {k: f for k, f in found.items() if f.other_person or f.kind not in _THOUGHTS}
    kin = {f.category for f in found.values() if f.other_person} | (set(kin_topic) & {"suicide", "self_harm"})
    for category in sorted(kin - {f.category for f in found.values() if not f.other_person}):
        same = _SAME.search(whole)
        if same is not None and not _hypothetical(whole, same.start()):
            found[category] = Finding(category, "the same as another's act", same.group(0),
                                      negated=_negated(whole[: same.start()]))
    return list(found.values())


#: a sentence that says its harm was meant: the next sentence's literal context does not explain it away
_MEANT = re.compile(r"\b(?:on purpose|deliberately|intentionally|again|to (?:feel|punish|cope|calm|numb|stop)|"
                    r"because i (?:was|felt|hate|wanted|deserve))\b")
#: a time long past, and a sentence saying it is over: with both, thoughts (``_THOUGHTS``) then are history
_PAST_THEN = re.compile(r"\b(?:used to|years? ago|when i was (?:younger|a (?:kid|teen\w*|child)|in (?:school|college|"
                        r"high school|uni)|\d+|\w+teen|twenty\w*)|as a (?:kid|teen\w*|child)|back in (?:school|college|"
                        r"high school|uni|the day)|in high school|a long time ago|ages ago|when i first)\b")
_RESOLVED = re.compile(r"\b(?:not|never) (?:a worry|part of my life|something i \w+|an issue|a problem|come close|"
                       r"been back)\b|\blong gone\b|\bgone now\b|\bnowhere near (?:that|there|it)\b|"
                       r"\b(?:haven't|have not|hasn't|not) (?:had|felt|thought)\b.{0,40}\b(?:in|for) "
                       r"(?:over |more than )?(?:a decade|years|\w+ years|ages)\b|"
                       r"\b(?:don't|do not|never) (?:get|have|feel)\b.{0,30}"
                       r"\b(?:any ?more|these days)\b|\b(?:completely |totally |very )?different place\b|"
                       r"\b(?:got|getting) (?:help|through it|past it)\b|\bworked through (?:it|that|them)\b|"
                       r"\b(?:much )?(?:better|good) place\b|\bnot any ?more\b|\bit's been (?:like )?\w+ years\b|"
                       r"\bthat was (?:over |more than )?\w+ years ago\b")
#: the kinds of finding that are thoughts and urges, not acts
_THOUGHTS = frozenset({"passive ideation", "active ideation", "thoughts of harming others", "perceived burdensomeness",
                       "self-injury"})
#: the client saying of another person's suicide or self-harm that they think of doing the same
#: ("my brother killed himself and sometimes I think about doing the same")
_SAME = re.compile(
    r"\b(?:i|i've|i'm|i'd)\b (?:[\w']+ ){0,3}?(?:think\w*|thought|consider\w*|want\w*|wanna|tempted|urges?|"
    r"plan\w*|going to|gonna|might|could|tried|feel like|wonder\w*)\b (?:[\w']+ ){0,3}?(?:doing the same|do the same|"
    r"the same thing|the same way|doing it too|do it too|tried it too|doing that too|following (?:him|"
    r"her|them)|join(?:ing)? (?:him|her|them)|what (?:he|she|they) did|like (?:he|she|they) did|going the same way)\b"
    r"|\bi (?:tried|did|have done|'ve done|have tried|'ve tried) (?:it|that) (?:too|as well)\b")


def considered(sentence: str) -> bool:
    """Whether any rule's phrase occurs in a client sentence at all — found, denied, or cleared as a
    look-alike, a jest, a hypothetical or an accident. A sentence the rules read and cleared is theirs:
    the meaning check (``risk_reader``) is asked only about sentences no rule spoke to. A phrase that
    counts only with suicide in the air ("figure out how to do it") speaks to nothing without it."""
    whole = unfilled(normalise(sentence))
    parts = clauses(whole)
    return any(entry.pattern.search(clause) for n, clause in enumerate([*parts, whole]) for entry in _ENTRIES
               if entry.sentence == (n == len(parts)) and not entry.needs_topic)


def categories_in(sentence: str) -> list[str]:
    """The risk categories a client sentence discloses (not denied, not about someone else)."""
    return sorted({f.category for f in read(sentence) if not f.negated and not f.other_person})


#: a question with its question mark lost (recognizer text, lower case, unpunctuated): an
#: interrogative opening and the person asked ("have you had any thoughts of…", "is anyone
#: hurting you"); only for a sentence with no end punctuation at all, so a statement stays one
_INTERROGATIVE = re.compile(
    r"^(?:(?:so|and|okay|ok|alright|right|um+|uh+|now|also|then|well|can i ask|let me ask|i have to ask|"
    r"i need to ask|i want to ask|i'm going to ask|i'll ask)[\s,]+)*(?:have|has|had|do|does|did|are|is|was|were|"
    r"would|will|could|can|any|anything|anyone|anybody|how|what|when|where|who|why|which|ever|been)\b"
    r"(?=.*\b(?:you|your|yourself|anyone|anybody|someone|somebody|u)\b)")
#: a clinician's bare "any …" ("any self harm this week", "and any thoughts of suicide"): a question in
#: speech, though it names nobody (a client's "anything to make it stop" is not one)
_BARE_ANY = re.compile(r"^(?:(?:so|and|okay|ok|alright|right|um+|uh+|now|also|then)[\s,]+)*(?:any|anything)\b"
                       r"(?! (?:way|time|more|longer)\b)")


#: a clinician's unpunctuated question about someone else ("are they getting enough to eat"): an auxiliary, then
#: its subject
_ABOUT_THEM = re.compile(r"^(?:(?:so|and|okay|ok|alright|right|um+|uh+|now|also|then|well)[\s,]+)*(?:have|has|do|does|"
                         r"did|are|is|was|were|will|would|could|can)\s+(?:they|he|she|we|the|his|her|their|our|"
                         r"anyone|anybody|someone|somebody|everyone)\b")


#: a clinician's unpunctuated question after a lead-in ("the marks on your arm did you do those yourself",
#: "growing up did you ever go without food"): an auxiliary and "you" (or "that" that has or has not happened)
_LATER_QUESTION = re.compile(r"\b(?:did|do|does|have|has|had|are|were|would|could|can|will) (?:you|u|ya|anyone|"
                             r"anybody|someone|somebody)\b|\b(?:has|have|did) (?:that|this|it) (?:ever )?"
                             r"(?:crossed|come|been|happened)\b|"
                             # "…think about suicide is that something you've thought about", "those scratches on
                             # your arm are those from hurting yourself", "is there ever a time the kids are alone"
                             r"\b(?:is|was|are|were) (?:that|this|it|those|these) (?:something|from|because|what|ever|"
                             r"a thing)\b|\bis there (?:ever|any|anyone|anybody|someone|somebody|a time|anything)\b")


def asking(sentence: str, clinician: bool = False) -> bool:
    """Whether a sentence is a question: its question mark, or (with no end punctuation) its
    interrogative shape (``_INTERROGATIVE``; for a ``clinician``'s sentence also ``_BARE_ANY``,
    ``_ABOUT_THEM`` and ``_LATER_QUESTION``)."""
    text = unicodedata.normalize("NFKC", sentence).rstrip()  # a fullwidth "？" is a question mark
    if text.endswith("?"):
        return True
    if not text or not (text[-1].isalnum() or text[-1] == "'"):
        return False
    said_ = normalise(text)
    return bool(_INTERROGATIVE.search(said_) or (clinician and (_BARE_ANY.search(said_) or _ABOUT_THEM.search(said_)
                                                                 or _LATER_QUESTION.search(said_))))


def _is_question(unit: Unit) -> bool:
    return unit.question or asking(unit.text, clinician=unit.role == CLINICIAN)


_YOU = re.compile(r"\b(you|your|yours|yourself|you're|you've|you'd|you'll|ya|u)\b")
_FIRST_PERSON = {"your": "my", "yours": "mine", "yourself": "myself", "you're": "i'm", "you've": "i've",
                 "you'd": "i'd", "you'll": "i'll"}
#: a "you" after one of these is the object ("is anyone hurting you" → "hurting me"), else the subject
_OBJECT_AFTER = re.compile(r"(?:\w+ing|\w+ed|hit|hurt|to|with|at|for|on|from|about|touch|make|made|call|told|tell|"
                           r"give|gave|leave|left|push|shove|threaten|force|scare|let|keep|kept|against|toward|towards)$")


def mirrored(question: str) -> str:
    """A normalised question in the first person, as the client would say it: "have you harmed
    yourself" → "have i harmed myself", "is anyone hurting you" → "is anyone hurting me"."""
    def swap(m: re.Match[str]) -> str:
        word = m.group(1)
        if word in _FIRST_PERSON:
            return _FIRST_PERSON[word]
        return "me" if _OBJECT_AFTER.search(question[: m.start()].rstrip()) else "i"
    return _YOU.sub(swap, question)


def question_topic(sentences: list[str]) -> frozenset[str]:
    """Categories a clinician's turn asks about: its questions, and for a question that refers back
    ("Have you had thoughts like that?") the sentences before it in the same turn."""
    cats: set[str] = set()
    for i, s in enumerate(sentences):
        if not asking(s, clinician=True):
            continue
        text = normalise(s)
        generic = False
        # "You mentioned you've been cutting. When was the last time?": a when or how-often question asks
        # about what the turn said before it
        if ANAPHORIC_QUESTION.search(text) or FOLLOW_UP_QUESTION.search(text) or _HOW_OFTEN.search(text):
            lead_in = " ".join(normalise(x) for x in sentences[:i])
            # "Some people who feel this low think about not being alive. Has that come up for you?":
            # what people in general are said to think is what the question asks the client about
            generic = bool(GENERIC_PEOPLE.search(lead_in))
            text = " ".join(normalise(x) for x in sentences[: i + 1])
        asked = {c for c, p in QUESTION.items() if p.search(text)}
        # The question read from the client's side ("do you think about dying" → "do i think about
        # dying"): whatever the detector would read in the client's words is what the question asks
        # about, so every phrase and frame is also a screening question's wording.
        asked |= {f.category for f in read(mirrored(text)) if not f.other_person or generic}
        if QUESTION_LOOKALIKE.search(text):
            asked -= {"self_harm"}  # "did you hurt yourself when you fell?" asks about an accident
        cats |= asked
    return frozenset(cats)




#: a no that admits the thing asked about: not yet, not today, no more than usual, only a little, not physically
_HALF_NO = re.compile(r"^(?:(?:no|nah|well|um+|uh+)[\s,.]+)?(?:not yet|not today|not tonight|"
                      r"no more than (?:normal|usual|always|ever|most days|most people)|not more than usual|"
                      r"(?:only|just) (?:a little|a bit|a little bit|sometimes|now and then)|not physically|not much|"
                      r"not often|not as often|who doesn't|(?:i mean )?doesn't everyone|(?:i mean )?don't we all)\b")
#: a no that tells it happened a while back: "not recently", "not lately", "i'm eight days clean"
_NOT_LATELY = re.compile(r"^(?:(?:no|nah|well|um+|uh+)[\s,.]+)?(?:not (?:recently|lately|for a (?:while|bit|few "
                         r"(?:days|weeks)))|(?:i'm |i am |been )?(?:\w+ )?(?:days?|weeks?) clean|clean (?:for )?"
                         r"(?:\w+ )?(?:days?|weeks?))\b")


def answer(text: str) -> str | None:
    """"yes", "no", "past" (not now, but before), "unsure" ("I don't know"), "declined" ("I'd rather not
    say", "Would you have to tell someone if I did?") or None (not a yes/no answer) for a client's answer
    to a yes/no question."""
    said_ = normalise(text).strip(" .,!…")
    if READING["HEDGED_YES"].search(said_):
        return "yes"
    t = re.sub(r"\s*,\s*", " ", READING["LEAD_FILLER"].sub("", said_)).strip(" .,!…")
    if not t:
        return None
    t = re.sub(r"^nah[\s,]+(?=yeah\b)", "", t)  # "nah yeah" is a yes, "yeah nah" a no
    if _HALF_NO.match(t):
        return "yes"  # "not yet", "no more than usual", "only a little", "not physically"
    if _NOT_LATELY.match(t):
        return "past"  # "not recently", "i'm eight days clean"
    if READING["PAST_ANSWER"].search(t):
        return "past"
    if READING["UNSURE"].search(t):
        return "unsure"
    if READING["DECLINED"].search(t):
        return "declined"
    if READING["STRONG_YES"].search(t):
        return "yes"
    # the answer's first words: "yeah, not really" is no yes; "yeah they're fine … never" is one
    head = " ".join(t.split(",")[0].split(" but ")[0].replace("not sure", "").split()[:4])
    # "yeah nah" (Australian and New Zealand English) is a no
    if READING["YES"].search(t) and not re.search(r"\b(?:no|not|never|nah|naw)\b", head):
        return "yes"
    if READING["NO"].search(t):
        rest = re.sub(r"^(?:no|nope|nah|never)\b[\s,.!…]*", "", t)
        if rest and READING["PAST_ANSWER"].search(rest) and _told(rest):
            return "past"  # "no, not since i tried last month" (an act told; "no, not anymore" stays a no)
        if rest and _TAKEN_BACK.match(rest):
            return "yes"  # "no, sometimes"
        # "No... well, last night I did.": the denial taken back in the same breath is a yes
        corrected = _SELF_CORRECTION.search(t)
        after = t[corrected.end():] if corrected is not None else ""
        never = _NEVER_DID.search(after) if corrected is not None else None
        if corrected is not None and never is not None and _DID.search(t[corrected.start(): corrected.end() +
                                                                         never.start()]):
            never = None  # "I mean I did try once, but I've never told anyone"
        if corrected is not None and (_REDENIED.search(after) or never is not None or
                                      (_NOT_LIKE_THAT.search(after) and not _ACTED.search(after))):
            return "no"  # "No... I mean, I've thought life's hard, but no. Not that.": denied again at the end
        if corrected is not None:
            return "past" if _LONG_AGO.search(t[corrected.start():]) else "yes"
        return "no"
    return None


#: a clinician asking who cares for a dependent ("Who's watching the kids while you're at work?", "Who checks on
#: your mum?"); "who are you angry with" and "who do you talk to" ask nothing of the kind
_DEPENDENT = (r"(?:the |your |her |his |their |my |our )?(?:kids?|children|child|baby|babies|little ones?|boys|girls|"
              r"twins|son|daughter|mum|mom|mother|dad|father|nan|nana|gran|granny|grandma|grandmother|grandad|grandpa|"
              r"grandfather|wife|husband|partner|brother|sister|him|her|them)\b")
_WHO_CARES = re.compile(
    r"\b(?:who(?:'s| is| was| does| do| did| will| would| has| have)?|(?:is|has|does) (?:anyone|anybody|someone|"
    r"somebody))(?: been| usually| normally| else)? (?:[\w']+ ){0,2}?"
    r"(?:(?:look\w* after|watch\w*|mind\w*|check\w* (?:on|in on)|car\w* for|tak\w* care of|babysit\w*|feed\w*|"
    r"supervis\w*|keep\w* an eye on) (?:you\b|" + _DEPENDENT + r")|(?:pick\w*|help\w*) " + _DEPENDENT + "|"
    # "who's with you tonight?" asks about support, not care: only a dependent is someone one is "with"
    r"(?:stay\w* with|(?:at )?home with|with) " + _DEPENDENT + ")")
#: a who-question ("Who knows about it?", "And who's with them?")
_WHO = re.compile(r"^(?:(?:and|so|okay|ok|right|then)[\s,]+)*who\b")
#: a "nobody" that says the dependent is cared for or not there: the client does it, someone else is named as
#: with them, there are none, they have died or grown up, or are elsewhere (not ``_CARED_FOR``: after "nobody",
#: "they're fine on their own" is the disclosure)
_CARE_OTHERWISE = re.compile(
    r"\b(?:i do|i do it|i'm there|i am there|i'm with|i stay|i'd never leave|i would never leave|i never leave|"
    r"i look after|i take care|i'm home|i'm at home|(?:do|does) it (?:all )?(?:myself|ourselves)|"
    r"don't have (?:any )?(?:kids|children)|no (?:kids|children)|passed away|died|lives? (?:in|with|on his|on her)|"
    r"grown|(?:twenty|thirty|forty|fifty)[\w-]*|adults?|at (?:their|his|her) (?:dad|mum|mom|father|mother|gran|nan)'s|"
    r"(?:'s|is|are) (?:at home )?with (?:them|him|her)|has (?:them|him|her)|in (?:a )?(?:care home|nursery|daycare))\b")
#: an answer that no one does ("Nobody really.", "no one.")
_NOBODY = re.compile(r"(?:nobody|no one|no-one|noone|no body)\b")
#: a pause before saying more, besides a sentence of fillers ("Well.", "Honestly?"): "Okay, I'll be honest."
_HONEST = re.compile(r"\b(?:i'll be honest|to be honest|if i'm honest|truth is)\b")
#: a yes that confirms the no before it ("Yes, I'm sure.")
_SURE = re.compile(r"\b(?:sure|certain|positive|definitely|really|honestly|promise)\b")
#: the client says what they just said was untrue ("well actually no that's a lie, there was thursday…")
_LIED = re.compile(r"\b(?:that's a lie|that's not true|that isn't true|i'm lying|i was lying)\b"
                   r"(?![\s,]+(?:they|he|she|people|about|that|what|who|my)\b)")
#: a denial taken back: a correction marker, then the client saying they did ("no, well, I did once"), or
#: the denial said to be untrue
_SELF_CORRECTION = re.compile(
    _LIED.pattern + "|"
    r"\b(?:well|actually|i mean|except|apart from|other than|but|then again|although|though|wait|okay|ok|alright)"
    r"\b[\s,.]*"
    r"(?:[\w']+ ){0,5}?(?:i (?:did|tried|used to)|i've (?:thought|tried)|"
    # a bare auxiliary grants the act only about it ("well, I did once"), not a new matter ("but I've been tired")
    r"(?:i (?:have|do|was|had)|i've (?:had|done|been))(?=[\s,.!…]*$|[\s,]+(?:[\w']+ ){0,2}?(?:it|that|them|so|"
    r"once|twice|before|recently|lately|sometimes|a few times|a couple of times|actually|yeah|yes|thinking|close)\b)|"
    r"(?<!not )(?<!never )(?<!no' )(?:once|twice|one time)|"
    # "kind of" the hedge, not "that kind of person"
    r"yes|yeah|sometimes|a (?:bit|little)|(?<!that )(?<!the )(?<!what )(?<!any )(?<!this )(?:kind|sort) of)"
    r"\b(?! (?:not|never)\b)")
#: an answer that the client is safe, whatever the question's wording
_SAFE = re.compile(r"\b(?:i'm|i am|i feel|feel|feeling|i'm feeling) (?:\w+ )?safe\b")
#: an answer that the client is not safe ("i'm not safe", "i don't feel safe", "unsafe")
_UNSAFE = re.compile(r"\b(?:(?:i'm|i am|i feel|feel|feeling) (?:not|never)|(?:don't|do not|can't|cannot|never) "
                     r"(?:really |ever )?(?:feel|be)) (?:\w+ )?safe\b|\b(?:i'm|i am|i feel|feel|feeling) "
                     r"(?:\w+ )?unsafe\b")
#: a negation right before a phrase ("i don't feel safe"), not an answer's "no" ("um no, i feel safe")
_NOT_BEFORE = re.compile(r"(?:\bnot|\bnever|n't)\s+(?:\w+\s+)?$")
#: an answer that the people asked about are cared for: a "no" to an inverted question that still denies it
_CARED_FOR = re.compile(r"\b(?:they're|they are|he's|she's|he is|she is|we're|it's) (?:all |totally |completely |"
                        r"well |eating |doing |sleeping )?(?:fine|ok|okay|good|alright|all right|safe|looked after|"
                        r"cared for|covered|fed)\b|\b(?:got|has|have|with) (?:his|her|their) carers?\b|"
                        r"\bcarers? (?:come|comes|coming|visit\w*|pop\w* in)\b|"
                        r"\bnever (?:alone|on (?:his|her|their) own|left)\b")
#: a denial said again after the correction, closing the answer ("…, but no. Nothing like that.")
_REDENIED = re.compile(r"\b(?:but|so|and)[\s,.]+(?:no|nah|never|nothing like that)\b(?:[\s,.!]+(?:no|not that|"
                       r"nothing like that|not like that|never|that|like that|anything like that))*[\s,.!…]*$|"
                       r"\b(?:no|nah)[\s,.!]+(?:not that|nothing like that|not like that)[\s,.!…]*$")
#: "…, i mean i've been low but not like that": a state, not an act, taken back
_NOT_LIKE_THAT = re.compile(r"\bbut[\s,.]+not (?:like that|that|really|seriously|that bad)[\s,.!…]*$")
_ACTED = re.compile(r"\b(?:did|done|tried|once|twice|have|had|took|used to)\b")
#: "…, i mean i've had bad days but i've never tried": the act denied after a state was granted
_NEVER_DID = re.compile(r"\bbut[\s,.]+(?:i've |i have |i |i'd )?(?:never|not|haven't|didn't)"
                        r"(?: ever| actually| really| like)* (?:tried|done|acted|attempted|gone through|did|do|hurt|"
                        r"cut|hit|touched|laid a finger)\b")
#: a clinician asking when or how often, not whether ("When was the last time?", "How often are those thoughts
#: there?"): its answer is a time or a frequency
_HOW_OFTEN = re.compile(r"\b(?:how often|how many times|how frequently|how recently|how long ago|how long since|"
                        r"when (?:was|were|did|is|do|does)(?: \w+){0,3}? (?:last|most recent)|when's the last|"
                        r"when (?:was|did) (?:it|that|this) (?:start|begin|happen)|last time)\b")
#: a time or a frequency said ("Tuesday.", "Every night this week.", "Couple of times at school.", "In March.")
_WHEN_SAID = re.compile(
    r"\b(?:(?:every|each|most|some|other|the other) (?:day|night|morning|evening|week|weekend|time|other day)s?|"
    r"daily|nightly|weekly|constantly|all the time|always|often|a lot|lots|sometimes|once|twice|(?:\w+|a few|a couple "
    r"of|couple of) times|yesterday|today|tonight|last (?:night|week|month|year|weekend|time|term|summer|winter|"
    r"spring|autumn|fall)|this (?:morning|afternoon|week|month|year|weekend)|(?:on )?(?:mon|tues|wednes|thurs|fri|"
    r"satur|sun)days?|january|february|march|april|june|july|august|september|october|november|december|"
    r"christmas|easter|(?:a|an|one|two|three|four|five|six|few|couple of|\d+) (?:days?|weeks?|months?|years?) ago|"
    r"(?:a|one|two|three|four|five|six|seven) (?:days?|weeks?|months?) (?:back|now))\b")
#: a short sentence after a "no" that grants it after all ("Sometimes.", "Maybe sometimes.", "A bit, lately.")
_TAKEN_BACK = re.compile(r"^(?:(?:um+|uh+|er+m?|oh|well|i mean|i don't know|i dunno|but|and|okay|ok|alright|fine)"
                         r"[\s,.…?]+)*(?:maybe |probably |yeah |yes |only |just )?(?:sometimes|occasionally|"
                         r"once or twice|now and then|a (?:bit|little)|kind of|sort of|(?:the )?once|one time|twice|"
                         r"a (?:few|couple of) times)(?:[\s,.…]+(?:at night|lately|recently|these days|i guess|"
                         r"i suppose|maybe|yeah|really|though|if i'm honest|to be honest|honestly))*[\s.!…]*$")
#: an answer that grants it under a condition ("not unless…", "only when I'm drinking", "…except when he's drunk")
_CONDITIONAL = re.compile(r"\b(?:not unless(?! you (?:count|mean)\b)|only (?:if|when|after|once)|"
                          r"(?:except|apart from|other than) (?:when|if|after)|"
                          r"unless (?:he|she|they|someone|somebody|i)\b)")
#: a later sentence that opens with the answer ("And no, …", "But yes, …")
_LATE_ANSWER = re.compile(r"^(?:(?:and|but|so|um+|uh+|oh|well)[\s,.]+)*(?:no|nah|nope|never|yes|yeah|yep)\b")
_DID = re.compile(r"\b(?:did|done|tried|once|twice|took|attempt\w*|used to)\b")
#: a time close enough that "not since then" tells of it ("not since last week"; "not since the summer" is a no)
_RECENT = re.compile(r"\b(?:last (?:week|night|month|weekend|time)|yesterday|this (?:week|morning|month)|"
                     r"the other (?:day|night)|a (?:few|couple of) (?:days|weeks) ago|recently|"
                     r"on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b")
_LONG_AGO = re.compile(r"\b(?:before|used to|in the past|back then|years? ago|when i was|as a (?:kid|teen|teenager)|"
                       r"at school|in college|at uni|a long time ago|ages ago|once)\b")


def _told(said_: str) -> bool:
    """Whether a "not since …" tells of the act: an act named or a recent time ("not since I tried", "not since
    last week"; "not since the summer" is a no)."""
    return bool(_DID.search(said_) or _RECENT.search(said_))


def _past_told(text: str) -> bool:
    """A sentence that answers "not now, but it happened" and tells of it ("Not since I tried last month.")."""
    return answer(text) == "past" and _told(normalise(text))


def _correcting(text: str) -> bool:
    """A sentence that opens with a correction of what was just said (``_SELF_CORRECTION``), hesitations and
    commas aside ("Um, well, actually, yes.")."""
    opened = re.sub(r"^(?:(?:um+|uh+|er+|erm|oh)\b[\s,.]*)+", "", normalise(text)).replace(",", "")
    return _SELF_CORRECTION.match(opened) is not None or _LIED.search(opened) is not None


def _takes_back(turn: list[Unit], raw: dict[int, str]) -> bool:
    """Whether a client turn opens by taking back the "no" said just before it ("Well, actually, yes.",
    "Sometimes.", "Not since last week.")."""
    spoken = [u for u in turn if not _bare(raw.get(u.order, u.text))]
    if not spoken:
        return False
    text = spoken[0].text
    return _correcting(text) or _TAKEN_BACK.match(normalise(text)) is not None or _past_told(text)


def _probe(turn: list[Unit], topic: frozenset[str]) -> bool:
    """A clinician's short follow-up to a denial that asks nothing new ("Are you sure?", "Never?", "It's okay to
    tell me.")."""
    return (turn[0].role == CLINICIAN and len(tx.words(" ".join(u.text for u in turn))) <= 12
            and question_topic([u.text for u in turn]) <= topic)


def _bare(text: str) -> bool:
    """A sentence that is only fillers ("Um...") once "mm-hmm" and "uh-huh" are kept as answers."""
    said_ = normalise(text)
    if READING["HEDGED_YES"].search(said_.strip(" .,!…")):
        return False  # "I guess so." is all lead fillers, and an answer
    return not _tokens(READING["LEAD_FILLER"].sub("", said_))


#: a client turn that puts a question off without answering it ("Um.", "Why do you ask?", "It's complicated.")
_DEFLECTION = re.compile(r"^(?:why (?:do|would|are) you (?:ask|asking|want to know)|why|how come|it's complicated|"
                         r"it's hard to (?:say|explain)|what do you mean|i don't (?:really )?(?:want to|wanna) talk "
                         r"about (?:it|that)|i don't know how to (?:answer|say) (?:that|this|it)|that's a hard one|"
                         r"hard to say|where do i start|i don't know where to start)?[\s?.!…]*$")


def _deflects(turn: list[Unit], raw: dict[int, str]) -> bool:
    """Whether a client turn is only fillers and a deflection (``_DEFLECTION``)."""
    said_ = " ".join(READING["LEAD_FILLER"].sub("", normalise(raw.get(u.order, u.text))).strip(" .,!…")
                     for u in turn).strip()
    return _DEFLECTION.match(said_) is not None


def _clarifying(unit: Unit) -> bool:
    """A client's question back ("What, like suicidal?"): not a statement of risk, not the answer."""
    t = READING["LEAD_FILLER"].sub("", normalise(unit.text))
    return _is_question(unit) and len(_tokens(t)) <= 8 and bool(READING["CLARIFY"].search(t) or len(_tokens(t)) <= 4)


# --- the record ------------------------------------------------------------------------
def flags(items: list[Unit], meaning: bool = True) -> dict[str, Any]:
    """The risk check of a client's record (``verbatim.notes.evidence.units``).

    Returns ``{"status": "found"|"none found", "flags": [...], "denials": [...],
    "family_history": [...], "checked": str}``. A flag: ``{category, kind, reason, quote,
    segment_id, speaker, start_s, end_s}`` and ``question`` (the same shape, the clinician's
    question) when it answers one; ``quote`` is the client's words as said. A denial: the same,
    for a topic denied (``question`` when denied when asked). ``family_history``: another
    person's suicide or self-harm, same shape. ``checked``: the sentence a note shows when there
    is no flag (``NOTHING_DETECTED``), present only then. Clinician speech is never flagged —
    but a clinician-labelled turn marked ``speaker_uncertain`` (the recognizer could not tell whose
    voice it was) is read as the client's, and a flag or denial on any uncertain turn carries
    ``"speaker_uncertain": true`` and says so in its ``reason``.

    With ``meaning`` (the record's check; a note's own sentences are re-read without it), a client
    turn the rules found nothing in — no flag, no denial, no family history, not a clarifying
    question — is also rated by the meaning check (``risk_reader``): above its threshold it is a
    flag of kind ``MEANING_KIND`` quoting the turn, or the sentence or two in it that read most like risk.
    """
    raw = _raw_sentences(items)
    found: list[dict[str, Any]] = []
    denied: list[dict[str, Any]] = []
    family: list[dict[str, Any]] = []
    turns = _turns(items)
    pending: _Asked | None = None
    recent: list[frozenset[str]] = []  # categories raised in the last few turns (for follow-up questions)
    unread: list[list[Unit]] = []  # client turns the rules found nothing in (for the meaning check)
    unread_answers: dict[int, tuple[list[Unit], frozenset[str]]] = {}  # of those, answers: their question, topic
    after_denial: dict[int, list[Unit]] = {}  # of those, the rest of a turn after a denial and a "but": the turn
    cleared_later: list[tuple[list[Unit], Entries]] = []  # rule flags a later sentence of the turn may explain
    merged: set[int] = set()  # client turns read with the answer before them (a denial they take back)
    for n_turn, turn in enumerate(turns):
        if n_turn in merged:
            continue
        first = turn[0]
        if first.role == CLINICIAN:
            if any(u.speaker_uncertain for u in turn):
                # The recognizer could not tell whose voice this was: it may be the client's words
                # under the clinician's label. Read it as the client's, flagged for the clinician to check.
                found += _read_uncertain_clinician_turn(turn, raw)
            pending = _asks(turn, pending, recent, meaning)
            recent = (recent + [pending.topic])[-3:] if pending else recent[-3:]
            continue
        if first.role != CLIENT:
            continue
        question: list[Unit] | None = None
        topic: frozenset[str] = frozenset()
        inverted = family_asked = False
        if pending is not None and first.position == pending.position + 1:
            question, topic, inverted, family_asked = pending.question, pending.topic, pending.inverted, pending.family
        t_flags, t_denials, t_family, carry = _read_turn(turn, raw, question, topic, inverted, family_asked)
        after = turns[n_turn + 1] if n_turn + 1 < len(turns) else None
        if question is not None and t_denials and not t_flags and after is not None and \
                after[0].role == CLIENT and _takes_back(after, raw):
            # "No." then, in the client's next segment (the recognizer split at a pause), "Well, actually, yes,
            # last week.": the two are one answer
            both = _read_turn(turn + after, raw, question, topic, inverted, family_asked)
            if both[0]:
                t_flags, t_denials, t_family, carry = both
                turn = turn + after
                merged.add(n_turn + 1)
        probed = turns[n_turn + 2] if n_turn + 2 < len(turns) else None
        if question is not None and t_denials and not t_flags and after is not None and probed is not None and \
                _probe(after, topic) and \
                probed[0].role == CLIENT and _takes_back(probed, raw):
            # "No." – "Are you sure?" – "Sometimes.": the clinician's probe is answered by taking the "no" back
            again = _read_turn(probed, raw, question, topic, inverted, family_asked)
            if again[0]:
                t_flags, t_denials = again[0], []
                merged.add(n_turn + 2)
        if any(u.speaker_uncertain for u in turn):
            t_flags = [_uncertain(f) for f in t_flags]
            t_denials = [_uncertain(d) for d in t_denials]
        found += t_flags
        denied += t_denials
        family += t_family
        if meaning and question is None and t_flags and not t_denials and _explained_after(turn, t_flags, raw):
            cleared_later.append((turn, t_flags))
        if meaning and not (t_flags or t_denials or t_family) and carry is None:
            if question is not None and topic and not inverted and not family_asked:
                unread_answers[len(unread)] = (question, topic)
            unread.append(turn)
        elif meaning and t_denials and not t_flags and carry is None and (rest := _turned(turn)):
            # "I'm not gonna do anything stupid. Probably. But I've thought about putting the ute into a
            # tree.": what follows a "but" after a denial is read too; a flag there outweighs the denial
            after_denial[len(unread)] = turn
            unread.append(rest)
        # A clarification ("What, like suicidal?") or a deflection ("Um.", "Why do you ask?"): the question
        # stands for the next answer.
        deflected = question is not None and not (t_flags or t_denials or t_family) and _deflects(turn, raw)
        pending = (_Asked(pending.question, topic | (carry or frozenset()), inverted, turn[-1].position, family_asked)
                   if (carry is not None or deflected) and pending is not None and question is not None else None)
        raised = frozenset(f["category"] for f in t_flags + t_denials)
        recent = (recent + [raised])[-3:]
    if cleared_later:
        # "I'm going to hang myself. Well, my portrait — it's in the community art show.": the rules read the
        # first sentence; the meaning check, reading the whole turn, may be all but sure the rest explains it away
        plain = risk_reader.rate([_quote_span(turn, raw) for turn, _ in cleared_later])[:, 0]
        dropped = {id(e) for (_, entries), p in zip(cleared_later, plain, strict=True) if p >= risk_reader.CLEARED
                   for e in entries}
        found = [e for e in found if id(e) not in dropped]
    if unread:
        # Added after the rules have read every turn, so a meaning flag never gives a later answer its topic;
        # then put back in the record's order.
        position = {u.segment_id: u.position for u in items}
        # a turn's words after its denial outweigh the denial only when they read as risk more surely
        read_flags = _meaning_flags(unread, raw, frozenset(after_denial))
        # An answer the statement reader flagged is a disclosure; only the others are read as answers.
        flagged_turns = {e["segment_id"] for e in read_flags}
        answers = {n: qt for n, qt in unread_answers.items()
                   if not any(u.segment_id in flagged_turns for u in unread[n])}
        answer_flags, answer_denials = _meaning_answers(unread, answers, raw)
        # the denials of a category its turn's words after the "but" were flagged as
        taken_back = {(e["category"], u.segment_id) for e in read_flags for n, whole in after_denial.items()
                      if any(u.segment_id == e["segment_id"] for u in unread[n]) for u in whole}
        denied = [d for d in denied if (d["category"], d["segment_id"]) not in taken_back]
        found = sorted(found + read_flags + answer_flags, key=lambda e: position.get(e["segment_id"], 0))
        denied = sorted(denied + answer_denials, key=lambda e: position.get(e["segment_id"], 0))
    out: dict[str, Any] = {"status": FOUND if found else NONE_FOUND, "flags": found, "denials": denied,
                           "family_history": family}
    # The sentence that says nothing was detected goes only where nothing was (a reader showing
    # ``checked`` beside flags would print "no risk statements detected" over them).
    if not found:
        out["checked"] = NOTHING_DETECTED
    return out


@dataclass(frozen=True)
class _Asked:
    """A clinician question waiting for its answer: its turn (cited), topic, whether "no" is the
    disclosure, and the position of the last turn of the exchange (the answer must follow it)."""

    question: list[Unit]
    topic: frozenset[str]
    inverted: bool
    position: int
    #: it asks about the client's family ("Is there any history of suicide in your family?"): a yes is family
    #: history, a no denies nothing of the client's own
    family: bool = False


#: a question about the client's family or others, not the client ("…in your family?", "Has anyone close to you…")
_FAMILY_QUESTION = re.compile(r"\b(?:in (?:your|the) family|your family(?:'s)? history|family history|"
                              r"(?:any|a) (?:relative|family member)s?|anyone (?:in your family|close to you|you know)|"
                              r"any of your (?:family|relatives|friends))\b")
#: a question whether the client is or can keep safe ("Are you safe right now?", "Can you keep yourself safe
#: tonight?"): yes is the all-clear
_KEEP_SAFE = re.compile(r"\b(?:are you|will you be|would you be|can you|could you|will you|do you (?:feel|think)|"
                        r"are you feeling|you feel|you're|you are|you'll be|you can|you could)(?: (?:\w+ ){0,3}?)"
                        r"(?:keep (?:yourself|you)|stay|be|feel|feeling)? ?safe\b")
#: a question whether the client wants to live ("Do you want to live?", "Do you see a future for yourself?"): a
#: no is the disclosure
_LIFE_QUESTION = re.compile(r"\b(?:do|are|can) you (?:still |ever )?(?:want to (?:live|be alive|be here|keep (?:going|"
                            r"living)|go on)|see (?:a|any) future|have (?:a )?(?:reasons?|something|anything|things) "
                            r"to live for|feel like living|want to wake up)\b")
#: a question about means kept ("Do you still have the pills?", "Do you have access to a gun?"): asks about suicide
_MEANS_QUESTION = re.compile(r"\b(?:(?=.*\b(?:still|saving|saved|stockpil\w*|kept|hidden|hid)\b)(?:do|have) you "
                             r"(?:still )?(?:got|have|keep) (?:access to )?(?:the |a |any |those |your )?(?:pills|"
                             r"tablets|gun|firearm|weapon|rope|knife|blades?)\b|(?:do|does) (?:you|anyone at home) "
                             r"(?:have|got) access to (?:a |any |the )?(?:gun|firearm|weapon|pills|tablets|"
                             r"medication)s?\b)")
#: …unless the same question asks about an act or thought too ("Are you safe, or thinking of hurting yourself?")
_ASKS_ACT = re.compile(r"\b(?:thoughts?|thinking|suicid\w*|kill|hurt|harm|die|dying|end (?:your|it)|plan|at home|"
                       r"with (?:him|her|them)|there)\b")
#: a family question that asks about the client too ("…, or has anyone in your family?", "And have you ever…?")
_ASKS_CLIENT = re.compile(r"\b(?:have|did|do|are|were) you (?:ever |yourself |also )?(?:\w+ )?"
                          r"(?:thought|attempt\w*|tried|felt|had|hurt|cut|considered|wanted)\b|\byou yourself\b")
#: an answer to a family question that speaks of the client too ("No, but I have thought about it myself.")
_SELF_TOO = re.compile(r"\b(?:myself|me too|me as well|me also|so (?:have|did|do) i|i (?:have|did|do) too|"
                       r"but i (?:have|did|do|am)|just me|only me|but me|i think about it)\b|"
                       r"\bi(?:'ve| have)? (?:also |even )?(?:thought|tried|done|attempted)\b")


def _asks(turn: list[Unit], previous: _Asked | None, recent: list[frozenset[str]],
          meaning: bool = False) -> _Asked | None:
    """The question a clinician turn puts (its topic), or None when it asks nothing about risk; with
    ``meaning``, a question no rule gives a topic is read by the meaning check
    (``risk_reader.question_topic``: "Is anyone taking your money?" asks about abuse)."""
    sentences = [u.text for u in turn]
    if not any(_is_question(u) for u in turn):
        # "Yes, that's what I mean." after a client's clarification keeps the question standing.
        follows_it = previous is not None and previous.position + 1 == turn[0].position
        if previous is not None and follows_it and len(tx.words(" ".join(sentences))) <= 25:
            return _Asked(previous.question, previous.topic | question_topic([*sentences, "?"]), previous.inverted,
                          turn[-1].position, previous.family)
        return None
    topic = question_topic(sentences)
    last = normalise(next(u.text for u in reversed(turn) if _is_question(u)))
    wants_life = _LIFE_QUESTION.search(last) is not None
    if wants_life or _MEANS_QUESTION.search(last):
        topic |= {"suicide"}  # "Do you want to live?" (a no discloses), "Do you still have the pills?"
    if not topic and previous is not None and previous.position + 1 == turn[0].position and \
            ANAPHORIC_QUESTION.search(last):
        # "Why do you ask?" – "I ask everyone. Any thoughts like that?": the follow-up asks the question again
        return _Asked(turn, previous.topic, previous.inverted, turn[-1].position, previous.family)
    if not topic and _KEEP_SAFE.search(last):
        topic = frozenset({"suicide"})  # "Can you stay safe this weekend?" asks whether the client is at risk
    if _WHO_CARES.search(last):
        topic |= {"neglect"}  # "Who's with the baby right now?": "No one." tells of a dependent left alone
    if not topic:
        earlier = frozenset().union(*recent) if recent else frozenset()
        if earlier & {"suicide", "self_harm", "harm_to_others"} and FOLLOW_UP_QUESTION.search(last):
            topic = earlier
    if not topic and meaning:
        asked = " ".join(u.text for u in turn if _is_question(u))
        # "Some people who lose a spouse think about not going on. Has that been true for you?": the question
        # only points back, so the turn it points into is what is read
        if ANAPHORIC_QUESTION.search(normalise(asked)):
            asked = " ".join(sentences)
        rating = risk_reader.question_topic(asked)
        topic = frozenset({rating[0]}) if rating is not None else frozenset()
    if not topic:
        return None
    text = " ".join(normalise(u.text) for u in turn if _is_question(u))
    inverted = bool(INVERTED_QUESTION.search(text)) and topic <= {"abuse", "neglect"}
    if (_KEEP_SAFE.search(last) and not _ASKS_ACT.search(last)) or wants_life:
        inverted = True  # "Can you keep yourself safe tonight?", "Do you want to live?": a no is the disclosure
    family = (bool(_FAMILY_QUESTION.search(text)) and topic <= {"suicide", "self_harm"}
              and not _ASKS_CLIENT.search(text))
    return _Asked(turn, topic, inverted, turn[-1].position, family)


Entries = list[dict[str, Any]]


def _read_turn(turn: list[Unit], raw: dict[int, str], question: list[Unit] | None, topic: frozenset[str],
               inverted: bool, family_asked: bool = False) -> tuple[Entries, Entries, Entries, frozenset[str] | None]:
    """Flags, denials and family history of one client turn; the last item is the topic to carry
    when the turn is only a clarifying question (the question still waits for its answer)."""
    # A turn's words as said: "Mm-hmm." is an answer even though the record's sentence drops it as a filler.
    spoken = [u for u in turn if not _bare(raw.get(u.order, u.text))]
    if not spoken:
        return [], [], [], (frozenset() if question is not None else None)
    if family_asked and _SELF_TOO.search(normalise(_quote_span(spoken, raw))):
        family_asked = False  # the answer is about the client too: read as an answer about the client's own risk
    flagged: dict[str, dict[str, Any]] = {}
    denials: dict[str, dict[str, Any]] = {}
    family: list[dict[str, Any]] = []
    q = _quote_units(question) if question else None
    start = 0
    if question is not None:
        while start < len(spoken) and _clarifying(spoken[start]):
            start += 1
        if start == len(spoken):
            extra = frozenset(f.category for u in spoken for f in read(u.text) if not f.other_person)
            return [], [], [], extra
        verdict = answer(raw.get(spoken[start].order, spoken[start].text))
        if verdict is None:
            # "Guns are at my brother's now. And no, I don't think that way.": the answer after a preamble
            for later in range(start + 1, min(start + 3, len(spoken))):
                late = answer(spoken[later].text) if _LATE_ANSWER.match(normalise(spoken[later].text)) else None
                if late in ("yes", "no"):
                    start, verdict = later, late
                    break
        if verdict == "unsure" and start + 1 < len(spoken) and answer(spoken[start + 1].text) not in (None, "unsure"):
            # "I don't know. Maybe. Sometimes.": the hedge is followed by the answer
            start += 1
            verdict = answer(spoken[start].text)
        hesitated = False
        for later in range(start + 1, min(start + 4, len(spoken))) if verdict == "no" else ():
            # "No. Well, sometimes at night I do." / "No. Not seriously. Well, maybe once.": a sentence
            # right after the denial takes it back
            said_later = normalise(spoken[later].text)
            between = turn[turn.index(spoken[start]) + 1: turn.index(spoken[later])]
            hesitated = hesitated or any(_bare(raw.get(u.order, u.text)) or _HONEST.search(normalise(u.text))
                                         for u in between)
            if _correcting(spoken[later].text):
                joined = raw.get(spoken[start].order, spoken[start].text) + " " + spoken[later].text
                if answer(joined) in ("yes", "past"):
                    verdict = answer(joined)
                    start = later
                    break
                hesitated = True
                continue  # "No. Well... no. Okay, sometimes.": a hesitant second no is read past, not taken as final
            if answer(spoken[later].text) == "yes" and not _REDENIED.search(said_later) and (
                    (hesitated and not _SURE.search(said_later)) or _told(said_later)):
                # "No, no... well. Last week, yes." / "Nope. Well. Honestly? Every night.": yes after a hesitation
                verdict, start = "yes", later
                break
            if _TAKEN_BACK.match(said_later):
                # "No. I mean, I don't know. Sometimes. At night.": a later bare "sometimes" takes the "no" back
                verdict, start = "yes", later
                break
            if _past_told(spoken[later].text):
                # "No. Not since I tried last month.": not now, but it happened ("No. Not anymore." stays a no)
                verdict, start = "past", later
                break
        if inverted and verdict is None:
            # "I feel safe, yeah." / "I'm scared of him." to a safety question
            said_ = normalise(spoken[start].text)
            if re.search(r"\b(?:not safe|unsafe|scared|afraid|frightened|terrified)\b", said_):
                verdict = "no"
            elif re.search(r"\bsafe\b", said_) and not tx.negated(said_):
                verdict = "yes"
        if verdict is None and topic & {"abuse", "harm_to_others"} and READING["WHO"].search(
                READING["LEAD_FILLER"].sub("", normalise(spoken[start].text))):
            verdict = "yes"  # "Mostly my ex." to "Has anyone been hurting you?"
        asked_last = normalise(next((u.text for u in reversed(question) if _is_question(u)), question[-1].text))
        if topic and verdict in (None, "no") and _HOW_OFTEN.search(asked_last) and not inverted:
            # "Tuesday." / "Every night this week." to "When was the last time?" / "How often?": a time or a
            # frequency is the answer that it happens; "Not since March." to "When did you last try?" tells of it
            first = READING["LEAD_FILLER"].sub("", normalise(spoken[start].text))
            since = re.match(r"not since\b", first)
            if since is not None and _WHEN_SAID.search(first[since.end():]):
                verdict = "past"
            elif verdict is None and _WHEN_SAID.search(first) and not re.match(r"(?:never|not|no)\b", first):
                verdict = "yes"
        said_first = normalise(spoken[start].text)
        safe = _SAFE.search(said_first)
        # the negation that matters is the one before "safe": "yeah I'm safe, no plans or nothing" is safe
        safe_said = (safe is not None and not _NOT_BEFORE.search(said_first[: safe.start()])
                     and not re.search(r"\b(?:not|never)\b|n't", safe.group()))
        if verdict == "yes" and not inverted and safe_said:
            verdict = "no"  # "Yeah, I'm safe." to "Are you safe? Any thoughts of ending your life?"
        unsafe = _UNSAFE.search(said_first) is not None
        if unsafe:
            # "Yeah, I'm not safe." / "No, I don't feel safe." to any risk question: not safe is the disclosure
            verdict = "no" if inverted else "yes"
        cared_for = _CARED_FOR.search(normalise(_quote_span(spoken[start:], raw))) is not None
        if inverted and verdict == "no" and (cared_for or safe_said):
            # "No, they're fine, they eat, they're clean." to "Are you able to make sure they're fed?";
            # "Um no, I feel safe there." to "Do you feel safe at home?"
            verdict = "yes"
        if verdict in ("yes", "no", None) and _CONDITIONAL.search(
                " ".join(normalise(u.text) for u in spoken[start: start + 2])):
            # "No... not unless he comes near my kids again." / "Mostly. Except when he's been drinking.":
            # granted under a condition, which is neither a denial nor an all-clear
            verdict = "conditional"
        if inverted and verdict == "yes" and READING["HEDGED_YES"].search(said_first.strip(" .,!…")):
            verdict = "unsure"  # "Probably." to "Are you safe tonight?" is no all-clear
        no_one = _NOBODY.match(READING["LEAD_FILLER"].sub("", said_first)) is not None
        if no_one and _WHO.match(asked_last):
            verdict = None  # "No one knows." to "Who knows about the cutting?": a who-question has no yes or no
        if inverted and verdict in ("yes", "no"):
            verdict = "no" if verdict == "yes" else "yes"
        # "Nobody really. The eldest is nine." to "Who looks after the kids…?" tells of a dependent left alone;
        # "Nobody, I do it all myself." / "No one, she passed away in March." does not
        nobody = ("neglect" in topic and no_one and _WHO_CARES.search(asked_last) is not None
                  and not _CARE_OTHERWISE.search(normalise(_quote_span(spoken[start:], raw))))
        if nobody:
            verdict = "yes"
        quote = _quote_span(turn[: turn.index(spoken[start]) + 1], raw)
        for c in sorted(topic):
            if family_asked:
                # "Yes, my uncle." to "Any history of suicide in your family?": another's act, not the client's
                if verdict in ("yes", "past"):
                    family.append(_entry(c, "family history", "answered yes to a question about family", spoken[start],
                                         quote, q))
                continue
            if verdict in ("yes", "past", "unsure", "declined", "conditional"):
                # a screening question left unanswered is shown, not dropped: the clinician asks again
                reason = ("says they are not safe when asked" if unsafe else
                          "says no one looks after them when asked" if nobody else
                          "answered no to a safety question" if inverted and verdict == "yes" else
                          "answered yes when asked" if verdict == "yes" else
                          "did not deny when asked (unsure)" if verdict == "unsure" else
                          "declined to answer when asked" if verdict == "declined" else
                          "did not deny when asked: only under a condition" if verdict == "conditional" else
                          "denies now, says it happened before")
                flagged.setdefault(c, _entry(c, "answer when asked", reason, spoken[start], quote, q))
            elif verdict == "no":
                denials.setdefault(c, _entry(c, "denied when asked", "denied when asked", spoken[start], quote, q))
    # "Yes, I do." to "Do you feel safe at home?" is the all-clear: its "I do" refers to feeling safe, not to the topic
    all_clear = question is not None and inverted and not flagged and bool(denials)
    context = set() if family_asked or all_clear else set(topic)
    kin: set[str] = set(topic) if family_asked else set()
    reading = spoken[start:] if question is not None else spoken
    for n, unit in enumerate(reading):
        if _clarifying(unit):
            continue
        then = reading[n + 1].text if n + 1 < len(reading) else ""
        otherwise = _said_otherwise(then)
        sentence = _with_fragment(unit, reading[n + 1:])
        own = unfilled(normalise(unit.text))
        for f in read(sentence, frozenset(context), frozenset(kin), then):
            if f.category in otherwise and not f.negated and not f.other_person:
                continue  # "I don't want to be here anymore. In Leeds, I mean." / "…murder him. Not literally."
            quote = raw.get(unit.order, unit.text)
            if sentence != unit.text and f.words not in own:
                # words found in the short sentence joined on are its quote ("We went shopping. I want to die."),
                # or the two sentences' when they run across both
                nxt = reading[n + 1]
                quote = (raw.get(nxt.order, nxt.text) if f.words in unfilled(normalise(nxt.text))
                         else _quote_span([unit, nxt], raw))
            if f.other_person:
                kin.add(f.category)
                why = f'about someone else: "{f.words}"'
                family.append(_entry(f.category, "family history", why, unit, quote, None))
                continue
            context.add(f.category)
            asked = q if (question is not None and f.category in topic) else None
            if f.negated:
                if f.category not in flagged:
                    why = "denied when asked" if asked else f'denies it: "{f.words}"'
                    denials.setdefault(f.category, _entry(f.category, "denial", why, unit, quote, asked))
                continue
            when = " (in the past)" if f.past else ""
            reason = f'{f.kind}{when}: "{f.words}"' + (" — in answer to the question" if asked else "")
            if f.category not in flagged or flagged[f.category]["kind"] in _WEAK:
                # The words that carry the risk are the better quote than a bare "yes" (the question stays).
                flagged[f.category] = _entry(f.category, f.kind, reason, unit, quote, asked)
            denials.pop(f.category, None)  # a denial followed by a disclosure is a disclosure
    # one family-history entry per category and sentence (the answer's yes and the words that name the act)
    unique: dict[tuple[str, str], dict[str, Any]] = {}
    for e in family:
        unique.setdefault((e["category"], e["segment_id"]), e)
    family = list(unique.values())
    return list(flagged.values()), list(denials.values()), family, None


#: a sentence that says where or what the one before meant: "In Leeds, I mean." / "Cutting my hours, I mean, …"
_OTHERWISE = re.compile(r"^(?:(?:um+|uh+|well|no|sorry|oh|er+m?)[\s,.]+)*((?:[\w'-]+ ){0,5}[\w'-]+),? "
                        r"(?:i mean|i meant|that is)\b")  # not "…, anyway": a turn away says nothing of what was meant
#: … unless it says the words were meant as they sound ("Alive, I mean." / "On purpose, I mean.")
_AS_SAID = re.compile(r"\b(?:world|earth|life|lives|alive|living|exist\w*|planet|dead|death|die|dying|for good|forever|"
                      r"permanently|properly|seriously|really|literally|on purpose|my ?self|at all|everything|everyone|"
                      r"anything|all of it|for real|deliberately|intentionally|not|never|no|arms?|wrists?|legs?|"
                      r"thighs?|skin|stomach|belly|hips?|chest|body|blood|scars?|pills?|tablets?|meds|overdose|rope|gun|bridge|"
                      r"train|knife|blade|razor|lighter|wheels?)\b")


#: a sentence that takes back the one before: "Not literally, obviously." / "Only joking."
_NOT_MEANT = re.compile(r"^(?:(?:um+|uh+|well|oh|no|i mean)[\s,.]+)*(?:not literally|(?:i'm |i was )?(?:only |just )?"
                        r"(?:joking|kidding)|obviously not|(?:not|no) (?:seriously|for real))\b")


def _said_otherwise(sentence: str) -> frozenset[str]:
    """The categories a sentence takes back from the one before it: all of them for "Not literally." /
    "Only joking." (``_NOT_MEANT``); suicide and self-harm for one that says where or what was meant
    ("In Leeds, I mean.": ``_OTHERWISE``, unless ``_AS_SAID``); none otherwise."""
    said_ = normalise(sentence)
    if _NOT_MEANT.match(said_):
        return frozenset(CATEGORY_NAMES)
    m = _OTHERWISE.match(said_)
    if m is not None and not _AS_SAID.search(m.group(1)) and not read(m.group(1)):
        return frozenset({"suicide", "self_harm"})
    return frozenset()


MEANING_KIND = "reads like a risk statement"
"""``kind`` of a flag the meaning check (``risk_reader``) raised where no rule matched."""
MEANING_ANSWER_KIND = "answer read as yes"
"""``kind`` of a flag on an answer the rules could not read that the answer reader reads as a disclosure."""
MEANING_KINDS = (MEANING_KIND, MEANING_ANSWER_KIND)
#: a client turn up to this many words is also rated whole (the reader was trained on whole utterances);
#: every turn of several sentences a sentence and two sentences at a time, so one risk sentence among
#: ordinary ones is not diluted
_WHOLE_TURN_WORDS = 60
#: a client turn shorter than this is not rated by the meaning check
FEWEST_WORDS = 4
#: a turn or part shorter than this is held to ``risk_reader.PART_THRESHOLD`` (the training sets' short answers
#: are left out of the reader's training too: ``bench/train_risk_reader.ANSWER_WORDS``)
SHORT_WORDS = 8


#: a sentence after a denial that turns against it: "Probably. But I've thought about …" / "Though some nights …" /
#: "He doesn't hit me. He just holds my arm and squeezes."
_BUT = re.compile(r"^(?:(?:um+|uh+|er+m?|oh|well|probably|maybe|i mean|and|like)[\s,.…]+)*"
                  r"(?:but|though|although|except|still|mind you|then again|that said|saying that|"
                  r"(?:(?:he|she|they|i|it|we)(?:'s|'re|'m)? )?(?:just|only))\b")


#: the opening of a sentence that reads the one before again ("Well, my portrait…", "I mean the hedge", "Only
#: joking"); "Anyway, work's been busy" or "We went shopping" turns to something else and explains nothing
_REREAD = re.compile(r"^(?:well|i mean|as in|not (?:literally|really|seriously)|(?:i'm |i was )?(?:only |just )?"
                     r"(?:joking|kidding)|ha+|(?:ha)+|lol|it's|it is|it was|that's|that is|that was|like)\b")


def _explained_after(turn: list[Unit], entries: Entries, raw: dict[int, str]) -> bool:
    """Whether every flag of a turn quotes one of its sentences that more of the turn follows, the next of
    them reading it again (``_REREAD``: what may explain it away)."""
    spoken = [raw.get(u.order, u.text) for u in turn if not _bare(raw.get(u.order, u.text))]
    at = [spoken.index(e["quote"]) if e["quote"] in spoken else len(spoken) for e in entries]
    last = max(at)
    return last < len(spoken) - 1 and _REREAD.match(normalise(spoken[last + 1])) is not None


def _turned(turn: list[Unit]) -> list[Unit]:
    """The sentences of a turn from the first one after its opening that begins with a "but" (``_BUT``), else []."""
    for n in range(1, len(turn)):
        if _BUT.match(normalise(turn[n].text)):
            return turn[n:]
    return []


def parts(sentences: list[T]) -> list[list[T]]:
    """The parts of a turn of several sentences the meaning check reads besides the whole: each
    sentence and each pair (none for a turn of one sentence; a turn of two gives its two sentences)."""
    return [sentences[i: i + size] for size in (1, 2) for i in range(len(sentences) - size + 1)
            if size < len(sentences)]


def _meaning_flags(turns: list[list[Unit]], raw: dict[int, str], strict: frozenset[int] = frozenset()) -> Entries:
    """The meaning check's flags on client turns the rules found nothing in: one per turn at most; a
    turn in ``strict`` (what follows a denial) is held to ``PART_THRESHOLD`` as a whole too."""
    windows: list[tuple[int, list[Unit], float]] = []
    for n, turn in enumerate(turns):
        spoken = [u for u in turn if not _bare(raw.get(u.order, u.text))]
        if not spoken:
            continue
        if len(tx.words(_quote_span(spoken, raw))) <= _WHOLE_TURN_WORDS:
            windows.append((n, spoken, risk_reader.PART_THRESHOLD if n in strict else risk_reader.THRESHOLD))
        # one risk sentence among ordinary ones is diluted in the whole: each sentence and pair is read too
        windows += [(n, part, risk_reader.PART_THRESHOLD) for part in parts(spoken)]
    # A short answer ("Mm-hmm.", "Frequently.") means what the question means: the rules' reading, not this one.
    # A sentence the rules spoke to is theirs (asked once per sentence: it is in several windows).
    ruled = {u.order for turn in turns for u in turn if considered(u.text)}
    windows = [(n, units_, t) for n, units_, t in windows if len(tx.words(_quote_span(units_, raw))) >= FEWEST_WORDS
               and not any(u.order in ruled for u in units_)]
    # Read alone, a short answer ("yeah when i was ten") is mostly its question: the reader must be surer of it.
    windows = [(n, units_, max(t, risk_reader.PART_THRESHOLD) if len(tx.words(_quote_span(units_, raw))) < SHORT_WORDS
                else t) for n, units_, t in windows]
    rated = risk_reader.readings([_quote_span(units_, raw) for _, units_, _ in windows], [t for *_, t in windows])
    best: dict[int, tuple[float, str, list[Unit]]] = {}
    for (n, units_, _), rating in zip(windows, rated, strict=True):
        if rating is not None and rating[1] > best.get(n, (0.0, "", []))[0]:
            best[n] = (rating[1], rating[0], units_)
    out: Entries = []
    for n in sorted(best):
        share, category, units_ = best[n]
        reason = (f"the meaning check reads it as {category.replace('_', ' ')} ({int(share * 100)}% likely a risk "
                  "statement); no rule matched these words")
        entry = {**_entry(category, MEANING_KIND, reason, units_[0], _quote_span(units_, raw), None),
                 "end_s": units_[-1].end_s}
        out.append(_uncertain(entry) if any(u.speaker_uncertain for u in turns[n]) else entry)
    return out


def _meaning_answers(turns: list[list[Unit]], asked: dict[int, tuple[list[Unit], frozenset[str]]],
                     raw: dict[int, str]) -> tuple[Entries, Entries]:
    """Flags and denials of answers the rules could not read ("Lost too many mates to it. I'd never put
    my family through that."): the answer reader (``risk_reader.answer_readings``) reads each beside its
    question, all in one batch; ``asked`` maps an index of ``turns`` to its question and topic."""
    read_: list[tuple[int, list[Unit], list[Unit], frozenset[str]]] = []
    for n, (question, topic) in sorted(asked.items()):
        spoken = [u for u in turns[n] if not _bare(raw.get(u.order, u.text))]
        if spoken:
            read_.append((n, spoken, question, topic))
    pairs = [(" ".join(u.text for u in question if _is_question(u)) or " ".join(u.text for u in question),
              _quote_span(spoken, raw)) for _, spoken, question, _ in read_]
    flagged: Entries = []
    denied: Entries = []
    for (n, spoken, question, topic), (_, quote), rating in zip(read_, pairs, risk_reader.answer_readings(pairs),
                                                                strict=True):
        if rating is None:
            continue
        verdict, share = rating
        if verdict == "denies":
            kind, reason = "denied when asked", (f"denied when asked (the meaning check reads the answer as a "
                                                 f"denial, {int(share * 100)}%)")
        else:
            kind, reason = MEANING_ANSWER_KIND, (f"the meaning check reads the answer as yes ({int(share * 100)}%); "
                                                 "no rule matched these words")
        q = _quote_units(question)
        for c in sorted(topic):
            entry = {**_entry(c, kind, reason, spoken[0], quote, q), "end_s": spoken[-1].end_s}
            if any(u.speaker_uncertain for u in turns[n]):
                entry = _uncertain(entry)
            (denied if verdict == "denies" else flagged).append(entry)
    return flagged, denied


UNCERTAIN_SPEAKER_NOTE = "speaker uncertain: check who said it"
"""Added to the reason of a flag or denial on a turn marked ``speaker_uncertain``."""


def _uncertain(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` marked as on a turn whose speaker the recognizer could not tell apart."""
    return {**entry, "reason": f"{entry['reason']} ({UNCERTAIN_SPEAKER_NOTE})", "speaker_uncertain": True}


def _read_uncertain_clinician_turn(turn: list[Unit], raw: dict[int, str]) -> Entries:
    """Flags on a clinician-labelled turn marked ``speaker_uncertain``, read as if the client said it.

    Its questions are skipped (a screening question is the clinician's whatever the label), and
    so are denials and other people's history: only a disclosure is worth the clinician's check.
    A turn confidently the clinician's never comes here.
    """
    flagged: dict[str, dict[str, Any]] = {}
    for unit in turn:
        if _is_question(unit) or asking(unit.text):
            continue
        for f in read(unit.text):
            if f.other_person or f.negated or f.category in flagged:
                continue
            when = " (in the past)" if f.past else ""
            reason = f'{f.kind}{when}: "{f.words}", on a turn labelled the clinician\'s'
            flagged[f.category] = _uncertain(_entry(f.category, f.kind, reason, unit, raw.get(unit.order, unit.text),
                                                    None))
    return list(flagged.values())


#: a sentence this short after another finishes it ("I've been thinking about checking out. Like,
#: permanently." — "I cut my arm. On purpose."): the two are read as one
FRAGMENT_TOKENS = 4


#: a sentence that opens like a dependent clause ("Just in case I go through with it.") finishes the one before
_SUBORDINATE = re.compile(r"(?:just |only )?(?:in case|for when|for after|so that|so they|so nobody|so no one|"
                          r"when i'm gone|after i'm gone|once i'm gone|and i mean|"
                          r"i mean (?:for good|permanently|forever))\b")


def _with_fragment(unit: Unit, rest: list[Unit]) -> str:
    """``unit``'s sentence, with the next one joined on when that is only a fragment (``FRAGMENT_TOKENS``)."""
    if not rest or _is_question(rest[0]) or _is_question(unit):
        return unit.text
    fragment = READING["LEAD_FILLER"].sub("", normalise(rest[0].text))
    if answer(fragment) in ("yes", "no"):
        return unit.text
    if not 0 < len(_tokens(fragment)) <= FRAGMENT_TOKENS and not _SUBORDINATE.match(fragment):
        return unit.text
    return unit.text.rstrip(" .!…") + " " + fragment.strip(" ,")


#: kinds of flag a lexicon finding in the same turn replaces (its words are the better quote)
_WEAK = ("answer when asked", "answer about the topic asked")


def _entry(category: str, kind: str, reason: str, unit: Unit, quote: str,
           question: dict[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {"category": category, "kind": kind, "reason": reason, "quote": quote,
                           "segment_id": unit.segment_id, "speaker": unit.speaker, "start_s": unit.start_s,
                           "end_s": unit.end_s}
    if question is not None:
        out["question"] = question
    return out


def _turns(items: list[Unit]) -> list[list[Unit]]:
    """Units grouped by segment, in order."""
    out: list[list[Unit]] = []
    for u in items:
        if out and out[-1][0].segment_id == u.segment_id:
            out[-1].append(u)
        else:
            out.append([u])
    return out


def _raw_sentences(items: list[Unit]) -> dict[int, str]:
    """Unit order → the sentence exactly as said (``Unit.text`` has its fillers and stutters dropped)."""
    return {u.order: u.said or u.text for u in items}


def _quote_span(units_: list[Unit], raw: dict[int, str]) -> str:
    return " ".join(raw.get(u.order, u.text) for u in units_)


def _quote_units(turn: list[Unit]) -> dict[str, Any]:
    """The clinician's question as cited: its turn's sentences up to the last question."""
    asked = [i for i, u in enumerate(turn) if _is_question(u)]
    last = asked[-1] if asked else len(turn) - 1
    unit = turn[last]
    return {"quote": unit.segment_text if last == len(turn) - 1 else " ".join(u.text for u in turn[: last + 1]),
            "segment_id": unit.segment_id, "speaker": unit.speaker, "start_s": unit.start_s, "end_s": unit.end_s}
