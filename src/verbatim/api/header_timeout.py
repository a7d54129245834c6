"""Close a connection whose request line and headers do not arrive within a deadline.

uvicorn (0.54, h11; httptools is not installed) has no header read timeout: its only timer is
the keep-alive one, armed after a response and cancelled by the next byte received. A fresh
connection that sends nothing, or half its headers, or one header byte every few seconds
(slowloris), is held open forever — and counts against ``limit_concurrency`` until honest clients get 503.

Why our own code: uvicorn offers no such setting, and a reverse proxy cannot be assumed in
front of every deployment. The smallest measure inside the server is this subclass of
uvicorn's h11 protocol (passed as ``uvicorn.run(http=…)``): one timer per request, armed when
a connection opens or when the first byte of a new request arrives, cancelled once h11 has
parsed the whole head (the client's state leaves IDLE). On expiry the transport is closed
without an answer: h11 cannot answer a request it has not parsed. A total deadline, not an
idle one, so trickling bytes does not extend it. Bodies have their own idle timeouts
(``upload_idle_s``, tus).
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


class HeaderTimeoutH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline of ``header_timeout_s`` seconds for each request's head."""

    header_timeout_s: float = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        # A byte of a new request while none is being read: the head's deadline starts now (the
        # keep-alive timer that the superclass cancels no longer guards this connection).
        if self.conn.their_state is h11.IDLE:
            self._arm()
        super().data_received(data)

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is not h11.IDLE:
            self._disarm()  # the head is in: the app (and its body timeouts) take over
        elif self.conn.trailing_data[0]:
            # Part of the next head arrived while the previous response was still going out (h11
            # held it until the cycle restarted): its deadline runs from now.
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout_s, self._expired)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _expired(self) -> None:
        self._header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def header_timeout_protocol(header_timeout_s: float) -> type[HeaderTimeoutH11Protocol]:
    """The protocol class for ``uvicorn.run(http=…)`` with this deadline (seconds, > 0)."""
    return type("HeaderTimeoutH11Protocol", (HeaderTimeoutH11Protocol,), {"header_timeout_s": header_timeout_s})
