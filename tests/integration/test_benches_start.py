"""The seeding benches still run against today's schema and writers (at a size that takes seconds).

A bench is run by hand and rarely: when the record's writer changed its signature, two benches
broke unnoticed. Each runs here at a toy size, as a new process, on this test's own servers;
its last stdout line must be the JSON object its docstring promises.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CASES = {
    "page": (["--sessions", "3", "--words", "60", "--requests", "1"],
             {"sessions_page_ms", "transcript_page_ms", "sessions_page_kib", "transcript_page_kib"}),
    "analysis": (["--events", "10", "--turns", "3"], {"events_per_s", "p95_publish_to_done_s"}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bench_runs_and_ends_with_its_json(name: str, pg_server_url: str, redis_url: str, tmp_path: Path) -> None:
    args, keys = CASES[name]
    env = dict(os.environ, VERBATIM_DATABASE_URL=pg_server_url, VERBATIM_REDIS_URL=redis_url, TMPDIR=str(tmp_path))
    done = subprocess.run([sys.executable, str(ROOT / "bench" / f"{name}.py"), *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    last = json.loads(done.stdout.strip().splitlines()[-1])
    assert keys <= set(last), f"missing {keys - set(last)}"
    assert all(isinstance(last[k], (int, float)) for k in keys)
