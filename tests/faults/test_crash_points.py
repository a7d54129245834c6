"""Crash-point matrix: SIGKILL a real worker at each named point; the sweep and the other worker recover.

After recovery: transcript published and equal to the uncrashed result, audio gone, no vendor
job left after the sweeps, exactly one vendor submission, run count as expected.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.conftest import SAMPLES, AsrServer, make_settings
from tests.factories import new_session
from tests.faults.conftest import Cluster
from verbatim.config import Settings
from verbatim.db.engine import db_session
from verbatim.db.models import Session, Transcript
from verbatim.pipeline.run import run_capture
from verbatim.runtime import build_context

CLIP = SAMPLES / "nada_lily_02_haggard_0216.wav"

# point → runs the session ends with (the killed run counts; after_publish was already done)
POINTS = {
    "after_submit": 2,
    "after_job_saved": 2,
    "mid_poll": 2,
    "after_turns_fetched": 2,
    "after_checkpoint": 2,
    "mid_vendor_delete": 2,
    "mid_polish": 2,
    "after_publish": 1,
}


def published(database_url: str, sid: uuid.UUID) -> dict[str, list[tuple[str, str]]]:
    """Each client's record, and under ``""`` the published turns (role, text) — the words themselves."""
    with db_session(database_url) as db:
        records = {
            t.client_id: [(s["speaker"], s["text"]) for s in t.segments]
            for t in db.execute(select(Transcript).where(Transcript.session_id == sid)).scalars()
        }
        session = db.get(Session, sid)
        turns = (session.published_turns or []) if session is not None else []
        return {**records, "": [(t.get("role", ""), t["text"]) for t in turns]}


@pytest.fixture(scope="module")
def uncrashed() -> dict[str, list[tuple[str, str]]]:
    """The uncrashed result, computed once per test process by ``baseline``."""
    return {}


def baseline(settings: Settings, cache: dict[str, list[tuple[str, str]]]) -> dict[str, list[tuple[str, str]]]:
    if not cache:
        ctx = build_context(settings)
        sid = new_session(settings, CLIP)
        run_capture(ctx, sid)
        cache.update(published(settings.database_url or "", sid))
    return cache


@pytest.mark.faults
@pytest.mark.parametrize("point", list(POINTS))
def test_sigkill_at_crash_point_recovers(
    point: str, database_url: str, redis_url: str, asr: AsrServer, data_dir: Path, uncrashed: dict,  # type: ignore[type-arg]
) -> None:
    settings = make_settings(database_url, redis_url, asr, data_dir, vendor_job_max_age_s=2.0)
    expected = baseline(settings, uncrashed)
    logs = data_dir / "logs"
    logs.mkdir(exist_ok=True)
    cluster = Cluster(settings, logs)
    marker = data_dir / "crashed"
    try:
        first = cluster.worker(crash_point=point, crash_marker=marker)
        sid = new_session(settings, CLIP)
        cluster.queue.enqueue(sid)
        cluster.wait_for(lambda: not first.alive(), 60, f"the worker to die at {point}")
        assert marker.exists()
        cluster.worker(crash_point=point, crash_marker=marker)  # armed too: fires at most once
        cluster.sweeper()
        assert cluster.wait_status(sid, {"ready", "failed"}, 90) == "ready"
        row = cluster.view(sid)
        assert row.runs == POINTS[point]
        assert row.polished is True
        assert published(settings.database_url or "", sid) == expected
        assert not cluster.settings.audio_dir.joinpath(f"{sid}.audio").exists()
        assert asr.submissions().get(str(sid)) == 1
        cluster.wait_for(
            lambda: all(j.get("tracking", {}).get("reference") != str(sid) for j in asr.jobs()),
            30, "the vendor job to be deleted by the run or the stranded-job sweep",
        )
    finally:
        cluster.stop()


@pytest.mark.faults
def test_sigkill_between_the_failure_write_and_its_clean_up(
    database_url: str, redis_url: str, asr: AsrServer, data_dir: Path
) -> None:
    """The failure is committed with its clean-up queued; the worker dies before trying any of it:
    the sweep process deletes the vendor job and the audio, and nothing is left."""
    settings = make_settings(database_url, redis_url, asr, data_dir)
    logs = data_dir / "logs"
    logs.mkdir()
    cluster = Cluster(settings, logs)
    marker = data_dir / "crashed"
    try:
        asr.fault("reject_next", count=1)
        worker = cluster.worker(crash_point="after_failure_recorded", crash_marker=marker)
        sid = new_session(settings, CLIP)
        cluster.queue.enqueue(sid)
        cluster.wait_for(lambda: not worker.alive(), 60, "the worker to die after recording the failure")
        row = cluster.view(sid)
        assert (row.status, row.failure_code, row.vendor_job_id, row.audio_path) == (
            "failed", "audio_rejected", None, None)
        assert asr.submissions().get(str(sid)) == 1 and any(
            j.get("tracking", {}).get("reference") == str(sid) for j in asr.jobs())  # nothing deleted yet
        cluster.sweeper()
        cluster.wait_for(
            lambda: all(j.get("tracking", {}).get("reference") != str(sid) for j in asr.jobs())
            and not settings.audio_dir.joinpath(f"{sid}.audio").exists(),
            60, "the sweep process to delete the vendor job and the audio",
        )
    finally:
        cluster.stop()
