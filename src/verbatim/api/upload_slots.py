"""A cap on the uploads one token sends at once (security issue, item 6).

A multipart upload or a tus PATCH holds a connection, a ``.part`` file and a slot of
``api_max_connections`` for as long as its body flows; one token opening dozens at once can
take the API from everyone else. ``UploadSlots`` counts, per token, the upload bodies being
received by this API process; past ``max_concurrent_uploads`` the next is answered 429 before
any byte is read. Per process: every upload of a connection is served by one process, and a
count in Redis would outlive a killed process.

Why our own code: a counter on the event loop (the upload routes are async, so increments
never race), a few lines; no library counts per authenticated principal.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from verbatim.api.errors import ApiError


class UploadSlots:
    """At most ``limit`` concurrent upload bodies per token id (this process)."""

    def __init__(self, limit: int):
        self.limit = limit
        self._open: Counter[uuid.UUID] = Counter()

    @contextmanager
    def hold(self, token_id: uuid.UUID) -> Iterator[None]:
        """One slot for the duration of the block; ApiError 429 ``too_many_concurrent_uploads`` when none is free."""
        if self._open[token_id] >= self.limit:
            raise ApiError(429, "too_many_concurrent_uploads",
                           f"this token already sends {self.limit} uploads at once; wait for one to finish")
        self._open[token_id] += 1
        try:
            yield
        finally:
            self._open[token_id] -= 1
            if not self._open[token_id]:
                del self._open[token_id]
