"""Benchmark: a rolling restart of 2 workers under 20 sessions (prints figures, asserts nothing).

Runs the same 20 sessions twice on one local stack — undisturbed, then with both workers
SIGTERMed one at a time (2 s drain) — and prints sessions lost, extra runs caused by the
restart, and the time it added to the slowest session. Last line: one JSON object.
"""

from __future__ import annotations

import json

from verbatim.drill import run_drill


def main() -> None:
    baseline, drilled = run_drill(20, drain_s=2.0)
    print(f"undisturbed:     {baseline.sessions} sessions, lost {baseline.sessions_lost}, "
          f"extra runs {baseline.extra_runs}, slowest {baseline.slowest_s:.1f} s")
    print(f"rolling restart: {drilled.sessions} sessions, lost {drilled.sessions_lost}, "
          f"extra runs {drilled.extra_runs}, slowest {drilled.slowest_s:.1f} s, drains {drilled.drains_s}")
    added = drilled.slowest_s - baseline.slowest_s
    print(f"ratio slowest restart/undisturbed: {drilled.slowest_s / baseline.slowest_s:.2f}")
    print(json.dumps({"sessions": drilled.sessions, "sessions_lost": drilled.sessions_lost,
                      "extra_runs": drilled.extra_runs - baseline.extra_runs, "slowest_added_s": round(added, 2)}))


if __name__ == "__main__":
    main()
