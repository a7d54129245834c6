"""Session 31's risk mechanisms: a question read from the client's side, fragments that finish a
sentence, a denial taken back, and concept frames (not existing, finality, no point in staying
alive, need and duration, conditional threats) with the look-alikes that share their words."""

from __future__ import annotations

from typing import Any

import pytest

from verbatim.notes.evidence import units
from verbatim.notes.risk import MEANING_KINDS, answer, categories_in, flags, mirrored, question_topic


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
    # alone it is a rule's ambiguity (a hotel, a shop): the rules leave it; the meaning check may read it
    assert [f for f in check(("client", "I've been thinking about checking out."))["flags"]
            if f["kind"] not in MEANING_KINDS] == []
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


# --- second pass: mechanisms read on wording the tables never list --------------------------------

@pytest.mark.parametrize(("said", "category"), [
    ("I've been handing out my records and my watch to friends, I won't be needing them.", "suicide"),
    ("I left the passwords and a letter where my husband will find them.", "suicide"),
    ("I've chosen the day.", "suicide"),
    ("I'd rather not tell you how, but I've got it worked out, the plan's there.", "suicide"),
    ("I sat on the railing of the overpass for about an hour last night.", "suicide"),
    ("if I just fell asleep and never woke up that would honestly be a mercy", "suicide"),
    ("I slipped up last night and got out the blades again.", "self_harm"),
    ("I hide a razor blade in my pencil case for when it gets bad.", "self_harm"),
    ("I told him if he comes near my kid again I'll stab him, and I mean it.", "harm_to_others"),
    ("I'm going to make my ex regret what she did.", "harm_to_others"),
    ("my husband poured hot tea over me when I answered back.", "abuse"),
    ("I begged him to stop and he kept going.", "abuse"),
    ("my daughter talked me into signing over my flat and now she won't let me visit.", "abuse"),
    ("I forgot to pick up my daughter's inhaler again, she's been wheezing all week.", "neglect"),
    ("my son cut his hand badly and I didn't take him to the hospital because I was too drunk.", "neglect"),
])
def test_second_pass_mechanisms_read_new_wording(said: str, category: str) -> None:
    assert category in cats(check(("client", said))["flags"])


@pytest.mark.parametrize("said", [
    "I'm giving my books away before the move, I won't need them in a smaller flat.",
    "We've picked a date for the wedding.",
    "I'm not going to tell you what the plan is for her surprise party, but I have one.",
    "we stood at the edge of the car park roof for an hour to watch the fireworks",
    "if I go to bed now and don't wake up till noon that'd be fine honestly",
    "I keep a blade in my toolbox for cutting carpet.",
    "I told my boss I'd quit if they cut my hours, and I meant it.",
    "I'm going to make him pay for dinner this time.",
    "the waiter spilled hot coffee on me by accident.",
    "I haven't picked up my son's inhaler because he hasn't needed it since spring.",
    "she's homeschooled now so I stopped sending her to school.",
    "if I have to answer one more email today I'm going to kill myself, honestly",
    "I'm a paramedic, I treat overdoses every weekend.",
])
def test_second_pass_lookalikes_are_not_flagged(said: str) -> None:
    assert check(("client", said))["flags"] == []


def test_hyperbole_about_a_chore_does_not_hide_a_day_like_this() -> None:
    said = "if I have to get through one more day like this I'm going to kill myself"
    assert cats(check(("client", said))["flags"]) == {"suicide"}


def test_the_second_pass_shapes_in_a_clinicians_mouth_are_never_flagged() -> None:
    asked = "Have you picked a date, or given things away, or made sure your life insurance is paid up?"
    risk = check(("therapist", asked),
                 ("therapist", "Some people say if they went to sleep and didn't wake up that would be a relief."))
    assert risk["flags"] == []


def test_an_anaphoric_question_asks_about_what_people_are_said_to_think() -> None:
    lead_in = "Sometimes when people feel this low they think about not being alive."
    assert question_topic([lead_in, "Has that come up for you?"]) == {"suicide"}
    risk = check(("therapist", f"{lead_in} Has that come up for you?"), ("client", "No. Never. My mum needs me."))
    assert risk["flags"] == [] and cats(risk["denials"]) == {"suicide"}
    # a lead-in about one named person is not a screening question
    assert question_topic(["My brother thinks about not being alive.", "Has that come up for you?"]) == frozenset()


def test_a_yes_to_whether_a_dependant_is_cared_for_is_a_denial() -> None:
    assert question_topic(["Is your father getting the care he needs at home?"]) == {"neglect"}
    risk = check(("therapist", "Are the kids getting fed and looked after while you're at work?"),
                 ("client", "yeah yeah my mom has them, they're fine"))
    assert risk["flags"] == [] and cats(risk["denials"]) == {"neglect"}
    risk = check(("therapist", "Are the kids getting fed okay at the moment?"),
                 ("client", "honestly not really, some days they don't get dinner at all"))
    assert cats(risk["flags"]) == {"neglect"}


def test_taking_all_of_ones_medicines_for_a_condition_is_adherence_not_a_method() -> None:
    from verbatim.notes.risk import read

    # aci-bench D2N014: "have you been taking all of your meds for your heart failure?" "i have."
    assert read("have i been taking all of my meds for my heart failure") == []
    assert read("i've been taking all my pills") == []
    assert [f.category for f in read("i swallowed all of my sleeping pills")] == ["suicide"]
