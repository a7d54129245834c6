"""Risk frames (issue 20, generalization): risk said in wordings no phrase lists, read by shape —
a wish verb and a state of not being, a means kept for later, an agent, a violence verb and the
client — with the same negation, speaker and look-alike rules as the lexicon (no servers)."""

from __future__ import annotations

import re

import pytest

from tests.unit.test_risk_flags import cats, check
from verbatim.notes.risk_frames import FRAMES
from verbatim.notes.risk_lexicon import ENTRIES, READING, SLOTS, text


@pytest.mark.parametrize(("said", "category"), [
    ("I kind of want to just not exist for a while, or forever.", "suicide"),
    ("I wouldn't mind if I just didn't wake up one day.", "suicide"),
    ("I kind of hope that one day I just don't wake up.", "suicide"),
    ("I honestly can't picture myself still being here in a year.", "suicide"),
    ("Everybody would manage fine without me around, probably better.", "suicide"),
    ("I kept back some of my sleeping tablets every week instead of taking them.", "suicide"),
    ("I've been putting aside a few of my lorazepam each night.", "suicide"),
    ("I figured out how much of the insulin it would take.", "suicide"),
    ("I went up to the top of the multi-storey car park and just stood there looking over.", "suicide"),
    ("I had the rope in my hands and then my daughter called.", "suicide"),
    ("Sometimes I use a lighter on my arm, just for a second.", "self_harm"),
    ("I slipped up again and cut, it was the first time in months.", "self_harm"),
    ("I've been hitting my legs with a hairbrush until they're purple.", "self_harm"),
    ("I had this urge to shove my sister down the stairs.", "harm_to_others"),
    ("I've been thinking about running him off the road.", "harm_to_others"),
    ("He pulled me down the hallway by my hair.", "abuse"),
    ("My dad used to take his belt to us if we were loud.", "abuse"),
    ("He slammed the car door on my hand on purpose.", "abuse"),
    ("We were always left to fend for ourselves, we were like five and six.", "neglect"),
    ("My dad's been in bed for a week, nobody's washed him or fed him properly.", "neglect"),
])
def test_a_risk_said_in_new_words_is_flagged_by_its_shape(said: str, category: str) -> None:
    risk = check(("client", said))
    assert cats(risk["flags"]) == {category}, risk
    assert risk["flags"][0]["quote"] == said and risk["flags"][0]["kind"]


@pytest.mark.parametrize("said", [
    "I'd love to just disappear for the weekend with my phone off.",
    "I wish I could just disappear from that group chat.",
    "I bought some rope for the tent, we're camping on Saturday.",
    "I keep my pills in a little box by the sink so I remember.",
    "I stood at the top of the tower and looked down at the city, it was beautiful.",
    "My parents would cope fine without me for a week, they're adults.",
    "I can't picture myself still being here in a year, I really want to move abroad.",
    "The cat scratched my arm until it bled.",
    "He threw the ball at me and I caught it.",
    "I don't want to live with my parents anymore, I want my own place.",
    "I hope my grandma doesn't die before I visit.",
    "I put my affairs in order before my surgery, just in case.",
    "My ex dragged me to a party I didn't want to go to.",
    "I'm going to get back at my sister by winning the bake-off.",
])
def test_the_same_shapes_in_harmless_talk_are_not_flagged(said: str) -> None:
    risk = check(("client", said))
    assert risk["flags"] == [], risk


def test_a_negation_that_is_itself_denied_is_a_disclosure() -> None:
    risk = check(("client", "I'd be lying if I said I haven't wanted to just stop being alive."))
    assert cats(risk["flags"]) == {"suicide"} and risk["denials"] == [], risk
    plain = check(("client", "I haven't wanted to stop being alive, not once."))
    assert plain["flags"] == [] and cats(plain["denials"]) == {"suicide"}, plain


def test_a_threat_said_in_earnest_is_not_jest() -> None:
    earnest = check(("client", "I told my boss I'd kill him if he touched my stuff again and I wasn't joking."))
    assert cats(earnest["flags"]) == {"harm_to_others"}, earnest
    jest = check(("client", "I told my boss I'd kill him if he touched my stuff again, haha."))
    assert jest["flags"] == [], jest


@pytest.mark.parametrize(("question", "reply", "category"), [
    ("Has anyone been hurting you at home?", "Mostly my ex, when he comes round to drop off the kids.", "abuse"),
    ("Have you had thoughts about hurting anyone else?", "My boss, honestly. I picture it.", "harm_to_others"),
    ("Have you been cutting or hurting yourself lately?", "Last week, yeah, it got pretty bad.", "self_harm"),
    ("Have you been having thoughts of killing yourself?", "Well, not so much lately, but in September I did.",
     "suicide"),
])
def test_a_person_or_a_time_named_in_answer_is_a_yes(question: str, reply: str, category: str) -> None:
    risk = check(("therapist", question), ("client", reply))
    assert cats(risk["flags"]) == {category} and risk["denials"] == [], risk
    assert risk["flags"][0]["segment_id"] == "seg-1" and risk["flags"][0]["question"]["segment_id"] == "seg-0"


def test_a_denial_when_asked_stays_a_denial() -> None:
    risk = check(("therapist", "Do you ever wish you were dead?"), ("client", "No, I don't want to die."))
    assert risk["flags"] == [] and cats(risk["denials"]) == {"suicide"}, risk


def test_the_tables_load_every_slot_and_pattern() -> None:
    for entry in [*ENTRIES, *FRAMES]:
        assert not re.search(r"\{[A-Z][A-Z_]*\}", entry.pattern.pattern), entry
        assert "\n" not in entry.pattern.pattern
    assert {"PILLS", "OTHER", "DEPENDENT"} <= set(SLOTS) and {"YES", "NO", "WHO"} <= set(READING)
    assert text("(?:a|\n    b|\n    c) {X}", {"X": "(?:x)"}) == "(?:a|b|c) (?:x)"
    with pytest.raises(KeyError):
        text("{MISSING}", {})
    with pytest.raises(ValueError):
        text("in the (?:changing\nrooms)", {})  # a broken word would silently read "changingrooms"
