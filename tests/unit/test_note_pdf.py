"""The signed PDF as an EHR files it (issue 23, item 5), read back with pypdf: who, for whom, when and
what, the signature line, each amendment (what changed, why, by whom), no internal ids or verifier
tags, and words in any script printed as written (fonts embedded, no ``?``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tests.pdfs import text_of
from verbatim.notes.pdf import document, signed_note
from verbatim.notes.record import Change, Party, SignedRecord, changed_sentences

NOTE_ID, SEGMENT = "9f1c2d3e-0000-4000-8000-00000000abcd", "seg-7f3a"
WORDS = ("Señora Muñoz", "Łódź Żółć", "Ελένη Παπαδοπούλου", "Анна Сергеевна", "李小龍", "山田太郎", "김민준")


def _sentence(text: str, label: str = "supported") -> dict[str, Any]:
    return {"text": text, "label": label, "citations": [
        {"segment_id": SEGMENT, "speaker": "client", "start_s": 62.0, "end_s": 65.5, "quote": text}]}


def _body(extra: str | None = None) -> dict[str, Any]:
    subjective = [_sentence("Client reports sleeping poorly since the move."),
                  _sentence(f"Client says her grandmother {WORDS[0]} lives in {WORDS[1]}; friends {WORDS[2]}, "
                            f"{WORDS[3]}, {WORDS[4]}, {WORDS[5]} and {WORDS[6]} visit.")]
    if extra:
        subjective.append(_sentence(extra, "unsupported"))
    return {"sections": [{"name": "Subjective", "sentences": subjective},
                         {"name": "Plan", "sentences": [_sentence("Meet again next week.", "unsupported")]}],
            "risk": {"status": "none found", "flags": [], "denials": [], "note_mentions": []}}


def _record(amended: bool = False) -> SignedRecord:
    dana = Party("Dana Reyes", "http://hl7.org/fhir/sid/us-npi", "1234567893", "LCSW")
    before, after = _body(), _body("Client reports falling asleep around one in the morning.")
    changes = [Change(3, datetime(2026, 3, 4, 18, 5, tzinfo=UTC), "Added the bedtime the client gave", dana,
                      *changed_sentences(before, after))] if amended else []
    return SignedRecord(
        note_id=NOTE_ID, version=3 if amended else 2, format_name="SOAP", clinic="Clínica Sur",
        time_zone="America/Chicago",
        clinician=dana, client=Party("client-17", "https://ehr.example/mrn", "MRN-20431"), ehr_client=True,
        session_start=datetime(2026, 3, 2, 15, 0, tzinfo=UTC), duration_s=50 * 60.0, session_type="individual",
        signed_at=datetime(2026, 3, 2, 16, 30, tzinfo=UTC), body=after if amended else before, amendments=changes)


def test_the_signed_pdf_names_who_for_whom_when_and_what_with_a_signature_line() -> None:
    pdf = signed_note(_record())
    text = text_of(pdf)
    for want in ("Clinic: Clínica Sur", "Clinician: Dana Reyes, LCSW", "Client: MRN-20431 (https://ehr.example/mrn)",
                 "Date of service: 2026-03-02, 09:00-09:50 CST (America/Chicago)", "Session: individual, 50 min",
                 "Status: final", "SIGNATURE", "Electronically signed by Dana Reyes, LCSW on 2026-03-02 10:30 CST",
                 "SUBJECTIVE", "Client reports sleeping poorly since the move.", "Meet again next week.",
                 "No risk statements detected by the automatic check"):
        assert want in text, (want, text)
    for internal in (NOTE_ID, SEGMENT, "seg-", "client-17", "[UNSUPPORTED]", "UNSUPPORTED", "unsupported",
                     "supported", "APPENDIX"):
        assert internal not in text and internal.encode() not in pdf, internal


def test_a_recording_under_a_minute_gives_its_start_and_its_seconds() -> None:
    from dataclasses import replace

    text = text_of(signed_note(replace(_record(), duration_s=53.0)))
    assert "Date of service: 2026-03-02, 09:00 CST (America/Chicago)" in text and "09:00-09:00" not in text
    assert "Session: individual, 53 s" in text


def test_words_in_any_script_print_as_written() -> None:
    text = text_of(signed_note(_record()))
    for word in WORDS:
        assert word in text, (word, text)
    assert "?" not in text


def test_a_document_without_cjk_embeds_only_dejavu() -> None:
    latin = document("Record", ["Client: Zoë"], "Ελένη said «ναι».")
    cjk = document("Record", ["Client: 李小龍"], "ok")
    assert b"DejaVuSans" in latin and b"DroidSansFallback" not in latin
    assert b"DroidSansFallback" in cjk and "李小龍" in text_of(cjk)


def test_an_amendment_shows_what_changed_why_and_by_whom_and_no_tags() -> None:
    pdf = signed_note(_record(amended=True))
    text = text_of(pdf)
    for want in ("Status: amended", "AMENDMENT (VERSION 3)", "Amended by Dana Reyes, LCSW on 2026-03-04 12:05 CST",
                 "Reason: Added the bedtime the client gave",
                 "Added to Subjective: Client reports falling asleep around one in the morning."):
        assert want in text, (want, text)
    assert "Removed from" not in text  # nothing was removed
    for internal in (NOTE_ID, SEGMENT, "[UNSUPPORTED]", "UNSUPPORTED", "RISK FLAGS:", "@@", "+++"):
        assert internal not in text and internal.encode() not in pdf, internal


def test_the_evidence_appendix_names_speakers_and_times_not_segment_ids() -> None:
    pdf = signed_note(_record(), evidence=True)
    text = text_of(pdf)
    assert "APPENDIX: EVIDENCE" in text and "Subjective 1: client 01:02-01:05" in text
    assert SEGMENT not in text and SEGMENT.encode() not in pdf


def test_changed_sentences_are_the_note_words_only() -> None:
    before = _body()
    after = _body()
    after["sections"][0]["sentences"][0] = _sentence("Client reports sleeping better.", "contradicted")
    after["risk"] = {"flags": [{"category": "suicide"}]}
    removed, added = changed_sentences(before, after)
    assert removed == ["Subjective: Client reports sleeping poorly since the move."]
    assert added == ["Subjective: Client reports sleeping better."]
    assert changed_sentences(before, before) == ([], [])


def test_making_a_pdf_logs_no_glyph_of_its_words(capsys: Any) -> None:
    """fontTools' subsetter logged every glyph a PDF used (a CJK name, letter by letter) at INFO."""
    from verbatim.telemetry.logs import configure

    configure("DEBUG", json_output=True)
    document("Record", ["Client: 王芳, Дмитрий"], "ok")
    logged = capsys.readouterr().err
    assert "uni738B" not in logged and "uni0414" not in logged and "王" not in logged
