"""Disk exhaustion: per-therapist limits on open uploads and a free-space check (security issue, item 7)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable

import httpx

from tests.api.conftest import Api, LiveServer, good_metadata
from tests.conftest import SAMPLES
from tests.factories import token_for

JFK = SAMPLES / "jfk.wav"


def test_open_uploads_are_limited_per_therapist_by_count(api_with: Callable[..., Api]) -> None:
    api = api_with(max_open_uploads=2)
    alice = token_for(api.settings, "Alice", "North Clinic")
    bob = token_for(api.settings, "Bob", "North Clinic")
    assert [api.tus_create(alice, 10).status_code for _ in range(2)] == [201, 201]
    refused = api.tus_create(alice, 10)
    assert (refused.status_code, refused.json()["error"]) == (429, "too_many_open_uploads")
    assert len([p for p in api.tus_files() if p.suffix == ".json"]) == 2  # nothing written for the refusal
    assert api.tus_create(bob, 10).status_code == 201  # another therapist's quota is their own


def test_open_uploads_are_limited_by_declared_bytes(api_with: Callable[..., Api]) -> None:
    api = api_with(max_open_upload_bytes=100)
    alice = token_for(api.settings, "Alice", "North Clinic")
    assert api.tus_create(alice, 60).status_code == 201
    refused = api.tus_create(alice, 60)
    assert (refused.status_code, refused.json()["error"]) == (413, "open_uploads_too_large")


def test_a_volume_without_room_answers_507_and_stores_nothing(api_with: Callable[..., Api]) -> None:
    api = api_with(min_free_bytes=10**18)
    alice = token_for(api.settings, "Alice", "North Clinic")
    created = api.tus_create(alice, 10)
    assert (created.status_code, created.json()["error"]) == (507, "insufficient_storage")
    uploaded = api.upload(alice, JFK)
    assert (uploaded.status_code, uploaded.json()["error"]) == (507, "insufficient_storage")
    assert api.files_on_volume() == [] and api.tus_files() == [] and api.enqueued() == 0


def _stalled_upload(server: LiveServer, token: str) -> socket.socket:
    """A multipart upload that announced 100 MB, sent its first bytes and went quiet (still open)."""
    sock = socket.create_connection(("127.0.0.1", server.port))
    sock.sendall(f"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                 "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000000\r\n\r\n"
                 '--b\r\nContent-Disposition: form-data; name="audio"; filename="s.wav"\r\n\r\nRIFF'.encode())
    return sock


def _upload(server: LiveServer, token: str) -> httpx.Response:
    data = {"metadata": json.dumps(good_metadata())}
    return httpx.post(server.url + "/v1/sessions", headers={"authorization": f"Bearer {token}"},
                      files={"audio": ("s.wav", JFK.read_bytes(), "audio/wav")}, data=data, timeout=60)


def test_concurrent_uploads_are_limited_per_token(live: Callable[..., LiveServer]) -> None:
    """Item 6: one token cannot hold every upload slot; the slot is free again once its upload ends."""
    server = live(max_concurrent_uploads=1, upload_idle_s=600)
    alice = token_for(server.settings, "Alice", "North Clinic")
    bob = token_for(server.settings, "Bob", "North Clinic")
    stalled = _stalled_upload(server, alice)
    try:
        deadline = time.monotonic() + 60
        while (second := _upload(server, alice)).status_code != 429:
            # The stalled upload may not have reached its route yet: it then took this one's place.
            assert second.status_code == 201 and time.monotonic() < deadline, second.text
        assert second.json()["error"] == "too_many_concurrent_uploads"
        assert _upload(server, bob).status_code == 201  # another token's slots are its own
    finally:
        stalled.close()
    deadline = time.monotonic() + 60
    while (again := _upload(server, alice)).status_code == 429:
        assert time.monotonic() < deadline, "the stalled upload's slot was never given back"
        time.sleep(0.1)
    assert again.status_code == 201, again.text
