"""The meaning check (``risk_reader``): risk said in words no rule knows, and what it must leave alone."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from verbatim.errors import ConfigError
from verbatim.notes import meaning, risk_reader
from verbatim.notes.evidence import units
from verbatim.notes.note_risk import recheck
from verbatim.notes.risk import MEANING_KIND, considered, flags

#: preparation no rule's phrase names (the rules find nothing in it): only meaning can flag it
UNRULED = "I wrote letters to each of my kids and put them in the drawer with my will."


def check(*turns: tuple[str, str]) -> dict[str, Any]:
    segments = [{"id": f"seg-{n}", "speaker": who, "start_s": 10.0 * n, "end_s": 10.0 * n + 8, "text": text}
                for n, (who, text) in enumerate(turns)]
    return flags(units(segments, "client"))


def test_the_encoder_gives_unit_vectors_closer_for_the_same_meaning() -> None:
    vectors = meaning.encoder().embed(["I want to end my life.", "I've been thinking about killing myself.",
                                       "We bought bread and milk at the shop."])
    assert vectors.shape == (3, meaning.DIMENSIONS) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)
    same, other = float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])
    assert same > other + 0.3, (same, other)
    assert meaning.encoder().embed([]).shape == (0, meaning.DIMENSIONS)


def test_an_encoder_that_is_not_the_pinned_one_is_refused(tmp_path: Path) -> None:
    changed = tmp_path / "sentence_encoder.onnx"
    blob = bytearray(meaning.ENCODER.read_bytes())
    blob[-1] ^= 0xFF
    changed.write_bytes(bytes(blob))
    with pytest.raises(ConfigError, match="not the pinned one"):
        meaning.SentenceEncoder(changed, meaning.TOKENIZER)
    with pytest.raises(ConfigError, match="cannot read"):
        meaning.SentenceEncoder(tmp_path / "absent.onnx", meaning.TOKENIZER)
    with pytest.raises(ConfigError, match="not the pinned one"):
        meaning.verify_encoder(changed, meaning.TOKENIZER)
    with pytest.raises(ConfigError, match="tokenizer"):
        meaning.verify_encoder(meaning.ENCODER, tmp_path / "absent.json")


def test_missing_reader_weights_are_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(risk_reader, "WEIGHTS", tmp_path / "absent.npz")
    monkeypatch.setattr(risk_reader, "_loaded", {})
    with pytest.raises(ConfigError, match="risk reader"):
        risk_reader.rate(["anything at all"])


def test_the_meaning_check_flags_what_no_rule_knows_and_quotes_it() -> None:
    assert not considered(UNRULED)
    out = check(("therapist", "How has the week been?"), ("client", UNRULED))
    assert [(f["category"], f["kind"]) for f in out["flags"]] == [("suicide", MEANING_KIND)]
    flag = out["flags"][0]
    assert flag["quote"] == UNRULED and flag["segment_id"] == "seg-1" and flag["start_s"] == 10.0
    assert "meaning check" in flag["reason"] and "no rule matched" in flag["reason"]
    assert "checked" not in out
    rating = risk_reader.reading(UNRULED)
    assert rating is not None and rating[0] == "suicide" and rating[1] > risk_reader.THRESHOLD


def test_in_a_long_turn_it_quotes_the_two_sentences_that_read_as_risk() -> None:
    story = ("So the week was mostly work, the usual meetings and a lot of driving back and forth. "
             "My sister came over on Saturday and we cooked, which was nice enough. " + UNRULED +
             " Anyway the dog has been limping so we took him to the vet on Monday and it was fine.")
    out = check(("client", story))
    assert [f["kind"] for f in out["flags"]] == [MEANING_KIND]
    assert UNRULED in out["flags"][0]["quote"] and "the usual meetings" not in out["flags"][0]["quote"]


@pytest.mark.parametrize("turns", [
    [("therapist", UNRULED)],                                    # clinician speech is never read for risk
    [("therapist", "Have you had any thoughts of ending your life?"), ("client", "Mm-hmm.")],  # the rules' answer
    [("client", "I told my boss I'd kill him if he touched my stuff again, haha.")],  # a jest the rules cleared
    [("therapist", "Any thoughts of suicide?"), ("client", "No, never, I'd never do that to my kids.")],  # a denial
    [("client", "My uncle died by suicide when I was twelve and we never talked about it.")],  # family history
])
def test_the_meaning_check_leaves_alone_what_the_rules_read(turns: list[tuple[str, str]]) -> None:
    out = check(*turns)
    assert not [f for f in out["flags"] if f["kind"] == MEANING_KIND], out


def test_ordinary_talk_is_not_flagged() -> None:
    out = check(("client", "I went to the shop and bought some milk and bread."),
                ("client", "I felt really low on Tuesday but the walk helped."),
                ("client", "My mum keeps calling me about the wedding seating plan."))
    assert out["flags"] == [] and "checked" in out


def test_a_notes_own_sentences_are_read_by_the_rules_only() -> None:
    section = {"name": "Subjective", "sentences": [{"text": UNRULED}]}
    assert recheck(None, [section])["note_mentions"] == []


def test_a_speaker_uncertain_turn_says_so() -> None:
    segments = [{"id": "seg-0", "speaker": "client", "start_s": 0.0, "end_s": 8.0, "text": UNRULED,
                 "marks": ["speaker_uncertain"]}]
    out = flags(units(segments, "client"))
    assert out["flags"] and out["flags"][0].get("speaker_uncertain") is True
    assert "speaker uncertain" in out["flags"][0]["reason"]


def test_the_shipped_weights_have_one_network_per_seed(tmp_path: Path) -> None:
    copy = tmp_path / "w.npz"
    shutil.copyfile(risk_reader.WEIGHTS, copy)
    with np.load(copy, allow_pickle=False) as z:
        assert z["w1"].shape[1:] == (meaning.DIMENSIONS, 256) and z["w2"].shape[-1] == len(risk_reader.CLASSES)
        assert tuple(z["classes"]) == risk_reader.CLASSES


#: a screening question in words no rule gives a topic: only its meaning says what it asks about
UNRULED_QUESTION = "Is anyone taking money from you or controlling what you spend?"


def test_a_question_no_rule_knows_gives_its_topic_to_the_answer() -> None:
    from verbatim.notes.risk import question_topic

    assert question_topic([UNRULED_QUESTION]) == frozenset()
    rating = risk_reader.question_topic(UNRULED_QUESTION)
    assert rating is not None and rating[0] == "abuse"
    denied = check(("therapist", UNRULED_QUESTION), ("client", "No, nothing like that."))
    assert denied["flags"] == [] and [d["category"] for d in denied["denials"]] == ["abuse"]
    assert denied["denials"][0]["question"]["quote"] == UNRULED_QUESTION
    said = check(("therapist", UNRULED_QUESTION), ("client", "Yeah. My nephew, most weeks."))
    assert [f["category"] for f in said["flags"]] == ["abuse"] and said["flags"][0]["question"]


def test_an_ordinary_question_asks_about_no_risk() -> None:
    assert risk_reader.question_topic("How did the appointment with your GP go?") is None
    out = check(("therapist", "Did you manage to do the breathing exercise this week?"), ("client", "Yeah, twice."))
    assert out["flags"] == [] and out["denials"] == []


def test_one_risk_sentence_among_ordinary_ones_is_found_and_quoted_alone() -> None:
    out = check(("client", "We went shopping on Saturday. I bought a new kettle. " + UNRULED))
    assert [(f["kind"], f["quote"]) for f in out["flags"]] == [(MEANING_KIND, UNRULED)]


def test_half_an_emoji_does_not_stop_the_check() -> None:
    out = check(("client", "We went out for lunch \ud800 and it was nice, honestly."))
    assert out["flags"] == []


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "shape"])
def test_damaged_reader_weights_are_a_config_error_at_worker_start(
        damage: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "risk_reader.npz"
    blob = bytearray(risk_reader.WEIGHTS.read_bytes())
    if damage == "flip":
        blob[len(blob) // 2] ^= 0xFF
        broken.write_bytes(bytes(blob))
    elif damage == "truncate":
        broken.write_bytes(bytes(blob[: len(blob) // 3]))
    elif damage == "empty":
        broken.write_bytes(b"")
    else:
        with np.load(risk_reader.WEIGHTS, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        arrays["w1"] = arrays["w1"][:, :100, :]
        np.savez(broken, **arrays)
    monkeypatch.setattr(risk_reader, "WEIGHTS", broken)
    monkeypatch.setattr(risk_reader, "_loaded", {})
    with pytest.raises(ConfigError, match="risk reader's weights"):
        risk_reader.verify()
    with pytest.raises(ConfigError):
        risk_reader.rate(["anything at all"])


def test_the_shipped_models_pass_the_start_up_check() -> None:
    risk_reader.verify()
