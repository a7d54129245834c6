"""The offline analysis and the published transcript it implies: pure functions, no servers."""

from __future__ import annotations

import uuid

import pytest

from tests.reliability.conftest import polished, punct, sample_turns, turn, word
from verbatim.errors import ConfigError, IllegalTransition
from verbatim.record.build import replace_words
from verbatim.reliability import models
from verbatim.reliability.analysis import analyse
from verbatim.reliability.settings import load_reliability_settings
from verbatim.reliability.streams import AnalysisEvent, AnalysisTransient, MalformedEvent, RetryPolicy, Verdict
from verbatim.reliability.suggestions import (
    Action,
    SuggestionKind,
    SuggestionStatus,
    check_move,
    suggested_turns,
)


def test_analysis_finds_doubtful_words_speakers_and_the_polish_edits() -> None:
    raw = sample_turns()
    found = analyse(raw, polished(raw), confidence_threshold=0.6)
    words = [(s.turn_index, s.word_index, s.original, s.suggested, s.alternatives, s.status)
             for s in found if s.kind is SuggestionKind.WORD]
    assert words == [
        (0, 4, "been", "bean", ["bean"], SuggestionStatus.PENDING),
        (3, 0, "week", "weak", ["weak", "wake"], SuggestionStatus.PENDING),
    ]
    speakers = [(s.turn_index, s.reason, s.original, s.suggested) for s in found if s.kind is SuggestionKind.SPEAKER]
    assert speakers == [(1, "short_interjection", "S2", "S1"), (3, "mid_sentence_change", "S2", "S1")]
    edits = {s.turn_index: (s.original, s.suggested, s.status) for s in found if s.kind is SuggestionKind.EDIT}
    assert edits[0] == ("um how have you been?", "How have you been?", SuggestionStatus.AUTO_APPLIED)
    assert set(edits) == {0, 1, 2, 3}


def test_no_polish_no_edits_and_no_punctuation_no_mid_sentence_rule() -> None:
    raw = [turn("S1", 0, 2, [word("so", 0)]), turn("S2", 2.1, 5, [word("yes", 2.1), word("right", 2.5)])]
    plain = [{k: t[k] for k in ("speaker", "start_s", "end_s", "text")} for t in raw]
    # The recognizer did not punctuate: an unfinished sentence proves nothing.
    assert analyse(raw, plain) == []
    raw[0] = turn("S1", 0, 2, [word("so", 0), punct(",", 0.3)])
    assert [s.reason for s in analyse(raw, None)] == ["mid_sentence_change"]


def test_applied_suggestions_make_the_suggested_turns() -> None:
    raw = sample_turns()
    shown = polished(raw)
    found = analyse(raw, shown)
    auto = [s for s in found if s.status is SuggestionStatus.AUTO_APPLIED]
    # Raw turns plus the auto-applied edits are exactly what the polish pass published.
    assert suggested_turns(raw, auto) == shown
    assert suggested_turns(raw, []) == [{k: t[k] for k in ("speaker", "start_s", "end_s", "text")} for t in raw]
    been = next(s for s in found if s.original == "been")
    week = next(s for s in found if s.original == "week")
    short = next(s for s in found if s.reason == "short_interjection")
    out = suggested_turns(raw, [*auto, been, week, short])
    assert out[0]["text"] == "How have you bean?"  # the fix lands inside the polished text
    assert out[3]["text"] == "Weak at work."  # keeps the capital of a sentence start
    assert out[1]["speaker"] == "S1"
    assert suggested_turns(raw, [been])[0]["text"] == "um how have you bean?"


def test_a_word_fix_follows_its_occurrence_and_skips_words_the_polish_removed() -> None:
    raw = turn("S1", 0, 3, [word("the", 0), word("cat", 0.3), word("um", 0.6), word("the", 0.9),
                            word("hat", 1.2)])
    assert replace_words(raw, "The cat, the hat.", [(3, "a")]) == "The cat, a hat."
    assert replace_words(raw, "The cat, the hat.", [(0, "a")]) == "A cat, the hat."
    assert replace_words(raw, "The cat the hat.", [(2, "uh")]) == "The cat the hat."


def test_state_machine_table() -> None:
    S, A = SuggestionStatus, Action
    legal = {(S.PENDING, A.VALIDATED): S.VALIDATED, (S.PENDING, A.IGNORED): S.IGNORED,
             (S.AUTO_APPLIED, A.VALIDATED): S.VALIDATED, (S.AUTO_APPLIED, A.REVERTED): S.PENDING,
             (S.VALIDATED, A.REVERTED): S.PENDING}
    for status in S:
        for action in (A.VALIDATED, A.IGNORED, A.REVERTED):
            if (status, action) in legal:
                assert check_move(status, action) is legal[(status, action)]
            else:
                with pytest.raises(IllegalTransition):
                    check_move(status, action)
    with pytest.raises(IllegalTransition):
        check_move(S.PENDING, A.CREATED)


def test_database_check_constraints_list_the_enums() -> None:
    assert tuple(s.value for s in SuggestionStatus) == models.STATUSES
    assert tuple(k.value for k in SuggestionKind) == models.KINDS


def test_event_round_trip_and_malformed() -> None:
    event = AnalysisEvent(uuid.uuid4(), uuid.uuid4())
    fields = event.to_fields()
    assert set(fields) == {"event_type", "transcript_id", "user_id", "retry_count", "timestamp_requested",
                           "metadata"}
    assert fields["event_type"] == "reliability.analysis.requested"
    assert fields["retry_count"] == "0" and fields["metadata"] == "{}"
    float(fields["timestamp_requested"])
    assert AnalysisEvent.parse({k.encode(): v.encode() for k, v in fields.items()}) == event
    for bad in ({**fields, "event_type": "x"}, {**fields, "transcript_id": "nope"}, {**fields, "metadata": "[]"}):
        with pytest.raises(MalformedEvent):
            AnalysisEvent.parse(bad)


def test_retry_policy_decides() -> None:
    policy = RetryPolicy(max_retries=3, backoff_s=1.0, backoff_max_s=3.0)
    assert [policy.decide(AnalysisTransient("llm timeout"), n).delay_s for n in range(3)] == [1.0, 2.0, 3.0]
    assert policy.decide(AnalysisTransient("x"), 3).verdict is Verdict.DEAD_LETTER
    assert policy.decide(TimeoutError(), 0).verdict is Verdict.RETRY
    assert policy.decide(KeyError("words"), 0).verdict is Verdict.DEAD_LETTER


def test_settings_defaults_and_refusals(monkeypatch: pytest.MonkeyPatch) -> None:
    s = load_reliability_settings()
    assert (s.stream_key, s.retry_stream_key, s.dlq_stream_key, s.consumer_group) == (
        "reliability:events", "reliability:events:retry", "reliability:events:dlq", "reliability")
    assert (s.lock_ttl_seconds, s.max_retries, s.dlq_max_len, s.progress_ttl_seconds, s.shutdown_drain_s) == (
        1800, 3, 5000, 86400, 60.0)
    assert (s.use_dedicated_pool, s.db_pool_size, s.db_max_overflow, s.db_pool_recycle, s.db_pool_timeout) == (
        True, 5, 2, 1800, 30.0)
    assert s.claim_idle_ms == 60_000
    monkeypatch.setenv("RELIABILITY_STREAM_KEY", "other:events")
    monkeypatch.setenv("RELIABILITY_MAX_RETRIES", "5")
    assert (load_reliability_settings().stream_key, load_reliability_settings().max_retries) == ("other:events", 5)
    with pytest.raises(ConfigError, match="reemit_after_s"):
        load_reliability_settings(reemit_after_s=100)
    with pytest.raises(ConfigError, match="concurrency"):
        load_reliability_settings(concurrency=20)


def test_errors_kept_in_redis_never_quote_statement_parameters() -> None:
    import sqlalchemy.exc

    from verbatim.reliability.worker import describe

    orig = ValueError('duplicate key value violates unique constraint "x"\nDETAIL:  Key (original)=(my secret)')
    exc = sqlalchemy.exc.IntegrityError("INSERT INTO reliability_suggestions …", {"original": "my secret"}, orig)
    assert "my secret" in str(exc)
    assert describe(exc) == 'ValueError: duplicate key value violates unique constraint "x"'
    assert describe(AnalysisTransient("LLM timeout")) == "AnalysisTransient: LLM timeout"
