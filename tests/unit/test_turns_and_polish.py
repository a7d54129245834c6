from verbatim.polish.rules import RulePolisher, clean_text, rule_therapist
from verbatim.polish.split import PLACEHOLDER, speaker_roles, split_per_client
from verbatim.recognizer.turns import results_to_turns


def word(content: str, start: float, speaker: str, conf: float = 0.9) -> dict:  # type: ignore[type-arg]
    return {"type": "word", "start_time": start, "end_time": start + 0.3,
            "alternatives": [{"content": content, "confidence": conf, "language": "en", "speaker": speaker}]}


def punct(content: str, t: float, speaker: str, attaches: str = "previous") -> dict:  # type: ignore[type-arg]
    return {"type": "punctuation", "start_time": t, "end_time": t, "attaches_to": attaches, "is_eos": True,
            "alternatives": [{"content": content, "confidence": 1.0, "language": "en", "speaker": speaker}]}


def test_results_group_into_turns_with_punctuation_attached() -> None:
    results = [word("how", 0.0, "S1"), word("are", 0.4, "S1"), word("you", 0.8, "S1"), punct("?", 1.1, "S1"),
               word("fine", 1.5, "S2"), punct(",", 1.8, "S2"), word("thanks", 2.0, "S2"), punct(".", 2.3, "S2")]
    turns = results_to_turns(results)
    assert [(t["speaker"], t["text"]) for t in turns] == [("S1", "how are you?"), ("S2", "fine, thanks.")]
    assert turns[0]["start_s"] == 0.0 and turns[1]["end_s"] == 2.3
    assert turns[1]["words"][0]["confidence"] == 0.9


def test_one_voice_is_split_into_turns_at_sentence_ends_after_pauses_and_long_turns() -> None:
    results = [word("one", 0.0, "S1"), punct(".", 0.3, "S1"),
               word("two", 0.8, "S1"), punct(".", 1.1, "S1"),  # 0.5 s pause: same turn
               word("three", 2.5, "S1"), word("four", 4.0, "S1"),  # 1.4 s after a sentence end: new turn
               *[word(f"w{i}", 4.5 + i * 0.5, "S1") for i in range(40)], punct(".", 24.3, "S1"),
               word("after", 24.5, "S1")]  # the turn began 2.5 s in: past MAX_TURN_S, split at the sentence end
    turns = results_to_turns(results)
    assert [t["text"].split()[0].rstrip(".") for t in turns] == ["one", "three", "after"]
    assert turns[0]["text"] == "one. two."


def test_attaches_to_next_and_both() -> None:
    results = [punct("\u00bf", 0.0, "S1", "next"), word("que", 0.1, "S1"), punct("-", 0.4, "S1", "both"),
               word("tal", 0.5, "S1")]
    assert results_to_turns(results)[0]["text"] == "\u00bfque-tal"


def test_clean_text_drops_fillers_and_closes_questions() -> None:
    assert clean_text("um how did you sleep uh this week") == "How did you sleep this week?"
    assert clean_text("i think it was better") == "I think it was better."
    assert clean_text("um uh") == ""
    assert clean_text("do you want to talk about it") == "Do you want to talk about it?"
    assert clean_text("what about work") == "What about work?"


def test_clean_text_never_turns_a_statement_into_a_question() -> None:
    # A full stop the recognizer wrote is kept; a wh-word before a subject opens a statement.
    assert clean_text("When I get home I just switch off.") == "When I get home I just switch off."
    assert clean_text("when i get home i just switch off") == "When I get home I just switch off."
    assert clean_text("what i mean is it was hard") == "What I mean is it was hard."
    assert clean_text("tell me about it") == "Tell me about it."
    assert clean_text("Do you sleep? I don't.") == "Do you sleep? I don't."


def test_therapist_is_the_opener_who_asks_most() -> None:
    turns = [{"speaker": "S2", "text": "hello"}, {"speaker": "S1", "text": "how are you? what happened?"},
             {"speaker": "S2", "text": "fine"}]
    assert rule_therapist(turns) == "S1"
    assert RulePolisher().therapist_speaker([]) is None


def test_split_hides_other_clients_words() -> None:
    turns = [{"speaker": "S1", "start_s": 0, "end_s": 1, "text": "how are you both?"},
             {"speaker": "S2", "start_s": 1, "end_s": 2, "text": "alex speaking"},
             {"speaker": "S3", "start_s": 2, "end_s": 3, "text": "sam speaking"}]
    roles = speaker_roles(turns, ["alex", "sam"], "S1", None)
    assert roles == {"S1": "therapist", "S2": "alex", "S3": "sam"}
    records = split_per_client(turns, ["alex", "sam"], roles)
    assert [s["text"] for s in records["alex"]] == ["how are you both?", "alex speaking", PLACEHOLDER]
    assert [s["text"] for s in records["sam"]] == ["how are you both?", PLACEHOLDER, "sam speaking"]
    corrected = speaker_roles(turns, ["alex", "sam"], "S1", {"S1": "therapist", "S2": "sam", "S3": "alex"})
    assert split_per_client(turns, ["alex", "sam"], corrected)["alex"][2]["text"] == "sam speaking"
