"""Restart recovery belongs to the durable-run core: a worker killed mid-run and restarted under its name
recovers its runs of every kind at once — here a note run — not a lease TTL later (real processes, SIGKILL)."""

from __future__ import annotations

import socket
import uuid
from pathlib import Path

import pytest

from tests.conftest import SAMPLES, AsrServer, make_settings
from tests.factories import ready_session
from tests.faults.conftest import Cluster
from tests.faults.test_note_runs import ask, note
from verbatim.notes.repo import NoteRepo


@pytest.mark.faults
def test_a_worker_restarted_under_its_name_recovers_its_note_run_at_once(
    database_url: str, redis_url: str, asr: AsrServer, data_dir: Path,
) -> None:
    # A lease far longer than the test: only the restart's recovery can bring the note back in time
    # (no sweep process runs, and the killed run's queue message is not redelivered for hours).
    settings = make_settings(database_url, redis_url, asr, data_dir, lease_ttl_s=3600.0, heartbeat_s=5.0)
    sid = ready_session(settings, SAMPLES / "notes" / "risk_discussed.json")
    logs = data_dir / "logs"
    logs.mkdir()
    cluster = Cluster(settings, logs)
    marker = data_dir / "crashed"
    name = f"notes-{uuid.uuid4().hex[:4]}"
    try:
        first = cluster.worker(name, crash_point="after_note_section_2", crash_marker=marker)
        note_id = ask(settings, sid)
        cluster.queue.enqueue_note(note_id)
        cluster.wait_for(lambda: not first.alive(), 120, "the worker to die after the second section")
        assert (note(settings, note_id).status, len(note(settings, note_id).sections or [])) == ("drafting", 2)
        with_lease = cluster.redis.exists(f"lease:note:{note_id}")
        assert with_lease, "the killed run still holds its lease"
        cluster.worker(name, crash_point="after_note_section_2", crash_marker=marker)  # the same slot restarts
        cluster.wait_for(lambda: note(settings, note_id).status == "draft", 180,
                         "the restarted worker to recover and finish its note run")
        assert NoteRepo(database_url).runs.count_of(note_id) == 2
        restarted = (logs / f"{name}.log").read_text(errors="replace")
        assert "worker_runs_recovered" in restarted and f"{name}@{socket.gethostname()}" in restarted
    finally:
        cluster.stop()
