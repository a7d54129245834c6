"""Soak: the seeded explorer (``tests/explorer/world.py``) over many steps and seeds.

``python bench/soak.py`` runs 1,700 steps on each of 3 seeds (5,100 in all), each seed in a world of
its own: a database cloned from a migrated scratch template (on ``$VERBATIM_DATABASE_URL``'s server, or
an embedded one) and Redis db 14 of ``$VERBATIM_REDIS_URL`` (or an embedded Redis). ``--seeds 1 2 3
--steps 1700`` change that. Prints a line per seed and, last, one JSON object: ``{"steps", "seeds",
"violations", "rules": {name: times fired}, "invariants": {name: times checked}, "findings": {name:
count}, "seconds"}``. A violation is printed with its seed, step, the steps before it and the run's
steps shrunk (ddmin, each candidate replayed in a fresh world; at most ``--shrink-s`` seconds); every
one found becomes a named regression test (``tests/explorer/test_regressions.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    # Imported here, not at the top: every upload's probe child (multiprocessing's forkserver) runs
    # this script again as ``__mp_main__``, and the application's imports there cost ~4 CPU-s per upload.
    from bench.scratch_db import database
    from tests.explorer.fresh import FreshWorlds
    from tests.explorer.world import Violation, explore
    from verbatim.embedded import EmbeddedRedis, free_port

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[11, 12, 13])
    parser.add_argument("--steps", type=int, default=1700, help="steps per seed")
    parser.add_argument("--shrink-s", type=float, default=300.0, help="longest a violation's shrinking may take")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="verbatim-soak-"))
    scratch.chmod(0o755)
    redis_server = None
    redis_url = os.environ.get("VERBATIM_REDIS_URL")
    if not redis_url:
        redis_server = EmbeddedRedis(scratch / "redis", free_port())
        redis_server.start()
        redis_url = redis_server.url
    redis_url = redis_url.rsplit("/", 1)[0] + "/14"
    rules: Counter[str] = Counter()
    invariants: Counter[str] = Counter()
    seconds: Counter[str] = Counter()
    findings: Counter[str] = Counter()
    steps = violations = 0
    started = time.monotonic()
    try:
        with database(scratch) as template_url:
            fresh = FreshWorlds(template_url, redis_url, scratch)
            for seed in args.seeds:
                try:
                    report = explore(fresh, [seed], args.steps, fresh=fresh, shrink_s=args.shrink_s)
                except Violation as exc:
                    violations += 1
                    print(f"seed {seed}: VIOLATION {exc}", flush=True)
                    continue
                steps += report.steps
                rules.update(report.rules)
                invariants.update(report.invariants)
                seconds.update(report.seconds)
                findings.update(report.findings)
                print(f"seed {seed}: {report.steps} steps, no violation "
                      f"({time.monotonic() - started:.0f} s so far)", flush=True)
    finally:
        if redis_server is not None:
            redis_server.stop()
    print("seconds per rule: " + ", ".join(f"{k} {v / 1000:.0f}" for k, v in seconds.most_common()), flush=True)
    print(json.dumps({"steps": steps, "seeds": len(args.seeds), "violations": violations, "rules": dict(rules),
                      "invariants": dict(invariants), "findings": dict(findings),
                      "seconds": round(time.monotonic() - started, 1)}))


if __name__ == "__main__":
    main()
