"""The risk check on turns whose speaker the recognizer could not tell apart (``speaker_uncertain``).

The record is built the way the note run gets it (``polish.split.split_per_client`` keeps the
recognizer's marks on the segments), then read by ``evidence.units`` and ``risk.flags``.
"""

from __future__ import annotations

from typing import Any

from verbatim.notes.evidence import units
from verbatim.notes.risk import flags
from verbatim.notes.risk_box import lines
from verbatim.polish.split import split_per_client
from verbatim.recognizer.turns import SPEAKER_UNCERTAIN


def turn(speaker: str, start: float, text: str, *, uncertain: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"speaker": speaker, "start_s": start, "end_s": start + 4.0, "text": text}
    if uncertain:
        out["marks"] = [SPEAKER_UNCERTAIN]
    return out


def risk_of(turns: list[dict[str, Any]]) -> dict[str, Any]:
    record = split_per_client(turns, ["ann"], {"S1": "therapist", "S2": "ann"})["ann"]
    return flags(units(record, "ann"))


def test_a_client_disclosure_under_the_therapists_label_with_a_doubtful_speaker_is_flagged() -> None:
    # The diarizer gave the client's words the therapist's voice, with doubt: the turn still counts.
    risk = risk_of([turn("S1", 0.0, "How has the week been?"),
                    turn("S1", 5.0, "Honestly, I've been thinking about killing myself.", uncertain=True),
                    turn("S2", 10.0, "It's been a lot.")])
    assert [f["category"] for f in risk["flags"]] == ["suicide"]
    flag = risk["flags"][0]
    assert flag["segment_id"] == "seg-1" and flag["speaker_uncertain"] is True
    assert "speaker uncertain" in flag["reason"]
    assert "speaker uncertain: check who said it" in lines(risk)[1]


def test_a_client_turn_with_a_doubtful_speaker_says_so_on_its_flag() -> None:
    risk = risk_of([turn("S1", 0.0, "How has the week been?"),
                    turn("S2", 5.0, "I started cutting again.", uncertain=True)])
    assert [(f["category"], f.get("speaker_uncertain")) for f in risk["flags"]] == [("self_harm", True)]


def test_a_turn_confidently_the_therapists_is_never_flagged() -> None:
    risk = risk_of([turn("S1", 0.0, "Some people say they've been thinking about killing themselves."),
                    turn("S1", 5.0, "I want to kill myself, a client once told me, and we made a plan."),
                    turn("S2", 10.0, "Okay.")])
    assert risk["flags"] == []


def test_a_screening_question_with_a_doubtful_speaker_is_not_a_flag_and_still_asks() -> None:
    risk = risk_of([turn("S1", 0.0, "Have you had any thoughts of killing yourself?", uncertain=True),
                    turn("S2", 5.0, "No, never.")])
    assert risk["flags"] == []
    assert [d["category"] for d in risk["denials"]] == ["suicide"]
