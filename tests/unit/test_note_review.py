"""What an amendment is reviewed on (``verbatim.notes.review``): the sentences it changes, and what it takes
out about risk."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from verbatim.notes import review

FLAGGED_TURN = "Honestly some nights I think about killing myself. I have stopped seeing my friends."


def _body(*sentences: str, cites_flag: bool = True) -> dict[str, Any]:
    cite = [{"segment_id": "seg-1", "speaker": "client", "start_s": 3.5, "end_s": 9.0, "quote": FLAGGED_TURN}]
    risk = {"status": "found", "denials": [], "flags": [
        {"category": "suicide", "segment_id": "seg-1", "quote": "Honestly some nights I think about killing myself."}]}
    return {"sections": [{"name": "Subjective", "sentences": [
        {"text": t, "citations": cite if cites_flag else [], "label": "supported"} for t in sentences]}], "risk": risk}


def test_changed_names_only_sentences_not_held_word_for_word() -> None:
    before = _body("Client sleeps badly.", "Client wakes at four.")
    after = _body("Client sleeps badly.", "Client wakes at five.", "Client works nights.")
    assert review.changed(before, after) == {("Subjective", 1), ("Subjective", 2)}


def test_any_change_to_a_risk_sentence_is_a_loss_and_a_move_is_not() -> None:
    signed = _body("Client reports thinking about killing themself on some nights.", "Client sleeps badly.")
    lost = [review.RiskLoss("Subjective", 0, "suicide", False)]
    for after in (_body("Client reports passive suicidal ideation, no plan.", "Client sleeps badly."),
                  _body("SI denied.", "Client sleeps badly."), _body("Client sleeps badly."),
                  _body("Client sleeps badly.", "Client's aunt died by suicide years ago.")):
        assert review.risk_removed(signed, after) == lost
    moved = _body("Client sleeps badly.")
    moved["sections"].append({"name": "Assessment", "sentences": [dict(signed["sections"][0]["sentences"][0])]})
    assert review.risk_removed(signed, moved) == []


def test_a_sentence_citing_a_flagged_turn_is_about_it_only_when_it_repeats_its_words() -> None:
    # It cites the turn that also holds the flag, but says something else of it: taking it out loses nothing.
    signed = _body("Client reports that they have stopped seeing their friends.", "Client sleeps badly.")
    assert review.risk_removed(signed, _body("Client sleeps badly.")) == []
    quoted = _body('Client said: "Honestly some nights I think about killing myself."', "Client sleeps badly.")
    assert [x.category for x in review.risk_removed(quoted, _body("Client sleeps badly."))] == ["suicide"]


def test_removing_sentences_at_review_reads_the_risk_box_again() -> None:
    body = _body("Client sleeps badly.", "Client denies suicidal ideation.", cites_flag=False)
    body["risk"]["note_mentions"] = [{"category": "suicide", "section": "Subjective", "sentence": 1, "denied": True}]
    out = review.apply(body, set(), {("Subjective", 0)}, uuid.uuid4(), datetime.now(UTC))
    assert out["risk"]["note_mentions"] == [{"category": "suicide", "section": "Subjective", "sentence": 0,
                                             "denied": True}]
