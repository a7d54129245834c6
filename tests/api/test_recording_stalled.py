"""A recording that stops arriving (issue 26, item 2): finished with what arrived, labelled partial —
by the sweep after ``recording_stall_s`` without a byte, or by the therapist's "finish with what
arrived" — and never deleted by the upload-expiry sweep. Real API, PostgreSQL and Redis."""

from __future__ import annotations

import base64
import json
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from tests.api.conftest import TUS, Api, good_metadata
from tests.api.test_tus_deferred import _webm
from verbatim.api.recordings import finish_stalled
from verbatim.db.engine import db_session
from verbatim.db.models import AuditEntry, Session
from verbatim.pipeline.sweeps import SweepReport, delete_orphan_audio
from verbatim.resumable import ResumableUploads
from verbatim.runtime import build_context


def _b64(value: str) -> str:
    return base64.b64encode(value.encode()).decode()


def _recorder_part(api: Api, token: str, recording: str, part: int, data: bytes, *, declare: bool,
                   filetype: str = "audio/webm", patches: int = 1) -> str:
    """A part as the recorder page sends it: deferred length, the session's metadata in Upload-Metadata;
    its bytes in ``patches`` PATCHes, the length declared with the last one when ``declare``."""
    meta = (f"filetype {_b64(filetype)},recording {_b64(recording)},part {_b64(str(part))},"
            f"session {_b64(json.dumps(good_metadata()))}")
    r = api.client.post("/v1/uploads", headers=api.headers(token, **TUS, **{"upload-defer-length": "1",
                                                                             "upload-metadata": meta}))
    assert r.status_code == 201, r.text
    upload_id = str(r.json()["upload_id"])
    step = -(-len(data) // patches)
    for offset in range(0, len(data), step):
        last = offset + step >= len(data)
        extra = {"upload-length": str(len(data))} if declare and last else {}
        r = api.tus_patch(token, upload_id, offset, data[offset:offset + step], headers=extra)
        assert r.status_code == 204, r.text
    return upload_id


def _age(api: Api, upload_id: str, seconds: float) -> None:
    """As if the upload's last byte arrived ``seconds`` ago (its data file's mtime is when the last byte came)."""
    then = time.time() - seconds
    os.utime(api.settings.tus_dir / f"{upload_id}.bin", (then, then))


def test_the_sweep_finishes_a_stalled_recording_as_partial_and_never_deletes_it(
    api_with: Callable[..., Api], alice: str
) -> None:
    api = api_with(recording_stall_s=3600, tus_expiry_s=5)
    recording = uuid.uuid4().hex
    whole = _recorder_part(api, alice, recording, 0, _webm(3.0, 440), declare=True)  # before a browser kill
    stream = _webm(4.0, 880)
    cut = _recorder_part(api, alice, recording, 1, stream[: len(stream) * 3 // 4], declare=False)  # then silence
    for upload_id in (whole, cut):
        _age(api, upload_id, 3601)
    ctx = build_context(api.settings)
    store = ResumableUploads(api.settings.tus_dir, api.settings.tus_expiry_s, ctx.volume.ring)
    info = store.info(cut)
    assert info is not None

    # Past their expiry too: the expiry sweep alone keeps every byte (no finisher given).
    deadline = time.monotonic() + 60
    while not info.expired():
        assert time.monotonic() < deadline, "the upload never reached its expiry"
        time.sleep(0.1)
    delete_orphan_audio(ctx, report := SweepReport())
    assert report.uploads_expired == 0
    assert {p.name for p in api.tus_files()} >= {f"{whole}.bin", f"{cut}.bin"}
    assert api.tus_head(alice, cut).status_code == 410  # a client is told, and still nothing is deleted
    assert (api.settings.tus_dir / f"{cut}.bin").exists()

    fresh = _recorder_part(api, alice, uuid.uuid4().hex, 0, _webm(1.0, 330), declare=False)  # still arriving
    report = SweepReport(finish_stalled=finish_stalled)
    delete_orphan_audio(ctx, report)
    assert report.recordings_finished == 1
    assert {p.name.split(".")[0] for p in api.tus_files()} == {fresh}  # the live recording is left alone
    with db_session(api.settings.database_url or "") as db:
        [row] = db.query(Session).filter(Session.idempotency_key == f"recorder-{recording}").all()
        sid = row.id
        assert row.status == "queued" and row.partial_recording is not None
        assert row.partial_recording["reason"] == "stalled"
        assert 5.0 < row.partial_recording["held_s"] < 7.0 and row.audio_duration_s > 5.0  # 3 s + most of 4 s
        audited = db.query(AuditEntry).filter(AuditEntry.session_id == sid,
                                              AuditEntry.action == "session_created").one()
        assert audited.scope == "system"
    assert api.enqueued() == 1  # processed like any session
    shown = api.client.get(f"/v1/sessions/{sid}", headers=api.headers(alice)).json()
    assert shown["partial_recording"]["reason"] == "stalled"
    assert abs(shown["partial_recording"]["held_s"] - shown["duration_s"]) < 0.2

    delete_orphan_audio(ctx, SweepReport(finish_stalled=finish_stalled))
    with db_session(api.settings.database_url or "") as db:  # once
        assert db.query(Session).filter(Session.idempotency_key == f"recorder-{recording}").count() == 1


def test_finish_with_what_arrived_makes_a_partial_session_once(api: Api, alice: str, bob: str) -> None:
    recording = uuid.uuid4().hex
    head = _webm(2.0, 440)
    first = _recorder_part(api, alice, recording, 0, head, declare=True)
    second = _recorder_part(api, alice, recording, 1, _webm(3.0, 660), declare=False)
    listed = api.client.get("/v1/uploads", headers=api.headers(alice))
    assert listed.status_code == 200
    assert [(u["upload_id"], u["part"], u["recording"], u["length"], u["finishable"]) for u in listed.json()] == [
        (first, 0, recording, len(head), True), (second, 1, recording, None, True)]
    assert api.client.get("/v1/uploads", headers=api.headers(bob)).json() == []
    assert api.client.post(f"/v1/uploads/{second}/finish", headers=api.headers(bob)).status_code == 404

    done = api.client.post(f"/v1/uploads/{second}/finish", headers=api.headers(alice))
    assert done.status_code == 201, done.text
    body = done.json()
    assert body["partial_recording"]["reason"] == "finished"
    assert abs(body["duration_s"] - 5.0) < 0.2 and abs(body["partial_recording"]["held_s"] - 5.0) < 0.2
    assert api.tus_files() == [] and api.enqueued() == 1
    again = api.client.post(f"/v1/uploads/{first}/finish", headers=api.headers(alice))
    assert again.status_code == 404  # the parts are the session's now
    # The phone comes back and finishes the same recording: the session it gets is this one.
    late = api.client.post("/v1/sessions", json={"upload_ids": [first, second], "metadata": good_metadata()},
                           headers=api.headers(alice, **{"idempotency-key": f"recorder-{recording}"}))
    assert late.status_code == 200 and late.json()["id"] == body["id"]


def test_an_upload_without_session_metadata_is_not_finished_into_a_session(api: Api, alice: str) -> None:
    r = api.client.post("/v1/uploads", headers=api.headers(alice, **TUS, **{"upload-defer-length": "1"}))
    upload_id = r.json()["upload_id"]
    assert api.tus_patch(alice, upload_id, 0, _webm(1.0, 440)).status_code == 204
    refused = api.client.post(f"/v1/uploads/{upload_id}/finish", headers=api.headers(alice))
    assert refused.status_code == 409 and refused.json()["error"] == "no_session_metadata"
    assert api.tus_head(alice, upload_id).status_code == 200  # nothing lost


def test_a_file_cut_off_mid_way_is_finished_up_to_where_it_ends(api: Api, alice: str) -> None:
    """Finishing a WAV whose header promises more than arrived made a 422 and deleted every byte."""
    wav = (Path(__file__).resolve().parents[2] / "samples" / "jfk.wav").read_bytes()
    # Its header promises the whole file, as a WAV sent while it was written does.
    cut = _recorder_part(api, alice, uuid.uuid4().hex, 0, wav[: len(wav) // 2], declare=False,
                         filetype="audio/wav", patches=2)
    done = api.client.post(f"/v1/uploads/{cut}/finish", headers=api.headers(alice))
    assert done.status_code == 201, done.text
    full_s = (len(wav) - 44) / (16_000 * 2)
    assert abs(done.json()["partial_recording"]["held_s"] - full_s / 2) < 0.3
    assert api.tus_files() == [] and api.enqueued() == 1  # the parts went only after the session committed


def test_a_finish_the_check_refuses_keeps_what_arrived(api: Api, alice: str) -> None:
    """Bytes no decoder reads are refused with a 4xx — and kept, listed, finishable again."""
    junk = _recorder_part(api, alice, uuid.uuid4().hex, 0, os.urandom(64 * 1024), declare=False,
                          filetype="audio/wav", patches=2)
    for _ in range(2):
        refused = api.client.post(f"/v1/uploads/{junk}/finish", headers=api.headers(alice))
        assert 400 <= refused.status_code < 500 and refused.status_code != 404, refused.text
        assert "kept" in refused.json()["detail"]
    assert [u["upload_id"] for u in api.client.get("/v1/uploads", headers=api.headers(alice)).json()] == [junk]
    assert {p.name for p in api.tus_files()} >= {f"{junk}.bin"}
    assert api.enqueued() == 0


def test_session_metadata_a_finish_would_refuse_is_refused_when_the_upload_is_created(api: Api, alice: str) -> None:
    """Accepted at creation, refused at finish: a phone that died meanwhile could never get its session."""
    for bad in (json.dumps({"client_ids": ["c-1"]}), "not json", json.dumps(["a list"])):
        meta = f"filetype {_b64('audio/webm')},session {_b64(bad)}"
        r = api.client.post("/v1/uploads", headers=api.headers(alice, **TUS, **{"upload-defer-length": "1",
                                                                                 "upload-metadata": meta}))
        assert r.status_code == 422 and r.json()["error"] == "invalid_metadata", r.text
        assert "session" in r.json()["detail"]
    assert api.tus_files() == []
