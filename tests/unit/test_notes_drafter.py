"""The offline drafter, the verifier and the risk flags on therapy transcripts (no servers)."""

from __future__ import annotations

import json
from pathlib import Path

from verbatim.notes import verifier
from verbatim.notes.drafter import NO_EVIDENCE, OfflineDrafter
from verbatim.notes.evidence import units
from verbatim.notes.formats import BUILT_IN, sections_of
from verbatim.notes.risk import NONE_FOUND, flags
from verbatim.polish.split import split_per_client

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def record(name: str, client: str = "client") -> list[dict[str, object]]:
    turns = json.loads((SAMPLES / name).read_text())
    roles = {t["speaker"]: ("therapist" if t["speaker"] == "therapist" else t["speaker"]) for t in turns}
    clients = sorted({r for r in roles.values() if r != "therapist"})
    return split_per_client(turns, clients, roles)[client]


def test_every_sentence_cites_segments_of_the_record_and_is_labelled() -> None:
    segs = record("therapy_dialogue.json")
    by_id = {s["id"]: s for s in segs}
    for fmt in ("soap", "dap", "birp", "girp"):
        note = OfflineDrafter().draft(sections_of(fmt), units(segs, "client"))
        assert [s["name"] for s in note] == [s.name for s in BUILT_IN[fmt]]
        sentences = [x for s in note for x in s["sentences"]]
        assert sentences, fmt
        for x in sentences:
            assert x["citations"], x
            assert x["label"] in verifier.LABELS
            for c in x["citations"]:
                assert by_id[c["segment_id"]]["text"] == c["quote"]
                assert c["speaker"] in ("therapist", "client")
        assert sum(x["label"] == verifier.SUPPORTED for x in sentences) / len(sentences) >= 0.9


def test_the_draft_is_speaker_aware_and_a_section_without_evidence_says_so() -> None:
    note = OfflineDrafter().draft(sections_of("soap"), units(record("therapy_dialogue.json"), "client"))
    texts = [x["text"] for s in note for x in s["sentences"]]
    assert any(t.startswith("Client reports that they fall asleep") for t in texts)
    assert any(t.startswith("Therapist ") for t in texts)
    custom = sections_of("", [{"name": "Medication", "instruction": "Prescriptions and doses."}])
    empty = OfflineDrafter().draft(custom, units(record("therapy_dialogue.json"), "client"))[0]
    assert empty["sentences"] == [] and empty["empty"] == NO_EVIDENCE


def test_a_couples_note_holds_no_words_of_the_other_client() -> None:
    for me, other in (("alex", "sam"), ("sam", "alex")):
        segs = record("notes/couple_money.json", me)
        theirs = [t["text"] for t in json.loads((SAMPLES / "notes/couple_money.json").read_text())
                  if t["speaker"] == other]
        note = OfflineDrafter().draft(sections_of("soap"), units(segs, me))
        body = " ".join(x["text"] + " ".join(c["quote"] for c in x["citations"])
                        for s in note for x in s["sentences"])
        assert body
        for words in theirs:
            assert words not in body
        assert all(c["speaker"] in ("therapist", me) for s in note for x in s["sentences"] for c in x["citations"])


def test_negations_only_when_asked_and_answered() -> None:
    denied = OfflineDrafter().draft(sections_of("soap"), units(record("notes/risk_denied.json"), "client"))
    texts = [x["text"] for x in denied[0]["sentences"]]
    assert "Client denies thoughts of suicide or of hurting themselves when asked." in texts
    assert "Client denies thoughts of hurting anyone else when asked." in texts
    plain = OfflineDrafter().draft(sections_of("soap"), units(record("therapy_dialogue.json"), "client"))
    assert not any("denies" in x["text"] for s in plain for x in s["sentences"])


def test_risk_flags_are_quoted_when_discussed_and_none_found_otherwise() -> None:
    found = flags(units(record("notes/risk_discussed.json"), "client"))
    assert found["status"] == "found"
    assert {f["category"] for f in found["flags"]} == {"suicide", "self_harm"}
    first = found["flags"][0]
    assert first["quote"] == "I think everyone would be better off without me." and first["speaker"] == "client"
    assert first["start_s"] > 0 and first["segment_id"].startswith("seg-")
    denied = flags(units(record("notes/risk_denied.json"), "client"))
    assert denied["status"] == NONE_FOUND and denied["flags"] == []
    assert {d["category"] for d in denied["denials"]} >= {"suicide", "self_harm", "harm_to_others"}
    assert flags(units(record("therapy_dialogue.json"), "client"))["status"] == NONE_FOUND


def test_the_verifier_threshold_is_the_calibrated_one_and_labels_the_set_well() -> None:
    data = verifier.labelled_set()
    assert len(data) >= 60 and all(d["reason"] for d in data)
    assert {d["label"] for d in data} == set(verifier.LABELS)
    at, accuracy = verifier.calibrate(data)
    assert at == verifier.SUPPORTED_AT
    assert accuracy >= 0.9


def test_the_verifier_flags_corruptions() -> None:
    evidence = ["Probably a seven most days. On Thursday it was closer to a nine, and I skipped lunch entirely."]
    assert verifier.label("Client reports that on Thursday it was closer to a nine.", evidence).label == "supported"
    assert verifier.label("Client reports that on Thursday it was closer to a four.", evidence).label == "contradicted"
    assert verifier.label("Client reports that they did not skip lunch.", evidence).label == "contradicted"
    assert verifier.label("Client reports a fight with their sister.", evidence).label == "unsupported"
    assert verifier.label("Client reports a fight with their sister.", []).label == "unsupported"


def test_drafting_is_deterministic_section_by_section() -> None:
    items = units(record("notes/risk_discussed.json"), "client")
    sections = sections_of("birp")
    whole = OfflineDrafter().draft(sections, items)
    assert [OfflineDrafter().section(sections, i, items) for i in range(len(sections))] == whole
