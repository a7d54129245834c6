"""Telling the therapist: webhooks signed with HMAC-SHA256, delivered at least once through the outbox.

The event itself is already durable (``session_events``, written in the same transaction as
the state change, with its outbox item). Each delivery attempt is one POST; the outbox
retries a failed one with backoff until the endpoint acknowledges (2xx).

Headers: ``X-Verbatim-Delivery`` (one id per event, the same on every retry: receivers drop
duplicates by it), ``X-Verbatim-Timestamp`` (Unix seconds) and ``X-Verbatim-Signature``
(``sha256=`` HMAC of ``timestamp.body``), so a receiver can refuse replays outside its window.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from typing import Any

import httpx

from verbatim.errors import NotificationFailed


def sign(secret: str, body: bytes, timestamp: str) -> str:
    """``sha256=<hex>`` of ``timestamp.body`` keyed by ``secret`` (header X-Verbatim-Signature)."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


class Notifier:
    """POSTs session events to the configured webhook URL, if any (``timeout_s`` per attempt)."""

    def __init__(self, url: str | None, secret: str | None, timeout_s: float = 5.0):
        self.url = url
        self.secret = secret
        self.timeout_s = timeout_s

    def deliver(self, event: dict[str, Any], delivery_id: uuid.UUID) -> None:
        """One delivery attempt of ``event`` (a JSON object); raises NotificationFailed unless acknowledged (2xx)."""
        if not self.url:
            return  # webhooks were switched off after the event was queued: nothing to deliver
        body = json.dumps({**event, "delivery_id": str(delivery_id)}).encode()
        timestamp = str(int(time.time()))
        headers = {"content-type": "application/json", "x-verbatim-timestamp": timestamp,
                   "x-verbatim-delivery": str(delivery_id)}
        if self.secret:
            headers["x-verbatim-signature"] = sign(self.secret, body, timestamp)
        try:
            httpx.post(self.url, content=body, headers=headers, timeout=self.timeout_s).raise_for_status()
        except httpx.HTTPError as exc:
            raise NotificationFailed(f"webhook {event.get('event')} not acknowledged: {type(exc).__name__}") from exc
