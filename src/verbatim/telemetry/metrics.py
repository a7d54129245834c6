"""Prometheus metrics, defined once. Names as the operations runbook expects them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import Counter, Gauge, Histogram

lock_acquired = Counter(
    "worker_lock_acquired_total", "Lease/lock acquisition attempts by outcome", ["outcome"]
)
drain_timeout = Counter("worker_drain_timeout_total", "Drains that ran out of time and cancelled work")
sweep_requeued = Counter("sweep_requeued_total", "Sessions re-queued by the stalled-session sweep")
runs_ended = Counter("runs_ended_total", "Durable runs ended, by kind and outcome", ["kind", "outcome"])
parked_lookups = Counter("parked_lookups_total", "Parked sessions looked up by the sweep, by outcome", ["outcome"])
recoveries = Counter("recoveries_total", "Runs brought back after their run died, by how", ["source"])
recovery_latency = Histogram(
    "recovery_latency_seconds", "From a dead run's last durable write to its re-queue (s)",
    buckets=(1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800),
)
session_runs = Counter("session_runs_total", "Capture runs counted (lease taken, run number bumped)")
stage_duration = Histogram(
    "stage_duration_seconds", "Time spent in each capture stage", ["stage"],
    buckets=(0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600),
)
teardown_duration = Histogram(
    "teardown_duration_seconds", "Time spent writing state while shutting down or cancelling",
    buckets=(0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 20, 30, 60),
)
outbox_attempts = Counter("outbox_attempts_total", "Outbox delivery attempts, by kind and outcome",
                          ["kind", "outcome"])
auth_failures = Counter("auth_failures_total", "Failed authentications (sign-in, link code, bearer token), by kind",
                        ["kind"])
auth_throttled = Counter("auth_throttled_total", "Requests refused 429 for too many failed authentications, by kind",
                         ["kind"])
sweep_errors = Counter("sweep_errors_total", "Sweeps that raised (each sweep is isolated), by sweep", ["sweep"])
vendor_jobs_deleted = Counter("vendor_jobs_deleted_total", "Vendor jobs deleted, by reason", ["reason"])
backend_unavailable = Gauge(
    "backend_unavailable", "1 while this process cannot reach one of our servers (it retries with backoff)",
    ["process", "backend"],
)
outage_refunds = Counter("outage_refunds_total", "Runs given back because our own server was unreachable mid-run",
                         ["kind", "backend"])


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Observe the wall-clock duration of one capture stage (seconds)."""
    start = time.monotonic()
    try:
        yield
    finally:
        stage_duration.labels(stage=name).observe(time.monotonic() - start)


#: counted only by worker processes: the API's /metrics leaves them out (they would read 0 there forever)
WORKER_ONLY = frozenset({
    "worker_lock_acquired", "worker_drain_timeout", "session_runs", "runs_ended", "stage_duration_seconds",
    "teardown_duration_seconds", "outage_refunds",
})
