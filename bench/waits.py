"""One bounded wait for every bench: a condition polled until a deadline, which ends the bench with a message.

A bench that waits for ever measures nothing and hides the fault it met (``bench/recovery.py``
waited 20 min on a session that had parked): every wait names what it waited for and how long.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable


class BenchTimeout(SystemExit):
    """A bench wait ran out of time: the message says what never happened."""


def wait_until(condition: Callable[[], object], timeout_s: float, what: str, poll_s: float = 0.2) -> float:
    """Poll ``condition`` until it is true; return the seconds it took. Raises BenchTimeout after ``timeout_s``."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout_s:
            raise BenchTimeout(f"bench stopped: {what} did not happen within {timeout_s:.0f} s")
        time.sleep(poll_s)
    return time.monotonic() - started


def wait_exit(proc: subprocess.Popen[bytes], timeout_s: float, what: str) -> int:
    """Wait for a child process to exit; BenchTimeout (naming ``what``) if it has not after ``timeout_s``."""
    try:
        return proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        raise BenchTimeout(f"bench stopped: {what} did not exit within {timeout_s:.0f} s") from None
