"""API tests: the real app (in-process ASGI) over real PostgreSQL and Redis."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from fastapi.testclient import TestClient

from tests.factories import token_for
from verbatim import keys
from verbatim.api.app import create_app
from verbatim.config import Settings


class Api:
    """A TestClient plus helpers to inspect what an upload left behind."""

    def __init__(self, client: TestClient, settings: Settings):
        self.client = client
        self.settings = settings
        self.redis = redis.Redis.from_url(settings.redis_url or "")

    def headers(self, token: str, **extra: str) -> dict[str, str]:
        return {"authorization": f"Bearer {token}", **extra}

    def upload(self, token: str, audio: bytes | Path, metadata: Any = None, *, filename: str = "session.wav",
               headers: dict[str, str] | None = None) -> httpx.Response:
        body = audio.read_bytes() if isinstance(audio, Path) else audio
        meta = metadata if metadata is not None else good_metadata()
        data = {"metadata": meta if isinstance(meta, str) else json.dumps(meta)}
        return self.client.post("/v1/sessions", files={"audio": (filename, body, "audio/wav")}, data=data,
                                headers=self.headers(token, **(headers or {})))

    def files_on_volume(self) -> list[Path]:
        found = []
        for folder in (self.settings.audio_dir, self.settings.incoming_dir):
            if folder.exists():
                found += [p for p in folder.iterdir() if p.is_file()]
        return found

    def enqueued(self) -> int:
        """Capture messages waiting in the broker queue."""
        return int(self.redis.llen(keys.CAPTURE_QUEUE))  # type: ignore[arg-type]


def good_metadata(**overrides: Any) -> dict[str, Any]:
    now = datetime.now(UTC).isoformat()
    meta: dict[str, Any] = {
        "client_ids": ["client-a"],
        "recorded_at": now,
        "session_type": "individual",
        "consent": {"obtained": True, "method": "verbal", "obtained_at": now},
    }
    meta.update(overrides)
    return meta


@pytest.fixture
def api(settings: Settings) -> Iterator[Api]:
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        yield Api(client, settings)


@pytest.fixture
def alice(settings: Settings) -> str:
    return token_for(settings, "Alice", "North Clinic")


@pytest.fixture
def bob(settings: Settings) -> str:
    return token_for(settings, "Bob", "South Clinic")
