"""Benchmark: capacity no longer depends on how long the recognizer works (parking).

A local stack (API, 2 capture workers, the sweep process, the local recognizer in fixed-delay
mode: each job finishes ``--delay`` seconds after submission without CPU work, and POSTs its
notification to the API). Phases, all in this process:

1. parking on: ``--sessions`` one-second sessions uploaded at once over ``--therapists``
   therapists. Sampled every second: sessions parked (``durable_runs.parked_at``), RSS of every
   process. While at least half are parked and no worker has work, one worker gets SIGTERM: the
   time to its exit is ``drain_exit_s`` (its supervisor restarts it).
2. restart recovery: a session whose submit hangs in the recognizer (a worker mid-stage); that
   worker gets SIGKILL and is restarted at once under the same name: ``restart_recovery_s`` is
   the time until the session's next run is counted.
3. parking off (today's behaviour: a run polls in its worker until the job is done), on
   ``--polling-sessions`` sessions with ``--polling-delay``. Extrapolated to ``--sessions`` at
   ``--delay``: each worker holds one session for (delay + measured per-session overhead), so
   all_ready ≈ ceil(sessions / workers) × (delay + overhead).

Prints figures and ratios; asserts nothing. Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import signal
import time
import uuid
import wave
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psutil
from sqlalchemy import create_engine, text
from waits import wait_exit, wait_until  # bench/ is on sys.path: the script's own folder

from verbatim.auth import create_token
from verbatim.client import ApiClient
from verbatim.demo import samples_dir
from verbatim.stack import Stack, ensure_servers, settings_for_stack

WORKERS = 2


def one_second_wav(path: Path) -> Path:
    """A 1 s, 16 kHz mono tone with a little noise (a real recording's shape, not silence)."""
    import random

    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        frames = bytearray()
        for i in range(16000):
            v = int(8000 * math.sin(2 * math.pi * 220 * i / 16000) + random.uniform(-500, 500))  # noqa: S311
            frames += int.to_bytes(v & 0xFFFF, 2, "little")
        w.writeframes(bytes(frames))
    path.write_bytes(buf.getvalue())
    return path


class Run:
    """One stack with the given environment; helpers to read its state."""

    def __init__(self, env: dict[str, str], label: str):
        self.saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        os.environ["VERBATIM_ASR_FAULTS"] = "true"
        self.settings = settings_for_stack(
            data_dir=samples_dir().parent / ".verbatim" / f"bench-capacity-{label}-{uuid.uuid4().hex[:6]}")
        self.servers = ensure_servers(self.settings)
        self.stack = Stack(self.settings, self.servers, self.settings.data_dir / "logs", workers=WORKERS)
        os.environ["VERBATIM_CALLBACK_BASE_URL"] = self.stack.api_url
        self.saved.setdefault("VERBATIM_CALLBACK_BASE_URL", None)
        self.stack.start()
        self.db = create_engine(self.servers.database_url)
        self.asr = f"http://127.0.0.1:{self.stack.asr_port}"

    def close(self) -> None:
        self.stack.stop()
        self.db.dispose()
        self.servers.stop()
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def scalar(self, sql: str, **params: object) -> int:
        with self.db.connect() as conn:
            return int(conn.execute(text(sql), params).scalar_one())

    def parked(self) -> int:
        return self.scalar("SELECT count(*) FROM durable_runs WHERE kind = 'capture' AND parked_at IS NOT NULL")

    def finished(self) -> int:
        return self.scalar("SELECT count(*) FROM sessions WHERE status IN ('ready', 'failed')")

    def requests(self) -> dict[str, int]:
        return httpx.get(f"{self.asr}/_faults/requests", timeout=10).json()  # type: ignore[no-any-return]

    def rss(self) -> dict[str, float]:
        out = {}
        for child in self.stack.children:
            try:
                proc = psutil.Process(child.proc.pid)
                out[child.name] = sum(p.memory_info().rss for p in [proc, *proc.children(recursive=True)]) / 2**20
            except psutil.NoSuchProcess:
                continue
        return out

    def worker(self, name: str) -> object:
        return next(c for c in self.stack.children if c.name == name)

    def replace_worker(self, name: str, sig: int) -> float:
        """Signal a worker; return the seconds to its exit; start it again at once under the same name."""
        child = self.worker(name)
        start = time.monotonic()
        os.killpg(child.proc.pid, sig)  # type: ignore[attr-defined]
        wait_exit(child.proc, self.settings.shutdown_window_s + 30,  # type: ignore[attr-defined]
                  f"{name} after signal {sig}")
        took = time.monotonic() - start
        self.stack.children.remove(child)  # type: ignore[arg-type]
        self.stack.spawn(name, "worker", "--name", name.replace("worker", "capture"))
        return took


def upload_all(run: Run, audio: Path, n: int, therapists: int) -> list[str]:
    tokens = [create_token(run.servers.database_url, therapist=f"Bench {i}", clinic="Bench", expires_in_days=1)
              for i in range(therapists)]

    def one(i: int) -> str:
        with ApiClient(run.stack.api_url, tokens[i % therapists]) as api:
            return str(api.upload(audio, ["c"])["id"])

    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(one, range(n)))


def sample_until(run: Run, done: Callable[[], bool], peaks: dict[str, float], timeout_s: float,
                 during: Callable[[], None] | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            print(f"  timed out after {timeout_s:.0f} s", flush=True)
            return
        peaks["parked"] = max(peaks.get("parked", 0), run.parked())
        for name, mib in run.rss().items():
            peaks[f"rss:{name}"] = max(peaks.get(f"rss:{name}", 0.0), mib)
        if during:
            during()
        time.sleep(1.0)


def parking_phase(args: argparse.Namespace, audio: Path) -> dict[str, float]:
    run = Run({"VERBATIM_ASR_FIXED_DELAY_S": str(args.delay), "VERBATIM_RECOGNIZER_PARK_AFTER_S": "0",
               "VERBATIM_RECOGNIZER_PARK_S": str(max(5.0, args.delay / 4)), "VERBATIM_DRAIN_S": "600",
               "VERBATIM_SHUTDOWN_WINDOW_S": "660"}, "park")
    out: dict[str, float] = {}
    try:
        start = time.monotonic()
        before = run.requests()
        print(f"parking on: uploading {args.sessions} sessions over {args.therapists} therapists…", flush=True)
        ids = upload_all(run, audio, args.sessions, args.therapists)
        out["upload_s"] = time.monotonic() - start
        print(f"  uploaded in {out['upload_s']:.1f} s", flush=True)
        peaks: dict[str, float] = {}

        def drain_once() -> None:
            # Half the sessions parked and nothing waiting for a worker: SIGTERM one (a deploy).
            if "drain_exit_s" in out or run.parked() < args.sessions // 2:
                return
            if run.scalar("SELECT count(*) FROM sessions WHERE status = 'queued'") > 0:
                return
            out["drain_parked"] = run.parked()
            out["drain_exit_s"] = run.replace_worker("worker-1", signal.SIGTERM)
            print(f"  SIGTERM with {out['drain_parked']:.0f} parked → exit in {out['drain_exit_s']:.2f} s", flush=True)

        sample_until(run, lambda: run.finished() >= len(ids), peaks, args.delay + 1200, drain_once)
        out["all_ready_s"] = time.monotonic() - start
        after = run.requests()
        asked = sum(after.get(k, 0) - before.get(k, 0) for k in ("status", "list"))
        out["status_requests_per_s"] = asked / out["all_ready_s"]
        out["status_requests"] = float(asked)
        out["ready"] = float(run.scalar("SELECT count(*) FROM sessions WHERE status = 'ready'"))
        out["peak_parked"] = peaks.get("parked", 0)
        out["peak_rss_mib"] = max((v for k, v in peaks.items() if k.startswith("rss:")), default=0.0)
        for k, v in sorted(peaks.items()):
            if k.startswith("rss:"):
                print(f"  peak RSS {k[4:]}: {v:.0f} MiB")
        print(f"  all {len(ids)} finished in {out['all_ready_s']:.1f} s ({out['ready']:.0f} ready); peak parked "
              f"{out['peak_parked']:.0f}; recognizer status/list requests {asked} "
              f"({out['status_requests_per_s']:.2f}/s)", flush=True)

        # Restart recovery: a run mid-stage (its submit hangs in the recognizer), SIGKILL, restarted at once.
        httpx.post(f"{run.asr}/_faults/fail", json={"kind": "submit", "mode": "timeout", "count": 1,
                                                     "delay_s": 20}, timeout=10).raise_for_status()
        token = create_token(run.servers.database_url, therapist="Bench kill", clinic="Bench", expires_in_days=1)
        with ApiClient(run.stack.api_url, token) as api:
            sid = str(api.upload(audio, ["c"])["id"])
            deadline = time.monotonic() + 120
            while run.scalar("SELECT runs FROM durable_runs WHERE subject_id = :s", s=uuid.UUID(sid)) < 1:
                assert time.monotonic() < deadline, "the run never started"
                time.sleep(0.1)
            holder = run.scalar("SELECT count(*) FROM durable_runs WHERE subject_id = :s AND holder LIKE 'capture-1@%'",
                                s=uuid.UUID(sid))
            victim = "worker-1" if holder else "worker-2"
            killed = time.monotonic()
            run.replace_worker(victim, signal.SIGKILL)
            wait_until(
                lambda: run.scalar("SELECT runs FROM durable_runs WHERE subject_id = :s", s=uuid.UUID(sid)) >= 2,
                180, "the killed run to start again after its worker's restart", poll_s=0.1)
            out["restart_recovery_s"] = time.monotonic() - killed
            print(f"  SIGKILL mid-stage, restarted at once → running again in {out['restart_recovery_s']:.1f} s "
                  f"(lease TTL {run.settings.lease_ttl_s:.0f} s)", flush=True)
        return out
    finally:
        run.close()


def polling_phase(args: argparse.Namespace, audio: Path) -> dict[str, float]:
    run = Run({"VERBATIM_ASR_FIXED_DELAY_S": str(args.polling_delay), "VERBATIM_RECOGNIZER_PARK_AFTER_S": "1e9",
               "VERBATIM_DRAIN_S": "600", "VERBATIM_SHUTDOWN_WINDOW_S": "660"}, "poll")
    try:
        start = time.monotonic()
        print(f"parking off: {args.polling_sessions} sessions, delay {args.polling_delay} s…", flush=True)
        ids = upload_all(run, audio, args.polling_sessions, args.therapists)
        peaks: dict[str, float] = {}
        sample_until(run, lambda: run.finished() >= len(ids), peaks, 3600)
        took = time.monotonic() - start
        rounds = math.ceil(args.polling_sessions / WORKERS)
        overhead = max(0.0, took / rounds - args.polling_delay)
        extrapolated = math.ceil(args.sessions / WORKERS) * (args.delay + overhead)
        print(f"  {len(ids)} finished in {took:.1f} s: {rounds} rounds of one session per worker, "
              f"{overhead:.1f} s overhead per session; peak parked {peaks.get('parked', 0):.0f}", flush=True)
        print(f"  extrapolated to {args.sessions} sessions at {args.delay} s: "
              f"ceil({args.sessions}/{WORKERS}) × ({args.delay} + {overhead:.1f}) = {extrapolated:.0f} s", flush=True)
        return {"polling_all_ready_s": took, "polling_overhead_s": overhead, "extrapolated": extrapolated}
    finally:
        run.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sessions", type=int, default=500)
    p.add_argument("--delay", type=float, default=300.0, help="recognizer fixed delay (s), parking on")
    p.add_argument("--therapists", type=int, default=25)
    p.add_argument("--polling-sessions", type=int, default=20)
    p.add_argument("--polling-delay", type=float, default=30.0, help="fixed delay (s) of the parking-off run")
    args = p.parse_args()
    audio = Path(samples_dir().parent / ".verbatim" / "bench-1s.wav")
    audio.parent.mkdir(parents=True, exist_ok=True)
    one_second_wav(audio)
    park = parking_phase(args, audio)
    poll = polling_phase(args, audio)
    per_worker = park["peak_parked"] / WORKERS
    print(f"in flight per worker: {per_worker:.0f} with parking vs 1 without "
          f"(ratio {per_worker:.0f}x); all ready {park['all_ready_s']:.0f} s vs {poll['extrapolated']:.0f} s "
          f"extrapolated (ratio {poll['extrapolated'] / park['all_ready_s']:.1f}x)")
    print(json.dumps({
        "in_flight_per_worker": round(per_worker, 1),
        "all_ready_s": round(park["all_ready_s"], 1),
        "all_ready_s_polling_extrapolated": round(poll["extrapolated"], 1),
        "drain_exit_s": round(park.get("drain_exit_s", -1.0), 2),
        "restart_recovery_s": round(park["restart_recovery_s"], 1),
        "sessions": args.sessions, "delay_s": args.delay, "peak_rss_mib": round(park["peak_rss_mib"], 1),
        "status_requests_per_s": round(park["status_requests_per_s"], 3),
        "drain_parked": park.get("drain_parked", 0),
        "polling_sessions": args.polling_sessions, "polling_delay_s": args.polling_delay,
        "polling_all_ready_s": round(poll["polling_all_ready_s"], 1),
    }))


if __name__ == "__main__":
    main()
