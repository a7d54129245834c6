"""Telling the therapist: webhooks signed with HMAC-SHA256, retried on a wall-clock budget.

The event itself is already durable (``session_events``, written in the same transaction
as the state change); the webhook is a best-effort push on top of it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from typing import Any

import httpx
import stamina
import structlog

log = structlog.get_logger("verbatim.notify")

RETRYABLE = (httpx.TransportError, httpx.HTTPStatusError)


def sign(secret: str, body: bytes, timestamp: str) -> str:
    """``sha256=<hex>`` of ``timestamp.body`` keyed by ``secret`` (header X-Verbatim-Signature)."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


class Notifier:
    """POSTs session events to the configured webhook URL, if any."""

    def __init__(self, url: str | None, secret: str | None, budget_s: float):
        self.url = url
        self.secret = secret
        self.budget_s = budget_s

    def send(self, kind: str, session_id: uuid.UUID, **fields: Any) -> bool:
        """Deliver one event; True if the endpoint acknowledged (2xx) within the budget."""
        if not self.url:
            return False
        body = json.dumps({"event": kind, "session_id": str(session_id), **fields}).encode()
        timestamp = str(int(time.time()))
        headers = {"content-type": "application/json", "x-verbatim-timestamp": timestamp}
        if self.secret:
            headers["x-verbatim-signature"] = sign(self.secret, body, timestamp)
        try:
            for attempt in stamina.retry_context(on=RETRYABLE, attempts=6, timeout=self.budget_s, wait_max=5.0):
                with attempt:
                    httpx.post(self.url, content=body, headers=headers, timeout=5.0).raise_for_status()
        except RETRYABLE as exc:
            log.warning("webhook_failed", session_id=str(session_id), kind=kind, error=type(exc).__name__)
            return False
        return True
