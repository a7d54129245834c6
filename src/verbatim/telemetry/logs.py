"""Structured JSON logs. Events carry session id and run number — never transcript text,
client names or audio file names (``scrub`` drops such keys if one slips in)."""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

FORBIDDEN_KEYS = frozenset({"text", "transcript", "client_ids", "client_name", "filename", "audio_path"})
#: libraries whose own INFO/DEBUG lines can carry patient words: fontTools' subsetter lists the
#: glyphs a PDF uses (a CJK name, letter by letter); pdf and image libraries echo content likewise
QUIET_LIBRARIES = ("fontTools", "fpdf", "PIL", "pypdf")


def scrub(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """structlog processor: redact keys that could carry patient data."""
    for key in FORBIDDEN_KEYS & event.keys():
        event[key] = "[redacted]"
    return event


class _StderrPrinter:
    """Writes each event line to whatever ``sys.stderr`` is *now* (it may be swapped after start-up)."""

    def msg(self, message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    log = debug = info = warn = warning = error = critical = exception = fatal = msg


def configure(level: str = "INFO", json_output: bool = True) -> None:
    """Configure structlog and the stdlib root logger once per process."""
    logging.basicConfig(stream=sys.stderr, level=level, format="%(message)s", force=True)
    for name in QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(logging.WARNING)
    renderer: Any = structlog.processors.JSONRenderer() if json_output else structlog.dev.ConsoleRenderer()
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            scrub,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level)),
        logger_factory=lambda *_: _StderrPrinter(),
        cache_logger_on_first_use=True,
    )
