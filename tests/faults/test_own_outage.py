"""Our own servers down: no process exits, no run is spent (issue 27 items 9, 10 and the drill).

Each test runs a PostgreSQL of its own (stopped and started again mid-test) and real processes.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select, text

from tests.conftest import SAMPLES, AsrServer, make_settings
from tests.factories import new_session, token_for, view
from tests.faults.conftest import Cluster, Proc
from verbatim.db.engine import db_session, dispose_all
from verbatim.db.migrate import upgrade
from verbatim.db.models import SessionEvent
from verbatim.durable.core import Outcome
from verbatim.embedded import EmbeddedPostgres, EmbeddedRedis, free_port
from verbatim.pipeline.run import run_capture
from verbatim.queue import waiting
from verbatim.runtime import build_context
from verbatim.telemetry import metrics

CLIPS = sorted(p for p in SAMPLES.glob("*_0*.wav"))
OUTAGE_S = 20.0

# Real processes on a private PostgreSQL: on a loaded 2-core machine the drill outlasts the
# suite's 300 s default; every wait inside has its own deadline.
pytestmark = pytest.mark.timeout(1200)


@pytest.fixture
def private_pg(scratch: Path) -> Iterator[EmbeddedPostgres]:
    pg = EmbeddedPostgres(scratch / f"pg-{uuid.uuid4().hex[:6]}", free_port(), fast=True)
    pg.start()
    try:
        yield pg
    finally:
        dispose_all()
        pg.stop()


def migrated(pg: EmbeddedPostgres) -> str:
    url = pg.create_database("verbatim")
    upgrade(url)
    dispose_all()
    return url


def log_events(proc: Proc, event: str) -> int:
    count = 0
    for line in proc.log.read_text(errors="replace").splitlines():
        try:
            if json.loads(line).get("event") == event:
                count += 1
        except ValueError:
            continue
    return count


def wait_until(predicate: Callable[[], object], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


@pytest.mark.faults
def test_sweep_process_waits_out_a_database_outage(private_pg: EmbeddedPostgres, redis_url: str, asr: AsrServer,
                                                   data_dir: Path) -> None:
    url = migrated(private_pg)
    settings = make_settings(url, redis_url, asr, data_dir, outage_backoff_max_s=2.0)
    (data_dir / "logs").mkdir()
    cluster = Cluster(settings, data_dir / "logs")
    try:
        sweeper = cluster.sweeper()
        cluster.wait_for(lambda: log_events(sweeper, "sweeper_started") == 1, 60, "the sweeper to start")
        private_pg.stop()
        # Several ticks of the outage, each a periodic step's claim among them (sweep_interval_s=1).
        cluster.wait_for(lambda: not sweeper.alive() or log_events(sweeper, "backend_unavailable") >= 3, 90,
                         "the sweeper to report the outage three times")
        assert sweeper.alive(), sweeper.log.read_text()[-3000:]
        private_pg.start()
        cluster.wait_for(lambda: not sweeper.alive() or log_events(sweeper, "backend_restored") >= 1, 90,
                         "the sweeper to see the database again")
        assert sweeper.alive(), sweeper.log.read_text()[-3000:]
        # And it sweeps again: a session nobody queued is sent to the capture queue.
        sid = new_session(settings, CLIPS[0])
        cluster.wait_for(lambda: cluster.redis.llen("capture") >= 1, 60, f"the sweep to queue {sid}")
    finally:
        cluster.stop()


@pytest.mark.faults
def test_run_in_flight_during_a_database_outage_is_given_back(private_pg: EmbeddedPostgres, redis_url: str,
                                                              asr: AsrServer, data_dir: Path) -> None:
    url = migrated(private_pg)
    # A vendor pause (retry_later_s) long enough to tell "due at once" from it.
    settings = make_settings(url, redis_url, asr, data_dir, outage_backoff_max_s=1.0, outage_refund_budget_s=120.0,
                             retry_later_s=120.0)
    sid = new_session(settings, CLIPS[0])
    ctx = build_context(settings)
    family = getattr(metrics, "backend_unavailable", None)
    gauge = family.labels(process="worker:capture", backend="database") if family is not None else None

    def outage_seen() -> bool:
        return gauge is not None and gauge._value.get() == 1  # noqa: SLF001

    if gauge is not None:
        gauge.set(0)
    ended: dict[str, Outcome] = {}
    asr.fault("hold", hold=True)  # the run waits on the vendor while the database goes away
    try:
        worker = threading.Thread(target=lambda: ended.update(outcome=run_capture(ctx, sid)), daemon=True)
        worker.start()
        wait_until(lambda: view(ctx.repo, sid).vendor_job_id is not None, 60, "the job id to be saved")
        dispose_all()
        private_pg.stop()
        asr.fault("hold", hold=False)  # the turns arrive; saving them finds no database
        wait_until(lambda: not worker.is_alive() or outage_seen(), 90, "the run to meet the outage")
        time.sleep(2)  # a few more tries of the refund while the database is still down
        private_pg.start()
        worker.join(150)
        assert not worker.is_alive()
        assert ended["outcome"] is Outcome.RETRY_LATER
        assert view(ctx.repo, sid).runs == 0, "a run cut off by our own outage stays counted"
        assert not outage_seen()
        # Due at once (the database answers again), not a vendor pause later: the sweep sends it in a tick.
        assert due_now(url, sid)
        assert run_capture(ctx, sid) is Outcome.READY
        after = view(ctx.repo, sid)
        assert (after.status, after.runs) == ("ready", 1)
    finally:
        asr.fault("hold", hold=False)


def due_now(url: str, sid: uuid.UUID) -> bool:
    with db_session(url) as db:
        return bool(db.execute(text("SELECT due_at <= now() FROM durable_runs WHERE kind = 'capture' "
                                    "AND subject_id = :s"), {"s": sid}).scalar_one())


@pytest.mark.faults
def test_a_run_whose_count_meets_a_database_outage_starts_once_the_database_is_back(
        private_pg: EmbeddedPostgres, redis_url: str, asr: AsrServer, data_dir: Path) -> None:
    """Last round's slow recovery: a message whose run could not be counted was dropped, and its
    session waited minutes for its next look. Now the worker keeps the message and counts when it can."""
    url = migrated(private_pg)
    settings = make_settings(url, redis_url, asr, data_dir, outage_backoff_max_s=1.0, outage_refund_budget_s=120.0)
    sid = new_session(settings, CLIPS[0])
    ctx = build_context(settings)
    gauge = metrics.backend_unavailable.labels(process="worker:capture", backend="database")
    gauge.set(0)
    dispose_all()
    private_pg.stop()
    ended: dict[str, Outcome] = {}
    worker = threading.Thread(target=lambda: ended.update(outcome=run_capture(ctx, sid)), daemon=True)
    worker.start()
    wait_until(lambda: gauge._value.get() == 1, 60, "the count to meet the outage")  # noqa: SLF001
    time.sleep(2)  # a few more tries while the database is still down
    assert worker.is_alive(), f"the run gave up on its message during the outage: {ended}"
    private_pg.start()
    worker.join(300)
    assert not worker.is_alive()
    assert ended["outcome"] is Outcome.READY
    after = view(ctx.repo, sid)
    assert (after.status, after.runs) == ("ready", 1)  # counted once, after the outage
    assert gauge._value.get() == 0  # noqa: SLF001
    assert not waiting(ctx.redis, [sid])  # nothing was sent again meanwhile


@pytest.mark.faults
def test_drill_postgres_stopped_20s_mid_pipeline(private_pg: EmbeddedPostgres, redis_url: str, asr: AsrServer,
                                                 data_dir: Path) -> None:
    """The drill: PostgreSQL stopped for 20 s while sessions are mid-pipeline. Every process —
    the API, two capture workers, the sweep process — survives; no run is spent; all publish."""
    url = migrated(private_pg)
    settings = make_settings(url, redis_url, asr, data_dir, outage_backoff_max_s=2.0)
    (data_dir / "logs").mkdir()
    cluster = Cluster(settings, data_dir / "logs")
    port = free_port()
    api_url = f"http://127.0.0.1:{port}"
    try:
        api = Proc("api", ["api"], cluster.env(api_host="127.0.0.1", api_port=port), cluster.log_dir / "api.log")
        cluster.procs.append(api)
        cluster.wait_for(lambda: _healthy(api_url), 60, "the API to start")
        cluster.worker()
        cluster.worker()
        cluster.sweeper()
        asr.fault("hold", hold=True)  # runs wait on the vendor, mid-pipeline, when the database stops
        token = token_for(settings, "T. Drill")
        ids = []
        for clip in CLIPS[:3]:
            ids.append(_upload(api_url, token, clip))
        for clip in CLIPS[3:6]:
            sid = new_session(settings, clip)
            cluster.queue.enqueue(sid)
            ids.append(sid)
        cluster.wait_for(lambda: sum(cluster.view(s).vendor_job_id is not None for s in ids) >= 2, 90,
                         "two runs mid-pipeline")
        dispose_all()
        private_pg.stop()
        stopped = time.monotonic()
        time.sleep(2)
        asr.fault("hold", hold=False)  # the runs in flight now reach for the database that is gone
        time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - stopped)))
        alive = {p.name: p.alive() for p in cluster.procs}
        private_pg.start()
        assert all(alive.values()), alive
        cluster.wait_for(lambda: all(cluster.status(s) in ("ready", "failed", "blocked") for s in ids), 240,
                         "every session to finish")
        assert {s: cluster.status(s) for s in ids} == {s: "ready" for s in ids}
        assert {s: cluster.view(s).runs for s in ids} == {s: 1 for s in ids}, "a run was spent on our outage"
        assert all(asr.submissions()[str(s)] == 1 for s in ids)
        with db_session(cluster.repo.url) as db:
            codes = set(db.execute(select(SessionEvent.failure_code).where(SessionEvent.session_id.in_(ids)))
                        .scalars())
        assert codes <= {None}, codes
        assert {p.name: p.alive() for p in cluster.procs} == {p.name: True for p in cluster.procs}
        assert _healthy(api_url)
        # The API takes uploads again, and they publish.
        late = _upload(api_url, token, CLIPS[0])
        assert cluster.wait_status(late, {"ready", "failed", "blocked"}, 120) == "ready"
        sweeper = next(p for p in cluster.procs if p.name.startswith("sweeper"))
        assert log_events(sweeper, "backend_unavailable") >= 1 and log_events(sweeper, "backend_restored") >= 1
    finally:
        asr.fault("hold", hold=False)
        cluster.stop()


def _healthy(api_url: str) -> bool:
    try:
        return httpx.get(api_url + "/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _upload(api_url: str, token: str, clip: Path) -> uuid.UUID:
    meta = {"client_ids": ["client-a"], "recorded_at": "2026-01-05T10:00:00+00:00", "session_type": "individual",
            "consent": {"obtained": True, "method": "verbal", "obtained_at": "2026-01-05T10:00:00+00:00"}}
    r = httpx.post(api_url + "/v1/sessions", files={"audio": (clip.name, clip.read_bytes(), "audio/wav")},
                   data={"metadata": json.dumps(meta)}, headers={"authorization": f"Bearer {token}"}, timeout=60)
    assert r.status_code == 201, r.text
    return uuid.UUID(r.json()["id"])




@pytest.mark.faults
def test_a_worker_started_during_a_redis_outage_waits_and_then_works(
        database_url: str, private_redis: EmbeddedRedis, asr: AsrServer, data_dir: Path) -> None:
    settings = make_settings(database_url, private_redis.url, asr, data_dir, outage_backoff_max_s=1.0)
    (data_dir / "logs").mkdir()
    cluster = Cluster(settings, data_dir / "logs")
    try:
        private_redis.stop()
        worker = cluster.worker()
        cluster.wait_for(lambda: not worker.alive() or log_events(worker, "backend_unavailable") >= 2, 90,
                         "the worker to report the outage")
        assert worker.alive(), worker.log.read_text()[-3000:]
        private_redis.start()
        cluster.sweeper()
        sid = new_session(settings, CLIPS[0])  # nobody queued it: the sweep does, the worker runs it
        assert cluster.wait_status(sid, {"ready", "failed", "blocked"}, 180) == "ready"
        assert worker.alive()
    finally:
        cluster.stop()
