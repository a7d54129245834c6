"""The model writer against a scripted OpenAI-compatible server: structured output, PHI placeholders,
citations rebuilt from the client's record, fallback to the offline drafter."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SAMPLES, STEADY, AsrServer, make_settings
from tests.factories import ready_session
from tests.scripted_llm import ScriptedLLM, scripted_llm
from verbatim.config import Settings
from verbatim.db.engine import db_session
from verbatim.db.models import Note, Session
from verbatim.durable.core import Outcome
from verbatim.notes.run import run_note
from verbatim.notes.service import request_note
from verbatim.runtime import build_context

COUPLE = SAMPLES / "notes" / "couple_money.json"


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with scripted_llm() as server:
        yield server


def model_settings(database_url: str, redis_url: str, asr: AsrServer, data_dir: Path, llm: ScriptedLLM,
                   **extra: object) -> Settings:
    return make_settings(database_url, redis_url, asr, data_dir, note_writer="openai", llm_base_url=llm.url,
                         llm_model="scripted", llm_retry_budget_s=2.0, **extra)


def draft(settings: Settings, client: str = "alex", fmt: str = "soap") -> Note:
    sid = ready_session(settings, COUPLE)
    with db_session(settings.database_url or "") as db:
        session = db.get(Session, sid)
        assert session is not None
        note_id = request_note(db, settings, session, fmt, client).note_id
    # STEADY: the run must not lose its 4 s test lease when a loaded machine stalls this process.
    assert run_note(build_context(settings.model_copy(update=STEADY)), note_id) is Outcome.READY
    return note_of(settings, note_id)


def note_of(settings: Settings, note_id: uuid.UUID) -> Note:
    with db_session(settings.database_url or "") as db:
        row = db.get(Note, note_id)
        assert row is not None
        db.expunge(row)
        return row


def test_the_model_writes_cited_sentences_and_no_name_leaves_the_machine(
        database_url: str, redis_url: str, asr: AsrServer, data_dir: Path, llm: ScriptedLLM) -> None:
    settings = model_settings(database_url, redis_url, asr, data_dir, llm)
    note = draft(settings)
    assert note.writer == "openai:scripted" and {s["writer"] for s in note.sections} == {"openai:scripted"}
    assert len(llm.requests) == 8  # per section: the writer's call and the judge's
    first = llm.requests[0]
    assert first["response_format"]["type"] == "json_schema" and first["model"] == "scripted"
    sent = llm.sent_text()
    for name in ("Alex", "Sam", "alex", "sam"):
        assert f" {name} " not in sent and f"{name}'s" not in sent
    assert "[NAME_" in sent and "bills" in sent
    words = " ".join(x["text"] for s in note.sections for x in s["sentences"])
    assert "Sam never listens" in words  # restored after the model answered
    for s in note.sections:
        for x in s["sentences"]:
            assert x["citations"] and all(c["speaker"] in ("therapist", "alex") for c in x["citations"])


def test_ids_not_in_the_record_are_dropped_and_the_sentence_flagged(
        database_url: str, redis_url: str, asr: AsrServer, data_dir: Path, llm: ScriptedLLM) -> None:
    settings = model_settings(database_url, redis_url, asr, data_dir, llm)
    llm.script = ["bogus_ids"]
    note = draft(settings)
    bogus = note.sections[0]["sentences"][0]
    assert bogus["citations"] == [] and bogus["label"] == "unsupported"


def test_a_refusing_model_leaves_the_section_to_the_offline_drafter(
        database_url: str, redis_url: str, asr: AsrServer, data_dir: Path, llm: ScriptedLLM) -> None:
    settings = model_settings(database_url, redis_url, asr, data_dir, llm)
    llm.script = ["error:400"]
    note = draft(settings)
    assert "judge" not in note.sections[0]["sentences"][0]  # the offline drafter's section is not sent out
    assert [s["writer"] for s in note.sections] == ["offline-drafter-1"] + ["openai:scripted"] * 3


def test_long_records_are_drafted_in_chunks_then_synthesised(
        database_url: str, redis_url: str, asr: AsrServer, data_dir: Path, llm: ScriptedLLM) -> None:
    from verbatim.notes.evidence import units
    from verbatim.notes.formats import sections_of
    from verbatim.notes.openai_writer import OpenAIWriter

    writer = OpenAIWriter(llm.url, "scripted", None, 10.0, 2.0, chunk_chars=200)
    segs = [{"id": f"seg-{i}", "speaker": "c" if i % 2 else "therapist", "start_s": i, "end_s": i + 1,
             "text": f"Sentence number {i} about sleep and work and the week that was long."} for i in range(12)]
    section = writer.section(sections_of("soap"), 0, units(segs, "c"))
    assert len(llm.requests) > 2 and "candidates" in llm.requests[-1]["messages"][-1]["content"]
    assert section["name"] == "Subjective"


def test_with_a_model_the_model_is_the_judge(
        database_url: str, redis_url: str, asr: AsrServer, data_dir: Path, llm: ScriptedLLM) -> None:
    settings = model_settings(database_url, redis_url, asr, data_dir, llm)
    llm.judge_label = "contradicted"
    note = draft(settings)
    labels = [(x["label"], x["offline_label"], x["judge"]) for s in note.sections for x in s["sentences"]]
    assert labels and all(lab == ("contradicted", "supported", "openai:scripted") for lab in labels)
    claims = [r for r in llm.requests if "claims" in r["messages"][-1]["content"]]
    assert claims and all("Sam" not in r["messages"][-1]["content"] for r in claims)
