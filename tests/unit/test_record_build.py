"""The record's one rebuild rule (``verbatim.record.build``): pure, so every door rebuilds alike."""

from __future__ import annotations

from dataclasses import dataclass

from verbatim.polish.split import PLACEHOLDER
from verbatim.record.build import Source, build


@dataclass
class S:
    kind: str
    turn_index: int
    suggested: str | None
    word_index: int | None = None


def raw() -> list[dict[str, object]]:
    return [
        {"speaker": "S1", "start_s": 0.0, "end_s": 1.0, "text": "um how are you",
         "words": [{"type": "word", "content": w} for w in ("um", "how", "are", "you")]},
        {"speaker": "S2", "start_s": 1.0, "end_s": 2.0, "text": "fine thanks", "marks": ["speaker_uncertain"],
         "words": [{"type": "word", "content": w} for w in ("fine", "thanks")]},
        {"speaker": "S3", "start_s": 2.0, "end_s": 3.0, "text": "not me", "words": []},
    ]


BASE = [{"speaker": "S1", "start_s": 0.0, "end_s": 1.0, "text": "How are you?", "role": "therapist"},
        {"speaker": "S2", "start_s": 1.0, "end_s": 2.0, "text": "Fine, thanks.", "role": "ann"},
        {"speaker": "S3", "start_s": 2.0, "end_s": 3.0, "text": "Not me.", "role": "bo"}]


def test_the_polish_roles_and_marks_are_kept_and_marks_stay_with_their_words() -> None:
    built = build(Source(raw_turns=raw(), base_turns=BASE, client_ids=["ann", "bo"]))
    assert [t["text"] for t in built.shown] == ["How are you?", "Fine, thanks.", "Not me."]
    assert [t["role"] for t in built.shown] == ["therapist", "ann", "bo"]
    assert built.shown[1]["marks"] == ["speaker_uncertain"]
    ann, bo = built.records["ann"], built.records["bo"]
    assert ann[1]["marks"] == ["speaker_uncertain"] and ann[2]["text"] == PLACEHOLDER
    assert bo[1]["text"] == PLACEHOLDER and "marks" not in bo[1]


def test_suggestions_corrections_and_the_mapping_are_laid_in_their_order() -> None:
    src = Source(raw_turns=raw(), base_turns=BASE, client_ids=["ann", "bo"],
                 applied=[S("word", 1, "great", 1)], unapplied=[S("edit", 0, "How are you?")],
                 corrections={2: "Not me, said Bo."}, speaker_map={"S1": "therapist", "S2": "bo", "S3": "ann"})
    built = build(src)
    # A reverted edit: the recognizer's words; a word fix lands on the polished text; the correction last.
    assert [t["text"] for t in built.shown] == ["um how are you", "Fine, great.", "Not me, said Bo."]
    assert built.roles == {"S1": "therapist", "S2": "bo", "S3": "ann"}
    assert built.records["ann"][1]["text"] == PLACEHOLDER and built.records["ann"][2]["text"] == "Not me, said Bo."


def test_a_label_only_a_speaker_suggestion_brought_is_nobodys_words() -> None:
    built = build(Source(raw_turns=raw(), base_turns=BASE, client_ids=["ann", "bo"], applied=[S("speaker", 1, "S9")]))
    assert built.shown[1]["role"] == "unassigned"
    assert all(r[1]["text"] == PLACEHOLDER for r in built.records.values())
