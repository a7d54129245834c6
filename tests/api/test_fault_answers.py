"""Our own faults answer one way (issue 27 item 12): database unreachable → 503 with Retry-After,
a value the database refuses → 422, storage read-only / cross-device / full → JSON 503/507 with a
code; never a 500 with a traceback, never the refused value in the log.

The storage faults are real: a tmpfs mounted over the upload folders (full: a 64 KiB one;
read-only: remounted ``ro``; cross-device: the tus folder on a filesystem of its own, so the
finalize's rename fails with EXDEV). Without the right to mount (not root) those tests skip.
"""

from __future__ import annotations

import logging
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from tests.api.conftest import Api, good_metadata
from tests.conftest import SAMPLES, AsrServer, make_settings
from tests.factories import token_for
from verbatim.api.app import create_app
from verbatim.api.deps import ServicesDep
from verbatim.db.engine import db_session
from verbatim.embedded import free_port


def H(token: str) -> dict[str, str]:  # noqa: N802 - reads like a header
    return {"authorization": f"Bearer {token}"}


def sessions_stored(api: Api) -> int:
    with db_session(api.settings.database_url or "") as db:
        return int(db.execute(text("SELECT count(*) FROM sessions")).scalar_one())


# --- the database -----------------------------------------------------------------------------------
def test_an_unreachable_database_is_503_with_retry_after(redis_url: str, asr: AsrServer, data_dir: Path) -> None:
    dead = f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/gone"  # nothing listens there
    settings = make_settings(dead, redis_url, asr, data_dir)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        _assert_database_unavailable(Api(client, settings))


def _assert_database_unavailable(api: Api) -> None:
    token = "vbt_" + uuid.uuid4().hex
    # Through a route's dependency (no body) and through the gate that authenticates before a body.
    for method, path, body in [("GET", "/v1/sessions", None),
                               ("POST", f"/v1/sessions/{uuid.uuid4()}/break-glass", {"reason": "client in crisis"})]:
        r = api.client.request(method, path, headers=H(token), json=body)
        assert r.status_code == 503, (path, r.status_code, r.text[:300])
        assert r.headers["retry-after"].isdigit()
        assert r.json()["error"] == "database_unavailable"
        assert "Traceback" not in r.text and "psycopg" not in r.text


def test_a_value_the_database_refuses_is_422_and_never_logged(api: Api, alice: str,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    app = api.client.app  # type: ignore[attr-defined]

    # A route of the real app sending a NUL byte to the real database: what a free-text field did
    # before it refused control characters itself.
    @app.put("/v1/test-only/refused-value")
    def refused(svc: ServicesDep) -> None:
        with db_session(svc.repo.url) as db:
            db.execute(text("SELECT CAST(:v AS text)"), {"v": "I wake up again at four\x00 and start thinking"})

    caplog.set_level(logging.DEBUG)
    r = api.client.put("/v1/test-only/refused-value", headers=H(alice))
    assert r.status_code == 422, r.text
    assert r.json()["error"] == "value_refused"
    assert "wake up again" not in r.text
    assert "wake up again" not in caplog.text


# --- storage -----------------------------------------------------------------------------------------
@pytest.fixture
def tmpfs() -> Iterator[Callable[..., Path]]:
    """Mount a tmpfs over a folder (``size`` and ``ro`` as asked); unmounted after the test."""
    mounted: list[Path] = []

    def mount(folder: Path, size: str = "16m") -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(folder)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here (root needed): {done.stderr.strip()}")
        mounted.append(folder)
        return folder

    yield mount
    for folder in reversed(mounted):
        subprocess.run(["umount", "-l", str(folder)], check=False)


def _remount_read_only(folder: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)


def test_a_full_volume_is_507_with_a_code(api_with: Callable[..., Api], tmpfs: Callable[..., Path],
                                         data_dir: Path) -> None:
    # The free-space check looks at the data directory (plenty); the upload folder itself is tiny.
    tmpfs(data_dir / "incoming", size="64k")
    api = api_with()
    alice = token_for(api.settings, "Alice", "North Clinic")
    r = api.upload(alice, SAMPLES / "jfk.wav")
    assert r.status_code == 507, r.text[:300]
    assert r.json()["error"] == "insufficient_storage"
    assert sessions_stored(api) == 0 and api.enqueued() == 0


def test_a_read_only_volume_is_503_with_a_code_and_retry_after(api_with: Callable[..., Api],
                                                               tmpfs: Callable[..., Path], data_dir: Path) -> None:
    incoming = tmpfs(data_dir / "incoming")
    api = api_with()
    alice = token_for(api.settings, "Alice", "North Clinic")
    _remount_read_only(incoming)
    r = api.upload(alice, SAMPLES / "jfk.wav")
    assert r.status_code == 503, r.text[:300]
    assert r.json()["error"] == "storage_read_only"
    assert r.headers["retry-after"].isdigit()
    assert sessions_stored(api) == 0 and api.enqueued() == 0


def test_a_cross_device_rename_is_503_with_a_code(api_with: Callable[..., Api], tmpfs: Callable[..., Path],
                                                 data_dir: Path) -> None:
    tmpfs(data_dir / "tus")  # the resumable uploads on a filesystem of their own: the finalize's rename fails
    api = api_with()
    alice = token_for(api.settings, "Alice", "North Clinic")
    audio = (SAMPLES / "jfk.wav").read_bytes()
    r = api.client.post("/v1/uploads", headers={**H(alice), "tus-resumable": "1.0.0",
                                                "upload-length": str(len(audio))})
    assert r.status_code == 201, r.text
    upload_id = r.json()["upload_id"]
    r = api.client.patch(f"/v1/uploads/{upload_id}", content=audio, headers={
        **H(alice), "tus-resumable": "1.0.0", "upload-offset": "0", "content-type": "application/offset+octet-stream"})
    assert r.status_code == 204, r.text
    r = api.client.post("/v1/sessions", headers=H(alice), json={"upload_id": upload_id, "metadata": good_metadata()})
    assert r.status_code == 503, r.text[:300]
    assert r.json()["error"] == "storage_misconfigured"
    assert sessions_stored(api) == 0 and api.enqueued() == 0
