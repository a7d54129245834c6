"""How uvicorn serves the API: the options ``verbatim api`` (and the tests' live server) run with."""

from __future__ import annotations

from typing import Any

from verbatim.api.header_timeout import header_timeout_protocol
from verbatim.config import Settings


def server_options(s: Settings) -> dict[str, Any]:
    """Keyword arguments for ``uvicorn.run``/``uvicorn.Config`` beside the app, host and port.

    A bounded number of connections (more get 503 at once), a short keep-alive and a deadline on
    each request's head (``header_timeout_s``): a client holding connections open — idle, or
    trickling half-sent headers — cannot starve the others.

    The client's address (audit rows, the guessing throttle) is the connection's unless it comes from
    one of ``trusted_proxies``: uvicorn's default trusts ``X-Forwarded-For`` from 127.0.0.1, which a
    sidecar or any local process could forge.
    """
    proxies = [p.strip() for p in s.trusted_proxies.split(",") if p.strip()]
    return {
        "proxy_headers": bool(proxies),
        "forwarded_allow_ips": proxies or [],
        "limit_concurrency": s.api_max_connections,
        "timeout_keep_alive": 5,
        "http": header_timeout_protocol(s.header_timeout_s),
    }
