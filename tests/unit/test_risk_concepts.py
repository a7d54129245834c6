"""Session 31's risk mechanisms: a question read from the client's side, fragments that finish a
sentence, a denial taken back, and concept frames (not existing, finality, no point in staying
alive, need and duration, conditional threats) with the look-alikes that share their words."""

from __future__ import annotations

from typing import Any

import pytest

from verbatim.notes.evidence import units
from verbatim.notes.risk import answer, categories_in, flags, mirrored, question_topic


def check(*turns: tuple[str, str]) -> dict[str, Any]:
    record = [{"id": f"seg-{n}", "speaker": who, "start_s": 10.0 * n, "end_s": 10.0 * n + 8, "text": text}
              for n, (who, text) in enumerate(turns)]
    return flags(units(record, "client"))


def cats(entries: list[dict[str, Any]]) -> set[str]:
    return {e["category"] for e in entries}


def test_a_question_is_read_from_the_clients_side_for_its_topic() -> None:
    assert mirrored("have you harmed yourself since we last met?") == "have i harmed myself since we last met?"
    assert mirrored("is anyone hurting you at home?") == "is anyone hurting me at home?"
    assert question_topic(["Have you harmed yourself since our last session?"]) == {"self_harm"}
    assert question_topic(["Do you ever think about not waking up?"]) == {"suicide"}
    assert question_topic(["Did you hurt yourself when you fell?"]) == frozenset()
    risk = check(("therapist", "Have you harmed yourself since our last session?"), ("client", "Yeah, last night."))
    assert cats(risk["flags"]) == {"self_harm"} and risk["flags"][0]["question"]["segment_id"] == "seg-0"


def test_a_short_fragment_finishes_the_sentence_before_it() -> None:
    assert cats(check(("client", "I've been thinking about checking out. Like, permanently."))["flags"]) == {"suicide"}
    assert check(("client", "I've been thinking about checking out."))["flags"] == []
    assert cats(check(("client", "I wrote letters to my kids. Just in case I go through with it."))["flags"]) == {
        "suicide"}


def test_a_denial_taken_back_is_a_disclosure() -> None:
    assert answer("No... well, last night I did.") == "yes"
    assert answer("Not really, well, once years ago I did.") == "past"
    assert answer("No, but my brother did.") == "no"
    asked = ("therapist", "Do you think about killing yourself?")
    taken_back = check(asked, ("client", "No. Well, sometimes at night I do."))
    assert cats(taken_back["flags"]) == {"suicide"} and taken_back["denials"] == []
    denied = check(asked, ("client", "No. Well, I get sad, but that's all."))
    assert denied["flags"] == [] and cats(denied["denials"]) == {"suicide"}


@pytest.mark.parametrize("text", [
    "If I could press a button and just not be here, I would.",
    "Honestly it would be a mercy if I never had to open my eyes again.",
    "Part of me wants to just check out for good.",
    "What's the point of me even being alive.",
    "I'm not planning on sticking around to find out.",
    "My family would be so much happier if I was dead.",
    "I'd be doing everyone a favour by just going.",
])
def test_passive_ideation_in_words_no_phrase_lists(text: str) -> None:
    assert categories_in(text) == ["suicide"]


@pytest.mark.parametrize("text", [
    "I hate my job, I just want to quit and never come back.",
    "I'm giving up sugar for good.",
    "There's no point in waking up early on a Sunday.",
    "I'm not planning on sticking around at this job to find out.",
    "I don't see a future for me at this company.",
    "I'd be doing everyone a favour by going to bed early.",
    "I let go of the grudge for good, it feels great.",
    "I'm ready to go, the taxi's outside.",
])
def test_the_look_alikes_of_those_frames_are_not_flagged(text: str) -> None:
    assert categories_in(text) == []


@pytest.mark.parametrize(("text", "category"), [
    ("The kids go without dinner most nights.", "neglect"),
    ("Nobody gives my dad his tablets or a wash.", "neglect"),
    ("If I so much as look at another man he says he'll break my legs.", "abuse"),
    ("The carer at the home yanks her out of bed and shouts at her.", "abuse"),
    ("I was in the ICU after I took the tablets in March.", "suicide"),
    ("I sat in the garage with the car on for a while.", "suicide"),
])
def test_concept_frames_for_neglect_abuse_and_means(text: str, category: str) -> None:
    assert categories_in(text) == [category]


@pytest.mark.parametrize("text", [
    "We went without power for days after the storm.",
    "We sat in the garage with the engine running to warm it up before the drive.",
    "I ended up in hospital after I took a tumble on the ice.",
    "The carer helps her out of bed every morning.",
])
def test_concept_frames_spare_literal_uses(text: str) -> None:
    assert categories_in(text) == []


def test_a_clinicians_bare_any_is_a_question_and_its_denial_is_shown() -> None:
    risk = check(("therapist", "any self harm this week"), ("client", "not really no. i've been doing better"))
    assert risk["flags"] == [] and cats(risk["denials"]) == {"self_harm"}
    risk = check(("therapist", "Growing up, were there times you went without food or weren't looked after?"),
                 ("client", "No, we always had food and that."))
    assert cats(risk["denials"]) == {"neglect"}
    # a client's "anything…" is a statement, not a question back
    assert cats(check(("client", "Anything to make it stop. I took the whole bottle of my pills."))["flags"]) == {
        "suicide"}


def test_a_set_without_harmless_items_has_no_false_flags() -> None:
    from bench.risk import score

    item = {"id": "a", "speaker": "client", "text": "I want to die.", "label": "suicide", "denied": False}
    figures = score([(item, {"flags": ["suicide"], "denials": [], "family_history": False})])
    assert figures["risk_false_flag"] == 0.0 and figures["risk_recall"] == 1.0
