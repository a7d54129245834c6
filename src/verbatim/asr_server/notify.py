"""The local recognizer's job notifications (Speechmatics ``notification_config``).

When a job finishes, each configured ``url`` gets a POST with ``?id=<job>&status=success``
(or ``rejected``), an empty body and the configured ``auth_headers`` ("Name: value"), as
Speechmatics sends them. Delivered on a background thread, a few attempts with backoff; a
notification that never arrives is covered by the caller's own look-up (it is only a hint).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import structlog

log = structlog.get_logger("verbatim.asr_server.notify")

ATTEMPTS = 4


def notify_later(job: dict[str, Any], status: str) -> None:
    """Send the job's notifications (if it asked for any) on a daemon thread; never raises."""
    configs = (job.get("config") or {}).get("notification_config") or []
    if configs:
        threading.Thread(target=_send_all, args=(job["id"], status, configs), daemon=True,
                         name=f"notify-{job['id']}").start()


def _send_all(job_id: str, status: str, configs: list[dict[str, Any]]) -> None:
    for config in configs:
        url = config.get("url")
        if not isinstance(url, str):
            continue
        headers = {}
        for line in config.get("auth_headers") or []:
            name, _, value = str(line).partition(":")
            headers[name.strip()] = value.strip()
        for attempt in range(ATTEMPTS):
            try:
                response = httpx.post(url, params={"id": job_id, "status": status}, headers=headers, timeout=10.0)
                if response.status_code < 500:
                    log.info("asr_notified", job_id=job_id, http_status=response.status_code)
                    break
            except httpx.HTTPError as exc:
                log.warning("asr_notify_failed", job_id=job_id, error=type(exc).__name__)
            time.sleep(0.5 * 2**attempt)
