"""POST /v1/recognizer/callbacks/{submission}: the recognizer's notification, outside bearer auth.

A real API under uvicorn, the real local recognizer POSTing its notification, real PostgreSQL
and Redis. Every 4xx (unknown submission, no or wrong secret, another job, a replay) changes nothing.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import httpx
from sqlalchemy import text

from tests.api.conftest import LiveServer
from tests.conftest import SAMPLES, AsrServer
from tests.factories import new_session
from verbatim import keys
from verbatim.db.engine import db_session
from verbatim.durable.core import Outcome
from verbatim.pipeline.run import run_capture
from verbatim.recognizer.client import CALLBACK_SECRET_HEADER
from verbatim.runtime import build_context

CLIP = SAMPLES / "nada_lily_02_haggard_0216.wav"
PARKING = {"recognizer_park_after_s": 0.0, "recognizer_park_s": 3600.0}  # only a notification brings it back


def snapshot(url: str, sid: uuid.UUID) -> tuple[object, ...]:
    with db_session(url) as db:
        run = db.execute(text("SELECT runs, fence, due_at, parked_at, poked FROM durable_runs WHERE subject_id = :s"),
                         {"s": sid}).one()
        subs = db.execute(text("SELECT id, notified_at FROM vendor_submissions WHERE session_id = :s ORDER BY id"),
                          {"s": sid}).all()
    return tuple(run), tuple(tuple(s) for s in subs)


def parked_session(server: LiveServer, asr: AsrServer) -> tuple[uuid.UUID, str, str, str]:
    """A session parked with a notification asked for: (session, submission path, secret, job id)."""
    ctx = build_context(server.settings)
    sid = new_session(server.settings, CLIP)
    assert run_capture(ctx, sid) is Outcome.PARKED
    ctx.recognizer.close()
    config = asr.last_config()["notification_config"][0]
    name, _, secret = config["auth_headers"][0].partition(": ")
    assert name == CALLBACK_SECRET_HEADER
    path = config["url"].removeprefix(server.url)
    with db_session(server.settings.database_url or "") as db:
        job = db.execute(text("SELECT vendor_job_id FROM sessions WHERE id = :s"), {"s": sid}).scalar_one()
    return sid, path, secret, job


def test_bad_notifications_change_nothing(live: Callable[..., LiveServer], asr: AsrServer) -> None:
    asr.fault("hold")  # the job never finishes: no real notification interferes
    server = live(**PARKING)
    # The capture run's settings name this server as the callback (its port is known only now).
    server.settings = server.settings.model_copy(update={"callback_base_url": server.url})
    sid, path, secret, job = parked_session(server, asr)
    assert path.startswith("/v1/recognizer/callbacks/")
    url = server.settings.database_url or ""
    before = snapshot(url, sid)
    with httpx.Client(base_url=server.url, timeout=10) as client:
        cases = [
            (client.post(path, params={"id": job, "status": "success"}), 401),  # no secret
            (client.post(path, params={"id": job}, headers={CALLBACK_SECRET_HEADER: secret + "x"}), 403),
            (client.post(path, params={"id": "another", "status": "success"},
                         headers={CALLBACK_SECRET_HEADER: secret}), 403),
            (client.post(f"/v1/recognizer/callbacks/{uuid.uuid4()}", headers={CALLBACK_SECRET_HEADER: secret}), 404),
            (client.post("/v1/recognizer/callbacks/not-a-submission", headers={CALLBACK_SECRET_HEADER: secret}), 404),
            (client.post(path, headers={CALLBACK_SECRET_HEADER: secret}, content=b"x" * (64 * 1024)), 413),
        ]
        for response, status in cases:
            assert response.status_code == status, response.text
            assert snapshot(url, sid) == before
        # A bearer token is not needed (nor would one do): the secret is the proof.
        ok = client.post(path, params={"id": job, "status": "success"}, headers={CALLBACK_SECRET_HEADER: secret})
        assert ok.status_code == 202, ok.text
        after = snapshot(url, sid)
        assert after != before
        replay = client.post(path, params={"id": job, "status": "success"}, headers={CALLBACK_SECRET_HEADER: secret})
        assert replay.status_code == 409
        assert snapshot(url, sid) == after
    with db_session(url) as db:
        due_now = db.execute(text("SELECT due_at <= now() FROM durable_runs WHERE subject_id = :s"),
                             {"s": sid}).scalar_one()
    assert due_now  # the parked session is due at once (not in an hour)


def test_the_recognizers_notification_brings_a_parked_session_back(live: Callable[..., LiveServer],
                                                                  asr: AsrServer) -> None:
    server = live(**PARKING)
    server.settings = server.settings.model_copy(update={"callback_base_url": server.url})
    queue_before = server_queue_len(server)
    sid, _, _, _ = parked_session(server, asr)
    # The local recognizer finishes the job and POSTs the notification to the live API.
    deadline = time.monotonic() + 60
    while server_queue_len(server) <= queue_before:
        assert time.monotonic() < deadline, "no notification arrived"
        time.sleep(0.1)
    with db_session(server.settings.database_url or "") as db:
        notified = db.execute(text("SELECT count(*) FROM vendor_submissions WHERE session_id = :s "
                                   "AND notified_at IS NOT NULL"), {"s": sid}).scalar_one()
    assert notified == 1
    ctx = build_context(server.settings)
    assert run_capture(ctx, sid) is Outcome.READY
    ctx.recognizer.close()


def server_queue_len(server: LiveServer) -> int:
    import redis

    client = redis.Redis.from_url(server.settings.redis_url or "")
    try:
        return int(client.llen(keys.CAPTURE_QUEUE))
    finally:
        client.close()
