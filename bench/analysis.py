"""Benchmark: analysis events through the pipeline (Redis Streams → 2 ``verbatim analysis-worker``
processes → offline analysis → suggestions committed in PostgreSQL).

Two phases over freshly published sessions (synthetic speaker turns with word confidences):

1. **burst** — every event published at once: events per second through the pipeline.
2. **paced** — events published at half the burst rate: the p95 time from publish
   (``timestamp_requested``) to analysis done (the worker's ``finished_at``), without a backlog.

Servers: ``VERBATIM_DATABASE_URL`` / ``VERBATIM_REDIS_URL`` when set (a scratch database is
created and dropped; streams get keys of their own), embedded ones otherwise. Prints figures
and asserts nothing; the last line is one JSON object
``{"events_per_s": …, "p95_publish_to_done_s": …}``.

    .venv/bin/python bench/analysis.py [--events 400] [--turns 40]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import redis
from scratch_db import database, redis_server  # bench/ is on sys.path: the script's own folder
from sqlalchemy import func, select

from verbatim.auth import ensure_therapist
from verbatim.db.engine import db_session
from verbatim.db.models import Session
from verbatim.db.repo import Repo
from verbatim.db.roles import runtime_url
from verbatim.polish.rules import RulePolisher, rule_therapist
from verbatim.polish.split import speaker_roles
from verbatim.reliability.models import ReliabilityAnalysis
from verbatim.reliability.settings import load_reliability_settings
from verbatim.reliability.streams import read_progress
from verbatim.reliability.sweep import emit_requested

CONSUMERS = 2
VOCABULARY = ("so", "how", "have", "you", "been", "sleeping", "um", "i", "think", "work", "is", "the", "week",
              "really", "hard", "and", "then", "we", "talked", "about", "it", "uh", "maybe", "tomorrow")


def synthetic_turns(rng: random.Random, n_turns: int) -> list[dict]:
    """Alternating speakers, 3-15 words a turn, a few short interjections and doubtful words."""
    turns, t = [], 0.0
    for i in range(n_turns):
        speaker = "S1" if i % 2 == 0 else "S2"
        words = []
        for _ in range(rng.choice((1, 2)) if rng.random() < 0.1 else rng.randint(3, 15)):
            confidence = rng.uniform(0.3, 0.6) if rng.random() < 0.05 else rng.uniform(0.8, 1.0)
            content = rng.choice(VOCABULARY)
            words.append({"type": "word", "content": content, "start_s": t, "end_s": t + 0.3,
                          "confidence": round(confidence, 3), "alternatives": [rng.choice(VOCABULARY)]})
            t += 0.35
        words.append({"type": "punctuation", "content": rng.choice(".?,"), "start_s": t, "end_s": t,
                      "confidence": 1.0, "alternatives": []})
        text = " ".join(w["content"] for w in words[:-1]) + words[-1]["content"]
        turns.append({"speaker": speaker, "start_s": words[0]["start_s"], "end_s": t, "text": text, "words": words})
        t += 0.4
    return turns


def publish_sessions(database_url: str, n: int, n_turns: int, seed: int) -> tuple[list[uuid.UUID], uuid.UUID]:
    """``n`` sessions published through Repo.publish (each records its analysis request)."""
    rng = random.Random(seed)
    therapist_id, clinic_id = ensure_therapist(database_url, "Bench Therapist", "Bench Clinic")
    repo, polisher, ids = Repo(database_url), RulePolisher(), []
    for _ in range(n):
        raw = synthetic_turns(rng, n_turns)
        sid = uuid.uuid4()
        with db_session(database_url) as db:
            db.add(Session(id=sid, therapist_id=therapist_id, clinic_id=clinic_id, status="publishing",
                           client_ids=["client-a"], recorded_at=datetime.now(UTC), session_type="individual",
                           audio_sha256="0" * 64, audio_bytes=1, audio_duration_s=raw[-1]["end_s"],
                           audio_format="wav", raw_turns=raw))
            db.flush()
            repo.runs.count(db, sid, 60.0, 86400.0)  # run 1, fence 1
        shown = polisher.readability([{k: t[k] for k in ("speaker", "start_s", "end_s", "text")} for t in raw])
        roles = speaker_roles(shown, ["client-a"], rule_therapist(shown), None)
        repo.publish(sid, 1, 1, True, [{**t, "role": roles[t["speaker"]]} for t in shown])
        ids.append(sid)
    return ids, therapist_id


def completed(database_url: str, ids: list[uuid.UUID]) -> int:
    with db_session(database_url) as db:
        return int(db.execute(select(func.count()).select_from(ReliabilityAnalysis).where(
            ReliabilityAnalysis.session_id.in_(ids), ReliabilityAnalysis.completed_at.is_not(None))).scalar_one())


def wait_done(database_url: str, ids: list[uuid.UUID], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while completed(database_url, ids) < len(ids):
        if time.monotonic() > deadline:
            raise SystemExit(f"only {completed(database_url, ids)}/{len(ids)} analysed within {timeout_s} s")
        time.sleep(0.05)


def latencies(client: redis.Redis, ids: list[uuid.UUID]) -> tuple[list[float], float, float]:
    """(publish→done seconds per event, first publish, last done) from the progress hashes."""
    out, first, last = [], float("inf"), 0.0
    for sid in ids:
        p = read_progress(client, sid)
        published, finished = float(p["timestamp_requested"]), float(p["finished_at"])
        out.append(finished - published)
        first, last = min(first, published), max(last, finished)
    return out, first, last


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=400, help="events in the burst (the paced phase uses half)")
    parser.add_argument("--turns", type=int, default=40, help="speaker turns per session")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="verbatim-bench-"))
    scratch.chmod(0o755)
    # database() migrates it and drops it after; the servers are the machine's, or embedded ones.
    with database(scratch) as database_url, redis_server(scratch) as redis_url:
        prefix = f"bench:{uuid.uuid4().hex[:8]}"
        rel_env = {"RELIABILITY_STREAM_KEY": f"{prefix}:events", "RELIABILITY_RETRY_STREAM_KEY": f"{prefix}:retry",
                   "RELIABILITY_DLQ_STREAM_KEY": f"{prefix}:dlq", "RELIABILITY_READ_BLOCK_MS": "500"}
        os.environ.update(rel_env)
        rsettings = load_reliability_settings()
        client = redis.Redis.from_url(redis_url)
        procs: list[subprocess.Popen[bytes]] = []
        ids: list[uuid.UUID] = []
        try:
            total = args.events + args.events // 2
            t0 = time.monotonic()
            ids, therapist_id = publish_sessions(database_url, total, args.turns, args.seed)
            where = "the machine's" if os.environ.get("VERBATIM_DATABASE_URL") else "embedded"
            print(f"published {total} sessions of {args.turns} turns in {time.monotonic() - t0:.1f} s "
                  f"(PostgreSQL {where})")
            env = dict(os.environ, VERBATIM_DATABASE_URL=runtime_url(database_url), VERBATIM_REDIS_URL=redis_url,
                       VERBATIM_LOG_JSON="true", VERBATIM_LOG_LEVEL="WARNING", VERBATIM_DATA_DIR=str(scratch))
            for i in range(CONSUMERS):
                log = open(scratch / f"worker-{i}.log", "ab")  # noqa: SIM115 - lives as long as the process
                procs.append(subprocess.Popen([sys.executable, "-m", "verbatim.cli", "analysis-worker", "--name",
                                               f"bench-{i}"], env=env, stdout=log, stderr=subprocess.STDOUT,
                                              start_new_session=True))
            # Warm-up: both consumers up and connected before the clock starts.
            warm = ids[:CONSUMERS * 2]
            for sid in warm:
                emit_requested(client, sid, therapist_id, settings=rsettings)
            wait_done(database_url, warm, 60)
            burst, paced = ids[len(warm):args.events], ids[args.events:]

            for sid in burst:
                emit_requested(client, sid, therapist_id, settings=rsettings)
            wait_done(database_url, burst, 600)
            burst_lat, first, last = latencies(client, burst)
            events_per_s = len(burst) / (last - first)
            print(f"burst: {len(burst)} events in {last - first:.2f} s → {events_per_s:.1f} events/s "
                  f"({CONSUMERS} consumers, concurrency {rsettings.concurrency} each); "
                  f"p95 publish→done {p95(burst_lat):.3f} s (includes the backlog)")

            interval = 2 / events_per_s
            for sid in paced:
                emit_requested(client, sid, therapist_id, settings=rsettings)
                time.sleep(interval)
            wait_done(database_url, paced, 600)
            paced_lat, _, _ = latencies(client, paced)
            print(f"paced: {len(paced)} events at {1 / interval:.1f}/s → publish→done p50 "
                  f"{statistics.median(paced_lat):.3f} s, p95 {p95(paced_lat):.3f} s, max {max(paced_lat):.3f} s")
            result = {"events_per_s": round(events_per_s, 2), "p95_publish_to_done_s": round(p95(paced_lat), 4)}
        finally:
            for p in procs:
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGTERM)
            for p in procs:
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
            for key in client.scan_iter(f"{prefix}:*"):
                client.delete(key)
            if ids:
                client.delete(*[f"reliability_progress:{sid}" for sid in ids])
            client.close()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
