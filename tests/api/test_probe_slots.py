"""Our own load never makes a good recording "unreadable" (issue 27, item 11): probes are bounded
per API process, and an upload that found no probe slot in time is 503 + Retry-After, nothing stored."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from tests.api.conftest import Api
from tests.conftest import SAMPLES
from tests.factories import token_for
from verbatim.confined import probe_slots


def test_uploads_wait_for_a_probe_slot_and_get_503_when_none_frees(api_with: Callable[..., Api]) -> None:
    api = api_with(probe_concurrency=2, probe_wait_s=1.0)
    alice = token_for(api.settings, "Alice", "North Clinic")
    slots = probe_slots(api.settings)
    # Both slots busy (two probes of other uploads in flight) for longer than an upload waits.
    assert slots.acquire(timeout=5) and slots.acquire(timeout=5)
    try:
        r = api.upload(alice, SAMPLES / "jfk.wav")
        assert (r.status_code, r.json()["error"]) == (503, "overloaded"), r.text
        assert int(r.headers["retry-after"]) >= 1
        assert api.files_on_volume() == [] and api.enqueued() == 0
    finally:
        slots.release()
        slots.release()
    # A slot frees while the upload waits: it is probed then, and taken.
    waited = api_with(probe_concurrency=1, probe_wait_s=60.0)
    one = probe_slots(waited.settings)
    assert one.acquire(timeout=5)
    threading.Timer(0.3, one.release).start()
    r = waited.upload(alice, SAMPLES / "jfk.wav")
    assert r.status_code == 201, r.text
    assert waited.enqueued() == 1


@pytest.mark.timeout(900)  # twelve real probes two at a time: slow on a loaded machine, each wait bounded
def test_many_uploads_at_once_are_each_taken_or_told_to_retry_never_unreadable(
        api_with: Callable[..., Api]) -> None:
    api = api_with(probe_concurrency=2, probe_wait_s=120.0)
    alice = token_for(api.settings, "Alice", "North Clinic")
    clips = sorted(SAMPLES.glob("*_0*.wav"))
    answers: list[int] = []
    lock = threading.Lock()

    def send(i: int) -> None:
        r = api.upload(alice, clips[i % len(clips)], headers={"idempotency-key": f"load-{i}"})
        with lock:
            answers.append(r.status_code)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert len(answers) == 12
    assert set(answers) <= {201, 503}, answers
    assert 422 not in answers
