"""The offline writer: a deterministic drafter that needs no network and no key.

It selects the record's sentences that carry evidence for each section (cue lexicons per
section kind, below), keeps the best few per section in the order they were said, and
rewrites each lightly and speaker-aware ("Client reports that they …", "Therapist suggested
that the client …"), citing the segment(s) it came from. A short answer is quoted with the
question it answers (both cited). Negations come only from asked-and-answered denials
(``verbatim.notes.negations``). A section with no evidence says so. Every sentence is then
labelled by the verifier. The same record always gives the same note: a run that resumes
mid-note writes exactly the sections an uncrashed run would have.

Why our own code: no trustworthy, licensed small language model installs here
(../shared/MODELS.md); a model writer plugs in behind the same ``Writer`` interface.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from verbatim.notes import text as tx
from verbatim.notes import verifier
from verbatim.notes.complaint import reason
from verbatim.notes.evidence import CLIENT, CLINICIAN, Unit, follows
from verbatim.notes.formats import Section
from verbatim.notes.negations import Denial, denials, topic_of

NO_EVIDENCE = "No evidence for this section in the transcript."


def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.I)


_FEEL = _re(r"\b(feel|felt|feeling|anxi|worr|stress|sad|depress|tired|exhaust|sleep|slept|wake|woke|awake|angry|anger|"
            r"upset|scared|afraid|panic|lonely|alone|overwhelm|hopeless|cry|cried|fight|argu|drink|pain|hurt|struggl|"
            r"hard|difficult|frustrat|guilt|ashamed|nervous|mood|energy|fatigue|dizz|symptom|ache|sore|swell)\w*")
_FIRST = _re(r"\b(i|i'm|i've|i'd|my|me)\b")
_MEASURE = _re(r"\b(\d+|zero|one|two|three|four|five|six|seven|eight|nine|ten|scale|score|rating|out of|percent|"
               r"hours?|times|days?|weeks?|months?|phq|gad)\b")
_OBSERVE = _re(r"\b(you seem|you look|you appear|appear\w*|present\w*|tearful|calm|agitated|eye contact|affect|"
               r"smil\w*|laugh\w*)\b")
_INTERPRET = _re(r"\b(sounds like|seems|seem to|looks like|pattern|connect\w*|link\w*|makes sense|progress|"
                 r"i notice|noticing|i hear|what i'm hearing|tends? to|improv\w*|worse|better|follow\w*|"
                 r"that's (?:a|an|really)|it's (?:common|normal|understandable))\b")
_SUGGEST = _re(r"\b(try|trying|let's|lets|what if|could you|would you be willing|practi[cs]e|homework|exercise|"
               r"write (?:it |them )?down|keep a|breathing|schedule|plan|next week|next session|next time|"
               r"before we meet|this week|i'd like you to|i want you to|recommend|suggest\w*|agree\w*)\b")
_PROPOSE = _re(r"\b(could you|would you be willing|what if|how about|can you try|let's|will you)\b")
_SENTENCE_ANY = _re(r"\w")
_COMMIT = _re(r"\b(i'll|i will|i'm going to|i can try|i could try|i'm willing|i want to try|let's do)\b")
_GOAL = _re(r"\b(goal|want to|would like to|hope to|hoping|working on|work on|aim|wish|trying to|get better at|"
            r"be able to)\b")
_AGREE = _re(r"\b(yes|yeah|okay|i can|i could|i'll|i will|willing|makes sense|i think|i guess|i like|helps|helped|"
             r"i tried|it worked|i did|that's true|you're right)\b")
_TECHNIQUE = _re(r"\b(breath\w*|reframe|notice|thought\w*|evidence|skill\w*|technique|exercise|practi[cs]e|"
                 r"imagine|remember|normal|boundar\w*|routine|journal\w*|log|wind[- ]down)\b")
_COMPLAINT = _re(r"\b(here (?:for|about|because)|came in|the reason|problem|issue|concern|pain|been having|"
                 r"bothering|trouble|follow[- ]up)\b")
_EXAM = _re(r"\b(exam\w*|listen\w*|heart|lungs?|press\w*|tender\w*|swelling|range of motion|reflex\w*|murmur|"
            r"blood pressure|pulse|palpat\w*|abdomen|neck|edema|look at)\b")
_RESULTS = _re(r"\b(x-?rays?|mri|ct|scan|labs?|blood work|results?|ekg|echo\w*|tests?|a1c|levels?|ultrasound|"
               r"imaging|showed|shows|demonstrat\w*)\b")
_TREAT = _re(r"\b(prescri\w*|order\w*|refer\w*|medication|dose|mg|follow[- ]up|come back|start you|continue|"
             r"increase|decrease|recommend|physical therapy|going to|we'll|i want you to|diagnos\w*|"
             r"i think you have)\b")

Cue = tuple[str | None, re.Pattern[str], float]
_ANY = None

#: per section kind: (role the cue needs or None, pattern, weight); a unit joins its best section at ≥ 2
CUES: dict[str, list[Cue]] = {
    "subjective": [(CLIENT, _FEEL, 2.0), (CLIENT, _FIRST, 1.5), (CLIENT, _COMPLAINT, 0.5),
                   (CLIENT, _SENTENCE_ANY, 0.5)],
    "objective": [(CLIENT, _MEASURE, 2.0), (CLINICIAN, _OBSERVE, 2.5)],
    "assessment": [(CLINICIAN, _INTERPRET, 2.5)],
    "plan": [(_ANY, _SUGGEST, 2.0), (CLIENT, _COMMIT, 2.5), (CLINICIAN, _TREAT, 1.5)],
    "intervention": [(CLINICIAN, _TECHNIQUE, 2.0), (CLINICIAN, _SUGGEST, 1.0), (CLINICIAN, _INTERPRET, 1.0)],
    "response": [(CLIENT, _AGREE, 2.0)],
    "goal": [(_ANY, _GOAL, 2.5)],
    "complaint": [(CLIENT, _COMPLAINT, 2.0), (CLINICIAN, _COMPLAINT, 1.0)],
    "ros": [],
    "exam": [(CLINICIAN, _EXAM, 2.0)],
    "results": [(CLINICIAN, _RESULTS, 2.5)],
}
CUES["data"] = CUES["subjective"] + CUES["objective"]
CUES["behavior"] = CUES["subjective"] + CUES["objective"]
#: where asked-and-answered denials go (the first such section of a format)
DENIAL_KINDS = ("ros", "subjective", "data", "behavior", "response")
#: at most this many sentences per section kind (complaint: the reason for the visit only)
CAP = {"complaint": 2}
THRESHOLD = 2.0


@dataclass(frozen=True)
class Names:
    """How the note names the two roles ("Therapist"/"Client", or "Doctor"/"Patient" for the benchmark)."""

    clinician: str = "Therapist"
    client: str = "Client"


class Writer(Protocol):
    """Writes one section of a note; the note run checkpoints after each call."""

    name: str

    def section(self, sections: Sequence[Section], index: int, items: list[Unit],
                known: Sequence[str] = ()) -> dict[str, Any]:
        """``{"name", "sentences": [{"text", "citations", "label", "support"}], "empty"?: str}``.

        ``known``: names the session knows (client ids, the therapist's name), kept from a remote model.
        """


class OfflineDrafter:
    """The deterministic drafter (see the module docstring). ``per_section``: most sentences per section."""

    name = "offline-drafter-1"

    def __init__(self, names: Names | None = None, per_section: int = 6, endorsements: bool = True):
        self.names = names or Names()
        self.per_section = per_section
        self.endorsements = endorsements

    def draft(self, sections: Sequence[Section], items: list[Unit]) -> list[dict[str, Any]]:
        """Every section of the note, in order."""
        return [self.section(sections, i, items) for i in range(len(sections))]

    def section(self, sections: Sequence[Section], index: int, items: list[Unit],
                known: Sequence[str] = ()) -> dict[str, Any]:
        chosen = assign(sections, items, self.per_section)[index]
        section = sections[index]
        sentences = [self._sentence(section, unit, items) for unit in chosen]
        if section.kind == "complaint" and not any(s.kind == "complaint" for s in sections[:index]):
            stated = reason(items)
            if stated is not None:
                phrase, unit = stated
                sentences = [{"text": _end(second_to_third(phrase, self.names)), "citations": [unit.citation()],
                              "_order": -1, "_quote": self._quoted(unit)}]
        if section.kind in DENIAL_KINDS and index == _denial_section(sections):
            sentences += [self._denial(d) for d in denials(items, endorsements=self.endorsements)]
            sentences.sort(key=lambda s: s["_order"])
        kept = []
        for s in sentences:
            s.pop("_order", None)
            quote = s.pop("_quote", None)
            s.update(judge(s["text"], s["citations"]))
            # Never emit what our own verifier calls contradicted: quote the words instead, or leave it out.
            if s["label"] == verifier.CONTRADICTED and quote is not None:
                s.update(text=quote)
                s.update(judge(s["text"], s["citations"]))
            if s["label"] != verifier.CONTRADICTED:
                kept.append(s)
        out: dict[str, Any] = {"name": section.name, "sentences": kept}
        if not kept:
            out["empty"] = NO_EVIDENCE
        return out

    # --- rewriting --------------------------------------------------------------------
    def _quoted(self, unit: Unit) -> str:
        """The sentence as said, attributed: 'Patient said: "…"' (the words inside never changed)."""
        who = self.names.client if unit.role == CLIENT else self.names.clinician
        return f'{who} said: "{unit.said or unit.text}"'

    def _sentence(self, section: Section, unit: Unit, items: list[Unit]) -> dict[str, Any]:
        n = self.names
        body = tx.strip_fillers(unit.text)
        quote = self._quoted(unit)
        question = _asked(unit, items)
        if question is not None:
            text = (f'When asked "{question.said or question.text}", the {n.client.lower()} answered: '
                    f'"{unit.said or unit.text}"')
            cites = [question.citation(), unit.citation()]
            return {"text": text, "citations": cites, "_order": unit.order}
        if command(unit):
            text = f'{n.clinician} directed the voice assistant: "{unit.said or unit.text}"'
            return {"text": text, "citations": [unit.citation()], "_order": unit.order}
        if order(unit):
            text = _capital(f"{_lower_first(_ORDER_LEAD.sub('ordered ', second_to_third(body, n), count=1))}")
            return {"text": _end(text), "citations": [unit.citation()], "_order": unit.order, "_quote": quote}
        if not rewritable(unit, body):
            return {"text": quote, "citations": [unit.citation()], "_order": unit.order}
        if unit.role == CLIENT:
            verb = {"plan": "agreed", "response": "responded", "goal": "stated"}.get(section.kind, "reports")
            text = f"{n.client} {verb} that {_lower_first(_pronoun_i(first_to_third(body)))}"
        elif unit.question:
            text = f'{n.clinician} {"suggested" if _PROPOSE.search(body) else "asked"}: "{unit.said or unit.text}"'
        else:
            # The clinician's own statements read in their voice (the clinician writes the note); the
            # client they speak to becomes "the client".
            text = _capital(_pronoun_i(clinician_voice(body, n)))
        return {"text": _end(text), "citations": [unit.citation()], "_order": unit.order, "_quote": quote}

    def _denial(self, d: Denial) -> dict[str, Any]:
        verb = "endorses" if d.endorsed else "denies"
        text = f"{self.names.client} {verb} {d.topic} when asked."
        return {"text": text, "citations": [d.question.citation(), d.answer.citation()], "_order": d.answer.order}


def judge(text: str, citations: list[dict[str, Any]]) -> dict[str, Any]:
    """The verifier's label and support of a sentence against the quotes of its citations."""
    verdict = verifier.label(text, [str(c["quote"]) for c in citations])
    return {"label": verdict.label, "support": verdict.support}


def assign(sections: Sequence[Section], items: list[Unit], per_section: int) -> list[list[Unit]]:
    """Which units each section uses: every unit joins at most its best-scoring section; best few, in order said."""
    pools: list[list[tuple[float, Unit]]] = [[] for _ in sections]
    for unit in items:
        if len(tx.content(unit.text)) < 2 and _asked(unit, items) is None:
            continue
        if unit.role == CLINICIAN and unit.question and not _PROPOSE.search(unit.text):
            continue  # a question is not evidence; its answer is (quoted with it)
        if tx.negative_answer(unit.text):
            continue  # denials are written from the question and the answer together
        asked = _asked(unit, items)
        if asked is not None and tx.positive_answer(unit.text) and topic_of(asked.text) is not None:
            continue  # so are endorsements
        scores = [score(s, unit) for s in sections]
        if command(unit) or order(unit):
            # Spoken orders and commands to a voice assistant are plan, never findings.
            plan = next((i for i, s in enumerate(sections) if s.kind == "plan"), None)
            if plan is not None:
                pools[plan].append((THRESHOLD + 1.0, unit))
            continue
        best = max(range(len(sections)), key=lambda i: (scores[i], -i)) if sections else 0
        if sections and scores[best] >= THRESHOLD:
            pools[best].append((scores[best], unit))
    chosen = []
    for section, pool in zip(sections, pools, strict=True):
        cap = CAP.get(section.kind, per_section)
        top = sorted(pool, key=lambda p: (-p[0], p[1].order))[:cap]
        chosen.append(sorted((u for _, u in top), key=lambda u: u.order))
    return chosen


def score(section: Section, unit: Unit) -> float:
    """How strongly ``unit`` is evidence for ``section`` (0: not at all)."""
    if section.kind == "custom":
        words = tx.content(f"{section.name} {section.instruction}")
        return 1.0 * len(words & tx.content(unit.text))
    total = 0.0
    for role, pattern, weight in CUES.get(section.kind, []):
        if (role is None or role == unit.role) and pattern.search(unit.text):
            total += weight
    return total


def _denial_section(sections: Sequence[Section]) -> int | None:
    for kind in DENIAL_KINDS:
        for i, s in enumerate(sections):
            if s.kind == kind:
                return i
    return None


def _asked(unit: Unit, items: list[Unit]) -> Unit | None:
    """The clinician question a short client answer responds to (else None)."""
    if unit.role != CLIENT or len(tx.content(unit.text)) > 6 or unit.order == 0:
        return None
    if items[unit.order - 1].segment_id == unit.segment_id:
        return None  # only the first sentence of a turn answers the question before it
    before = items[unit.order - 1]
    if before.role == CLINICIAN and before.question and follows(unit, before):
        return before
    return None


_FIRST_MAP = [
    (r"i am", "they are"), (r"i'm", "they are"), (r"i was", "they were"), (r"i've", "they have"),
    (r"i have", "they have"), (r"i'd", "they would"), (r"i'll", "they will"), (r"i", "they"), (r"me", "them"),
    (r"my", "their"), (r"mine", "theirs"), (r"myself", "themselves"),
]
_VERB_S = re.compile(r"(?<!and )\b(the (?:client|patient)) (feel|want|need|think|seem|know|get|keep|like|"
                     r"say|tend|notice|go|sleep|wake|look|mention|describe|use|take|work|try)\b")


def first_to_third(sentence: str) -> str:
    """First person → "they" ("I'm tired of my job" → "they are tired of their job")."""
    out = sentence
    for src, dst in _FIRST_MAP:
        out = _sub_outside_quotes(rf"(?<![\w']){src}(?![\w'])", dst, out)
    return out


def second_to_third(sentence: str, names: Names) -> str:
    """Second person → the client, first person → the clinician ("you seem tired" → "the client seem(s) tired")."""
    c, t = f"the {names.client.lower()}", f"the {names.clinician.lower()}"
    out = re.sub(r"^(?:i think|i notice|i hear|i wonder if)\s*,?\s*(?:that\s+)?", "", sentence, flags=re.I)
    pairs = [
        (r"you are", f"{c} is"), (r"you're", f"{c} is"), (r"you were", f"{c} was"), (r"you've", f"{c} has"),
        (r"you have", f"{c} has"), (r"you'll", f"{c} will"), (r"you'd", f"{c} would"), (r"your", f"{c}'s"),
        (r"yourself", "themselves"), (r"you", c), (r"let's", f"{t} and {c}"), (r"we", f"{t} and {c}"),
        (r"i'm", f"{t} is"), (r"i'd", f"{t} would"), (r"i'll", f"{t} will"),
        (r"i've", f"{t} has"), (r"i", t), (r"my", f"{t}'s"), (r"me", t),
    ]
    for src, dst in pairs:
        out = _sub_outside_quotes(rf"(?<![\w']){src}(?![\w'])", dst, out)
    out = _VERB_S.sub(lambda m: f"{m.group(1)} {m.group(2)}s", out)
    return re.sub(r"(?<!and )\b(the (?:client|patient)) (have|do)\b",
                  lambda m: f"{m.group(1)} {'has' if m.group(2) == 'have' else 'does'}", out)


_COMMAND = re.compile(r"^(?:(?:hey|okay|ok|hi)\s*,?\s+)?(?:dragon|dax|alexa|siri|computer|nuance)\b", re.I)
_SHOW = re.compile(r"^(?:please\s+)?(?:show|open|pull up|bring up|display|load)\s+(?:me\s+)?(?:the|my|his|her|their)\b",
                   re.I)
_ORDER_LEAD = re.compile(r"^(?:(?:i'm|i am|we're|we are) going to |(?:let's|let us|we'll|i'll|i will|we will) "
                         r"(?:go ahead and )?|go ahead and |i want to |i'd like to |we should )?order(?:ed)? ", re.I)
_BROKEN = re.compile(r"(?:\w-(?:\s|$)|\.\.\.|…|--|\b(\w+ \w+) \1\b)")
_CLEAN_START = re.compile(r"^(?:i|i'm|i've|i'd|i'll|my|we|we're|we've|it|it's|the|this|that|there|he|she|they|"
                          r"[a-z]+ (?:is|was|has|have|are|were))\b", re.I)
_BAD_START = re.compile(r"^(?:that's|yeah|yes|no|okay|ok|right|sure|well|so|and|but|or|because|like|just|"
                        r"thank|thanks|alright|all right|oh|hmm|mm)\b", re.I)


def command(unit: Unit) -> bool:
    """A clinician's command to a voice assistant ("hey dragon, show me the chest x-ray")."""
    return unit.role == CLINICIAN and bool(_COMMAND.match(unit.text) or _SHOW.match(tx.strip_fillers(unit.text)))


def order(unit: Unit) -> bool:
    """A clinician's spoken order ("order a hemoglobin a1c", "let's go ahead and order an x-ray")."""
    return unit.role == CLINICIAN and not unit.question and bool(_ORDER_LEAD.match(tx.strip_fillers(unit.text)))


def rewritable(unit: Unit, body: str) -> bool:
    """Whether the sentence turns into clean note prose (else it is quoted with attribution).

    It must be a whole statement: no cut-off word ("ex- exerting"), trailing off ("…") or
    repeated phrase left; a client's must start with its subject ("I", "my …", "it …"), not a
    reply word ("that's fair", "yeah").
    """
    if _BROKEN.search(body) or len(tx.words(body)) < 3 or _BAD_START.match(body):
        return False
    return unit.role != CLIENT or bool(_CLEAN_START.match(body))


def clinician_voice(sentence: str, names: Names) -> str:
    """The clinician's sentence as note prose: the client they address becomes the client; "I" stays."""
    c = f"the {names.client.lower()}"
    out = sentence
    pairs = [
        (r"you are", f"{c} is"), (r"you're", f"{c} is"), (r"you were", f"{c} was"), (r"you've", f"{c} has"),
        (r"you have", f"{c} has"), (r"you'll", f"{c} will"), (r"you'd", f"{c} would"), (r"your", f"{c}'s"),
        (r"yourself", "themselves"), (r"you", c), (r"let's", "we will"),
    ]
    for src, dst in pairs:
        out = _sub_outside_quotes(rf"(?<![\w']){src}(?![\w'])", dst, out)
    out = _VERB_S.sub(lambda m: f"{m.group(1)} {m.group(2)}s", out)
    return re.sub(r"(?<!and )\b(the (?:client|patient)) (have|do)\b",
                  lambda m: f"{m.group(1)} {'has' if m.group(2) == 'have' else 'does'}", out)


_QUOTED = re.compile(r'"[^"]*"')


def _sub_outside_quotes(pattern: str, repl: str, text: str) -> str:
    """``re.sub`` everywhere but inside quotation marks: words someone is quoted as saying stay theirs."""
    parts, last = [], 0
    for m in _QUOTED.finditer(text):
        parts.append(re.sub(pattern, repl, text[last:m.start()], flags=re.I))
        parts.append(m.group(0))
        last = m.end()
    parts.append(re.sub(pattern, repl, text[last:], flags=re.I))
    return "".join(parts)


def _pronoun_i(text: str) -> str:
    """The pronoun "I" capitalised outside quotes (transcripts are often all lower case)."""
    return _sub_outside_quotes(r"(?<![\w'])i(?=(?:'[a-z]+)?(?![\w']))", "I", text)


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _lower_first(text: str) -> str:
    first = text.split(" ", 1)[0]
    if text.startswith(("I ", "I'")) or (len(first) > 1 and first.isupper()):
        return text
    return text[:1].lower() + text[1:]


def _end(text: str) -> str:
    text = text.rstrip()
    if text.endswith("?") and not text.endswith('?"'):
        text = text[:-1]
    return text if text.endswith((".", '"', "!")) else text + "."
