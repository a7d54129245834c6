"""Worker process signals: the drain timer and the metrics port.

Celery's warm shutdown (SIGTERM) stops consuming and then waits for the running task
*without limit*; its soft shutdown is reached only through a cold shutdown. So the one
drain timer is ours: on ``worker_shutting_down`` we give the running run a cancel deadline
``drain_s`` seconds away. The run checks it between steps and while polling the vendor;
past it the run cancels cooperatively (saves, keeps the vendor copy, releases its lease,
re-queues) and returns, and Celery's warm shutdown then completes.

The layers: drain_s (600 s) < shutdown_window_s (660 s = compose ``stop_grace_period: 11m``),
with the teardown budget fitting in the 60 s between (see config.py), and the worker is the
container's PID 1 (exec form), so SIGTERM reaches it directly.
"""

from __future__ import annotations

import time
from typing import Any

import structlog
from celery import signals

from verbatim.config import get_settings
from verbatim.telemetry import metrics

log = structlog.get_logger("verbatim.worker")


@signals.worker_shutting_down.connect
def start_drain(sig: str = "", how: str = "", exitcode: int = 0, **_: Any) -> None:
    """SIGTERM/SIGINT: the running run (if any) must finish within the drain window."""
    from workers.tasks import current_cancel

    drain_s = get_settings().drain_s
    cancel = current_cancel()
    cancel.cancel_at(time.monotonic() + drain_s)
    cancel.on_expire = metrics.drain_timeout.inc
    log.info("worker_draining", signal=sig, how=how, drain_s=drain_s)


@signals.worker_init.connect
def check_models(**_: Any) -> None:
    """Refuse to start with a changed or damaged risk-check model (sentence encoder, reader weights),
    rather than failing every note run at its last step."""
    from verbatim.notes import risk_reader

    risk_reader.verify()


@signals.worker_ready.connect
def serve_metrics(**_: Any) -> None:
    """Expose Prometheus metrics on VERBATIM_METRICS_PORT, if set."""
    port = get_settings().metrics_port
    if port:
        from prometheus_client import start_http_server

        start_http_server(port)
