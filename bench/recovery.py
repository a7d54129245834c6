"""Benchmark: time from SIGKILL of the worker running a session to that session running again.

Production defaults (lease 60 s, heartbeat 15 s, sweep tick 2 s): 6 kills; test timings
(lease 4 s, heartbeat 1 s, tick 0.5 s): 3 kills. Every other kill comes right after the same
worker finished another session. The killed worker is replaced at once (as an orchestrator
would); the session runs again when its lease has expired and the sweep process, looking at
its due time at the lease's expiry, has re-queued it — never waiting for the broker's
visibility timeout (3 h here, 1 h by Celery's default). Prints figures, asserts nothing.
Last line: one JSON object (``recovery_max_s`` is the slowest production kill: at most
lease TTL + 10 s is the promise).
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import time
import uuid

import httpx

from verbatim.auth import create_token
from verbatim.client import ApiClient
from verbatim.demo import samples_dir
from verbatim.stack import Stack, ensure_servers, settings_for_stack

TEST_TIMINGS = {"VERBATIM_LEASE_TTL_S": "4", "VERBATIM_HEARTBEAT_S": "1", "VERBATIM_SWEEP_TICK_S": "0.5"}


def measure(env: dict[str, str], kills: int) -> list[float]:
    """Seconds from SIGKILL to the next run's start, for KILLS kills."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    os.environ["VERBATIM_ASR_FAULTS"] = "true"
    settings = settings_for_stack(data_dir=samples_dir().parent / ".verbatim" / f"bench-{uuid.uuid4().hex[:6]}")
    servers = ensure_servers(settings)
    stack = Stack(settings, servers, settings.data_dir / "logs", workers=1)
    times = []
    try:
        stack.start()
        asr = f"http://127.0.0.1:{stack.asr_port}/_faults"
        token = create_token(servers.database_url, therapist="Bench", clinic="Bench", expires_in_days=1)
        with ApiClient(stack.api_url, token) as api:
            for k in range(kills):
                if k % 2:
                    # The worker finishes another session first: the kill lands right after it.
                    httpx.post(f"{asr}/hold", json={"hold": False}).raise_for_status()
                    done = api.upload(samples_dir() / "jfk.wav", ["c"])["id"]
                    while api.session(done)["status"] not in ("ready", "failed"):
                        time.sleep(0.2)
                httpx.post(f"{asr}/hold", json={"hold": True}).raise_for_status()  # keep the run polling
                sid = api.upload(samples_dir() / "jfk.wav", ["c"])["id"]
                while api.session(sid)["status"] != "recognizing":
                    time.sleep(0.2)
                runs = api.session(sid)["runs"]
                worker = next(c for c in stack.children if c.name.startswith("worker"))
                killed = time.monotonic()
                os.killpg(worker.proc.pid, signal.SIGKILL)
                worker.proc.wait()
                stack.children.remove(worker)
                stack.spawn(worker.name, "worker", "--name", f"capture-{uuid.uuid4().hex[:4]}")
                while api.session(sid)["runs"] == runs:
                    time.sleep(0.2)
                times.append(time.monotonic() - killed)
                print(f"  kill → running again: {times[-1]:.1f} s", flush=True)
                api_http = httpx.Client(base_url=stack.api_url, headers={"authorization": f"Bearer {token}"})
                api_http.delete(f"/v1/sessions/{sid}")
        return times
    finally:
        stack.stop()
        servers.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def main() -> None:
    print("test timings (lease 4 s, heartbeat 1 s, sweep tick 0.5 s):")
    fast = measure(TEST_TIMINGS, 3)
    print("production defaults (lease 60 s, heartbeat 15 s, sweep tick 2 s):")
    prod = measure({}, 6)
    print(f"median recovery: production {statistics.median(prod):.1f} s, test timings {statistics.median(fast):.1f} s")
    print(f"slowest production recovery: {max(prod):.1f} s (lease TTL 60 s + 10 s = 70 s is the bound)")
    print("baseline (queue alone): the message waits for the broker's visibility timeout, 3600 s by "
          f"Celery's default → ratio {3600 / statistics.median(prod):.0f}x faster")
    print(json.dumps({"recovery_median_s": round(statistics.median(prod), 1), "recovery_max_s": round(max(prod), 1),
                      "kills_production": len(prod),
                      "recovery_test_timings_median_s": round(statistics.median(fast), 1),
                      "kills": len(prod) + len(fast)}))


if __name__ == "__main__":
    main()
