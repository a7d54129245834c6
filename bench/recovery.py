"""Benchmark: time from SIGKILL of the worker holding a run mid-stage to that run running again.

The run is held mid-stage in its worker, holding its lease: the recognizer holds the job and the
run waits for it in the worker (``VERBATIM_RECOGNIZER_PARK_AFTER_S`` far beyond the bench) —
a parked run holds no worker, so killing one would measure nothing. Each kill is SIGKILL of the
worker named as the run's holder, then one of:

- ``restart``: the same slot restarts under the same name; it releases the runs counted in its
  name and queues them at once (seconds, not a lease TTL);
- ``replace``: a replacement under a new name; the run waits for its lease to expire and the sweep
  process's recheck at that expiry (at most lease TTL + a tick or two).

Production defaults (lease 60 s, heartbeat 15 s, sweep tick 2 s) and test timings (lease 4 s,
heartbeat 1 s, tick 0.5 s). Every wait has a deadline scaled to the lease (``--timeout-factor``)
that ends the bench with a message naming what never happened. Prints figures, asserts nothing.
Last line: one JSON object (``recovery_max_s``: the slowest production replacement; lease TTL +
10 s is the promise; ``restart_max_s``: the slowest production restart; ``kills_production`` and
``kills_test``: how many kills each timing set's figures rest on).

    python bench/recovery.py [--kills N] [--only test|production]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import time
import uuid
from typing import Any

import httpx
from waits import wait_exit, wait_until  # bench/ is on sys.path: the script's own folder

from verbatim.auth import create_token
from verbatim.client import ApiClient
from verbatim.demo import samples_dir
from verbatim.stack import Stack, ensure_servers, settings_for_stack

TEST_TIMINGS = {"VERBATIM_LEASE_TTL_S": "4", "VERBATIM_HEARTBEAT_S": "1", "VERBATIM_SWEEP_TICK_S": "0.5"}
#: the run waits for the held recognizer in its worker (holding the lease) instead of parking
HOLD_IN_WORKER = {"VERBATIM_RECOGNIZER_PARK_AFTER_S": "86400"}
MODES = ("restart", "replace")


def _holder(database_url: str, sid: str) -> str | None:
    from sqlalchemy import text

    from verbatim.db.engine import db_session

    with db_session(database_url) as db:
        return db.execute(text("SELECT holder FROM durable_runs WHERE kind = 'capture' AND subject_id = :s"),
                          {"s": uuid.UUID(sid)}).scalar_one_or_none()


def kill_once(stack: Stack, api: ApiClient, asr: str, database_url: str, mode: str, limit: float) -> float:
    """One session held mid-stage, its worker SIGKILLed and restarted or replaced: seconds until it runs again."""
    httpx.post(f"{asr}/hold", json={"hold": True}, timeout=10).raise_for_status()  # the run waits on the vendor
    sid = api.upload(samples_dir() / "jfk.wav", ["c"])["id"]
    worker = next(c for c in stack.children if c.name.startswith("worker"))
    # Mid-stage: submitted, waiting on the vendor in its worker, holding the lease.
    wait_until(lambda: api.session(sid)["status"] == "recognizing" and api.session(sid)["run_state"] == "running",
               limit, f"session {sid} running mid-stage in its worker")
    holder = _holder(database_url, sid)
    runs = api.session(sid)["runs"]
    name = (holder or "").split("@")[0]
    killed = time.monotonic()
    os.killpg(worker.proc.pid, signal.SIGKILL)
    wait_exit(worker.proc, limit, f"the killed worker {worker.name}")
    stack.children.remove(worker)
    new_name = name if mode == "restart" else f"bench-{uuid.uuid4().hex[:4]}"
    stack.spawn(worker.name, "worker", "--name", new_name)
    wait_until(lambda: api.session(sid)["runs"] > runs, limit,
               f"session {sid} to run again after its worker {holder} was killed ({mode})")
    took = time.monotonic() - killed
    print(f"  kill ({mode}: {name} → {new_name}) → running again: {took:.1f} s", flush=True)
    httpx.post(f"{asr}/hold", json={"hold": False}, timeout=10).raise_for_status()
    wait_until(lambda: api.session(sid)["status"] in ("ready", "failed"), limit, f"session {sid} to finish")
    return took


def measure(env: dict[str, str], kills: int, factor: float) -> dict[str, list[float]]:
    """Seconds from SIGKILL to the run's next start, ``kills`` per mode (restart, replace)."""
    saved = {k: os.environ.get(k) for k in {**env, **HOLD_IN_WORKER}}
    os.environ.update({**env, **HOLD_IN_WORKER})
    os.environ["VERBATIM_ASR_FAULTS"] = "true"
    settings = settings_for_stack(data_dir=samples_dir().parent / ".verbatim" / f"bench-{uuid.uuid4().hex[:6]}")
    servers = ensure_servers(settings)
    stack = Stack(settings, servers, settings.data_dir / "logs", workers=1, worker_names="bench")
    # Deadlines scaled to the work: the lease (a replacement waits for it), the sweep tick, a slow machine.
    limit = factor * (settings.lease_ttl_s + 10 * settings.sweep_tick_s + 30)
    times: dict[str, list[float]] = {m: [] for m in MODES}
    try:
        stack.start()
        asr = f"http://127.0.0.1:{stack.asr_port}/_faults"
        token = create_token(servers.database_url, therapist="Bench", clinic="Bench", expires_in_days=1)
        with ApiClient(stack.api_url, token) as api:
            for k in range(kills * len(MODES)):
                mode = MODES[k % len(MODES)]
                times[mode].append(kill_once(stack, api, asr, servers.database_url, mode, limit))
        return times
    finally:
        stack.stop()
        servers.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _summary(label: str, times: dict[str, list[float]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode, values in times.items():
        if values:
            print(f"  {label} {mode}: median {statistics.median(values):.1f} s, max {max(values):.1f} s "
                  f"({len(values)} kills)")
            out[f"{mode}_median_s"] = round(statistics.median(values), 1)
            out[f"{mode}_max_s"] = round(max(values), 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=2, help="kills per mode (restart, replace) per timing set")
    parser.add_argument("--only", choices=("test", "production"), help="one timing set only")
    parser.add_argument("--timeout-factor", type=float, default=3.0, help="scales every wait's deadline")
    args = parser.parse_args()
    result: dict[str, Any] = {}
    if args.only != "production":
        print("test timings (lease 4 s, heartbeat 1 s, sweep tick 0.5 s):")
        fast_times = measure(TEST_TIMINGS, args.kills, args.timeout_factor)
        fast = _summary("test timings", fast_times)
        result.update({f"test_{k}": v for k, v in fast.items()})
        result["kills_test"] = sum(len(v) for v in fast_times.values())
    if args.only != "test":
        print("production defaults (lease 60 s, heartbeat 15 s, sweep tick 2 s):")
        prod_times = measure({}, args.kills, args.timeout_factor)
        prod = _summary("production", prod_times)
        #: how many kills the production figures rest on (restart and replace together)
        result["kills_production"] = sum(len(v) for v in prod_times.values())
        result.update({"recovery_median_s": prod.get("replace_median_s"), "recovery_max_s": prod.get("replace_max_s"),
                       "restart_median_s": prod.get("restart_median_s"), "restart_max_s": prod.get("restart_max_s")})
        if prod.get("replace_median_s") and prod.get("restart_median_s"):
            ratio = prod["replace_median_s"] / max(prod["restart_median_s"], 0.1)
            print(f"restart under the same name vs replacement: {ratio:.1f}x faster; baseline (queue alone): "
                  "the broker's visibility timeout, 3600 s by Celery's default")
    result["kills_per_mode"] = args.kills
    print(json.dumps(result))


if __name__ == "__main__":
    main()
