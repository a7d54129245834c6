"""The risk check (issue 20): the client's words read with the question they answer, negation
scoped to its clause, look-alikes, denials shown as denials, family history (no servers)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from verbatim.notes.drafter import OfflineDrafter
from verbatim.notes.evidence import units
from verbatim.notes.formats import sections_of
from verbatim.notes.render import plain_text
from verbatim.notes.risk import MEANING_KIND, MEANING_KINDS, NOTHING_DETECTED, answer, flags, normalise, unfilled

ROOT = Path(__file__).resolve().parents[2]


def record(*turns: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"id": f"seg-{n}", "speaker": who, "start_s": 10.0 * n, "end_s": 10.0 * n + 8, "text": text}
            for n, (who, text) in enumerate(turns)]


def check(*turns: tuple[str, str]) -> dict[str, Any]:
    return flags(units(record(*turns), "client", spoken=True))  # as the note run reads the record


def said(text: str) -> dict[str, Any]:
    return check(("client", text))


def cats(entries: list[dict[str, Any]]) -> set[str]:
    return {e["category"] for e in entries}


@pytest.mark.parametrize(("text", "category"), [
    ("I've been thinking about ending it.", "suicide"),
    ("I don't want to be here anymore.", "suicide"),
    ("I took a whole bunch of pills to make it stop.", "suicide"),
    ("I started cutting again, on my arms.", "self_harm"),
    ("I've been saving up my sleeping pills in a drawer.", "suicide"),
    ("My husband said if I ever leave he'll kill me.", "abuse"),
    ("He calls me worthless and stupid every day.", "abuse"),
    ("I have these thoughts about strangling my ex.", "harm_to_others"),
    ("I hit my kids when I lose my temper.", "abuse"),
    ("My mom left us alone for days when she was using.", "neglect"),
    ("He hits me if I'm late home.", "abuse"),
])
def test_the_ways_people_say_it_are_flagged_with_their_category(text: str, category: str) -> None:
    risk = said(text)
    assert cats(risk["flags"]) == {category}, risk
    flag = risk["flags"][0]
    assert flag["quote"] == text and flag["speaker"] == "client" and flag["segment_id"] == "seg-0"
    assert flag["kind"] and flag["reason"]


@pytest.mark.parametrize("text", [
    "I cut myself a slice of cake.", "I cut myself shaving.", "I tripped and hurt myself.",
    "We watched a movie about suicide bombers.", "I'm volunteering for a suicide prevention walk.",
    "I could kill him for eating my lunch.", "The nurse pushed me in a wheelchair.", "My back is killing me.",
    "My mom's going to kill me when she sees my grades.", "Some guy hit me from behind at a red light.",
    "I've been beating myself up about the exam.", "My boss said he'd kill me if I was late again, ha.",
    "My cat bites me when I stop petting her.", "I'd rather die than go to that party.",
])
def test_idioms_literal_uses_and_media_are_not_flagged(text: str) -> None:
    risk = said(text)
    assert risk["flags"] == [] and risk["status"] == "none found", risk


def test_negation_is_scoped_to_what_it_negates() -> None:
    # A "no" in another clause, or a negation inside the risk phrase itself, is no denial.
    for text in ("My ex forced me to have sex when I said no.",
                 "If things don't change by the end of the month I'm going to kill myself.",
                 "I don't want to live like this anymore.", "I'm not sure I want to live.",
                 "He doesn't hit me anymore."):
        risk = said(text)
        assert risk["flags"] and not risk["denials"], (text, risk)
    # A negation that governs the risk claim is a denial, shown as one.
    for text in ("I would never hurt myself.", "I'd never kill myself, I have my kids.", "I'm not suicidal."):
        risk = said(text)
        assert not risk["flags"] and risk["denials"], (text, risk)


def test_contractions_written_without_apostrophes_read_as_contractions() -> None:
    # Recognizer or typed text drops apostrophes ("i dont", "cant"): the negation still scopes,
    # and a risk phrase written with a contraction still matches.
    for text in ("i dont want to kill myself", "i wouldnt ever hurt myself", "nah i didnt try to kill myself"):
        risk = said(text)
        assert not risk["flags"] and risk["denials"], (text, risk)
    for text in ("i cant keep living like this", "i cant see any reason to keep living",
                 "whats the point of living"):
        assert cats(said(text)["flags"]) == {"suicide"}, text
    assert normalise("i dont know, im tired, its late") == "i don't know, i'm tired, its late"


def test_spoken_fillers_inside_a_phrase_do_not_hide_it_and_the_quote_keeps_them() -> None:
    for text in ("i want to like die", "I wish I was, like, dead.", "A part of me just wishes I was dead.",
                 "i've been kind of thinking about like ending it"):
        risk = said(text)
        assert cats(risk["flags"]) == {"suicide"}, (text, risk)
        assert risk["flags"][0]["quote"] == text
    # "like" as a verb or after "feel" is not a filler; fillers never turn a denial into a flag.
    assert unfilled("i'd like to go home and i feel like crying") == "i'd like to go home and i feel like crying"
    assert said("i would honestly never like kill myself")["denials"]


def test_a_denial_then_a_disclosure_is_a_flag_and_the_note_does_not_say_denies() -> None:
    turns = (("therapist", "Are you having any thoughts of suicide?"),
             ("client", "Not now. Back in college I did, though. I tried to overdose."))
    risk = check(*turns)
    assert cats(risk["flags"]) == {"suicide"} and risk["denials"] == []
    assert any("overdose" in f["quote"] for f in risk["flags"])
    note = OfflineDrafter().draft(sections_of("soap"), units(record(*turns), "client"))
    assert not any("denies" in x["text"] for s in note for x in s["sentences"])
    again = check(("therapist", "Any thoughts of ending your life?"),
                  ("client", "No. Well, I mean, a couple of weeks ago I thought about it."))
    assert cats(again["flags"]) == {"suicide"} and again["denials"] == []


def test_um_kind_of_yeah_is_a_yes_quoted_as_said_with_the_question() -> None:
    risk = check(("therapist", "Have you been having thoughts of killing yourself?"),
                 ("client", "Um... kind of, yeah."))
    assert cats(risk["flags"]) == {"suicide"}
    flag = risk["flags"][0]
    assert flag["quote"] == "Um... kind of, yeah." and flag["segment_id"] == "seg-1"
    assert flag["question"]["quote"] == "Have you been having thoughts of killing yourself?"
    assert flag["question"]["speaker"] == "therapist"
    assert answer("Um... kind of, yeah.") == "yes" and answer("Um.") is None


def test_a_clarifying_question_then_never_is_a_denial_when_asked() -> None:
    one_turn = check(("therapist", "Are you having thoughts of harming yourself or ending your life?"),
                     ("client", "What, like suicidal? No, I would never do that."))
    two_turns = check(("therapist", "Have you had any thoughts of killing yourself?"),
                      ("client", "What, like suicidal?"), ("therapist", "Yes, like suicidal thoughts."),
                      ("client", "I would never do that."))
    for risk in (one_turn, two_turns):
        assert risk["flags"] == [], risk
        assert "suicide" in cats(risk["denials"])
        assert all(d["question"]["speaker"] == "therapist" for d in risk["denials"])
    assert two_turns["denials"][0]["segment_id"] == "seg-3"
    assert two_turns["denials"][0]["question"]["quote"] == "Have you had any thoughts of killing yourself?"


def test_therapist_screening_questions_and_safety_advice_are_never_flags() -> None:
    risk = check(("therapist", "Some people who feel this low think about suicide. Have you had thoughts like that?"),
                 ("client", "No."),
                 ("therapist", "If you ever feel like hurting yourself, please call the crisis line."),
                 ("therapist", "It sounds like your father was really abusive when you were growing up."))
    assert risk["flags"] == []
    assert cats(risk["denials"]) == {"suicide"} and risk["denials"][0]["question"]["segment_id"] == "seg-0"


def test_safe_at_home_is_asked_the_other_way_round() -> None:
    unsafe = check(("therapist", "Do you feel safe at home?"), ("client", "No."))
    assert cats(unsafe["flags"]) == {"abuse"}
    safe = check(("therapist", "Do you feel safe at home?"), ("client", "Yeah, totally safe."))
    assert safe["flags"] == [] and cats(safe["denials"]) == {"abuse"}


def test_another_persons_suicide_is_family_history_not_the_clients_risk() -> None:
    for text in ("My uncle died by suicide when I was twelve.", "My brother killed himself three years ago.",
                 "My mom tried to overdose when I was a kid."):
        risk = said(text)
        assert risk["flags"] == [] and len(risk["family_history"]) == 1, (text, risk)
    risk = said("My family would be better off if I was gone.")
    assert cats(risk["flags"]) == {"suicide"} and risk["family_history"] == []


def test_a_record_without_flags_says_what_was_checked_not_none_found() -> None:
    risk = check(("therapist", "How was the week?"), ("client", "Busy, but fine. I slept better."))
    assert risk["flags"] == [] and risk["checked"] == NOTHING_DETECTED
    text = plain_text({"risk": risk, "sections": []})
    assert NOTHING_DETECTED in text and "none found" not in text.lower()
    assert "not a risk assessment" in NOTHING_DETECTED


def test_a_record_with_flags_never_carries_the_nothing_detected_sentence() -> None:
    risk = check(("therapist", "How was the week?"), ("client", "I took a handful of pills to make it all stop."))
    assert risk["status"] == "found" and risk["flags"]
    assert "checked" not in risk  # an API reader showing it would print "nothing detected" over the flag


def test_the_bench_scores_items_in_the_documented_format(tmp_path: Path) -> None:
    items = [
        {"id": "a", "speaker": "client", "text": "I've been thinking about ending it.", "label": "suicide",
         "denied": False},
        {"id": "b", "speaker": "client", "text": "I cut myself shaving.", "label": "none", "denied": False, "x": 1},
        {"id": "c", "speaker": "client", "text": "No, never.", "label": "suicide", "denied": True,
         "context": [{"speaker": "therapist", "text": "Any thoughts of suicide?"}]},
        {"id": "d", "speaker": "therapist", "text": "Have you thought about killing yourself?", "label": "none",
         "denied": False, "context": []},
    ]
    path, out = tmp_path / "items.json", tmp_path / "out.jsonl"
    path.write_text(json.dumps(items))
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "risk.py"), "--items", str(path), "--out", str(out),
                          "--no-dialogues"], capture_output=True, text=True, check=True, cwd=ROOT)
    last = json.loads(run.stdout.strip().splitlines()[-1])
    assert last["risk_recall"] == 1.0 and last["risk_false_flag"] == 0.0 and last["denials_shown"] == 1.0
    assert last["therapist_false_flags"] == 0 and last["genuine"] == 1 and last["none_items"] == 2
    assert all(v is not None for v in last.values())
    rows = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert rows["a"] == {"id": "a", "flags": ["suicide"], "denials": [], "family_history": False}
    assert rows["c"]["denials"] == ["suicide"] and rows["c"]["flags"] == []
    assert rows["b"]["flags"] == [] and rows["d"]["flags"] == []


@pytest.mark.parametrize(("name", "recall", "false_flag", "denials"), [
    ("risk_items.json", 0.95, 0.05, 0.95),     # the set the rules were written against
    ("risk_holdout.json", 0.90, 0.05, 0.90),   # held out: written before the rules it was first scored on
    ("risk_holdout2.json", 0.90, 0.05, 0.90),
    ("risk_holdout3.json", 0.90, 0.05, 0.90),
    # never trained on: its author saw neither the rules nor any set; the rules alone find 0.59 of it,
    # the meaning check the rest (bench/train_risk_reader.py MEASURE_SETS)
    ("risk_holdout14.json", 0.80, 0.05, 0.85),
])
def test_the_labelled_sets_meet_the_targets(name: str, recall: float, false_flag: float, denials: float) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import risk as bench  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    figures = bench.run_items(ROOT / "bench" / "data" / name, None, False)
    assert figures["genuine"] >= 25 and figures["items"] >= 50
    assert figures["risk_recall"] >= recall and figures["risk_false_flag"] <= false_flag
    assert figures["denials_shown"] >= denials and figures["therapist_false_flags"] == 0


def test_every_labelled_set_is_either_trained_on_measured_or_used_for_rules_and_never_two_of_them() -> None:
    # a set trained on and also measured would make the measure a lie
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import train_risk_reader as training  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    names = {p.stem for p in (ROOT / "bench" / "data").glob("risk_*.json")} - {"risk_aci_labels"}
    train, measure, development = (set(training.TRAIN_SETS), set(training.MEASURE_SETS),
                                   set(training.DEVELOPMENT_SETS))
    assert train | measure | development == names
    assert not (train & measure or train & development or measure & development)


def test_a_word_class_matches_every_inflection_of_its_words_and_nothing_longer() -> None:
    from verbatim.notes.risk_lexicon import inflections, word_class

    assert inflections("hope") == {"hope", "hopes", "hoped", "hoping"}
    assert inflections("stab") >= {"stabbed", "stabbing"} and inflections("take") >= {"took", "taken", "taking"}
    assert "taked" not in inflections("take") and inflections("die") >= {"died", "dying"}
    pattern = re.compile(word_class("hope, look+ forward to, heart give+ out"))
    for text in ("she hoped", "i'm looking forward to it", "my heart gave out"):
        assert pattern.search(text), text
    for text in ("hopeless", "look forward", "heart gave"):
        assert not pattern.search(text), text


@pytest.mark.parametrize(("text", "category"), [
    # synonyms and tenses no phrase entry lists: the concept frames read them by class
    ("I keep praying my heart just stops in my sleep.", "suicide"),
    ("I swallowed about thirty of my mum's sleeping tablets.", "suicide"),
    ("I've pictured setting fire to his flat.", "harm_to_others"),
    ("As a kid I got strapped with a belt for wetting the bed.", "abuse"),
    ("Nobody checked whether we ate or went to school.", "neglect"),
    ("She hasn't been bathed or changed for three days at that home.", "neglect"),
    ("I put a plastic bag over my head.", "suicide"),
    ("I just want it all to go away forever.", "suicide"),
    ("Nobody would even notice if I vanished.", "suicide"),
    ("I keep picturing myself hanging.", "suicide"),
    ("He twisted my arm behind my back.", "abuse"),
    ("I want to see him in pain.", "harm_to_others"),
])
def test_concept_frames_read_synonyms_and_inflections_the_phrases_never_listed(text: str, category: str) -> None:
    assert cats(said(text)["flags"]) == {category}, text


def test_a_frame_is_cancelled_by_its_unless_context_but_not_when_it_was_deliberate() -> None:
    # a sports result or an accident shares the words; "on purpose" wins over the accident
    for text in ("We got beaten in the final.", "I was locked out of my house.", "I sliced my finger cooking."):
        assert not said(text)["flags"], text
    assert cats(said("I sliced my finger on purpose while cooking.")["flags"]) == {"self_harm"}
    assert cats(said("I don't want to die.")["denials"]) == {"suicide"}
    for text in ("My plan is to take the train on Friday.", "I can't imagine myself living in this city by next year.",
                 "The physio twisted my arm to check the shoulder.", "I want the pain in my knee to go away for good.",
                 "I'd rather stay asleep than go to that meeting.", "i hope i dont wake up the baby",
                 "She pulled my hair while braiding it.", "We lived on noodles for weeks in college, it was fun.",
                 "I can see myself dying my hair pink.",
                 "If I leave the party early they'll make sure to save me cake.",
                 "I looked up how long it takes to get a passport.", "My plan is to take my meds with breakfast."):
        assert not said(text)["flags"], text


@pytest.mark.parametrize(("said_", "verdict"), [
    ("I wouldn't say no.", "yes"), ("I guess so.", "yes"), ("Um, I suppose.", "yes"),
    ("It crosses my mind.", "yes"), ("Hardly ever.", "yes"), ("Only once.", "yes"),
    ("I guess not.", "no"), ("Probably not.", "no"),
])
def test_hedged_rare_and_double_negated_answers_are_read_as_said(said_: str, verdict: str) -> None:
    assert answer(said_) == verdict
    risk = check(("therapist", "Have you had thoughts of killing yourself?"), ("client", said_))
    assert bool(risk["flags"]) == (verdict == "yes") and bool(risk["denials"]) == (verdict == "no"), risk


def test_a_screening_question_without_its_question_mark_is_still_the_question_answered() -> None:
    # recognizer text: lower case, no punctuation; the answer is read with the question
    assert cats(check(("therapist", "have you had any thoughts of suicide"), ("client", "i mean yeah sometimes"))[
        "flags"]) == {"suicide"}
    denied = check(("therapist", "is anyone hurting you at home"), ("client", "not really no"))
    assert denied["flags"] == [] and cats(denied["denials"]) == {"abuse"}
    assert cats(check(("therapist", "so any thoughts of hurting yourself since we last met"),
                      ("client", "i slipped up last week"))["flags"]) == {"self_harm"}
    # a statement stays a statement: with its full stop, or not shaped as a question
    for question in ("Have you had any thoughts of suicide.", "you mentioned your brother died by suicide"):
        assert check(("therapist", question), ("client", "yeah when i was ten"))["flags"] == [], question
    assert cats(check(("therapist", "Have you had thoughts of suicide?"), ("client", "I wouldn't act on them."))[
        "flags"]) == {"suicide"}


def test_everyday_uses_of_dose_parking_and_evening_words_are_look_alikes() -> None:
    for text in ("I took all my meds this morning like the doctor said.", "We want to end it with a party.",
                 "I drive my car into the garage.", "I read about how much water it takes to die of thirst.",
                 "I worked out how much paint would be enough for the kitchen.",
                 "He makes me ask permission before I borrow the car, he's my dad and I'm sixteen."):
        assert not said(text)["flags"], text
    # and "not since the hospital" says it happened before
    assert answer("Not since the hospital.") == "past" and answer("Not since years.") != "past"


def test_a_new_subject_ends_a_negation_the_recognizer_did_not_punctuate() -> None:
    assert cats(said("i don't have a plan or anything i just think about dying a lot")["flags"]) == {"suicide"}
    # a belief verb raises the negation over the new subject
    risk = said("i don't think i want to die")
    assert not risk["flags"] and cats(risk["denials"]) == {"suicide"}
    assert cats(said("i don't even know if i want to live anymore")["flags"]) == {"suicide"}


def test_doing_the_same_as_a_relative_is_the_clients_risk_and_the_relative_stays_family_history() -> None:
    risk = said("My dad took his own life. I've thought about doing the same.")
    assert cats(risk["flags"]) == {"suicide"} and cats(risk["family_history"]) == {"suicide"}
    assert cats(said("My sister cuts herself and I tried it too once.")["flags"]) == {"self_harm"}
    only_family = said("My uncle died by suicide and I think about him a lot.")
    assert only_family["flags"] == [] and cats(only_family["family_history"]) == {"suicide"}


def test_a_bare_i_cut_at_the_end_of_a_clause_is_self_injury_but_cutting_a_thing_is_not() -> None:
    assert cats(said("nobody knows that i cut")["flags"]) == {"self_harm"}
    for text in ("i cut the grass yesterday", "i cut my hair"):
        assert not said(text)["flags"], text


@pytest.mark.parametrize("text", [
    "You won't have to worry about me much longer.", "It feels like the only way out.",
    "I've been driving fast half hoping I crash.", "Sometimes I lie in bed and think about how I'd do it.",
    "Dying doesn't seem so scary anymore, it seems kind of peaceful.",
])
def test_indirect_suicide_talk_is_flagged(text: str) -> None:
    assert cats(said(text)["flags"]) == {"suicide"}, text


@pytest.mark.parametrize("text", [
    "The only way out of the building is the fire escape.", "I hope I don't crash the car.",
    "I think about how I'd do it differently next time at work.", "The beach sounds peaceful.",
    "I want to crash on the sofa.",
])
def test_the_same_words_about_ordinary_things_are_not(text: str) -> None:
    # No rule reads these as risk. The tuned meaning check reads "The only way out of the building is the fire
    # escape." as suicide (P 0.96): a known false flag of it, measured on ordinary talk rather than tested here.
    assert not [f for f in said(text)["flags"] if f["kind"] not in MEANING_KINDS], text


@pytest.mark.parametrize(("text", "category"), [
    ("I snap a rubber band on my wrist until it leaves welts.", "self_harm"),
    ("I bang my fists against the wall.", "self_harm"),
    ("I'm really scared of my husband.", "abuse"),
    ("I walk on eggshells around him.", "abuse"),
    ("Mum's too drunk to look after us.", "neglect"),
    ("The home forgets to give her her meds.", "neglect"),
])
def test_fear_of_a_partner_control_self_injury_and_a_carers_neglect_in_other_words(text: str, category: str) -> None:
    assert cats(said(text)["flags"]) == {category}, text
    for harmless in ("I'm scared of my dad getting sick.", "I'm terrified of spiders.",
                     "She told me what to wear for the interview.", "She forgets her meds sometimes.",
                     "I pulled my hair into a ponytail."):
        # No rule reads these as risk. The meaning check may read "She forgets her meds sometimes." as a
        # carer's neglect (P 0.95): its flags say so, and its rate on ordinary talk is measured, not tested.
        assert not [f for f in said(harmless)["flags"] if f["kind"] != MEANING_KIND], harmless


def test_just_after_the_subject_and_me_before_being_do_not_hide_passive_ideation() -> None:
    # Found by a fresh user's two-voice recording: both answers to a suicide screening question were missed.
    for reply in ("Honestly, it would be easier for everybody if I just was not around anymore.",
                   "There is no point in me being here anymore."):
        risk = check(("therapist", "Have you had any thoughts of ending your life?"), ("client", reply))
        assert cats(risk["flags"]) == {"suicide"} and risk["denials"] == [], (reply, risk)
    assert check(("client", "I just was not around when it happened, I was at work."))["flags"] == []


def rule_flags(*turns: tuple[str, str]) -> list[dict[str, Any]]:
    """The flags the rules raise (the meaning check's own are left out)."""
    return [f for f in check(*turns)["flags"] if f["kind"] not in MEANING_KINDS]


@pytest.mark.parametrize(("said_", "verdict"), [
    # a correction, then the denial said again at the end: a denial
    ("No... I mean, I've had the odd dark night, everybody does, but no. Nothing like that.", "no"),
    ("no i mean ive thought like life's hard sometimes but no no not that", "no"),
    ("um not really no i mean i've been low but not like that", "no"),
    # an act told after the correction stays told
    ("no well i did once but not like that", "past"), ("No, but I have thought about it.", "yes"),
    ("No. Well, last week I did take extra pills.", "yes"),
    ("Course not.", "no"), ("That's not me.", "no"), ("zero none nada", "no"), ("Not a flicker.", "no"),
    # Australian, New Zealand and Scots English
    ("Yeah nah, nothing like that, mate.", "no"), ("nah yeah, a bit", "yes"), ("Naw. Never.", "no"),
])
def test_a_denial_said_again_after_a_correction_and_plain_refusals_are_denials(said_: str, verdict: str) -> None:
    assert answer(said_) == verdict, said_


@pytest.mark.parametrize(("question", "reply", "category"), [
    ("Before you go, I need to ask: are you safe? Any thoughts of ending your life?",
     "Yeah, I'm safe. I'm not gonna do anything to myself, promise.", "suicide"),
    ("With everything going on, are you still able to make sure the kids are fed and looked after?",
     "No, they're fine, they eat, they're clean, they go to school.", "neglect"),
    ("Do you ever burn yourself?", "uh no why would i do that no", "self_harm"),
    # the negation after "safe" is about something else
    ("Are you having any thoughts of suicide?",
     "yeah yeah im safe i havent got any of that going on no plans or nothing like that", "suicide"),
])
def test_a_yes_im_safe_a_no_theyre_fine_and_a_why_would_i_are_denials_when_asked(
        question: str, reply: str, category: str) -> None:
    risk = check(("therapist", question), ("client", reply))
    assert risk["flags"] == [] and cats(risk["denials"]) == {category}, risk


@pytest.mark.parametrize("text", [
    "Had three overdoses in on my night shift, all teenagers.", "Thirty years on A&E I saw every kind of overdose.",
    "I overdosed on Netflix this weekend.", "i want to die my hair blue for the formal",
    "i cut my own fringe and now i wanna die lol its so bad", "My little brother hit me with a Nerf dart.",
    "The menopause is hitting me like a freight train.", "My business partner stabbed me in the back.",
    "i feel like my sister throws me under the bus every time", "It's like there's a grey cloud following me around.",
    "I have a big family and I always feel like the odd one out.",
    "i was like so hungover i literally wanted to die",
    "My daughter's dissertation is on self-harm in teenagers.",
])
def test_overdoses_seen_at_work_hyperbole_and_idioms_of_hitting_and_stabbing_are_look_alikes(text: str) -> None:
    assert rule_flags(("client", text)) == [], text


@pytest.mark.parametrize(("text", "category"), [
    ("I've had three overdoses in the last year.", "suicide"), ("He hit me with his belt.", "abuse"),
    ("I was so low I wanted to die.", "suicide"), ("ive thought about eating my gun", "suicide"),
    ("My ex keeps following me home.", "abuse"),
])
def test_the_look_alikes_leave_the_same_words_said_in_earnest(text: str, category: str) -> None:
    assert cats(rule_flags(("client", text))) == {category}, text


def test_thoughts_long_past_and_resolved_are_history_but_a_past_attempt_is_a_flag() -> None:
    for resolved in ("I used to think about dying a lot when I was nineteen, but that was twenty years ago and I'm "
                     "in a completely different place.",
                     "When I was younger I used to think about hurting people who bullied me, but that's long gone.",
                     "um i used to self harm when i was a teenager but its been like ten years now and i dont get the "
                     "urges at all anymore"):
        assert rule_flags(("client", resolved)) == [], resolved
    attempt = "I tried to overdose when I was nineteen, but that was twenty years ago and I'm in a different place now."
    assert cats(rule_flags(("client", attempt))) == {"suicide"}
    # thoughts that are past but not said to be over stay flags
    assert cats(rule_flags(("client", "I used to think about dying a lot when I was nineteen."))) == {"suicide"}


@pytest.mark.parametrize(("text", "category"), [
    ("I know I said I wish I was dead earlier but that's just how I talk.", "suicide"),
    ("what no like i said i'd kill him but i didn't mean it like that", "harm_to_others"),
])
def test_the_clients_own_words_taken_back_in_the_same_breath_are_a_denial(text: str, category: str) -> None:
    risk = check(("client", text))
    assert risk["flags"] == [] and cats(risk["denials"]) == {category}, risk
    # the same words not taken back stay a flag
    kept = re.sub(r"\s*but .*$", "", text) + " and I meant it."
    assert cats(rule_flags(("client", kept))) == {category}, kept


def test_a_negation_hedged_with_exactly_keeps_the_wish() -> None:
    risk = check(("client", "I don't want to die exactly, I just want everything to stop."))
    assert cats(risk["flags"]) == {"suicide"} and risk["denials"] == [], risk
    assert cats(check(("client", "I don't want to die."))["denials"]) == {"suicide"}


@pytest.mark.parametrize(("text", "category", "negated"), [
    ("no no i'm not going to do anything stupid i promise", "suicide", True),
    ("I'm scared I'll do something stupid tonight.", "suicide", False),
    ("She threw the kettle at me. Boiled.", "abuse", False),
    ("if a bus hit me i'd be like oh okay fine i wouldn't step out of the way", "suicide", False),
    ("I bang my head on the steering wheel when I'm parked outside work.", "self_harm", False),
    ("I've been stockpiling my dad's morphine since he passed.", "suicide", False),
])
def test_euphemisms_thrown_objects_and_welcomed_accidents_are_read(text: str, category: str, negated: bool) -> None:
    risk = check(("client", text))
    assert cats(risk["denials" if negated else "flags"]) == {category}, risk


@pytest.mark.parametrize("text", [
    "I might do something stupid like quit my job.", "My son threw the ball at me and I caught it.",
    "I was shooting myself in the foot all game, missed two sitters.",
    "I've been burning the candle at both ends.", "I work in the police, domestic abuse unit.",
    "We had an overdose call on Tuesday, young lad.",
])
def test_silly_choices_games_idioms_and_work_are_look_alikes(text: str) -> None:
    assert rule_flags(("client", text)) == [], text


def test_an_elliptical_do_you_ever_asks_what_the_lead_in_said() -> None:
    risk = check(("therapist", "Some people hurt themselves when they feel like that. Do you ever?"),
                 ("client", "Nah, that's not me."))
    assert risk["flags"] == [] and cats(risk["denials"]) == {"self_harm"}, risk


def test_a_state_granted_then_the_act_denied_is_a_denial() -> None:
    assert answer("uh no i mean i've had bad days but i've never like tried or anything never") == "no"
    assert answer("no, i mean i did try once but i've never told anyone") != "no"


def test_any_previous_attempts_asks_about_suicide_and_a_no_to_it_is_a_denial() -> None:
    risk = check(("therapist", "Any previous attempts?"), ("client", "uh no i mean i've had bad days but i've never "
                                                                    "like tried or anything never"))
    assert risk["flags"] == [] and cats(risk["denials"]) == {"suicide"}, risk


def test_a_carer_saying_she_is_eating_fine_denies_neglect_to_the_inverted_question() -> None:
    risk = check(("therapist", "Is your mum getting everything she needs at the moment?"),
                 ("client", "um no she's eating fine like i do all her meals and the carer comes twice a day"))
    assert risk["flags"] == [] and cats(risk["denials"]) == {"neglect"}, risk


@pytest.mark.parametrize(("text", "category"), [
    ("I've told him if he doesn't pay by the end of the month he'll be in a wheelchair.", "harm_to_others"),
    ("Last night I stood at his door with a hammer in my hand. I went home.", "harm_to_others"),
    ("I told him if he keeps drinking like that he'll end up in hospital.", None),
    ("I went round to her place with a hammer to put up the shelves.", None),
])
def test_a_threat_and_a_weapon_taken_to_a_door_but_not_a_warning_or_diy(text: str, category: str | None) -> None:
    assert cats(rule_flags(("client", text))) == ({category} if category else set()), text


@pytest.mark.parametrize("text", [
    "I don't want to be here anymore. In Leeds, I mean. It's grey and I don't know anyone.",
    "I've been cutting. Cutting my hours, I mean, down to four days a week.",
    "I'm going to murder my brother if he borrows my car again. Not literally, obviously.",
])
def test_a_sentence_that_says_the_one_before_meant_something_else_takes_it_back(text: str) -> None:
    assert rule_flags(("client", text)) == [], text


@pytest.mark.parametrize(("text", "category"), [
    ("I don't want to be here anymore. Alive, I mean.", "suicide"),
    ("I cut myself. On purpose, I mean.", "self_harm"), ("I've been cutting again. My arms, I mean.", "self_harm"),
    ("I don't want to be here anymore. In this world, I mean.", "suicide"),
    ("I want to kill myself. Not joking.", "suicide"),
])
def test_a_clarification_that_says_the_words_were_meant_keeps_the_flag(text: str, category: str) -> None:
    assert cats(rule_flags(("client", text))) == {category}, text


@pytest.mark.parametrize("text", [
    "My son came home with a big bruise on his arm. He did it wrestling with his cousin on the trampoline.",
    "my son's got a black eye from rugby", "so i got bitten by a dog at work i'm a postman",
    "My hands are covered in cuts at the moment. I've started bouldering at the climbing wall.",
    "so the burns on my arms are from work i'm a baker and the ovens are ancient",
    "I took a whole handful of pills last night. Vitamin D, iron, magnesium.",
    "I'm on a lot of painkillers right now after the ACL reconstruction.",
    "i'm literally going to die if i have to do another plank", "the only thing keeping me going is coffee",
    "My wife said if I come off it she'll kill me.",
])
def test_injuries_with_an_ordinary_cause_said_then_or_next_and_everyday_hyperbole_are_look_alikes(text: str) -> None:
    assert rule_flags(("client", text)) == [], text


@pytest.mark.parametrize(("text", "category"), [
    ("He gave me a black eye. After the match he was drunk.", "abuse"),
    ("He burned me with a cigarette. He does it with the lighter from the kitchen.", "abuse"),
    ("I cut myself again on Saturday. Then I went to the match.", "self_harm"),
    ("I cut myself on Saturday. I was so angry after the match.", "self_harm"),
])
def test_an_injury_meant_or_given_is_not_explained_away_by_the_next_sentence(text: str, category: str) -> None:
    assert cats(rule_flags(("client", text))) == {category}, text


@pytest.mark.parametrize(("question", "reply", "category"), [
    ("Is your dad getting his meals and his medication okay?",
     "Yes, the carers come in twice a day and I check every evening, he's well looked after.", "neglect"),
    ("Is anyone making sure your dad gets his meals and his tablets while you're away?",
     "Yeah, my sister's there every day, she does his tablets.", "neglect"),
    ("do you feel safe at home", "um no i feel safe there", "abuse"),
    ("When you're drinking, who's looking after the kids? Are they getting fed and looked after?",
     "yeah they're fine my mum has them on weekends and i dont drink when theyre with me never", "neglect"),
    ("Have you ever hurt the kids when you've lost your temper?",
     "no i shout ill own that but ive never hit them not once", "abuse"),
    ("Do you have access to firearms, and have you thought about using one on yourself?",
     "Guns are at my brother's now. And no, I don't think that way. Never have.", "suicide"),
])
def test_care_questions_answered_yes_a_filler_no_before_safe_and_an_answer_after_a_preamble_are_denials(
        question: str, reply: str, category: str) -> None:
    risk = check(("therapist", question), ("client", reply))
    assert risk["flags"] == [] and cats(risk["denials"]) == {category}, risk


def test_an_answer_after_a_preamble_can_be_a_yes_and_not_safe_stays_a_disclosure() -> None:
    risk = check(("therapist", "Do you have access to firearms, and have you thought about using one on yourself?"),
                 ("client", "There's a rifle in the loft. And yeah, I have thought about it."))
    assert cats(risk["flags"]) == {"suicide"}, risk
    risk = check(("therapist", "Do you feel safe at home?"), ("client", "No, I don't feel safe there."))
    assert cats(risk["flags"]) == {"abuse"}, risk


def test_a_denial_then_hard_years_is_no_answer_about_the_topic_but_having_had_some_is() -> None:
    asked = ("therapist", "Have you ever thought about taking your own life?")
    risk = check(asked, ("client", "Naw. Never. No' once, and I've had some bad years."))
    assert risk["flags"] == [] and cats(risk["denials"]) == {"suicide"}, risk
    assert cats(check(asked, ("client", "I've had some."))["flags"]) == {"suicide"}


@pytest.mark.parametrize("reply", ["Yeah, I'm not safe.", "No, I'm not safe there.", "No, I don't feel safe."])
@pytest.mark.parametrize(("question", "category"), [
    ("Are you having any thoughts of suicide?", "suicide"), ("Do you feel safe at home?", "abuse")])
def test_not_safe_is_a_disclosure_to_any_safety_question_whatever_the_yes_or_no(
        question: str, category: str, reply: str) -> None:
    risk = check(("therapist", question), ("client", reply))
    assert cats(risk["flags"]) == {category} and risk["denials"] == [], risk
    assert "not safe" in risk["flags"][0]["reason"] or "answered no" in risk["flags"][0]["reason"], risk


def test_a_negation_spans_the_alternatives_joined_by_or_but_not_a_hedge() -> None:
    risk = check(("client", "he's never laid a hand on me or threatened me, he's a big softie"))
    assert risk["flags"] == [] and cats(risk["denials"]) == {"abuse"}, risk
    assert cats(rule_flags(("client", "i'm not sure whether to leave or kill him"))) == {"harm_to_others"}


@pytest.mark.parametrize(("question", "reply", "category"), [
    ("Some new mums have thoughts of harming their baby. Have you had anything like that?",
     "No. Never. I check she's breathing about ten times a night.", "harm_to_others"),
    ("When you're at your lowest, are the kids still getting fed and looked after?",
     "No, she's fed and clean and at school every day.", "neglect"),
    ("Is your dad getting his medication and meals okay?",
     "er no hes got his carers coming four times a day", "neglect"),
    ("Are the children looked after when you're on your long shifts?",
     "Yes, my mum has them every day after school.", "neglect"),
])
def test_questions_about_what_some_parents_think_and_care_questions_read_their_answers(
        question: str, reply: str, category: str) -> None:
    risk = check(("therapist", question), ("client", reply))
    assert risk["flags"] == [] and cats(risk["denials"]) == {category}, risk


def test_ending_it_with_someone_is_a_relationship_but_ending_it_with_pills_is_not() -> None:
    assert rule_flags(("client", "I'm ending it with Craig. The relationship, I mean.")) == []
    assert cats(rule_flags(("client", "I'm ending it with pills."))) == {"suicide"}


@pytest.mark.parametrize("reply", [
    "No. I mean, I don't know. Sometimes. At night.", "No. I don't know. Sometimes.",
    "Not really. Sometimes. At night.", "No... I don't know... maybe sometimes",
])
def test_a_no_taken_back_by_a_later_sometimes_is_a_flag_quoting_the_answer_up_to_it(reply: str) -> None:
    risk = check(("therapist", "Have you had any thoughts of ending your life?"), ("client", reply))
    assert cats(risk["flags"]) == {"suicide"} and risk["denials"] == [], risk
    assert "ometimes" in risk["flags"][0]["quote"]


@pytest.mark.parametrize("reply", ["No. Yeah, I'm sure.", "No. Kind of a weird question.",
                                   "No. A bit tired today though.", "No. No, nothing like that. I've got the kids."])
def test_a_no_followed_by_other_words_stays_a_denial(reply: str) -> None:
    risk = check(("therapist", "Have you had any thoughts of ending your life?"), ("client", reply))
    assert risk["flags"] == [] and cats(risk["denials"]) == {"suicide"}, risk


def test_hanging_upside_down_is_play_but_hanging_from_the_banister_is_an_attempt() -> None:
    assert rule_flags(("client", "I hung myself upside down on the climbing frame to make my son laugh.")) == []
    assert rule_flags(("client", "I hung myself off the back of the sofa to stretch my spine.")) == []
    assert cats(rule_flags(("client", "I hung myself from the banister last year but the rope broke."))) == {"suicide"}


@pytest.mark.parametrize(("content", "message"), [
    ("not json", "is not a JSON file"), ('{"a": 1}', "non-empty JSON list"), ("[]", "(empty)"),
    ("[42]", "item 0 is int"),
    ('[{"id": "a", "speaker": "patient", "text": "x", "label": "none", "denied": false}]', '"speaker" is'),
    ('[{"id": "a", "speaker": "client", "text": "x", "label": "suicidal", "denied": false}]', '"label" is'),
    ('[{"id": "a", "speaker": "client", "text": "x", "label": "none", "denied": "no"}]', '"denied" must be'),
    ('[{"id": "a", "speaker": "client", "text": " ", "label": "none", "denied": false}]', '"text" must be'),
    ('[{"id": "a", "speaker": "client", "text": "x", "label": "none"}]', 'has no "denied"'),
    ('[{"id": "a", "speaker": "client", "text": "x", "label": "none", "denied": false, "context": "oops"}]',
     '"context" must be'),
    ('[{"id": "a", "speaker": "client", "text": "yeah", "label": "none", "denied": false, "context": [{"speaker": '
     '"Therapist", "text": "Any thoughts of suicide?"}]}]', "each speaker one of client, therapist"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"), ("[" + "9" * 5000 + "]", "cannot be read"),
    ('[{"id": "a", "speaker": "client", "text": "\u200b\u200b", "label": "none", "denied": false}]',
     '"text" must be'),
    ('[{"id": "a", "speaker": "client", "text": "x", "label": "none", "denied": false}, '
     '{"id": "a", "speaker": "client", "text": "y", "label": "none", "denied": false}]', "the id is used twice"),
    ('[{"id": "a", "speaker": "therapist", "text": "x", "label": "suicide", "denied": false}]',
     'a therapist item is labelled "none"'),
    ('[{"id": "a", "speaker": "client", "text": "No.", "label": "none", "denied": true}]', 'must be the category'),
])
def test_the_bench_rejects_a_bad_items_file_with_a_message_and_no_traceback(
        tmp_path: Path, content: str, message: str) -> None:
    bad = tmp_path / "items.json"
    bad.write_text(content, encoding="utf-8")
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "risk.py"), "--items", str(bad), "--no-dialogues"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("kind", ["device", "pipe", "directory"])
def test_the_bench_refuses_an_items_path_that_is_no_regular_file_before_reading_it(tmp_path: Path, kind: str) -> None:
    path = {"device": Path("/dev/zero"), "pipe": tmp_path / "fifo", "directory": tmp_path}[kind]
    if kind == "pipe":
        os.mkfifo(path)  # reading it would wait for a writer forever
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "risk.py"), "--items", str(path), "--no-dialogues"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "is not a regular file" in done.stderr and "Traceback" not in done.stderr, done


@pytest.mark.parametrize(("args", "message"), [
    (["--out", "{tmp}"], "is a directory"), (["--out", "{tmp}/no/such/x.jsonl"], "is not a folder that exists"),
    (["--out", "/dev/full"], "could not be written"),
    (["--dialogues", "{tmp}/missing.json"], "cannot read the dialogues file"),
    (["--dialogues", "{tmp}/list.json"], 'a "data" list'),
    (["--dialogues", "{tmp}/nofile.json"], 'string "src" and "file"'),
    (["--dialogues", "{tmp}/ok.json", "--dialogue-labels", "{tmp}/latin1.json"], "is not a JSON file"),
    (["--dialogues", "{tmp}/ok.json", "--dialogue-labels", "{tmp}/missing.json"], "cannot read the dialogue labels"),
])
def test_the_bench_rejects_a_bad_out_path_or_dialogue_file_before_it_scores_anything(
        tmp_path: Path, args: list[str], message: str) -> None:
    items = tmp_path / "items.json"
    items.write_text('[{"id": "a", "speaker": "client", "text": "I want to die.", "label": "suicide", '
                     '"denied": false}]', encoding="utf-8")
    (tmp_path / "list.json").write_text("[1]", encoding="utf-8")
    (tmp_path / "nofile.json").write_text('{"data": [{"src": "[patient] hi"}]}', encoding="utf-8")
    (tmp_path / "ok.json").write_text('{"data": [{"src": "[patient] hi", "file": "d1"}]}', encoding="utf-8")
    (tmp_path / "latin1.json").write_bytes("[{\"file\": \"caf\u00e9\"}]".encode("latin-1"))
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "risk.py"), "--items", str(items), *argv],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.stdout == ""  # nothing scored, no half report


def test_the_note_writes_no_denial_from_a_turn_whose_speaker_is_uncertain() -> None:
    from verbatim.notes.negations import denials

    turns = record(("therapist", "Any thoughts of harming anyone else?"), ("client", "No, never."))
    assert [d.topic for d in denials(units(turns, "client"))] != []
    turns[1]["marks"] = ["speaker_uncertain"]
    assert denials(units(turns, "client")) == []
    risk = flags(units(turns, "client"))
    assert risk["denials"] and all(d.get("speaker_uncertain") for d in risk["denials"]), risk


@pytest.mark.parametrize("reply", ["I'd rather not say.", "I'd rather not talk about that today.",
                                   "Why, would you have to tell someone if I did?"])
def test_a_screening_question_declined_is_shown_as_declined_not_dropped_or_denied(reply: str) -> None:
    risk = check(("therapist", "Have you had any thoughts of ending your life?"), ("client", reply))
    assert cats(risk["flags"]) == {"suicide"} and risk["denials"] == [], risk
    assert risk["flags"][0]["reason"] == "declined to answer when asked"


def test_safe_enough_then_he_only_shoves_me_is_a_disclosure() -> None:
    risk = check(("therapist", "Do you feel safe at home?"),
                 ("client", "Safe enough. He only shoves me when he's drunk."))
    assert cats(risk["flags"]) == {"abuse"} and risk["denials"] == [], risk
    assert rule_flags(("client", "My dad pushed me to apply for the job.")) == []


@pytest.mark.parametrize(("said_", "verdict"), [
    # a new matter after the "but" is not the act taken back ("I've been" / "I have been" alone grant nothing)
    ("No. But I've been sleeping badly.", "no"), ("No. But I have been really tired lately.", "no"),
    ("no no nothing like that im angry yeah but im not that kind of person", "no"),
    # … while the act about it still is
    ("Not really. I mean I have, a couple of times.", "yes"), ("No. Actually I have been thinking about it.", "yes"),
    ("No. Well, kind of. Sometimes I picture it.", "yes"),
])
def test_a_correction_grants_the_act_only_about_it(said_: str, verdict: str) -> None:
    assert answer(said_) == verdict
    risk = check(("therapist", "Have you had any thoughts of ending your life?"), ("client", said_))
    if verdict == "no":
        assert cats(risk["denials"]) == {"suicide"} and risk["flags"] == [], risk
    else:
        assert "suicide" in cats(risk["flags"]) and risk["denials"] == [], risk


def test_what_follows_a_but_after_a_denial_is_read_and_a_flag_there_outweighs_the_denial() -> None:
    turns = (("therapist", "Any thoughts of suicide?"),
             ("client", "No, I wouldn't. Though I did look up how many of my tablets it would take."))
    risk = check(*turns)
    assert cats(risk["flags"]) == {"suicide"} and risk["denials"] == [], risk
    # the denial alone, or with an ordinary matter after the "but", stays a denial
    for reply in ("No, I wouldn't.", "No, I wouldn't. But I've been tired, work has been mad."):
        risk = check(("therapist", "Any thoughts of suicide?"), ("client", reply))
        assert cats(risk["denials"]) == {"suicide"} and risk["flags"] == [], (reply, risk)


@pytest.mark.parametrize(("question", "reply", "category"), [
    ("Do you feel safe at home?", "Mostly. Except when he's been drinking, then I lock myself in the bathroom.",
     "abuse"),
    ("Have you thought about hurting him?", "No... not unless he comes near my kids again.", "harm_to_others"),
    ("Do you leave the kids on their own?", "No. I mean, only when I'm at the bar after work.", "neglect"),
])
def test_an_answer_granted_under_a_condition_is_a_flag_not_a_denial(question: str, reply: str, category: str) -> None:
    risk = check(("therapist", question), ("client", reply))
    assert category in cats(risk["flags"]) and risk["denials"] == [], risk
    flag = next(f for f in risk["flags"] if f["category"] == category)
    assert flag["question"]["quote"] == question and "condition" in flag["reason"], flag
    # a figure of speech keeps the denial; a plain all-clear stays one
    for plain, topic in (("No, not unless you count being really tired.", "suicide"), ("Yes, totally.", "abuse")):
        asked = "Any thoughts of suicide?" if topic == "suicide" else "Do you feel safe at home?"
        risk = check(("therapist", asked), ("client", plain))
        assert cats(risk["denials"]) == {topic} and risk["flags"] == [], (plain, risk)


def test_a_no_that_is_said_is_not_a_negation() -> None:
    risk = said("And if I say no he shouts in my face till I'm shaking.")
    assert cats(risk["flags"]) == {"abuse"} and risk["denials"] == [], risk
    assert cats(said("When I told him no he hit me.")["flags"]) == {"abuse"}
    assert cats(said("I said no, he never hit me.")["denials"]) == {"abuse"}


def test_a_look_alike_the_rest_of_the_turn_explains_is_not_flagged_but_one_it_goes_on_with_is() -> None:
    # The rules read the first sentence; the meaning check, all but sure of the whole turn, lets the rest explain it.
    portrait = "I'm going to hang myself. Well, my portrait. It's in the community art show and every artist hangs " \
               "their own work."
    assert said(portrait)["flags"] == [], said(portrait)
    assert cats(said("I'm going to hang myself. I've bought the rope and I know where.")["flags"]) == {"suicide"}
    # an answer to a screening question is never explained away
    asked = check(("therapist", "Are you thinking of hanging yourself?"), ("client", portrait))
    assert cats(asked["flags"]) == {"suicide"}, asked
    # nor a turn of one sentence, where nothing comes after the words to explain them
    assert cats(said("I'm going to hang myself.")["flags"]) == {"suicide"}


@pytest.mark.parametrize(("text", "category"), [
    ("I want to kill myself. Anyway, work has been busy this week.", "suicide"),
    ("Honestly? I want to kill myself. Anyway. Work has been busy this week.", "suicide"),
    ("I'm going to kill him. We went shopping on Saturday and bought bread.", "harm_to_others"),
    ("I'm going to hang myself. I started a new book on Tuesday.", "suicide"),
])
def test_a_risk_statement_followed_by_talk_of_something_else_stays_flagged(text: str, category: str) -> None:
    # Only a sentence that reads the flagged one again ("Well, my portrait…") may explain it away; a turn to
    # ordinary talk, however ordinary, explains nothing.
    assert cats(said(text)["flags"]) == {category}, said(text)


def test_a_denial_then_he_just_does_something_is_read_for_what_he_does() -> None:
    question = ("therapist", "Has anyone hurt you?")
    risk = check(question, ("client", "He doesn't hit me. He just holds my arm, here, and squeezes till I agree with "
                                      "him. You can see the marks, look."))
    assert cats(risk["flags"]) == {"abuse"} and risk["denials"] == [], risk
    risk = check(question, ("client", "He doesn't hit me. He just sulks for a day or two and then it blows over."))
    assert cats(risk["denials"]) == {"abuse"} and risk["flags"] == [], risk


def test_a_clinicians_unpunctuated_question_about_someone_else_is_a_question() -> None:
    asked = ("therapist", "are they getting enough to eat")
    fed = check(asked, ("client", "yeah they eat better than i do, the food bank helps but they never go without"))
    assert fed["flags"] == [] and cats(fed["denials"]) == {"neglect"}, fed
    hungry = check(asked, ("client", "no not really, most nights it's just toast"))
    assert cats(hungry["flags"]) == {"neglect"} and hungry["denials"] == [], hungry


@pytest.mark.parametrize("turns", [
    ["No. Not since I tried last month."], ["Never. I mean, not since last week."],
    # the recognizer split the answer at a pause: the take-back is the client's next segment
    ["No.", "Well, actually, yes, last week."], ["No.", "Sometimes."],
])
def test_a_denial_taken_back_in_the_same_answer_is_a_flag_even_across_segments(turns: list[str]) -> None:
    risk = check(("therapist", "Any thoughts of suicide?"), *(("client", t) for t in turns))
    assert cats(risk["flags"]) == {"suicide"} and risk["denials"] == [], risk


@pytest.mark.parametrize("answer", [
    "No. Well... no. Okay, sometimes. At night.",  # a hesitant second "no" is not the last word
    "No. ...Okay, one time. With the lighter.",
    "No. Well. Only the once.",
    "No, no... well. Last week, yes.",
    "nah nah i'm grand... well actually no that's a lie there was thursday i had the tablets all out",
])
def test_a_denial_taken_back_after_a_hesitation_is_a_flag(answer: str) -> None:
    risk = check(("therapist", "Any thoughts of suicide?"), ("client", answer))
    assert cats(risk["flags"]) == {"suicide"} and risk["denials"] == [], risk


@pytest.mark.parametrize("answer", ["Mm-mm.", "uh-uh", "Astaghfirullah, no. I will never do this.", "Hell no.",
                                    "No. Well, no. Not really.", "No. Yes, I'm sure."])
def test_every_way_of_saying_no_is_a_denial(answer: str) -> None:
    risk = check(("therapist", "Any thoughts of suicide?"), ("client", answer))
    assert risk["flags"] == [] and cats(risk["denials"]) == {"suicide"}, risk


@pytest.mark.parametrize(("question", "reply"), [
    ("Who's watching the kids while you're at work?", "Nobody really. The eldest is seven, she can use the microwave."),
    ("When you're away on site, who checks on your mum?", "no one. she had a fall and lay there till morning"),
    ("Who's with the baby right now?", "Um, no one."),
    ("Who supervises your son when he's home after school?", "Nobody."),
    ("Is anyone babysitting the kids?", "No one."),
    ("Who's been checking on your dad since your mum died? He has dementia.", "Nobody since March."),
])
def test_no_one_in_answer_to_who_cares_for_a_dependent_is_a_neglect_flag_not_a_denial(question: str,
                                                                                       reply: str) -> None:
    risk = check(("therapist", question), ("client", reply))
    assert cats(risk["flags"]) == {"neglect"} and risk["denials"] == [], risk
    assert risk["flags"][0]["reason"] == "says no one looks after them when asked", risk


@pytest.mark.parametrize(("question", "reply"), [
    ("Who's with you tonight?", "No one, I live alone."),  # support, not care of a dependent
    ("Who are you most angry with?", "No one really."),
    ("Who's watching the kids while you're at work?", "My mum has them."),
])
def test_no_one_to_other_who_questions_is_no_flag(question: str, reply: str) -> None:
    assert check(("therapist", question), ("client", reply))["flags"] == []


def test_another_persons_did_it_in_a_denial_is_family_history_not_the_clients_flag() -> None:
    asked = ("therapist", "Have you ever thought about killing yourself?")
    risk = check(asked, ("client", "Honestly? No. Naw, never. My cousin did it and I seen what it did to my aunt."))
    assert risk["flags"] == [] and cats(risk["denials"]) == {"suicide"}, risk
    assert [e["category"] for e in risk["family_history"]] == ["suicide"], risk
    mine = check(asked, ("client", "yeah i did it once"))
    assert cats(mine["flags"]) == {"suicide"} and mine["family_history"] == [], mine


@pytest.mark.parametrize(("probe", "reply"), [("Are you sure?", "Sometimes."), ("Never?", "Once."),
                                              ("It's okay to tell me.", "Okay, yes. Last night.")])
def test_a_denial_taken_back_after_the_clinicians_probe_is_a_flag_and_no_denial(probe: str, reply: str) -> None:
    risk = check(("therapist", "Any thoughts of suicide?"), ("client", "No."), ("therapist", probe), ("client", reply))
    assert cats(risk["flags"]) == {"suicide"} and risk["denials"] == [], risk
    sure = check(("therapist", "Any thoughts of suicide?"), ("client", "No."), ("therapist", "Are you sure?"),
                 ("client", "Yes, I'm sure."))
    assert sure["flags"] == [] and cats(sure["denials"]) == {"suicide"}, sure


@pytest.mark.parametrize("reply", ["Nope. Well. Honestly? Every night.", "No. Okay, I'll be honest. Yes.",
                                   "Mm-mm. Well... mm-hm.", "No. Well... a few weeks ago."])
def test_a_yes_after_a_pause_takes_the_no_back(reply: str) -> None:
    risk = check(("therapist", "Any thoughts of suicide?"), ("client", reply))
    assert cats(risk["flags"]) == {"suicide"} and risk["denials"] == [], risk


@pytest.mark.parametrize("reply", ["No. Well... no. Okay, sometimes I get sad, but never that.",
                                   "No, never. Last week, yes, I was stressed, but nothing like that.",
                                   "No. Well, no. Yes, definitely no."])
def test_a_no_said_again_after_a_pause_stays_a_denial(reply: str) -> None:
    risk = check(("therapist", "Any thoughts of suicide?"), ("client", reply))
    assert risk["flags"] == [] and cats(risk["denials"]) == {"suicide"}, risk


@pytest.mark.parametrize(("question", "reply"), [
    ("Who looks after your mum?", "Nobody, she passed away in March."),
    ("Who's watching the kids while you shower?", "Nobody, I'm there the whole time."),
    ("Who's with the kids tonight?", "Nobody, they're at their dad's this week."),
    ("Who watches the kids when you go out?", "No one. I'd never leave them."),
])
def test_no_one_with_the_dependent_cared_for_otherwise_is_no_neglect_flag(question: str, reply: str) -> None:
    assert check(("therapist", question), ("client", reply))["flags"] == []


def test_no_one_to_a_who_question_is_never_a_denial() -> None:
    risk = check(("therapist", "Who knows about the cutting?"), ("client", "No one knows."))
    assert risk["denials"] == [], risk  # not "client denies self-harm"


def test_a_denial_then_other_talk_in_the_next_segment_stays_a_denial() -> None:
    risk = check(("therapist", "Any thoughts of suicide?"), ("client", "No."), ("client", "I went to the shops after."))
    assert risk["flags"] == [] and cats(risk["denials"]) == {"suicide"}, risk
    assert cats(check(("therapist", "Any thoughts of suicide?"), ("client", "No. Not for years."))["denials"]) == \
        {"suicide"}


def test_a_short_answer_read_alone_needs_a_surer_meaning_check() -> None:
    # "yeah when i was ten" means what its question means; to a question about swimming it is no risk
    assert check(("therapist", "When did you learn to swim?"), ("client", "yeah when i was ten"))["flags"] == []
    assert check(("client", "yeah when i was ten"))["flags"] == []


@pytest.mark.parametrize("question", ["Is there any history of suicide in your family?",
                                      "Has anyone in your family died by suicide?"])
def test_a_yes_to_a_family_history_question_is_family_history_not_the_clients_risk(question: str) -> None:
    for reply in ("Yes, my uncle died by suicide when I was twelve.", "Yes, my uncle."):
        risk = check(("therapist", question), ("client", reply))
        assert risk["flags"] == [] and risk["denials"] == [], risk
        assert [e["category"] for e in risk["family_history"]] == ["suicide"], risk
    no = check(("therapist", question), ("client", "No."))
    assert no["flags"] == [] and no["denials"] == [] and no["family_history"] == [], no  # denies nothing of their own
    also = check(("therapist", question), ("client", "No, but I have thought about it myself."))
    assert cats(also["flags"]) == {"suicide"}, also


def test_fullwidth_letters_are_read_as_the_letters_they_are() -> None:
    wide = "Ｉ ｗａｎｔ ｔｏ ｋｉｌｌ ｍｙｓｅｌｆ"
    risk = said(wide)
    assert cats(risk["flags"]) == {"suicide"} and risk["flags"][0]["quote"] == wide, risk  # quoted as said


@pytest.mark.parametrize("question", ["Are you safe right now?", "Can you keep yourself safe tonight?",
                                      "Can you stay safe this weekend?", "Do you feel you can keep yourself safe?"])
def test_a_no_to_a_keep_safe_question_is_the_disclosure_and_a_yes_the_all_clear(question: str) -> None:
    for reply in ("No.", "Nope, not safe at all.", "I can't promise that."):
        risk = check(("therapist", question), ("client", reply))
        assert risk["flags"] and risk["denials"] == [], (reply, risk)
    for reply in ("Yes.", "I'm safe."):
        risk = check(("therapist", question), ("client", reply))
        assert risk["flags"] == [] and risk["denials"], (reply, risk)


@pytest.mark.parametrize("reply", ["No, not since I tried last month.", "no not since i tried last month",
                                   "No, sometimes.", "no sometimes"])
def test_a_no_taken_back_after_a_comma_is_a_flag(reply: str) -> None:
    risk = check(("therapist", "Any thoughts of suicide?"), ("client", reply))
    assert cats(risk["flags"]) == {"suicide"} and risk["denials"] == [], risk


@pytest.mark.parametrize("text", ["I want to kill myself. Well, anyway, work has been busy this week.",
                                  "I want to kill myself. Work has been hectic, anyway."])
def test_a_turn_away_with_anyway_explains_nothing(text: str) -> None:
    assert cats(said(text)["flags"]) == {"suicide"}, said(text)


def test_a_family_question_that_asks_about_the_client_too_reads_a_yes_as_theirs() -> None:
    asked = check(("therapist", "Have you ever attempted suicide, or has anyone in your family?"), ("client", "Yes."))
    assert cats(asked["flags"]) == {"suicide"}, asked
    mine = check(("therapist", "Is there any history of suicide in your family?"), ("client", "No, but I have."))
    assert cats(mine["flags"]) == {"suicide"}, mine


def test_a_fullwidth_question_mark_ends_a_question() -> None:
    assert cats(check(("therapist", "Any thoughts of suicide？"), ("client", "Yes."))["flags"]) == {"suicide"}


def test_a_hedged_yes_to_a_safety_question_is_no_all_clear_and_not_anymore_stays_a_no() -> None:
    for question in ("Are you safe tonight?", "Do you feel safe at home?"):
        risk = check(("therapist", question), ("client", "Probably."))
        assert risk["flags"] and risk["denials"] == [], risk
    for reply in ("No. Not anymore.", "nah not anymore. that was years ago", "no not since the summer"):
        risk = check(("therapist", "Any thoughts of suicide?"), ("client", reply))
        assert risk["flags"] == [] and cats(risk["denials"]) == {"suicide"}, (reply, risk)


@pytest.mark.parametrize(("text", "category"), [
    ("I hit my brother with a cricket bat last month. He needed stitches.", "harm_to_others"),
    ("I battered him outside the takeaway, broke his nose.", "harm_to_others"),
    ("I punched my flatmate.", "harm_to_others"),
    ("I hit my son with the belt.", "abuse"),  # a dependent: abuse by the client
    ("I slapped my wife.", "abuse"),  # a partner: abuse by the client
])
def test_the_clients_violence_against_a_peer_is_harm_to_others_and_against_a_dependent_abuse(
        text: str, category: str) -> None:
    risk = said(text)
    assert cats(risk["flags"]) == {category}, risk
    assert risk["flags"][0]["kind"] != MEANING_KIND, risk  # a rule's reading, with its kind


@pytest.mark.parametrize("text", ["I beat him at chess on Sunday.", "I kicked him out of the band."])
def test_beating_someone_at_a_game_or_kicking_them_out_is_no_violence(text: str) -> None:
    assert said(text)["flags"] == [], said(text)


@pytest.mark.parametrize(("question", "reply", "category"), [
    ("the marks on your arm did you do those yourself", "no that's from my cat honestly she's a menace", "self_harm"),
    ("growing up did you ever go without food or anybody looking after you",
     "no we were poor but my mom always made sure we ate", "neglect"),
    ("Has your mother missed any of her medication since you took over?",
     "No. I've got the alarm on my phone and the pill organiser. She hasn't missed one.", "neglect"),
])
def test_a_question_the_recognizer_left_unpunctuated_or_about_care_is_asked_and_its_no_a_denial(
        question: str, reply: str, category: str) -> None:
    risk = check(("therapist", question), ("client", reply))
    assert risk["flags"] == [] and cats(risk["denials"]) == {category}, risk
    yes = check(("therapist", question), ("client", "Yeah."))
    assert cats(yes["flags"]) == {category}, yes


@pytest.mark.parametrize("question", ["Were you looked after properly as a child? Fed, clothed, taken to the doctor?",
                                      "Are the kids going to school, seeing the doctor, all that?"])
def test_a_question_whether_someone_is_cared_for_is_asked_the_other_way_round(question: str) -> None:
    fine = check(("therapist", question), ("client", "Yes, always."))
    assert fine["flags"] == [] and cats(fine["denials"]) == {"neglect"}, fine
    left = check(("therapist", question), ("client", "No."))
    assert cats(left["flags"]) == {"neglect"}, left


def test_a_stammer_the_recognizer_wrote_twice_is_read_once_and_quoted_as_said() -> None:
    assert normalise("i i had the the belt") == "i had the belt"
    text = "yeah i i had the the belt around my neck in the closet and then my dog started scratching the door"
    risk = said(text)  # "dog" elsewhere does not make a belt around the client's own neck a dog's lead
    assert cats(risk["flags"]) == {"suicide"} and risk["flags"][0]["quote"] == text, risk
    assert said("We took the dog camping and I tied the rope to a tree.")["flags"] == []


@pytest.mark.parametrize(("text", "flagged"), [
    ("im just tired of waking up you know", True),
    ("Every morning I'm disappointed I'm still here.", True),
    ("Honestly I was gutted I woke up.", True),
    ("I'm tired of living in this flat.", False),
    ("I'm disappointed I woke up so late, I missed the bus.", False),
    ("I'm sad I'm still here in this job after ten years.", False),
])
def test_tired_of_waking_up_is_passive_ideation_and_a_late_alarm_is_not(text: str, flagged: bool) -> None:
    risk = said(text)
    assert (cats(risk["flags"]) == {"suicide"}) if flagged else risk["flags"] == [], risk


@pytest.mark.parametrize(("text", "category"), [
    ("my sisters husband put her in the hospital last month and shes going back to him", "abuse"),
    ("His hands around my neck, that's what I remember.", "abuse"),
    ("honestly just like how easy it would be you know my hands around his neck", "harm_to_others"),
])
def test_a_beating_told_by_its_outcome_and_hands_on_a_throat_are_flagged(text: str, category: str) -> None:
    assert cats(said(text)["flags"]) == {category}, said(text)
    assert said("They put me in hospital for tests.")["flags"] == []


@pytest.mark.parametrize(("text", "flagged"), [
    ("But I pray every night that He'll take me.", True),
    ("Every night I ask the Lord to take me in my sleep.", True),
    ("I've sort of decided to let it take me.", True),
    ("I pray he'll take me to the match on Saturday.", False),
    ("My pastor took me under his wing.", False),
])
def test_praying_to_be_taken_is_passive_ideation_and_a_lift_is_not(text: str, flagged: bool) -> None:
    risk = said(text)
    assert (cats(risk["flags"]) == {"suicide"}) if flagged else risk["flags"] == [], risk


def test_homicidal_said_of_oneself_is_harm_to_others_beside_the_suicide_denied() -> None:
    risk = said("I'm not suicidal, I'm homicidal, is what I told the intake lady.")
    assert cats(risk["flags"]) == {"harm_to_others"} and cats(risk["denials"]) == {"suicide"}, risk
    assert said("He's homicidal when he drinks.")["flags"] == []
    assert cats(said("When I'm off probation I'm gonna find where he lives.")["flags"]) == {"harm_to_others"}
    assert cats(said("i want to finish my life")["flags"]) == {"suicide"}
    assert said("I'll finish my homework first.")["flags"] == []


def test_blades_kept_ready_after_a_self_harm_denial_take_the_denial_back() -> None:
    asked = ("therapist", "Have you hurt yourself at all since we last met?")
    risk = check(asked, ("client", "I haven't cut since March. But I bought the blades. They're in my locker."))
    assert cats(risk["flags"]) == {"self_harm"} and risk["denials"] == [], risk
    for text in ("I bought new blades for the lawnmower.", "I keep a blade in my toolbox for cutting carpet."):
        assert said(text)["flags"] == [], text


@pytest.mark.parametrize("question", ["Do you want to live?", "Do you see a future for yourself?"])
def test_a_no_to_do_you_want_to_live_is_the_disclosure_and_yes_i_do_the_all_clear(question: str) -> None:
    no = check(("therapist", question), ("client", "no"))
    assert cats(no["flags"]) == {"suicide"} and no["denials"] == [], no
    yes = check(("therapist", question), ("client", "yes, I do"))
    assert yes["flags"] == [] and cats(yes["denials"]) == {"suicide"}, yes
    safe = check(("therapist", "Do you feel safe at home?"), ("client", "Yes, I do"))
    assert safe["flags"] == [] and cats(safe["denials"]) == {"abuse"}, safe


@pytest.mark.parametrize(("question", "reply", "category"), [
    ("Are you having thoughts of suicide?", "no more than normal", "suicide"),
    ("Have you acted on those thoughts of killing yourself?", "no, not yet", "suicide"),
    ("Has anyone hurt you?", "not recently", "abuse"),
    ("Are you self harming at the moment?", "i'm eight days clean", "self_harm"),
    ("Is anyone helping your dad with meals since your mum died?", "not really he's on his own", "neglect"),
])
def test_a_no_that_admits_it_is_no_denial(question: str, reply: str, category: str) -> None:
    risk = check(("therapist", question), ("client", reply))
    assert cats(risk["flags"]) == {category} and risk["denials"] == [], risk
    plain = check(("therapist", "Any self-harm?"), ("client", "No, not this week, not for a long time actually."))
    assert plain["flags"] == [] and cats(plain["denials"]) == {"self_harm"}, plain


def test_a_deflection_keeps_the_question_standing_for_the_follow_up() -> None:
    risk = check(("therapist", "Any thoughts of killing yourself?"), ("client", "why do you ask"),
                 ("therapist", "I ask everyone. Any thoughts like that?"), ("client", "yeah"))
    assert cats(risk["flags"]) == {"suicide"} and risk["flags"][0]["segment_id"] == "seg-3", risk
    hit = check(("therapist", "Does he ever hit you?"), ("client", "it's complicated"),
                ("therapist", "Has it happened in the last month?"), ("client", "twice"))
    assert cats(hit["flags"]) == {"abuse"}, hit
    unrelated = check(("therapist", "Any thoughts of killing yourself?"), ("client", "No."),
                      ("therapist", "How was work?"), ("client", "Fine, busy."))
    assert unrelated["flags"] == [] and cats(unrelated["denials"]) == {"suicide"}, unrelated


@pytest.mark.parametrize("question", ["Do you still have the pills?", "Have you still got the tablets you were saving?",
                                      "Do you have access to a gun?"])
def test_a_yes_to_a_question_about_means_kept_is_a_suicide_flag(question: str) -> None:
    risk = check(("therapist", question), ("client", "yeah"))
    assert cats(risk["flags"]) == {"suicide"}, risk
    assert check(("therapist", "Do you have the tablets your GP prescribed?"), ("client", "yes"))["flags"] == []


@pytest.mark.parametrize("phrase, category", [("kill myself ", "suicide"), ("i don't want to kill myself ", None),
                                              ("he hit me ", "abuse")])
def test_a_phrase_said_over_and_over_costs_in_proportion_to_its_length(
        monkeypatch: pytest.MonkeyPatch, phrase: str, category: str | None) -> None:
    # Counted, not timed: the characters the negation and subject walks read. Each risk phrase's context is
    # a bounded window before it, so four times the repeats read about four times the text (the whole
    # clause before each phrase, as before, read sixteen times as much: 2,000 repeats took 106 s of CPU).
    from verbatim.notes import risk

    read_chars = 0
    tokens = risk._tokens

    def counting(text: str) -> list[str]:
        nonlocal read_chars
        read_chars += len(text)
        return tokens(text)

    monkeypatch.setattr(risk, "_tokens", counting)
    cost = {}
    for n in (250, 1000):
        read_chars = 0
        found = said(phrase * n)
        assert cats(found["flags"]) == ({category} if category else set())
        cost[n] = read_chars
    assert cost[1000] < 5 * cost[250]


def test_the_words_either_side_of_an_inaudible_gap_are_read_and_never_quoted_with_it() -> None:
    # A recognizer that punctuates nothing puts a whole turn in one sentence: before, one gap mark in it
    # left the whole turn unread.
    asked = ("therapist", "on a scale of one to ten how strong is the urge to kill yourself tonight")
    found = check(asked, ("client", "like an eight [inaudible] i have the the gun out on the table right now"))
    assert cats(found["flags"]) == {"suicide"}
    assert all("inaudible" not in f["quote"] for f in found["flags"])
    # what the gap leaves is still read with its words: a denial either side stays a denial
    denied = check(("therapist", "are you having any thoughts of suicide tonight"),
                   ("client", "uh no [inaudible] no i'm not i called cause i can't sleep"))
    assert not denied["flags"] and cats(denied["denials"]) == {"suicide"}


def test_a_phrase_that_needs_suicide_in_the_air_leaves_its_turn_to_the_meaning_check() -> None:
    # "figure out how to do it" is a rule's phrase only after a question about suicide; without one, the
    # rules said nothing of this turn, so the meaning check reads it (before, it was skipped as theirs)
    turn = ("i'm sixty eight my wife's gone my knees are shot i told my daughter i'm ready to go and i meant it "
            "i'd go sooner if i could figure out how to do it clean so she doesn't find me")
    assert cats(said(turn)["flags"]) == {"suicide"}
    assert not said("i still haven't figured out how to do it, the tax return, it's so confusing")["flags"]


@pytest.mark.parametrize("text, category", [
    ("i would never ever in a million years hurt my kids", None),
    ("I wouldn't under any circumstances hurt myself.", None),
    ("i wanted to hurt my kids, in a million years i never thought i'd say that", "abuse"),
    ("honestly i just want to kms", "suicide"),
    ("been thinking about sewerslide a lot", "suicide"),
    ("i just wanna self delete tbh", "suicide"),
    ("I self-deleted my instagram, best thing I did", None),
    ("we drove like 300 kms to get there", None),
    ("I hang myself upside down on the gym bars to stretch my back", None),
    ("some nights i want to hang myself", "suicide"),
])
def test_internet_words_for_suicide_intensified_denials_and_gym_bars(text: str, category: str | None) -> None:
    found = said(text)
    assert cats(found["flags"]) == ({category} if category else set())


def test_a_new_subject_right_before_the_phrase_ends_the_negation_before_it() -> None:
    # unpunctuated speech: "…it wasn't i'd cut again" is two clauses; the "wasn't" denies the nosebleed
    found = said("i told her it was a nosebleed but it wasn't i'd cut again")
    assert cats(found["flags"]) == {"self_harm"} and not found["denials"]
    # the subject of the negation itself, right before the phrase, keeps it a denial
    denied = check(("therapist", "Have you hurt yourself this week?"), ("client", "No, I haven't hurt myself."))
    assert not denied["flags"] and cats(denied["denials"]) == {"self_harm"}


@pytest.mark.parametrize("question, reply, shown", [
    # an interjection before the no is not the answer
    ("Some people think about suicide. Has that crossed your mind?", "Ay, no. That's a sin. I would never.", "denied"),
    ("Do you ever scratch or hit yourself?", "Ah, no. I'm more the type to shut down and play games.", "denied"),
    # unpunctuated clinician questions after a lead-in or a noun phrase
    ("sometimes when people feel this low they think about suicide is that something you've thought about",
     "nah i i wouldn't i got my kids man i'd never do that to them", "denied"),
    ("those scratches on your arm are those from hurting yourself", "no no that's from my cat honestly", "denied"),
    ("is there ever a time the kids are left without an adult", "no never my mom's always there when i work", "denied"),
    # care asked the other way round: a no is the disclosure
    ("are your dad's meds getting filled", "no i haven't picked them up in like two weeks i kinda forgot", "flagged"),
    ("is anyone making sure your brother takes his seizure medicine", "no um my parents don't really bother with it",
     "flagged"),
    ("are your mom's needs getting met with the aide", "yeah yeah she's good they're really on it", "denied"),
    # … but a question asked with its own "not" is asked straight: the no denies it
    ("Is anyone at home not being looked after properly, your grandmother, the kids?", "No, everyone's fine.",
     "denied"),
])
def test_interjections_unpunctuated_questions_and_care_asked_the_other_way_round(
        question: str, reply: str, shown: str) -> None:
    found = check(("therapist", question), ("client", reply))
    assert bool(found["flags"]) == (shown == "flagged") and bool(found["denials"]) == (shown == "denied")


@pytest.mark.parametrize("question, reply, flagged", [
    ("does he let you see your friends", "no um he checks my phone every night and he loses it", True),
    ("Does he let you see your friends?", "No.", True),
    ("Does he let you see your friends?", "Yeah, he's fine with it.", False),
    ("is hurting yourself something that's still going on", "i feel ridiculous saying it but i still cut", True),
    ("What do you do on weekends?", "i still cut the grass every sunday for my mum", False),
])
def test_being_let_see_friends_is_asked_the_other_way_round_and_still_cutting_is_self_injury(
        question: str, reply: str, flagged: bool) -> None:
    assert bool(check(("therapist", question), ("client", reply))["flags"]) == flagged


@pytest.mark.parametrize("question, reply, shown", [
    ("You mentioned you've been cutting. When was the last time?", "Tuesday. After the group chat thing.", "flagged"),
    ("You told me you've tried to kill yourself before. When was the last time you tried?",
     "Not since March. The hospital time.", "flagged"),
    ("How often do you think about killing yourself?", "Every night.", "flagged"),
    # a no to a when-question is still a no, and a time said about something else is no risk
    ("You mentioned you've been cutting. When was the last time?", "Not for years, honestly.", "denied"),
    ("You said you went to the gym. How often do you go?", "Every day.", None),
])
def test_a_time_or_a_frequency_answers_a_when_or_how_often_question(question: str, reply: str,
                                                                     shown: str | None) -> None:
    found = check(("therapist", question), ("client", reply))
    assert bool(found["flags"]) == (shown == "flagged") and bool(found["denials"]) == (shown == "denied")


def test_imagining_pouring_something_on_a_coworker_is_harm_to_others() -> None:
    assert cats(said("I keep imagining pouring the boiling soup on my coworker.")["flags"]) == {"harm_to_others"}
    assert not said("I keep imagining throwing a party for my coworker.")["flags"]


def test_the_bench_never_empties_the_items_file_or_an_earlier_out_file(tmp_path: Path) -> None:
    items = tmp_path / "items.json"
    text = '[{"id": "a", "speaker": "client", "text": "I want to die.", "label": "suicide", "denied": false}]'
    items.write_text(text, encoding="utf-8")
    bench = [sys.executable, str(ROOT / "bench" / "risk.py"), "--no-dialogues"]
    same = subprocess.run([*bench, "--items", str(items), "--out", str(items)], capture_output=True, text=True,
                          timeout=300)
    assert same.returncode == 2 and "is the items file" in same.stderr and items.read_text(encoding="utf-8") == text
    earlier = tmp_path / "earlier.jsonl"
    earlier.write_text('{"keep": 1}\n', encoding="utf-8")
    failed = subprocess.run([*bench, "--items", str(tmp_path / "typo.json"), "--out", str(earlier)],
                            capture_output=True, text=True, timeout=300)
    assert failed.returncode == 2 and earlier.read_text(encoding="utf-8") == '{"keep": 1}\n'
    fresh = tmp_path / "fresh.jsonl"
    failed = subprocess.run([*bench, "--items", str(tmp_path / "typo.json"), "--out", str(fresh)],
                            capture_output=True, text=True, timeout=300)
    assert failed.returncode == 2 and not fresh.exists()  # no empty file left behind either


@pytest.mark.parametrize("first, risk, category", [
    ("We went shopping on Saturday.", "I want to die.", "suicide"), ("My mom called.", "He hits me.", "abuse")])
def test_a_short_risk_sentence_after_another_is_quoted_itself(first: str, risk: str, category: str) -> None:
    # it is read joined to the sentence before (a fragment may finish it), but its own words are the quote
    found = said(f"{first} {risk}")
    assert [(f["category"], f["quote"]) for f in found["flags"]] == [(category, risk)]


@pytest.mark.parametrize("reply", ["mm-hmm", "Mm-hmm", "mm hmm", "uh huh", "uh huh."])
def test_a_backchannel_yes_without_punctuation_answers_the_question(reply: str) -> None:
    found = check(("therapist", "Have you been having thoughts of killing yourself?"), ("client", reply))
    assert cats(found["flags"]) == {"suicide"} and not found["denials"]


@pytest.mark.parametrize("text", ["I'm sui\u200bcidal.", "i want to ki\u200dll myself", "I want to k\u00adill myself.",
                                  "kms", "kms lol no but seriously i kind of mean it this time"])
def test_invisible_characters_and_a_bare_kms_do_not_hide_suicide(text: str) -> None:
    found = said(text)
    assert cats(found["flags"]) == {"suicide"} and not found["flags"][0]["kind"].startswith("reads like")
    assert found["flags"][0]["quote"] == text  # the quote keeps the words exactly as written


def test_kilometres_are_no_kms() -> None:
    assert not said("we did like 300 kms on saturday")["flags"]


@pytest.mark.parametrize("text, category", [
    ("I wouldn't mind if a truck hit me. I'd kind of welcome it.", "suicide"),
    ("If I can't have her nobody can.", "harm_to_others"),
    ("My roommate keeps stealing my food. I've thought about putting rat poison in it.", "harm_to_others"),
    ("We put rat poison in the shed for the mice.", None),
    ("I'm not going to be here next week, I'm on vacation in Spain.", None),
    ("I'm not going to be here much longer.", "suicide"),
    ("I changed my will on Monday.", None),  # the client's own will: no financial abuse
    ("My brother changed her will while she was in hospital.", "abuse"),
])
def test_welcoming_a_truck_owning_a_partner_poisoning_food_and_a_holiday_away(text: str, category: str | None) -> None:
    assert cats(said(text)["flags"]) == ({category} if category else set())
