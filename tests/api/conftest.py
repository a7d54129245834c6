"""API tests: the real app (in-process ASGI, or uvicorn in a thread) over real PostgreSQL and Redis."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
import uvicorn
from fastapi.testclient import TestClient

from tests.conftest import AsrServer, make_settings
from tests.factories import token_for
from verbatim import keys
from verbatim.api.app import create_app
from verbatim.api.serve import server_options
from verbatim.config import Settings
from verbatim.embedded import free_port
from verbatim.sealed import is_sealed, load_ring, read_sealed

TUS = {"tus-resumable": "1.0.0"}


class Api:
    """A TestClient plus helpers to inspect what an upload left behind."""

    def __init__(self, client: Any, settings: Settings):
        # A TestClient (in-process) or an httpx.Client on a live server: the same interface,
        # but TestClient derives from httpx2.Client, not httpx.Client.
        self.client: httpx.Client = client
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
        """Every file under audio/, incoming/ and tus/ (finished, in-flight and resumable uploads)."""
        found = []
        for folder in (self.settings.audio_dir, self.settings.incoming_dir, self.settings.tus_dir):
            if folder.exists():
                found += [p for p in folder.iterdir() if p.is_file()]
        return found

    def plain(self, path: Path) -> bytes:
        """The plain text of a sealed file on the volume (asserting it is sealed: never clear on disk)."""
        assert is_sealed(path), f"{path} is on disk in clear"
        return read_sealed(path, load_ring(self.settings))

    def tus_files(self) -> list[Path]:
        return [p for p in self.files_on_volume() if p.parent == self.settings.tus_dir]

    # --- tus ------------------------------------------------------------------------------
    def tus_create(self, token: str, length: int, *, headers: dict[str, str] | None = None) -> httpx.Response:
        return self.client.post("/v1/uploads", headers=self.headers(token, **TUS, **{"upload-length": str(length)},
                                                                    **(headers or {})))

    def tus_patch(self, token: str, upload_id: str, offset: int, data: Any, *,
                  headers: dict[str, str] | None = None) -> httpx.Response:
        h = {**TUS, "upload-offset": str(offset), "content-type": "application/offset+octet-stream",
             **(headers or {})}
        return self.client.patch(f"/v1/uploads/{upload_id}", content=data, headers=self.headers(token, **h))

    def tus_head(self, token: str, upload_id: str) -> httpx.Response:
        return self.client.head(f"/v1/uploads/{upload_id}", headers=self.headers(token, **TUS))

    def tus_upload(self, token: str, audio: bytes | Path, *, complete: bool = True) -> str:
        """Create a tus upload and send all of ``audio`` (or only its first half); returns the upload id."""
        body = audio.read_bytes() if isinstance(audio, Path) else audio
        created = self.tus_create(token, len(body))
        assert created.status_code == 201, created.text
        upload_id: str = created.json()["upload_id"]
        part = body if complete else body[: len(body) // 2]
        if part:
            r = self.tus_patch(token, upload_id, 0, part)
            assert r.status_code == 204, r.text
        return upload_id

    def finalize(self, token: str, upload_id: str, metadata: Any = None, *,
                 headers: dict[str, str] | None = None) -> httpx.Response:
        """POST /v1/sessions with the JSON body that turns a complete tus upload into a session."""
        meta = metadata if metadata is not None else good_metadata()
        return self.client.post("/v1/sessions", json={"upload_id": upload_id, "metadata": meta},
                                headers=self.headers(token, **(headers or {})))

    def enqueued(self) -> int:
        """Capture messages waiting in the broker queue."""
        return int(self.redis.llen(keys.CAPTURE_QUEUE))  # type: ignore[arg-type]


# One recording time per test process: a retry repeats its request's metadata exactly.
RECORDED = (datetime.now(UTC) - timedelta(hours=1)).replace(microsecond=0).isoformat()


def good_metadata(**overrides: Any) -> dict[str, Any]:
    now = RECORDED
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
def api_with(database_url: str, redis_url: str, asr: AsrServer, data_dir: Path) -> Iterator[Callable[..., Api]]:
    """Factory: an Api whose settings override the defaults, e.g. ``api_with(max_upload_bytes=1024)``."""
    clients: list[TestClient] = []

    def make(**overrides: object) -> Api:
        s = make_settings(database_url, redis_url, asr, data_dir, **overrides)
        client = TestClient(create_app(s), raise_server_exceptions=False)
        client.__enter__()
        clients.append(client)
        return Api(client, s)

    yield make
    for client in clients:
        client.__exit__(None, None, None)


class LiveServer:
    """The API under a real uvicorn server in a thread (for raw sockets: early answers, cuts)."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=self.port,
                                                    log_level="warning", lifespan="on", **server_options(settings)))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "uvicorn did not start"
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(15)


@pytest.fixture
def live(database_url: str, redis_url: str, asr: AsrServer, data_dir: Path) -> Iterator[Callable[..., LiveServer]]:
    """Factory: start the API under uvicorn with optional settings overrides; stopped after the test."""
    servers: list[LiveServer] = []

    def start(**overrides: object) -> LiveServer:
        server = LiveServer(make_settings(database_url, redis_url, asr, data_dir, **overrides))
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def alice(settings: Settings) -> str:
    return token_for(settings, "Alice", "North Clinic")


@pytest.fixture
def bob(settings: Settings) -> str:
    return token_for(settings, "Bob", "South Clinic")
