"""Disk exhaustion: per-therapist limits on open uploads and a free-space check (security issue, item 7)."""

from __future__ import annotations

from collections.abc import Callable

from tests.api.conftest import Api
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
