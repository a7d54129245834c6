"""Speaker roles: a voice the mapping cannot trust is unassigned, never another client's record."""

from __future__ import annotations

from verbatim.polish.split import PLACEHOLDER, UNASSIGNED, speaker_count, speaker_roles, split_per_client


def turn(speaker: str, text: str, start: float) -> dict[str, object]:
    return {"speaker": speaker, "start_s": start, "end_s": start + 1, "text": text}


def test_fewer_voices_than_clients_leaves_the_merged_voice_unassigned() -> None:
    turns = [turn("S1", "how are you both", 0), turn("S2", "alex words", 1), turn("S2", "sam words", 2)]
    roles = speaker_roles(turns, ["alex", "sam"], "S1", None)
    assert roles == {"S1": "therapist", "S2": UNASSIGNED}
    records = split_per_client(turns, ["alex", "sam"], roles)
    for client in ("alex", "sam"):
        assert [s["text"] for s in records[client]] == ["how are you both", PLACEHOLDER, PLACEHOLDER]


def test_more_voices_than_clients_in_a_family_session_are_unassigned() -> None:
    turns = [turn("S1", "t", 0), turn("S2", "a", 1), turn("S3", "b", 2), turn("S4", "stranger", 3)]
    assert speaker_roles(turns, ["alex", "sam"], "S1", None)["S4"] == UNASSIGNED


def test_one_client_takes_every_other_voice_and_the_count_is_clients_plus_therapist() -> None:
    turns = [turn("S1", "t", 0), turn("S2", "a", 1), turn("S3", "a again", 2)]
    assert speaker_roles(turns, ["alex"], "S1", None) == {"S1": "therapist", "S2": "alex", "S3": "alex"}
    cases = ((["a", "b"], "family"), (["a"], "individual"), (["a"], "dictation"))
    counts = tuple(speaker_count(clients, kind) for clients, kind in cases)
    assert counts == (3, 2, 1)


def test_a_label_missing_from_the_clinicians_map_is_unassigned() -> None:
    turns = [turn("S1", "t", 0), turn("S2", "a", 1), turn("S3", "b", 2)]
    assert speaker_roles(turns, ["alex", "sam"], None, {"S1": "therapist", "S2": "alex"})["S3"] == UNASSIGNED


def test_a_single_voice_is_the_therapist_only_in_a_dictation() -> None:
    turns = [turn("S1", "memo about alex", 0), turn("S1", "plan for next week", 1)]
    assert speaker_roles(turns, ["alex"], "S1", None, "dictation") == {"S1": "therapist"}
    # The same recording as an individual session: nobody is assumed, the therapist names the voice.
    assert speaker_roles(turns, ["alex"], "S1", None, "individual") == {"S1": UNASSIGNED}
    records = split_per_client(turns, ["alex"], speaker_roles(turns, ["alex"], "S1", None, "individual"))
    assert [s["text"] for s in records["alex"]] == [PLACEHOLDER, PLACEHOLDER]


def test_speech_tied_to_no_voice_is_unassigned_even_with_one_client() -> None:
    turns = [turn("S1", "t", 0), turn("UU", "[overlap]", 1), turn("S2", "a", 2)]
    assert speaker_roles(turns, ["alex"], "S1", None, "individual") == {"S1": "therapist", "UU": UNASSIGNED,
                                                                         "S2": "alex"}
    assert speaker_roles(turns, ["alex"], None, {"UU": "alex", "S1": "therapist", "S2": "alex"})["UU"] == "alex"


def test_segment_ids_name_the_same_turn_after_a_speaker_correction() -> None:
    turns = [turn("S1", "how are you", 0), turn("S2", "tired", 1), turn("S3", "me too", 2)]
    before = split_per_client(turns, ["alex", "sam"], speaker_roles(turns, ["alex", "sam"], "S1", None))
    corrected = speaker_roles(turns, ["alex", "sam"], None, {"S1": "therapist", "S2": "sam", "S3": "alex"})
    after = split_per_client(turns, ["alex", "sam"], corrected)
    assert [s["id"] for s in before["alex"]] == ["seg-0", "seg-1", "seg-2"]
    assert [s["id"] for s in after["sam"]] == [s["id"] for s in before["alex"]]
    assert after["sam"][1]["text"] == "tired" and before["alex"][1]["text"] == "tired"
