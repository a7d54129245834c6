"""A command that meets a database it cannot use says so in words, with exit code 2, not a traceback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys


def test_an_unreachable_database_is_said_in_words() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "VERBATIM_DATABASE_URL": f"postgresql+psycopg://postgres@127.0.0.1:{port}/test",
           "VERBATIM_REDIS_URL": "redis://127.0.0.1:6379/0", "COLUMNS": "200"}
    done = subprocess.run([sys.executable, "-m", "verbatim.cli", "sessions", "list"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "the database could not be reached" in done.stdout and "Traceback" not in done.stdout + done.stderr
