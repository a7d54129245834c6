"""Metadata that should not succeed quietly (security issue, items 8 and 9): a clear 422, nothing stored."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.api.conftest import Api, good_metadata
from tests.conftest import SAMPLES

JFK = SAMPLES / "jfk.wav"


def nothing_stored(api: Api) -> bool:
    return api.files_on_volume() == [] and api.enqueued() == 0


def test_deeply_nested_metadata_is_422_not_500(api: Api, alice: str) -> None:
    r = api.upload(alice, JFK, "[" * 60_000)
    assert (r.status_code, r.json()["error"]) == (422, "metadata_not_json"), r.text
    assert nothing_stored(api)


def test_a_deeply_nested_finalize_body_is_422_not_500(api: Api, alice: str) -> None:
    r = api.client.post("/v1/sessions", content=b"[" * 60_000,
                        headers={**api.headers(alice), "content-type": "application/json"})
    assert (r.status_code, r.json()["error"]) == (422, "body_not_json"), r.text


@pytest.mark.parametrize("client_ids", [
    ["\u202egnp.exe"],  # a bidi override: shows reversed
    ["a\u200bb"],  # a zero-width space
    ["Therapist"],  # a role name in another case
    ["UNASSIGNED"],
    ["client-a", "CLIENT-A"],  # the same id twice, by case
    ["ｃｌｉｅｎｔ", "client"],  # the same id twice, after NFKC
])
def test_client_ids_that_look_like_something_else_are_refused(api: Api, alice: str, client_ids: list[str]) -> None:
    session_type = "individual" if len(client_ids) == 1 else "couples"
    r = api.upload(alice, JFK, good_metadata(client_ids=client_ids, session_type=session_type))
    assert (r.status_code, r.json()["error"]) == (422, "invalid_metadata"), r.text
    assert nothing_stored(api)


def test_client_ids_are_stored_in_their_normal_form(api: Api, alice: str) -> None:
    r = api.upload(alice, JFK, good_metadata(client_ids=["ｃｌｉｅｎｔ-7"]))
    assert r.status_code == 201 and r.json()["client_ids"] == ["client-7"]


@pytest.mark.parametrize(("overrides", "why"), [
    ({"session_type": "individual", "client_ids": ["a", "b", "c"]}, "individual session has one client"),
    ({"session_type": "couples", "client_ids": ["a"]}, "couples session has two"),
    ({"session_type": "dictation", "client_ids": ["a", "b"]}, "dictation is about one client"),
    ({"consent": {"obtained": True, "method": "verbal", "obtained_at": "2099-01-01T00:00:00+00:00"}}, "future"),
    ({"consent": {"obtained": True, "method": "verbal", "obtained_at": "2026-01-01T00:00:00"}}, "time zone"),
])
def test_implausible_sessions_are_refused(api: Api, alice: str, overrides: dict, why: str) -> None:  # type: ignore[type-arg]
    r = api.upload(alice, JFK, good_metadata(**overrides))
    assert r.status_code == 422 and why in r.json()["detail"], r.text
    assert nothing_stored(api)


def test_a_dictation_is_accepted_with_its_one_client(api: Api, alice: str) -> None:
    r = api.upload(alice, JFK, good_metadata(session_type="dictation", client_ids=["c-9"]))
    assert r.status_code == 201 and r.json()["session_type"] == "dictation", r.text


def test_an_idempotency_key_reused_with_other_metadata_is_422(api: Api, alice: str) -> None:
    key = {"Idempotency-Key": "upload-1"}
    first = api.upload(alice, JFK, good_metadata(client_ids=["c-1"]), headers=key)
    assert first.status_code == 201
    same = api.upload(alice, JFK, good_metadata(client_ids=["c-1"], recorded_at=first.json()["recorded_at"]),
                      headers=key)
    assert same.status_code == 200 and same.json()["id"] == first.json()["id"]
    other = api.upload(alice, JFK, good_metadata(client_ids=["c-2"], recorded_at=first.json()["recorded_at"]),
                       headers=key)
    assert (other.status_code, other.json()["error"]) == (422, "idempotency_key_reused"), other.text
    assert len(api.files_on_volume()) == 1


def test_the_cli_client_infers_the_session_type_and_the_recording_time(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A couples upload from the command line is not labelled individual nor stamped with the upload time."""
    import json
    import os

    import httpx

    from verbatim.client import ApiClient

    seen: list[dict] = []  # type: ignore[type-arg]

    def handler(request: httpx.Request) -> httpx.Response:
        body = request.read()
        meta = body.split(b'name="metadata"')[1].split(b"\r\n\r\n", 1)[1].split(b"\r\n--")[0]
        seen.append(json.loads(meta))
        return httpx.Response(201, json={"id": "x"})

    clip = tmp_path / "s.wav"
    clip.write_bytes(JFK.read_bytes())
    then = datetime.now(UTC) - timedelta(days=2)
    os.utime(clip, (then.timestamp(), then.timestamp()))
    client = ApiClient("http://api.test", "tok")
    client._http = httpx.Client(base_url="http://api.test", transport=httpx.MockTransport(handler))  # noqa: SLF001
    client.upload(clip, ["a", "b"])
    assert seen[0]["session_type"] == "couples"
    assert abs(datetime.fromisoformat(seen[0]["recorded_at"]) - then) < timedelta(seconds=2)
