"""Benchmark: server time and size of the clinicians' two busiest pages.

One therapist with 1 000 sessions in the database (the sessions page shows the newest 25, its
default page size) and a one-hour session whose transcript holds ~10 000 words (400 speaker
turns, with the recognizer's doubtful words as suggestions). Each page is asked for 20 times
in-process (the ASGI app through Starlette's TestClient: no network, so the time is the
server's: routing, page-session check, queries, audit row, rendering); the median is reported,
with the JSON API's answer for the same data (``/v1/sessions?limit=25``, ``…/transcript``) as
the baseline, in the same process.

Servers: ``VERBATIM_DATABASE_URL`` / ``VERBATIM_REDIS_URL`` when set (a scratch database is
created and dropped), embedded ones otherwise. Prints figures and asserts nothing; the last
line is one JSON object ``{"sessions_page_ms": …, "transcript_page_ms": …,
"sessions_page_kib": …, "transcript_page_kib": …}``.

    .venv/bin/python bench/page.py [--sessions 1000] [--words 10000] [--requests 20]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from scratch_db import database, redis_server  # bench/ is on sys.path: the script's own folder
from sqlalchemy import insert, select
from sqlalchemy.orm import Session as OrmSession

from verbatim.api.app import create_app
from verbatim.auth import create_token, token_id
from verbatim.config import load_settings
from verbatim.db.engine import db_session, engine
from verbatim.db.models import ApiToken, Session
from verbatim.db.repo import Repo
from verbatim.polish.split import speaker_roles
from verbatim.reliability.analysis import analyse
from verbatim.reliability.suggestions import create_suggestions
from verbatim.web.store import COOKIE, start

VOCABULARY = ("so", "how", "have", "you", "been", "sleeping", "i", "think", "work", "is", "the", "week", "really",
              "hard", "and", "then", "we", "talked", "about", "it", "maybe", "tomorrow", "night", "plan", "feel")


def long_turns(rng: random.Random, words: int) -> list[dict[str, Any]]:
    """Raw speaker turns of ~25 words, alternating S1/S2, 1 in 40 words doubtful, ``words`` in all."""
    turns, t, said = [], 0.0, 0
    while said < words:
        n = min(rng.randint(15, 35), words - said)
        ws = []
        for _ in range(n):
            doubtful = rng.random() < 0.025
            ws.append({"type": "word", "content": rng.choice(VOCABULARY), "start_s": t, "end_s": t + 0.3,
                       "confidence": 0.4 if doubtful else 0.97, "alternatives": ["night"] if doubtful else []})
            t += 0.36
        text = " ".join(w["content"] for w in ws)
        turns.append({"speaker": "S1" if len(turns) % 2 == 0 else "S2", "start_s": ws[0]["start_s"],
                      "end_s": ws[-1]["end_s"], "text": text, "words": ws})
        said += n
        t += 0.5
    return turns


def seed(database_url: str, sessions: int, words: int) -> tuple[str, uuid.UUID]:
    """(bearer token of the therapist, id of the long session)."""
    token = create_token(database_url, therapist="Bench Therapist", clinic="Bench Clinic")
    found = token_id(database_url, token)
    with db_session(database_url) as db:
        row = db.execute(insert(Session).values(
            therapist_id=db.scalar(_therapist_of(found)), clinic_id=db.scalar(_clinic_of(found)),
            status="ready", client_ids=["client-a"], recorded_at=datetime.now(UTC), session_type="individual",
            audio_sha256="0" * 64, audio_bytes=1, audio_duration_s=3600.0, audio_format="wav",
        ).returning(Session.therapist_id, Session.clinic_id)).one()
        now = datetime.now(UTC)
        db.execute(insert(Session), [dict(
            therapist_id=row.therapist_id, clinic_id=row.clinic_id, status="ready" if i % 7 else "failed",
            failure_code=None if i % 7 else "recognizer_unavailable", client_ids=[f"client-{i % 50}"],
            recorded_at=now - timedelta(hours=i), created_at=now - timedelta(hours=i), session_type="individual",
            audio_sha256="0" * 64, audio_bytes=1, audio_duration_s=3000.0, audio_format="wav",
        ) for i in range(sessions - 2)])
    raw = long_turns(random.Random(7), words)
    sid = uuid.uuid4()
    repo = Repo(database_url)
    with db_session(database_url) as db:
        db.add(Session(id=sid, therapist_id=row.therapist_id, clinic_id=row.clinic_id, status="publishing",
                       client_ids=["client-a"], recorded_at=datetime.now(UTC), session_type="individual",
                       audio_sha256="0" * 64, audio_bytes=1, audio_duration_s=3600.0, audio_format="wav",
                       raw_turns=raw))
        db.flush()
        repo.runs.count(db, sid, 60.0, 86400.0)
    shown = [{k: t[k] for k in ("speaker", "start_s", "end_s", "text")} for t in raw]
    roles = speaker_roles(shown, ["client-a"], "S1", None)
    repo.publish(sid, 1, 1, False, [{**t, "role": roles[t["speaker"]]} for t in shown])
    with OrmSession(engine(database_url)) as db, db.begin():
        create_suggestions(db, sid, analyse(raw, repo.get(sid).published_turns))
    return token, sid


def _therapist_of(tid: uuid.UUID) -> Any:
    return select(ApiToken.therapist_id).where(ApiToken.id == tid)


def _clinic_of(tid: uuid.UUID) -> Any:
    return select(ApiToken.clinic_id).where(ApiToken.id == tid)


def timed(client: TestClient, path: str, n: int, **kw: Any) -> tuple[float, int]:
    """(median ms, bytes) of ``n`` GETs of ``path`` (after one warm-up)."""
    first = client.get(path, **kw)
    assert first.status_code == 200, (path, first.status_code, first.text[:300])
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        answer = client.get(path, **kw)
        times.append((time.perf_counter() - t0) * 1000)
        assert answer.status_code == 200
    return statistics.median(times), len(first.content)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--words", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=20)
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="verbatim-bench-"))
    scratch.chmod(0o755)
    # database() migrates it and drops it after; the servers are the machine's, or embedded ones.
    with database(scratch) as database_url, redis_server(scratch) as redis_url:
        token, sid = seed(database_url, args.sessions, args.words)
        settings = load_settings(mode="development", database_url=database_url, redis_url=redis_url,
                                 data_dir=scratch)
        started = start(database_url, token_id(database_url, token))
        assert started is not None
        with TestClient(create_app(settings)) as client:
            client.cookies.set(COOKIE, started[0])
            bearer = {"authorization": f"Bearer {token}"}
            sessions_ms, sessions_b = timed(client, "/app/sessions", args.requests)
            transcript_ms, transcript_b = timed(client, f"/app/sessions/{sid}", args.requests)
            client.cookies.clear()
            api_list_ms, api_list_b = timed(client, "/v1/sessions?limit=25", args.requests, headers=bearer)
            api_tr_ms, api_tr_b = timed(client, f"/v1/sessions/{sid}/transcript", args.requests, headers=bearer)
        print(f"{args.sessions} sessions of one therapist, a transcript of {args.words} words; median of "
              f"{args.requests} requests, in-process")
        print(f"sessions page   {sessions_ms:7.1f} ms {sessions_b / 1024:7.1f} KiB   "
              f"(JSON list: {api_list_ms:6.1f} ms, "
              f"{api_list_b / 1024:.1f} KiB; ratio {sessions_ms / api_list_ms:.2f}x)")
        print(f"transcript page {transcript_ms:7.1f} ms {transcript_b / 1024:7.1f} KiB   (JSON transcript: "
              f"{api_tr_ms:6.1f} ms, {api_tr_b / 1024:.1f} KiB; ratio {transcript_ms / api_tr_ms:.2f}x)")
        result = {"sessions_page_ms": round(sessions_ms, 1), "transcript_page_ms": round(transcript_ms, 1),
                  "sessions_page_kib": round(sessions_b / 1024, 1),
                  "transcript_page_kib": round(transcript_b / 1024, 1)}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
