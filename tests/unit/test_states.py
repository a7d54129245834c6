import pytest

from verbatim.errors import IllegalTransition
from verbatim.states import TERMINAL, TRANSITIONS, SessionStatus, check_transition, predecessors

S = SessionStatus


def test_every_status_has_a_transition_entry() -> None:
    assert set(TRANSITIONS) == set(SessionStatus)


@pytest.mark.parametrize(("src", "dst"), [(S.QUEUED, S.READY), (S.READY, S.QUEUED), (S.DELETED, S.QUEUED),
                                          (S.FAILED, S.READY), (S.CHECKPOINTED, S.RECOGNIZING)])
def test_illegal_moves_raise(src: SessionStatus, dst: SessionStatus) -> None:
    with pytest.raises(IllegalTransition):
        check_transition(src, dst)


def test_the_happy_path_is_legal() -> None:
    path = [S.QUEUED, S.RECOGNIZING, S.CHECKPOINTED, S.PUBLISHING, S.READY, S.DELETED]
    for a, b in zip(path, path[1:], strict=False):
        check_transition(a, b)


def test_terminal_statuses_only_lead_to_deletion_or_themselves() -> None:
    for status in TERMINAL:
        assert TRANSITIONS[status] <= {status, S.DELETED}


def test_predecessors_of_ready() -> None:
    assert predecessors(S.READY) == {S.PUBLISHING, S.READY}
