"""Soak: the seeded explorer (``tests/explorer/world.py``) over many steps and seeds.

``python bench/soak.py`` runs 1,800 steps on each of 3 seeds (5,400 in all) over a scratch database
(``$VERBATIM_DATABASE_URL``'s server, or an embedded one) and ``$VERBATIM_REDIS_URL`` (or an embedded
Redis). ``--seeds 1 2 3 --steps 1800`` change that. Prints a line per seed and, last, one JSON object:
``{"steps", "seeds", "violations", "rules": {name: times fired}, "invariants": {name: times checked},
"findings": {name: count}, "seconds"}``. A violation is printed with its seed, step and the steps before
it; every one found
becomes a named regression test.
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

from bench.scratch_db import database  # noqa: E402
from tests.conftest import FAST  # noqa: E402
from tests.explorer.world import Violation, World, explore  # noqa: E402
from verbatim.config import load_settings  # noqa: E402
from verbatim.db.roles import runtime_url  # noqa: E402
from verbatim.embedded import EmbeddedRedis, free_port  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[11, 12, 13])
    parser.add_argument("--steps", type=int, default=1800, help="steps per seed")
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
        for seed in args.seeds:
            with database(scratch) as admin_url:
                data = scratch / f"data-{seed}"
                data.mkdir()
                settings = load_settings(**{**FAST, "database_url": runtime_url(admin_url), "redis_url": redis_url,
                                            "recognizer_url": "http://vendor.invalid/v2", "recognizer_api_key": "k",
                                            "data_dir": data, "log_json": True})
                try:
                    report = explore(lambda s, st=settings, u=admin_url: World(st, u, s), [seed], args.steps)
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
    print("seconds per rule: " + ", ".join(f"{k} {v:.0f}" for k, v in seconds.most_common()), flush=True)
    print(json.dumps({"steps": steps, "seeds": len(args.seeds), "violations": violations, "rules": dict(rules),
                      "invariants": dict(invariants), "findings": dict(findings),
                      "seconds": round(time.monotonic() - started, 1)}))


if __name__ == "__main__":
    main()
