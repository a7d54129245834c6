"""Send every hostile input of ``tests/security/hostile_inputs.yaml`` to a real API process; prints figures.

Run from the repository root: ``.venv/bin/python bench/security.py``.

What it does:
1. starts ``verbatim api`` as a subprocess in production mode, connected as the runtime role
   (PostgreSQL from ``VERBATIM_DATABASE_URL`` in a scratch database, else an embedded server;
   always a private embedded Redis), and prepares the tokens, sessions and uploads the table
   refers to (``tests/security/hostile.py``);
2. sends every row once and counts those answered with the expected status and nothing stored
   (no patient-data row changed, no file under the data directory, nothing enqueued). The table
   holds security issue 11's findings 1–14 and issue 24's items 1–7 as findings 15–21: NUL, control
   and format characters in every free-text field of the API and the pages, reasons without words,
   a forwarded sign-in link over a live page session, guessing (tokens, sign-ins, link codes: 429),
   the local recognizer's docs in production (served in-process), a forged X-Forwarded-For, and the
   OpenAPI document (the API in development mode, in-process);
3. measures the two attacks the issue names, sampling the RSS of the API process and all its
   children together (psutil) every 5 ms:
   - an unauthenticated ``PUT /v1/sessions/{id}/speakers`` announcing a 150 MiB JSON body:
     milliseconds from the request's head sent to the status line received (the body is never
     sent), and RSS growth (peak minus the RSS just before);
   - a 5 h WebM decode bomb (2-byte silent Opus packets, no Duration, about 1.4 MB) uploaded
     by a therapist: milliseconds for the whole request, and RSS growth.
   Baselines in the same process: ``GET /healthz`` on a fresh connection (for the 150 MiB
   refusal) and the upload of an 11 s recording, ``samples/jfk.wav`` (for the bomb).

The last line is one JSON object: ``{"hostile_inputs", "correct_4xx_nothing_stored",
"unauth_150mib_ms", "unauth_150mib_rss_growth_mib", "decode_bomb_5h_ms",
"decode_bomb_rss_growth_mib"}``. Aims (the issue): all correct; the 150 MiB body refused in
< 100 ms with < 8 MiB growth; the bomb refused in < 2 s with < 100 MiB growth.
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the table and its runner live beside the tests

from scratch_db import database  # noqa: E402 - bench/ is on sys.path: the script's own folder

from tests.security.hostile import (  # noqa: E402
    ApiProcess,
    Context,
    good_metadata,
    load_rows,
    prepare,
    run_row,
    send_head,
    send_raw,
)
from verbatim.db.roles import runtime_url  # noqa: E402
from verbatim.embedded import EmbeddedRedis, free_port  # noqa: E402

MIB = 1024 * 1024


class RssSampler:
    """Peak RSS (bytes) of a process and all its children together, sampled every ``period_s``."""

    def __init__(self, pid: int, period_s: float = 0.005):
        self.ps = psutil.Process(pid)
        self.period_s = period_s
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def rss(self) -> int:
        total = 0
        for proc in [self.ps, *self.ps.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                total += int(proc.memory_info().rss)
        return total

    def measure(self, action: Callable[[], Any]) -> tuple[Any, float]:
        """Run ``action``; (its result, MiB of growth: peak during it minus the RSS just before)."""
        baseline = self.rss()
        self.peak = baseline
        result = action()
        time.sleep(0.05)  # one more sample after the answer (a late allocation still counts)
        return result, (max(self.peak, self.rss()) - baseline) / MIB

    def _sample(self) -> None:
        while not self._stop.wait(self.period_s):
            with contextlib.suppress(psutil.Error):
                self.peak = max(self.peak, self.rss())

    def stop(self) -> None:
        self._stop.set()


def unauth_150mib(ctx: Context) -> tuple[int | str, float]:
    row = {"method": "PUT", "path": "/v1/sessions/{alice_session}/speakers", "as": "none",
           "headers": {"Content-Type": "application/json"}}
    answer = send_head(ctx, row, 150 * MIB)
    return answer.status, answer.ms


def bomb_upload(ctx: Context) -> tuple[int, float]:
    bomb = ctx.audio("opus_bomb_5h")
    started = time.monotonic()
    r = ctx.client.post("/v1/sessions", headers=ctx.auth("alice"), files={"audio": ("bomb.webm", bomb, "audio/webm")},
                        data={"metadata": json.dumps(good_metadata())})
    return r.status_code, (time.monotonic() - started) * 1000


def main() -> None:
    rows = load_rows()
    with tempfile.TemporaryDirectory(prefix="verbatim-bench-security-") as tmp:
        scratch = Path(tmp)
        scratch.chmod(0o755)  # an embedded PostgreSQL may run as another user
        redis_server = EmbeddedRedis(scratch / "redis", free_port())
        redis_server.start()
        try:
            with database(scratch) as db_url:
                data_dir = scratch / "data"
                data_dir.mkdir()
                api = ApiProcess(runtime_url(db_url), redis_server.url, data_dir)
                api.start()
                sampler = RssSampler(api.pid)
                try:
                    ctx = prepare(api, db_url, redis_server.url)
                    ctx.audio("opus_bomb_5h")  # built before anything is timed
                    report(ctx, rows, sampler)
                finally:
                    sampler.stop()
                    api.stop()
        finally:
            redis_server.stop()


def report(ctx: Context, rows: list[dict[str, Any]], sampler: RssSampler) -> None:
    # The two attacks first, on an API that has not yet seen them (its heap not grown by the table's
    # rows); each after its baseline in this process: a fresh connection's GET, an honest upload.
    healthz_ms = min(send_raw(ctx, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").ms
                     for _ in range(5))
    (status, unauth_ms), unauth_growth = sampler.measure(lambda: unauth_150mib(ctx))
    print(f"unauthenticated 150 MiB JSON body: {status} in {unauth_ms:.1f} ms (GET /healthz: {healthz_ms:.1f} ms, "
          f"×{unauth_ms / healthz_ms:.1f}); API RSS growth {unauth_growth:.1f} MiB")

    jfk = ctx.audio("jfk.wav")
    t = time.monotonic()
    r = ctx.client.post("/v1/sessions", headers=ctx.auth("alice"), files={"audio": ("s.wav", jfk, "audio/wav")},
                        data={"metadata": json.dumps(good_metadata(client_ids=["bench-baseline"]))})
    honest_ms = (time.monotonic() - t) * 1000
    assert r.status_code == 201, r.text
    (bomb_status, bomb_ms), bomb_growth = sampler.measure(lambda: bomb_upload(ctx))
    print(f"5 h WebM decode bomb ({len(ctx.audio('opus_bomb_5h')) / MIB:.2f} MiB): {bomb_status} in {bomb_ms:.0f} ms "
          f"(an 11 s WAV upload: {honest_ms:.0f} ms, ×{bomb_ms / honest_ms:.1f}); API + children RSS growth "
          f"{bomb_growth:.1f} MiB")
    started = time.monotonic()
    outcomes = [run_row(ctx, row) for row in rows]
    elapsed = time.monotonic() - started
    correct = [o for o in outcomes if o.ok]
    by_finding: dict[int, list[int]] = {}
    for o in outcomes:
        by_finding.setdefault(o.finding, [0, 0])[0] += 1
        by_finding[o.finding][1] += int(o.ok)
    print(f"hostile inputs: {len(outcomes)} sent in {elapsed:.1f} s; {len(correct)} answered as expected with "
          "nothing stored")
    for finding in sorted(by_finding):
        total, ok = by_finding[finding]
        print(f"  finding {finding:2d}: {ok}/{total}")
    for o in outcomes:
        if not o.ok:
            print(f"  WRONG {o.id} (finding {o.finding}): " + "; ".join(o.problems))

    print(json.dumps({
        "hostile_inputs": len(outcomes),
        "correct_4xx_nothing_stored": len(correct),
        "unauth_150mib_ms": round(unauth_ms, 1),
        "unauth_150mib_rss_growth_mib": round(unauth_growth, 1),
        "decode_bomb_5h_ms": round(bomb_ms),
        "decode_bomb_rss_growth_mib": round(bomb_growth, 1),
    }))


if __name__ == "__main__":
    main()
