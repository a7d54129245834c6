"""Redis down at upload time: the session is still accepted, and the sweep queues it once Redis is back."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import redis
from fastapi.testclient import TestClient

from tests.api.conftest import Api
from tests.conftest import SAMPLES, AsrServer, make_settings
from tests.factories import token_for
from verbatim import keys
from verbatim.api.app import create_app
from verbatim.db.engine import db_session
from verbatim.db.models import Session
from verbatim.embedded import EmbeddedRedis
from verbatim.pipeline.sweeps import tick
from verbatim.runtime import build_context


def test_upload_with_redis_down_is_queued_by_the_sweep(
    database_url: str, private_redis: EmbeddedRedis, asr: AsrServer, data_dir: Path
) -> None:
    settings = make_settings(database_url, private_redis.url, asr, data_dir)
    token = token_for(settings, "Alice", "North Clinic")
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        api = Api(client, settings)
        private_redis.stop()
        started = time.monotonic()
        r = api.upload(token, SAMPLES / "jfk.wav")
        assert r.status_code == 201, r.text
        assert time.monotonic() - started < 10  # a dead broker costs a refused connect, not a hang
        sid = uuid.UUID(r.json()["id"])
        with db_session(database_url) as db:
            row = db.get(Session, sid)
            assert row is not None and row.status == "queued"
        assert [p.name for p in api.files_on_volume()] == [f"{sid}.audio"]

        private_redis.start()
        broker = redis.Redis.from_url(private_redis.url)
        assert broker.llen(keys.CAPTURE_QUEUE) == 0  # no message was sent

        # The failed send made the session due at once: the next tick of the sweep process sends it.
        report = tick(build_context(settings))
        assert report.requeued == [sid]
        assert broker.llen(keys.CAPTURE_QUEUE) == 1
        assert api.enqueued() == 1
        broker.close()
