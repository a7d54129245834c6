"""The recognizer's marks travel to the transcript: meaning-flip doubts, speaker doubts, inaudible gaps."""

from __future__ import annotations

from dataclasses import replace

from verbatim.asr_server import flips
from verbatim.asr_server.engine import Word, to_results
from verbatim.asr_server.scoring import normalise, word_error_rate
from verbatim.asr_server.windows import Gap
from verbatim.polish.split import INAUDIBLE as GAP_ROLE
from verbatim.polish.split import PLACEHOLDER, speaker_roles, split_per_client, unassigned_turns
from verbatim.recognizer.turns import INAUDIBLE, MEANING_FLIP, NO_SPEAKER, SPEAKER_UNCERTAIN, results_to_turns
from verbatim.reliability.analysis import analyse


def _words(text: str, start: float = 0.0, confidence: float = 0.95) -> list[Word]:
    return [Word(w, start + i * 0.4, start + i * 0.4 + 0.3, confidence) for i, w in enumerate(text.split())]


def test_a_doubtful_negation_is_marked_whatever_the_threshold_and_offers_its_rival() -> None:
    words = _words("i think i can do that")
    words[3] = Word("can", words[3].start_s, words[3].end_s, 0.6)  # well above the 0.25 threshold
    words[4] = Word("do", words[4].start_s, words[4].end_s, 0.97)  # sure: no mark
    results = to_results(words, ["S1"] * len(words))
    can = next(r for r in results if r["alternatives"][0]["content"] == "can")
    assert can["alternatives"][0]["tags"] == [MEANING_FLIP]
    assert [a["content"] for a in can["alternatives"]] == ["can", "can't"]
    assert all("tags" not in r["alternatives"][0] for r in results if r is not can)
    turns = results_to_turns(results)
    word = next(w for w in turns[0]["words"] if w["content"] == "can")
    assert word["marks"] == [MEANING_FLIP] and word["alternatives"] == ["can't"]
    doubts = analyse(turns, None, confidence_threshold=0.25)
    assert [(d.reason, d.original, d.suggested) for d in doubts] == [("meaning_flip", "can", "can't")]


def test_numbers_and_names_heard_with_doubt_are_marked_other_words_are_not() -> None:
    words = [Word("we", 0.0, 0.2, 0.95), Word("meet", 0.3, 0.5, 0.7), Word("Anna", 0.6, 0.9, 0.7),
             Word("at", 1.0, 1.1, 0.95), Word("9", 1.2, 1.4, 0.8)]
    results = to_results(words, ["S1"] * len(words))
    marked = [r["alternatives"][0]["content"] for r in results if r["alternatives"][0].get("tags")]
    assert marked == ["Anna", "9"]


def test_a_doubtful_sound_alike_of_a_flip_word_offers_the_word_it_may_hide() -> None:
    words = [Word("i", 0.0, 0.2, 0.95), Word("woke", 0.3, 0.5, 0.95), Word("at", 0.6, 0.7, 0.95),
             Word("for", 0.8, 1.0, 0.7)]
    results = to_results(words, ["S1"] * len(words))
    assert [a["content"] for a in results[3]["alternatives"]] == ["for", "four"]
    assert results[3]["alternatives"][0]["tags"] == [MEANING_FLIP]


def test_a_gap_is_its_own_turn_with_no_speaker_and_in_every_clients_record() -> None:
    words = _words("how have you been", 0.0) + _words("fine thanks", 12.0)
    results = to_results(words, ["S1"] * 4 + ["S2"] * 2, gaps=[Gap(2.0, 11.5)])
    assert [r["type"] for r in results].count("gap") == 1
    turns = results_to_turns(results)
    assert [t["speaker"] for t in turns] == ["S1", NO_SPEAKER, "S2"]
    assert turns[1]["text"] == "[inaudible 9.5 s]" and turns[1]["marks"] == [INAUDIBLE]
    assert turns[0]["text"].endswith(".")  # the sentence before the gap is closed
    roles = speaker_roles(turns, ["c-1", "c-2"], "S1", None)
    assert roles[NO_SPEAKER] == GAP_ROLE and NO_SPEAKER not in {t["speaker_label"] for t in
                                                              unassigned_turns(turns, roles)}
    records = split_per_client(turns, ["c-1", "c-2"], roles)
    for client in ("c-1", "c-2"):
        gap = records[client][1]
        assert gap["text"] == "[inaudible 9.5 s]" and gap["speaker"] == GAP_ROLE and gap["marks"] == [INAUDIBLE]
    assert records["c-2"][2]["text"] == PLACEHOLDER or records["c-1"][2]["text"] == PLACEHOLDER


def test_a_turn_with_an_uncertain_voice_is_marked_and_suggested_for_review() -> None:
    words = _words("how was the week", 0.0) + _words("it was long", 3.0) + _words("i see", 6.0)
    unsure = [False] * 4 + [False, True, True] + [False, False]
    results = to_results(words, ["S1"] * 4 + ["S2"] * 3 + ["S1"] * 2, unsure=unsure)
    turns = results_to_turns(results)
    assert [t.get("marks") for t in turns] == [None, [SPEAKER_UNCERTAIN], None]
    doubts = [d for d in analyse(turns, None) if d.reason == "speaker_uncertain"]
    assert [(d.turn_index, d.original, d.suggested) for d in doubts] == [(1, "S2", "S1")]


def test_scoring_counts_numbers_as_words() -> None:
    assert normalise("At 4:30, 10 people; the 3rd") == "at four thirty ten people the third"
    assert word_error_rate("on a scale from zero to ten", "On a scale from 0 to 10.") == 0.0


def test_a_sure_flip_word_with_a_competing_reading_is_marked_and_offers_it() -> None:
    # "doesn't" heard at 0.97, but the second decode weighed "isn't" at 0.12: doubt whatever the probability.
    words = [Word("it", 0.0, 0.2, 0.9), Word("doesn't", 0.3, 0.6, 0.97, competitors=(("isn't", 0.12),)),
             Word("say", 0.7, 0.9, 0.95, competitors=(("for", 0.3),))]
    results = to_results(words, ["S1"] * 3)
    doesnt, say = results[1], results[2]
    assert doesnt["alternatives"][0]["tags"] == [MEANING_FLIP]
    assert [a["content"] for a in doesnt["alternatives"]] == ["doesn't", "isn't"]
    # A sound-alike competing with an ordinary word flips nothing: no mark.
    assert "tags" not in say["alternatives"][0]


def test_an_ordinary_word_a_number_competes_with_is_marked_and_a_faint_competitor_is_not() -> None:
    # The second decode's rule for ordinary words (off in the calibrated thresholds, where the third
    # decode judges them) at the 0.02 it had.
    words = [Word("i", 0.0, 0.2, 0.9), Word("took", 0.3, 0.5, 0.99),
             Word("you", 0.6, 0.8, 0.86, competitors=(("two", 0.09), ("to", 0.03))),
             Word("of", 0.9, 1.0, 0.45, competitors=(("off", 0.17),)),
             Word("can't", 1.1, 1.3, 0.98, competitors=(("can", 0.009),))]
    for doubt, expected in ((flips.Doubt(plain=0.02), {"you": ["two"]}), (flips.DOUBT, {})):
        results = to_results(words, ["S1"] * 5, doubt=doubt)
        marked = {r["alternatives"][0]["content"]: [a["content"] for a in r["alternatives"][1:]]
                  for r in results if MEANING_FLIP in r["alternatives"][0].get("tags", [])}
        assert marked == expected


def test_a_reading_of_the_third_decode_marks_a_word_when_either_side_flips_the_meaning() -> None:
    # "with" heard for "seven": after the priming prompt an n-best hypothesis close behind the best
    # reads "seven" there; the plain n-best list reads "without" (a flip reading for neither word:
    # no mark on its own).
    with_ = Word("with", 0.6, 0.8, 0.9, competitors=(), beam=(("without", 0.05),), prompted=(("seven", 0.02),))
    words = [Word("i", 0.0, 0.2, 0.9, competitors=(), beam=(), prompted=()),
             Word("spend", 0.3, 0.5, 0.9, competitors=(), beam=(), prompted=()), with_]
    marked = to_results(words, ["S1"] * 3)[2]
    assert MEANING_FLIP in marked["alternatives"][0]["tags"]
    assert [a["content"] for a in marked["alternatives"]] == ["with", "seven"]
    assert "tags" not in to_results([*words[:2], replace(with_, prompted=())], ["S1"] * 3)[2]["alternatives"][0]
    # A reading held only by a hypothesis far behind its search's best is no doubt.
    assert not flips.doubtful("with", 0.9, sentence_start=False, competitors=(), beam=(("seven", 0.9),),
                              prompted=(("seven", 0.3),), doubt=flips.Doubt(beam=0.2, prompted=0.2))
    # A meaning-flip word read otherwise (a sound-alike is enough) is doubtful; the same number
    # in digits is no other reading.
    assert flips.suggestion("four", 0.95, sentence_start=False, competitors=(), beam=(("for", 0.0),),
                            prompted=()) == "for"
    assert not flips.doubtful("four", 0.95, sentence_start=False, competitors=(), beam=(("4", 0.0),),
                              prompted=(("Four", 0.0),))


def test_another_hypothesis_is_aligned_word_by_word_to_the_first_decode() -> None:
    from verbatim.asr_server.whisper import hypothesis_readings

    first = _words("he did it hit me last week")
    # "didn't" for both of "did it"; nothing where "week" was.
    assert hypothesis_readings(first, ["He", "didn't", "hit", "me", "last"]) == [(1, "didn't"), (2, "didn't"),
                                                                                  (6, "")]
    # A word only the other holds is a reading of its neighbours.
    assert hypothesis_readings(first[:3], ["he", "did", "not", "it"]) == [(1, "not"), (2, "not")]
    assert hypothesis_readings(first, [w.text for w in first]) == []


def test_a_doubtful_word_where_a_number_or_negation_is_expected_is_marked() -> None:
    # "at high on Thursday" for "at nine": no decode gave "nine" any weight, but "high" stands where
    # a time is expected and was heard at 0.44.
    def tagged(text: str, confidence: float) -> list[str]:
        words = [Word(w, i * 0.4, i * 0.4 + 0.3, 0.95, competitors=()) for i, w in enumerate(text.split())]
        words = [replace(w, confidence=confidence) if w.text == "high" else w for w in words]
        results = to_results(words, ["S1"] * len(words))
        return [r["alternatives"][0]["content"] for r in results
                if MEANING_FLIP in r["alternatives"][0].get("tags", [])]

    assert tagged("we meet at high on thursday", 0.44) == ["high"]
    assert tagged("we meet at high on thursday", 0.9) == []  # sure: no mark
    assert tagged("we meet high on thursday", 0.44) == []  # no number expected
    assert tagged("we did high things", 0.44) == ["high"]  # "didn't" heard as "did" + a word
    assert tagged("take high pills", 0.44) == ["high"]
    assert flips.in_flip_slot("About", None) and not flips.in_flip_slot(None, "home")


def test_the_second_decode_aligns_word_by_word_and_its_disagreements_compete() -> None:
    from verbatim.asr_server.whisper import _align

    first = _words("i will call my sister to hide")
    greedy = [("i", 0.9, {}), ("won't", 0.6, {}), ("call", 0.9, {"fall": 0.2}), ("my", 0.9, {}),
              ("sister", 0.9, {}), ("tonight", 0.7, {})]
    out = _align(first, greedy)
    assert out[1].competitors == (("won't", 0.6),)
    assert out[2].competitors == (("fall", 0.2),)
    assert dict(out[5].competitors) == {"tonight": 0.7} and dict(out[6].competitors) == {"tonight": 0.7}
    assert out[0].competitors == () and out[3].competitors == ()


def test_a_short_turn_inside_another_voice_keeps_its_label_and_is_marked_for_review() -> None:
    from verbatim.asr_server.engine import short_turns

    words = _words("so how was the week", 0.0) + [Word("yes", 2.2, 2.5, 0.9)] + _words("tell me more", 3.0)
    speakers = [0] * 5 + [1] + [0] * 3
    assert short_turns(words, speakers) == [False] * 5 + [True] + [False] * 3
    # A long enough turn, or one at either end of the recording, is believed.
    assert not any(short_turns(words, [0] * 5 + [1] * 4))
    assert short_turns(words, speakers, min_turn_s=0.2) == [False] * 9


def test_a_number_competing_with_itself_in_digits_leaves_no_doubt() -> None:
    # The second decode weighs "10" against "ten": the same number, so no rival; "two" is one.
    words = [Word("i", 0.0, 0.2, 0.95), Word("took", 0.3, 0.5, 0.97),
             Word("ten", 0.6, 0.8, 0.95, competitors=(("10", 0.3), ("Ten", 0.1))),
             Word("of", 0.9, 1.0, 0.95), Word("them", 1.1, 1.3, 0.95),
             Word("at", 1.4, 1.5, 0.95), Word("4", 1.6, 1.8, 0.95, competitors=(("four", 0.4), ("five", 0.12)))]
    results = to_results(words, ["S1"] * len(words))
    marked = {r["alternatives"][0]["content"]: [a["content"] for a in r["alternatives"][1:]]
              for r in results if MEANING_FLIP in r["alternatives"][0].get("tags", [])}
    assert marked == {"4": ["five"]}


def test_decodes_disagreeing_word_for_word_pair_each_word_with_its_own() -> None:
    from verbatim.asr_server.whisper import _align

    first = _words("i woke up at four")
    greedy = [("i", 0.9, {}), ("will", 0.5, {}), ("cut", 0.6, {}), ("that", 0.7, {}), ("four", 0.9, {})]
    out = _align(first, greedy)
    assert [dict(w.competitors) for w in out[1:4]] == [{"will": 0.5}, {"cut": 0.6}, {"that": 0.7}]


def test_the_second_decode_looks_up_numbers_and_negations_beyond_its_top_readings() -> None:
    """A number the decoder weighed at 0.02 behind five likelier words still competes, and the
    "'t" after "can" makes "can't" compete with "can", however far down the list."""
    from types import SimpleNamespace

    import numpy as np
    from faster_whisper.tokenizer import Tokenizer

    from verbatim.asr_server import whisper

    hf = whisper._whisper().hf_tokenizer
    tok = Tokenizer(hf, False, task="transcribe", language="en")
    spoken = [" I", " can", " take", " you"]
    ids = [tok.encode(p)[0] for p in spoken]
    vocab = hf.get_vocab_size()
    steps = []
    for i, token in enumerate(ids):
        p = np.full(vocab, 1e-9)
        p[token] = 0.8
        for rank, other in enumerate((" the", " a", " it", " that", " this", " is")):
            p[tok.encode(other)[0]] = 0.025 - rank * 0.001  # the top readings after the heard one
        if i == 3:
            p[tok.encode(" two")[0]] = 0.015
        if i == 2:
            p[tok.encode("'t")[0]] = 0.012
        steps.append(np.log(p / p.sum()).astype(np.float32))
    result = SimpleNamespace(sequences_ids=[[*ids, tok.eot]], logits=[[*steps, steps[-1]]])
    model = SimpleNamespace(hf_tokenizer=hf, max_length=448,
                            model=SimpleNamespace(generate=lambda *a, **k: [result]))
    heard = _words("i can take you")
    out = whisper._with_competitors(model, None, heard)
    assert 0.01 < dict(out[3].competitors)["two"] < 0.02
    assert 0.01 < dict(out[1].competitors)["can't"] < 0.02


def test_a_flip_word_is_judged_by_its_probability_alone_only_where_no_second_decode_ran() -> None:
    # "nine" at 0.7: no second decode (pocketsphinx, a long re-decode) leaves only the probability to
    # judge by; a second decode that weighed nothing against it clears it (FLIP_DOUBT is lower).
    alone = [Word("at", 0.0, 0.2, 0.95), Word("nine", 0.3, 0.6, 0.7)]
    cleared = [Word("at", 0.0, 0.2, 0.95, competitors=()), Word("nine", 0.3, 0.6, 0.7, competitors=())]
    doubted = [Word("at", 0.0, 0.2, 0.95, competitors=()), Word("nine", 0.3, 0.6, 0.7, competitors=(("five", 0.12),))]
    tags = [to_results(w, ["S1"] * 2)[1]["alternatives"][0].get("tags") for w in (alone, cleared, doubted)]
    assert tags == [[MEANING_FLIP], None, [MEANING_FLIP]]


def test_a_word_only_the_first_decode_heard_is_in_doubt_for_it_only_when_a_negation() -> None:
    # The greedy decode left "nine" and "not" out (the "" reading): leaving out a number says
    # nothing about which number, leaving out "not" flips the sentence.
    words = [Word("it", 0.0, 0.2, 0.95, competitors=()), Word("is", 0.3, 0.4, 0.95, competitors=()),
             Word("not", 0.5, 0.7, 0.97, competitors=(("", 0.12),)), Word("nine", 0.8, 1.0, 0.97,
                                                                        competitors=(("", 0.12),))]
    results = to_results(words, ["S1"] * 4)
    marked = [r["alternatives"][0]["content"] for r in results if MEANING_FLIP in r["alternatives"][0].get("tags", [])]
    assert marked == ["not"]


def test_only_a_window_already_in_doubt_gets_the_third_decode() -> None:
    from verbatim.asr_server.whisper import THIRD_DECODE_BELOW, in_doubt

    sure = [Word("i", 0.0, 0.2, 0.95, competitors=()), Word("slept", 0.3, 0.5, 0.9, competitors=(("slipped", 0.2),))]
    assert not in_doubt(sure)
    assert in_doubt([sure[0], replace(sure[1], confidence=THIRD_DECODE_BELOW - 0.01)])
    # A competitor that would flip the meaning, however faint; the same word in capitals is none.
    assert in_doubt([sure[0], replace(sure[1], competitors=(("seven", 0.004),))])
    assert not in_doubt([replace(sure[0], competitors=(("I", 0.3),)), sure[1]])
