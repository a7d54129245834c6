"""The explorer's shrinker (``tests/explorer/shrink.py``): ddmin over recorded steps, on synthetic predicates."""

from __future__ import annotations

from tests.explorer.shrink import ddmin, render


def _needs(*wanted: str) -> tuple[list[list[str]], object]:
    calls: list[list[str]] = []

    def fails(candidate: list[str]) -> bool:
        calls.append(candidate)
        it = iter(candidate)
        return all(w in it for w in wanted)  # the wanted steps, in this order

    return calls, fails


def test_ddmin_finds_the_two_steps_that_fail_together_in_order() -> None:
    steps = [f"s{i}" for i in range(60)]
    calls, fails = _needs("s7", "s41")
    assert ddmin(steps, fails) == ["s7", "s41"]  # type: ignore[arg-type]
    assert steps not in calls  # the full run, already seen failing, is not replayed
    assert len(calls) == len({tuple(c) for c in calls})  # no candidate replayed twice


def test_ddmin_keeps_the_order_and_every_step_a_failure_needs() -> None:
    steps = ["upload", "capture", "remap", "sweep", "note", "remap", "sign", "withdraw", "sweep"]
    _, fails = _needs("upload", "remap", "note", "withdraw")
    assert ddmin(steps, fails) == ["upload", "remap", "note", "withdraw"]  # type: ignore[arg-type]


def test_ddmin_within_its_budget_returns_a_failing_subsequence_perhaps_not_minimal() -> None:
    steps = [f"s{i}" for i in range(64)]
    calls, fails = _needs("s3", "s30", "s60")
    shrunk = ddmin(steps, fails, budget=9)  # type: ignore[arg-type]
    assert len(calls) <= 9
    assert fails(shrunk) and len(shrunk) < len(steps)  # type: ignore[operator]


def test_a_failure_that_needs_every_step_is_not_shrunk() -> None:
    steps = ["a", "b", "c"]
    _, fails = _needs("a", "b", "c")
    assert ddmin(steps, fails) == steps  # type: ignore[arg-type]


def test_shrunk_steps_render_as_a_list_literal_to_replay() -> None:
    steps = [("upload", 1), ("withdraw", 4294967295)]
    assert eval(render(steps)) == steps  # noqa: S307 - the literal we print is the one a test pastes
