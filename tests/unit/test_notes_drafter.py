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


# --- the offline draft reads as a note (issue 23, item 3) ---------------------------------
ACI = Path("/work/shared/data/notes/aci-bench/valid.json")


def _dialogue(*turns: tuple[str, str]) -> list[dict[str, object]]:
    return [{"id": f"seg-{n}", "speaker": who, "start_s": 5.0 * n, "end_s": 5.0 * n + 4.0, "text": said}
            for n, (who, said) in enumerate(turns)]


def _aci_note(*turns: tuple[str, str]) -> dict[str, list[str]]:
    from verbatim.notes.drafter import Names

    note = OfflineDrafter(Names("Doctor", "Patient"), per_section=8).draft(
        sections_of("aci"), units(_dialogue(*turns), "patient"))
    return {s["name"]: [x["text"] for x in s["sentences"]] for s in note}


def test_a_denial_only_from_a_plain_no_to_a_symptom_question() -> None:
    note = _aci_note(
        ("therapist", "Any new symptoms?"),
        ("patient", "No, not really, but I'm still getting some chest pains."),
        ("therapist", "Do you have any questions?"),
        ("patient", "No."),
        ("therapist", "Have you had any fevers or chills?"),
        ("patient", "No."),
    )
    texts = [t for ts in note.values() for t in ts]
    assert "Patient denies fevers or chills when asked." in texts
    assert not any("denies new symptoms" in t or "denies questions" in t for t in texts)


def test_orders_and_voice_commands_are_plan_and_the_reason_for_the_visit_is_found() -> None:
    note = _aci_note(
        ("therapist", "Mr. Lee is a 40 year old male who presents today with an upper respiratory infection."),
        ("patient", "I have been coughing for about a week and my throat is sore."),
        ("therapist", "Hey dragon, show me the chest x-ray."),
        ("therapist", "Order a hemoglobin a1c."),
        ("therapist", "On your lung exam I hear some wheezing."),
    )
    assert note["CHIEF COMPLAINT"] == ["Upper respiratory infection."]
    plan = " ".join(note["ASSESSMENT AND PLAN"])
    assert "hemoglobin a1c" in plan and '"Hey dragon, show me the chest x-ray."' in plan
    elsewhere = " ".join(t for name, ts in note.items() if name != "ASSESSMENT AND PLAN" for t in ts)
    assert "a1c" not in elsewhere and "dragon" not in elsewhere


def test_a_sentence_that_does_not_rewrite_cleanly_is_quoted_as_said_and_quotes_keep_their_words() -> None:
    note = _aci_note(
        ("therapist", "How have you been sleeping?"),
        ("patient", "Yeah, that's fair, I was just, I was tired all week and I kept waking up at night."),
        ("patient", 'My wife told me "you never sleep anymore" and I feel exhausted every single morning.'),
        ("patient", "I get this ache in my back when I'm ex- exerting myself at the gym."),
    )
    texts = [t for ts in note.values() for t in ts]
    assert not any("reports that that's" in t or "reports that yeah" in t.lower() for t in texts)
    assert any(t.startswith('Patient said: "Yeah, that\'s fair') for t in texts)
    assert any('"you never sleep anymore"' in t for t in texts)  # the quote inside is not rewritten
    assert any(t.startswith('Patient said: "I get this ache') for t in texts)


def test_other_participants_and_inaudible_gaps_are_never_the_patients_words() -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from bench.notes import segments

    src = ("[doctor] how is the pain in your knee ?\n[patient_guest] he has been crying at night about it .\n"
           "[patient] it hurts every morning when i walk to the car . i feel [inaudible] the stairs .")
    segs = segments(src)
    assert [s["speaker"] for s in segs] == ["therapist", "other participant", "patient"]
    items = units(segs, "patient")
    assert all("crying" not in u.text and "inaudible" not in u.text for u in items)
    note = OfflineDrafter().draft(sections_of("aci"), items)
    body = json.dumps(note)
    assert "crying" not in body and "inaudible" not in body
    # The sentence with the gap is left out; the citation of its segment marks the gap as "…".
    assert not any("stairs" in x["text"] for s in note for x in s["sentences"])
    assert flags(items)["status"] == NONE_FOUND


def test_on_aci_bench_no_sentence_is_contradicted_and_the_complaint_is_found() -> None:
    import pytest

    if not ACI.exists():
        pytest.skip("aci-bench valid.json is not on this machine")
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from bench.notes import segments
    from verbatim.notes.drafter import Names

    drafter = OfflineDrafter(Names("Doctor", "Patient"), per_section=8)
    data = json.loads(ACI.read_text())["data"]
    filled = 0
    for item in data:
        note = drafter.draft(sections_of("aci"), units(segments(item["src"]), "patient"))
        labels = [x["label"] for s in note for x in s["sentences"]]
        assert verifier.CONTRADICTED not in labels
        assert all(x["citations"] for s in note for x in s["sentences"])
        filled += bool(note[0]["sentences"])
    assert filled / len(data) >= 0.75
