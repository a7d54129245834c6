"""The risk box is in exactly one state (issue 23, item 1): "found", "the note speaks of risk", "denied when
asked" or "nothing detected" — never two at once — and an edit that adds risk words to the note
("Client denies suicidal ideation") is re-checked, so the box never says nothing was found."""

from __future__ import annotations

from typing import Any

import pytest

from verbatim.notes import risk_box
from verbatim.notes.note_risk import clinical_mentions, recheck
from verbatim.notes.render import plain_text
from verbatim.notes.risk import NOTHING_DETECTED

FLAG = {"category": "suicide", "kind": "ideation", "reason": "said so", "quote": "I want to die", "segment_id": "seg-9",
        "speaker": "client", "start_s": 75.0, "end_s": 77.0}
DENIAL = {**FLAG, "kind": "", "quote": "No, never.", "question": {**FLAG, "speaker": "therapist",
                                                                   "quote": "Any thoughts of suicide?"}}
NOTHING = {"status": "none found", "flags": [], "denials": [], "family_history": [], "checked": NOTHING_DETECTED}


def _note(*texts: str) -> list[dict[str, Any]]:
    return [{"name": "Assessment", "sentences": [{"text": t} for t in texts]}]


def _box_text(risk: dict[str, Any]) -> str:
    return plain_text({"risk": risk, "sections": []}, export=True)


@pytest.mark.parametrize(("risk", "state"), [
    (None, risk_box.NOTHING),
    (NOTHING, risk_box.NOTHING),
    ({**NOTHING, "denials": [DENIAL]}, risk_box.DENIED),
    ({**NOTHING, "note_mentions": [{"category": "suicide", "section": "Plan", "sentence": 0, "denied": True}]},
     risk_box.NOTE_MENTIONS),
    ({**NOTHING, "status": "found", "flags": [FLAG], "denials": [DENIAL],
      "note_mentions": [{"category": "suicide", "section": "Plan", "sentence": 0, "denied": False}]}, risk_box.FOUND),
])
def test_each_state_has_its_own_headline_and_never_says_nothing_over_risk(risk: dict[str, Any] | None,
                                                                          state: str) -> None:
    assert risk_box.state(risk) == state
    text = _box_text(risk or {})
    said_nothing = NOTHING_DETECTED in text
    assert said_nothing == (state == risk_box.NOTHING), text
    if state == risk_box.FOUND:
        assert "1 statement about risk found in the transcript" in text and '"I want to die"' in text
        assert "Suicide mentioned in the note (Plan, sentence 1)" in text
    if state == risk_box.NOTE_MENTIONS:
        assert "speaks of risk" in text and "Suicide denied in the note (Plan, sentence 1)" in text
        assert "found in the transcript:" not in text
    if state == risk_box.DENIED:
        assert "denied a risk topic when asked" in text and 'asked: "Any thoughts of suicide?"' in text
        assert "not a risk assessment" in text
    assert "seg-" not in text and "[suicide]" not in text


def test_a_found_record_keeps_its_stale_checked_sentence_out_of_the_box() -> None:
    # Stored drafts carry "checked" even beside flags: the box still reads one state.
    text = _box_text({**NOTHING, "status": "found", "flags": [FLAG]})
    assert NOTHING_DETECTED not in text and "found in the transcript" in text


@pytest.mark.parametrize(("sentence", "category", "denied"), [
    ("Client denies suicidal ideation.", "suicide", True),
    ("Client denies SI/HI.", "harm_to_others", True),
    ("No suicidal ideation, plan or intent.", "suicide", True),
    ("Patient reports thoughts of killing himself.", "suicide", False),
    ("Client denies SI but reports cutting herself last week.", "self_harm", False),
    ("Client reports physical abuse by her partner.", "abuse", False),
    ("Client was negative for self-harm urges this week.", "self_harm", True),
])
def test_an_edit_adding_risk_words_is_rechecked_and_the_box_is_not_nothing(sentence: str, category: str,
                                                                          denied: bool) -> None:
    risk = recheck(NOTHING, _note("Client slept better this week.", sentence))
    mention = {"category": category, "section": "Assessment", "sentence": 1, "denied": denied}
    assert mention in risk["note_mentions"], risk
    assert risk["status"] == "found" and "checked" not in risk
    assert risk_box.state(risk) == risk_box.NOTE_MENTIONS
    assert NOTHING_DETECTED not in _box_text(risk)


def test_an_edit_removing_the_risk_words_returns_the_box_to_nothing_detected() -> None:
    said = recheck(NOTHING, _note("Client denies suicidal ideation."))
    cleared = recheck(said, _note("Client slept better this week."))
    assert cleared["note_mentions"] == [] and cleared["status"] == "none found"
    assert cleared["checked"] == NOTHING_DETECTED and risk_box.state(cleared) == risk_box.NOTHING


def test_the_record_flags_survive_an_edit_and_keep_the_box_found() -> None:
    risk = recheck({**NOTHING, "status": "found", "flags": [FLAG]}, _note("Client slept better this week."))
    assert risk["flags"] == [FLAG] and risk_box.state(risk) == risk_box.FOUND and "checked" not in risk


@pytest.mark.parametrize("sentence", [
    "History of alcohol abuse, sober two years.", "Client is cutting back on coffee.", "She wants to be a nurse.",
    "Client reports sleeping well.", "Discussed the client's history in Ohio.",
])
def test_everyday_words_are_not_risk(sentence: str) -> None:
    assert clinical_mentions(sentence) == {}


def test_a_denial_or_family_history_on_a_turn_of_uncertain_speaker_carries_the_caution() -> None:
    doubtful = {**DENIAL, "speaker_uncertain": True}
    family = {**FLAG, "kind": "family history", "quote": "My uncle died by suicide.", "speaker_uncertain": True}
    text = risk_box.lines({**NOTHING, "denials": [doubtful], "family_history": [family]})
    assert [line for line in text if "speaker uncertain: check who said it" in line] == text[1:], text
    assert not any("uncertain" in line for line in risk_box.lines({**NOTHING, "denials": [DENIAL]}))


def test_the_note_page_shows_the_caution_on_an_uncertain_denial_and_family_history() -> None:
    from verbatim.web.pages import env

    family = {**FLAG, "kind": "family history", "quote": "My uncle died by suicide.", "speaker_uncertain": True}
    risk = {**NOTHING, "denials": [{**DENIAL, "speaker_uncertain": True}], "family_history": [family]}
    html = env.get_template("_risk.html").render(note={"risk": risk})
    assert html.count("speaker uncertain: check who said it") == 2, html
    plain = env.get_template("_risk.html").render(note={"risk": {**NOTHING, "denials": [DENIAL]}})
    assert "No, never." in plain and "uncertain" not in plain


@pytest.mark.parametrize("risk", [
    {**NOTHING, "status": "found", "flags": [FLAG]},
    {**NOTHING, "denials": [DENIAL]},
    recheck(NOTHING, _note("Client reports thoughts of killing herself.")),
    NOTHING,
])
def test_the_page_box_opens_with_the_same_headline_as_the_cli_and_the_pdf(risk: dict[str, Any]) -> None:
    import html
    import re

    from verbatim.web.pages import env

    page = env.get_template("_risk.html").render(note={"risk": risk})
    first = re.search(r'<p class="(?:flag|checked)">(?:⚠ )?(.*?)</p>', page, re.S)
    assert first is not None, page
    assert html.unescape(first.group(1)) == risk_box.headline(risk)
    assert html.unescape(page).count(risk_box.headline(risk)[:40]) == 1  # said once, never a second box
