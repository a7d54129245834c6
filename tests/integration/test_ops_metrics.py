"""The sweep process's ops gauges over real PostgreSQL and Redis; the API's /metrics without worker counters."""

from __future__ import annotations

from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import SAMPLES
from tests.factories import new_session
from verbatim.api.app import create_app
from verbatim.config import Settings
from verbatim.durable.core import Outcome
from verbatim.pipeline.run import run_capture
from verbatim.runtime import build_context
from verbatim.telemetry.ops import OpsCollector

CLIP = SAMPLES / "nada_lily_02_haggard_0216.wav"


def scrape(collector: OpsCollector) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry()
    registry.register(collector)
    text = generate_latest(registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def test_ops_gauges_show_queued_and_parked_sessions(settings: Settings) -> None:
    ctx = build_context(settings.model_copy(update={"recognizer_park_after_s": 0.0}))
    queued = new_session(ctx.settings, CLIP)
    parked = new_session(ctx.settings, CLIP)
    assert run_capture(ctx, parked) is Outcome.PARKED
    ctx.queue.enqueue(queued)
    got = scrape(OpsCollector(ctx.repo.url, ctx.redis))
    assert got[("verbatim_sessions", (("status", "queued"),))] == 1
    assert got[("verbatim_sessions", (("status", "recognizing"),))] == 1
    assert got[("verbatim_sessions_parked", ())] == 1
    assert got[("verbatim_oldest_queued_seconds", ())] > 0
    assert got[("verbatim_oldest_parked_seconds", ())] > 0
    assert got[("verbatim_queue_depth", (("queue", "capture"),))] == 1
    assert ("verbatim_queue_depth", (("queue", "outbox"),)) in got
    ctx.recognizer.close()


def test_the_api_metrics_leave_out_worker_counters(settings: Settings) -> None:
    with TestClient(create_app(settings)) as client:
        text = client.get("/metrics").text
    names = {fam.name for fam in text_string_to_metric_families(text)}
    assert "session_runs" not in names and "runs_ended" not in names and "stage_duration_seconds" not in names
    assert "sweep_errors" in names or "outbox_attempts" in names  # the rest is still there
