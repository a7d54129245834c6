"""The suggestion state machine on real PostgreSQL: guarded moves, their audit rows, the
published transcript recomputed on every move, and the append-only action table."""

from __future__ import annotations

import threading
import uuid

import psycopg
import pytest
from sqlalchemy import select, update
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session as OrmSession

from tests.reliability.conftest import (
    analyse_now,
    analysis_row,
    publish_session,
    records_of,
    session_row,
    suggestions_of,
)
from verbatim.db.engine import db_session, engine
from verbatim.db.models import Session
from verbatim.errors import IllegalTransition, NotFound, RecordUnavailable
from verbatim.reliability.models import ReliabilityAction, ReliabilitySuggestion
from verbatim.reliability.suggestions import (
    Action,
    Actor,
    InvalidChoice,
    SuggestionKind,
    SuggestionSpec,
    SuggestionStatus,
    create_suggestions,
    transition,
)

S, A = SuggestionStatus, Action


def actions_of(url: str, suggestion_id: uuid.UUID) -> list[ReliabilityAction]:
    with db_session(url) as db:
        return list(db.execute(select(ReliabilityAction).where(ReliabilityAction.suggestion_id == suggestion_id)
                               .order_by(ReliabilityAction.id)).scalars())


def find(url: str, sid: uuid.UUID, **match: object) -> ReliabilitySuggestion:
    return next(s for s in suggestions_of(url, sid) if all(getattr(s, k) == v for k, v in match.items()))


@pytest.fixture
def therapist(database_url: str) -> Actor:
    return Actor("therapist", session_row(database_url, publish_session(database_url)).therapist_id, uuid.uuid4())


def test_publish_records_the_analysis_request(database_url: str) -> None:
    sid = publish_session(database_url)
    row = analysis_row(database_url, sid)
    assert row is not None and row.requested_at is not None
    assert (row.emitted_at, row.completed_at, row.attempts) == (None, None, 0)


def test_every_transition_legal_and_illegal_with_its_audit_row(database_url: str, therapist: Actor) -> None:
    sid = publish_session(database_url)
    eng = engine(database_url)
    legal = {(S.PENDING, A.VALIDATED): S.VALIDATED, (S.PENDING, A.IGNORED): S.IGNORED,
             (S.AUTO_APPLIED, A.VALIDATED): S.VALIDATED, (S.AUTO_APPLIED, A.REVERTED): S.PENDING,
             (S.VALIDATED, A.REVERTED): S.PENDING}
    # How to bring a new suggestion to each starting status.
    path = {S.PENDING: (S.PENDING, []), S.AUTO_APPLIED: (S.AUTO_APPLIED, []),
            S.VALIDATED: (S.PENDING, [A.VALIDATED]), S.IGNORED: (S.PENDING, [A.IGNORED])}
    for start in S:
        for action in (A.VALIDATED, A.IGNORED, A.REVERTED):
            initial, steps = path[start]
            spec = SuggestionSpec(kind=SuggestionKind.EDIT, reason="test", status=initial, turn_index=2,
                                  start_s=3.8, end_s=6.0, original="tell me about the", suggested="Tell me.")
            with OrmSession(eng) as db, db.begin():
                create_suggestions(db, sid, [spec])
            sug = next(s for s in suggestions_of(database_url, sid) if s.reason == "test" and not actions_of(
                database_url, s.id)[1:])
            for step in steps:
                transition(eng, sug.id, step, therapist)
            before = actions_of(database_url, sug.id)
            assert before[0].action == "created" and before[0].from_status is None and before[0].actor == "analysis"
            if (start, action) in legal:
                row = transition(eng, sug.id, action, therapist)
                assert row.status == legal[(start, action)].value
                last = actions_of(database_url, sug.id)[-1]
                assert (last.action, last.from_status, last.to_status) == (action.value, start.value, row.status)
                assert (last.actor, last.therapist_id, last.token_id) == (
                    "therapist", therapist.therapist_id, therapist.token_id)
                assert last.at is not None
            else:
                with pytest.raises(IllegalTransition):
                    transition(eng, sug.id, action, therapist)
                assert len(actions_of(database_url, sug.id)) == len(before), (start, action)
                assert find(database_url, sid, id=sug.id).status == start.value
            # Tidy up so that the next round's new suggestion is the only unmoved one.
            with db_session(database_url) as db:
                db.execute(update(ReliabilitySuggestion).where(ReliabilitySuggestion.id == sug.id)
                           .values(reason="done"))


def test_published_transcript_is_raw_turns_plus_applied_suggestions(database_url: str, therapist: Actor) -> None:
    sid = publish_session(database_url)
    analyse_now(database_url, sid)
    eng = engine(database_url)
    published = session_row(database_url, sid).published_turns
    assert published is not None and published[0]["text"] == "How have you been?"

    edit = find(database_url, sid, kind="edit", turn_index=0)
    assert edit.status == "auto_applied"
    transition(eng, edit.id, A.REVERTED, therapist)
    assert session_row(database_url, sid).published_turns[0]["text"] == "um how have you been?"  # type: ignore[index]
    assert records_of(database_url, sid)["client-a"][0]["text"] == "um how have you been?"

    week = find(database_url, sid, kind="word", original="week")
    with pytest.raises(InvalidChoice):
        transition(eng, week.id, A.VALIDATED, therapist, choice="squeak")
    transition(eng, week.id, A.VALIDATED, therapist, choice="wake")
    assert session_row(database_url, sid).published_turns[3]["text"] == "Wake at work."  # type: ignore[index]

    transition(eng, edit.id, A.VALIDATED, therapist)
    been = find(database_url, sid, kind="word", original="been")
    transition(eng, been.id, A.VALIDATED, therapist)
    assert session_row(database_url, sid).published_turns[0]["text"] == "How have you bean?"  # type: ignore[index]

    # The short interjection moved to the therapist: the per-client record is split again.
    assert records_of(database_url, sid)["client-a"][1]["speaker"] == "client-a"
    short = find(database_url, sid, kind="speaker", turn_index=1)
    transition(eng, short.id, A.VALIDATED, therapist)
    segment = records_of(database_url, sid)["client-a"][1]
    assert (segment["speaker"], segment["speaker_label"], segment["text"]) == ("therapist", "S1", "Fine.")
    transition(eng, short.id, A.REVERTED, therapist)
    assert records_of(database_url, sid)["client-a"][1]["speaker"] == "client-a"


def test_only_the_sessions_therapist_and_only_while_published(database_url: str, therapist: Actor) -> None:
    sid = publish_session(database_url)
    analyse_now(database_url, sid)
    eng = engine(database_url)
    sug = find(database_url, sid, kind="word", original="been")
    with pytest.raises(NotFound):
        transition(eng, sug.id, A.IGNORED, therapist, owner=uuid.uuid4())
    with pytest.raises(NotFound):
        transition(eng, uuid.uuid4(), A.IGNORED, therapist)
    with db_session(database_url) as db:
        db.execute(update(Session).where(Session.id == sid).values(status="deleted"))
    with pytest.raises(RecordUnavailable, match="withdrawn"):
        transition(eng, sug.id, A.IGNORED, therapist)
    assert len(actions_of(database_url, sug.id)) == 1


def test_concurrent_moves_on_one_session_both_reach_the_transcript(database_url: str, therapist: Actor) -> None:
    sid = publish_session(database_url)
    analyse_now(database_url, sid)
    targets = [find(database_url, sid, kind="word", original=w).id for w in ("been", "week")]
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def move(suggestion_id: uuid.UUID) -> None:
        barrier.wait()
        try:
            transition(engine(database_url), suggestion_id, A.VALIDATED, therapist)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=move, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    texts = [t["text"] for t in session_row(database_url, sid).published_turns or []]
    assert texts[0] == "How have you bean?" and texts[3] == "Weak at work."


def test_actions_are_append_only_in_the_database(database_url: str, therapist: Actor) -> None:
    sid = publish_session(database_url)
    analyse_now(database_url, sid)
    u = make_url(database_url)
    with psycopg.connect(host=u.host, port=u.port, user=u.username, dbname=u.database, autocommit=True) as conn:
        count = conn.execute("SELECT count(*) FROM reliability_actions").fetchone()
        assert count is not None and count[0] > 0
        for sql in ("UPDATE reliability_actions SET to_status = 'ignored'", "DELETE FROM reliability_actions",
                    "TRUNCATE reliability_actions"):
            with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
                conn.execute(sql)
        assert conn.execute("SELECT count(*) FROM reliability_actions").fetchone() == count
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute("UPDATE reliability_suggestions SET status = 'approved'")
