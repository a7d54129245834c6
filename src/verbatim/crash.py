"""Named crash points for fault tests: inert unless ``VERBATIM_CRASH_POINT`` names one.

``crash_point("after_submit")`` SIGKILLs this process when the setting names that point —
once: the first hit creates ``VERBATIM_CRASH_MARKER`` (when set), and later hits see it and
pass. Production never sets either variable.
"""

from __future__ import annotations

import os
import signal

from verbatim.config import get_settings

POINTS = (
    "after_submit",  # vendor job created, job id not yet saved
    "after_job_saved",  # job id committed, our audio not yet deleted
    "mid_poll",  # waiting for the vendor
    "after_turns_fetched",  # turns in memory, checkpoint not yet written
    "after_checkpoint",  # checkpoint committed, vendor copy not yet deleted
    "mid_vendor_delete",  # the outbox is deleting the vendor copy (checkpoint committed)
    "after_failure_recorded",  # failure committed, its clean-up (vendor, audio, webhook) not yet tried
    "mid_polish",  # model passes running
    "after_publish",  # transcript committed, lease not yet released
    "mid_key_rotate",  # `verbatim keys rotate` re-sealed one file, others still under the old key
    "after_note_section_2",  # a note run checkpointed its second section (any n: after_note_section_{n})
)


def crash_point(name: str) -> None:
    """SIGKILL the current process if the crash hook is armed for ``name`` (tests only)."""
    settings = get_settings()
    if settings.crash_point != name:
        return
    marker = settings.crash_marker
    if marker is not None:
        try:
            # O_EXCL: exactly one process fires, however many reach the point.
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return
        os.close(fd)
    os.kill(os.getpid(), signal.SIGKILL)
