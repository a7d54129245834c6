"""Contract: our Speechmatics adapter (the real speechmatics-batch client) against `verbatim asr-server`.

The json-v2 fields checked are the ones Speechmatics documents for batch transcripts:
results[].type, start_time, end_time, alternatives[].content/confidence/language/speaker,
and attaches_to / is_eos on punctuation.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from tests.conftest import API_KEY, SAMPLES, AsrServer
from verbatim.embedded import free_port
from verbatim.errors import RecognizerAuth
from verbatim.recognizer.client import JobState, Recognizer
from verbatim.retry import RetryPolicy

CLIP = SAMPLES / "nada_lily_02_haggard_0216.wav"


@pytest.fixture
def recognizer(asr: AsrServer) -> Iterator[Recognizer]:
    r = Recognizer(asr.url + "/v2", API_KEY, request_timeout_s=5, retry=RetryPolicy(attempts=5, budget_s=20))
    yield r
    r.close()


def wait_done(r: Recognizer, job_id: str, timeout_s: float = 60) -> JobState:
    deadline = time.monotonic() + timeout_s
    while (state := r.state(job_id)) is JobState.RUNNING and time.monotonic() < deadline:
        time.sleep(0.2)
    return state


def test_submit_poll_fetch_delete_and_the_json_v2_shape(recognizer: Recognizer, asr: AsrServer) -> None:
    sid = uuid.uuid4()
    job_id = recognizer.submit(SAMPLES / "therapy_dialogue.wav", sid)
    assert wait_done(recognizer, job_id, 120) is JobState.DONE
    results = recognizer.transcript(job_id)
    assert results and {r["type"] for r in results} == {"word", "punctuation"}
    previous_start = 0.0
    for item in results:
        assert isinstance(item["start_time"], float) and isinstance(item["end_time"], float)
        assert item["start_time"] <= item["end_time"] and item["start_time"] >= previous_start
        previous_start = item["start_time"]
        best = item["alternatives"][0]
        assert isinstance(best["content"], str) and best["content"]
        assert 0.0 <= best["confidence"] <= 1.0
        assert best["language"] == "en"
        assert best["speaker"] in ("S1", "S2")
        if item["type"] == "punctuation":
            assert item["attaches_to"] == "previous" and isinstance(item["is_eos"], bool)
    assert {r["alternatives"][0]["speaker"] for r in results} == {"S1", "S2"}
    txt = httpx.get(f"{asr.url}/v2/jobs/{job_id}/transcript", params={"format": "txt"},
                    headers={"authorization": f"Bearer {API_KEY}"})
    assert txt.status_code == 200 and txt.headers["content-type"].startswith("text/plain") and "SPEAKER" in txt.text
    assert recognizer.delete(job_id) is True
    assert recognizer.delete(job_id) is False  # deleting twice is a 404
    assert recognizer.state(job_id) is JobState.DELETED


def test_jobs_are_listed_with_our_tag_and_filtered_by_creation_time(recognizer: Recognizer) -> None:
    sid = uuid.uuid4()
    job_id = recognizer.submit(CLIP, sid)
    jobs = {j.job_id: j for j in recognizer.list_jobs()}
    assert jobs[job_id].session_id == sid
    assert recognizer.find_session_job(sid) == job_id
    assert recognizer.find_session_job(sid, exclude={job_id}) is None
    past = datetime.now(UTC) - timedelta(hours=1)
    assert job_id not in {j.job_id for j in recognizer.list_jobs(created_before=past)}
    recognizer.delete(job_id)


def test_429_retry_after_is_read_and_honoured(recognizer: Recognizer, asr: AsrServer) -> None:
    job_id = recognizer.submit(CLIP, uuid.uuid4())
    asr.fault("fail", kind="status", mode="429", count=1, retry_after_s=1.5)
    started = time.monotonic()
    recognizer.state(job_id)
    assert time.monotonic() - started >= 1.4  # waited what the server asked, not stamina's 0.5 s
    recognizer.delete(job_id)


def test_bad_key_is_a_configuration_fault(asr: AsrServer) -> None:
    r = Recognizer(asr.url + "/v2", "wrong-key", retry=RetryPolicy(attempts=2, budget_s=2))
    with pytest.raises(RecognizerAuth):
        r.list_jobs()
    r.close()


def test_a_restart_loses_no_job_and_jobs_expire(scratch: Path) -> None:
    folder = scratch / f"asr-{uuid.uuid4().hex[:6]}"
    folder.mkdir()
    server = AsrServer(folder, free_port(), asr_job_ttl_s="8")
    server.start()
    try:
        r = Recognizer(server.url + "/v2", API_KEY, retry=RetryPolicy(attempts=20, budget_s=30))
        server.fault("hold", hold=True)
        job_id = r.submit(CLIP, uuid.uuid4())
        server.stop()
        server.start()  # the held job is found on disk and recognised after the restart
        assert wait_done(r, job_id) is JobState.DONE
        assert r.transcript(job_id)
        time.sleep(8.5)  # the TTL counts from the job's end, however long recognition took
        assert r.state(job_id) is JobState.EXPIRED
        r.close()
    finally:
        server.stop()


def test_a_killed_pool_process_never_rejects_good_audio(recognizer: Recognizer, asr: AsrServer) -> None:
    import signal

    import psutil

    assert asr.proc is not None
    job_id = recognizer.submit(SAMPLES / "therapy_dialogue.wav", uuid.uuid4())
    time.sleep(1.0)  # recognition under way in the pool
    for child in psutil.Process(asr.proc.pid).children(recursive=True):
        if "resource_tracker" not in " ".join(child.cmdline()):
            child.send_signal(signal.SIGKILL)
    assert wait_done(recognizer, job_id, 180) is JobState.DONE
    assert recognizer.transcript(job_id)
    recognizer.delete(job_id)
