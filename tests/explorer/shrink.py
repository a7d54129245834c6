"""Shrinking a failing run of the explorer: delta debugging (ddmin) over its recorded steps.

A step is ``(rule, seed)``: the rule's name and the seed of the random choices it makes inside
(which session, which crash point, which mapping). The explorer records every step it takes, so a
run that broke an invariant can be replayed — from a fresh world, with any subset of its steps —
and ``ddmin`` looks for a small subset that still breaks the same invariant.

Why our own ddmin rather than Hypothesis's ``RuleBasedStateMachine`` shrinker: every example the
shrinker tries needs a fresh world (a database cloned from a template, a flushed Redis, the API's
lifespan, proxies), a few seconds each, and a replay is not perfectly deterministic (outages are
timers, a run's lease and the sweep are real). Hypothesis would run the long soak itself as one
example per ``@given`` call and shrink by its own choice sequence, under its deadline and health
checks, with no way to bound the number of fresh worlds it builds; what we need is the step list
we already record and a budget in replays. Zeller's ddmin (Zeller & Hildebrandt, "Simplifying and
Isolating Failure-Inducing Input", 2002) is forty lines, tolerates a flaky predicate (the result
is then merely less than minimal), and its budget is ours.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
#: one recorded step of the explorer: (rule name, seed of the rule's own random choices)
Step = tuple[str, int]


def ddmin(items: Sequence[T], fails: Callable[[list[T]], bool], budget: int = 200) -> list[T]:
    """A 1-minimal failing subsequence of ``items`` (order kept), found with at most ``budget`` calls.

    ``fails(candidate)`` is True when the candidate still shows the failure; it is never called on
    ``items`` itself, which the caller has seen fail, nor twice on the same candidate. With the
    budget spent the smallest failing candidate seen so far is returned (perhaps not 1-minimal).
    """
    current = list(items)
    seen: dict[tuple[int, ...], bool] = {}
    calls = 0

    def test(idx: list[int]) -> bool:
        nonlocal calls
        key = tuple(idx)
        if key not in seen:
            if calls >= budget:
                return False
            calls += 1
            seen[key] = fails([current_items[i] for i in idx])
        return seen[key]

    current_items = current
    idx = list(range(len(current)))
    n = 2
    while len(idx) >= 2 and calls < budget:
        chunk = math.ceil(len(idx) / n)
        parts = [idx[i:i + chunk] for i in range(0, len(idx), chunk)]
        reduced = False
        for part in parts:  # a part alone still fails
            if len(part) < len(idx) and test(part):
                idx, n, reduced = part, 2, True
                break
        if not reduced:
            for part in parts:  # the rest without this part still fails
                rest = [i for i in idx if i not in set(part)]
                if rest and test(rest):
                    idx, n, reduced = rest, max(n - 1, 2), True
                    break
        if not reduced:
            if n >= len(idx):
                break
            n = min(len(idx), 2 * n)
    if len(idx) == 1 and calls < budget and test([]):
        idx = []
    return [current_items[i] for i in idx]


def render(steps: Sequence[Step]) -> str:
    """The steps as a Python list literal, to paste into a regression test (and its docstring)."""
    return "[" + ", ".join(f"({name!r}, {seed})" for name, seed in steps) + "]"
