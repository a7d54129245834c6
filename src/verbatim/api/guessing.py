"""Guessing without trace: failed authentications are counted per client address and throttled.

A token, a one-time link code or a sign-in form that fails counts one against the client's
address for the current minute (``keys.auth_failures``, a Redis counter that expires 60 s after
the minute's first failure). From ``auth_failures_per_min`` (10) failures on, every authentication
from that address — right or wrong, so a guess that happens to be right reveals nothing — is
answered 429 with ``Retry-After`` (the seconds left in the minute) until the counter expires.
Each failure counts in ``auth_failures_total{kind}``, each refusal in ``auth_throttled_total{kind}``;
failed sign-ins (the pages' token form and link codes) and the moment an address is throttled
are audited (``sign_in_failed``, ``auth_throttled``, scope ``anonymous``, no clinic).

The address is the connection's, or ``X-Forwarded-For``'s from a trusted proxy only
(``VERBATIM_TRUSTED_PROXIES``; see ``verbatim.api.serve``).

A Redis outage does not lock anyone out: the throttle then lets authentication go on (and logs it);
the tokens themselves are 256-bit random values, which no throttle is needed to keep unguessable.

Why our own code: one counter per address with a fixed window is a few lines against the Redis we
already run; a rate-limit library would bring its own storage and decorators for what is one rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import redis
import sqlalchemy.exc
import structlog

from verbatim import audit, keys
from verbatim.api.errors import ApiError
from verbatim.db.engine import db_session
from verbatim.telemetry import metrics

log = structlog.get_logger("verbatim.api")
WINDOW_S = 60


@dataclass(frozen=True)
class Throttled:
    """An address over its limit: how long until it may try again (whole seconds, at least 1)."""

    retry_after_s: int


class Guessing:
    """The failure counters of one API process (``client`` is a Redis client; ``limit`` failures a minute)."""

    def __init__(self, client: redis.Redis, limit: int, database_url: str):
        self.client = client
        self.limit = limit
        self.database_url = database_url

    def throttled(self, address: str | None, kind: str) -> Throttled | None:
        """Whether ``address`` already failed ``limit`` times this minute (then count the refusal)."""
        if address is None:
            return None
        try:
            raw = self.client.get(keys.auth_failures(address))
            if raw is None or int(raw) < self.limit:
                return None
            ttl = int(self.client.ttl(keys.auth_failures(address)))
        except redis.RedisError as exc:
            log.warning("auth_throttle_unavailable", error=type(exc).__name__)
            return None
        metrics.auth_throttled.labels(kind).inc()
        return Throttled(max(1, ttl if ttl > 0 else WINDOW_S))

    def failed(self, address: str | None, kind: str, request_id: str | None = None) -> int:
        """Count one failure of ``kind`` (``bearer``, ``sign_in``, ``link``); the address's count this minute
        (0 when it is unknown or Redis is unreachable). A failed sign-in (``sign_in``, ``link``) is
        audited, and so is the failure that reaches the limit."""
        metrics.auth_failures.labels(kind).inc()
        count = 0
        if address is not None:
            key = keys.auth_failures(address)
            try:
                with self.client.pipeline() as pipe:
                    pipe.set(key, 0, ex=WINDOW_S, nx=True)  # the window starts at the minute's first failure
                    pipe.incr(key)
                    count = int(pipe.execute()[1])
            except redis.RedisError as exc:
                log.warning("auth_throttle_unavailable", error=type(exc).__name__)
        actions = (["sign_in_failed"] if kind in ("sign_in", "link") else []) + (
            ["auth_throttled"] if count == self.limit else [])
        if actions:
            self._audit(actions, address, request_id, kind, count)
        return count

    def _audit(self, actions: list[str], address: str | None, request_id: str | None, kind: str, count: int) -> None:
        via = {"sign_in": "web", "link": "link"}.get(kind, kind)
        try:
            with db_session(self.database_url) as db:
                for action in actions:
                    detail = {"via": via, **({"failures": count} if action == "auth_throttled" else {})}
                    audit.record_anonymous(db, action, address, request_id, detail)
        except sqlalchemy.exc.SQLAlchemyError as exc:  # the refusal stands; the outage is the database's
            log.warning("auth_audit_failed", error=type(exc).__name__)
        if "auth_throttled" in actions:
            log.warning("auth_throttled", kind=kind, failures=count)


def too_many(throttled: Throttled) -> ApiError:
    """The 429 answer to a throttled address."""
    return ApiError(429, "too_many_failures", "too many failed sign-ins or tokens from your address in the last "
                    f"minute; try again in {throttled.retry_after_s} s",
                    {"retry-after": str(throttled.retry_after_s)})
