"""The local recognizer keeps no lasting job → session list in service (only for fault tests)."""

from __future__ import annotations

from pathlib import Path

from verbatim.asr_server.store import JobStore
from verbatim.sealed import KeyRing, seal_file


def _submit(store: JobStore, tmp: Path) -> None:
    audio = tmp / "upload"
    seal_file(audio, b"x", store.ring)
    store.create({"tracking": {"reference": "session-1"}}, "a.wav", audio)


def test_no_submission_log_in_service(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs", 60.0, KeyRing.generate())
    _submit(store, tmp_path)
    assert not (tmp_path / "jobs" / "submissions.log").exists()
    assert store.submissions() == {}


def test_fault_tests_count_submissions(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs", 60.0, KeyRing.generate(), keep_submissions=True)
    _submit(store, tmp_path)
    assert store.submissions() == {"session-1": 1}
