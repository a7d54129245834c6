"""What the outbox's items do for a capture pipeline: delete vendor jobs and files, send webhooks.

Every handler makes one attempt (no retry loop of its own: the outbox retries, with backoff,
every sweep tick) and raises when the item is not done yet. A vendor job already gone counts
as deleted; a file already gone counts as deleted.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from pathlib import Path

import redis
import structlog

from verbatim.crash import crash_point
from verbatim.db.repo import Repo
from verbatim.durable import outbox
from verbatim.durable.outbox import DeliveryReport, Handler, Outbox, Pending
from verbatim.pipeline.notify import Notifier
from verbatim.recognizer.client import Recognizer
from verbatim.storage import AudioVolume

log = structlog.get_logger("verbatim.cleanup")


class Cleanup:
    """Outbox handlers over one process's recognizer, volume and notifier."""

    def __init__(self, repo: Repo, box: Outbox, recognizer: Recognizer, volume: AudioVolume, notifier: Notifier,
                 client: redis.Redis | None = None):
        self.redis = client
        self.repo = repo
        self.outbox = box
        self.recognizer = recognizer
        self.volume = volume
        self.notifier = notifier

    def handlers(self) -> dict[str, Handler]:
        return {
            outbox.VENDOR_DELETE: self._vendor_delete,
            outbox.VENDOR_DELETE_TAGGED: self._vendor_delete_tagged,
            outbox.FILE_DELETE: self._file_delete,
            outbox.REDIS_DELETE: self._redis_delete,
            outbox.WEBHOOK: self._webhook,
        }

    def deliver(self, limit: int = 100) -> DeliveryReport:
        """One pass over every due item (the sweep process, each tick)."""
        return self.outbox.deliver(self.handlers(), limit=limit)

    def now(self, session_id: uuid.UUID, kinds: Iterable[str] | None = None) -> None:
        """Try a session's due items (optionally only some kinds) at once, best effort: whatever fails
        or is left waits for the sweep process."""
        try:
            self.outbox.deliver(self.handlers(), session_id=session_id, kinds=kinds)
        except Exception as exc:  # noqa: BLE001 - the outbox keeps every item; the sweep retries
            log.warning("outbox_deliver_now_failed", session_id=str(session_id), error=type(exc).__name__)

    # --- handlers -----------------------------------------------------------------------
    def _vendor_delete(self, item: Pending) -> None:
        job_id = str(item.payload["job_id"])
        crash_point("mid_vendor_delete")
        self.recognizer.delete(job_id, once=True)
        self.repo.mark_vendor_deleted(job_id, str(item.payload.get("reason", "cleanup")))

    def _vendor_delete_tagged(self, item: Pending) -> None:
        assert item.session_id is not None
        for job in self.recognizer.list_jobs(once=True):
            if job.session_id == item.session_id:
                self.recognizer.delete(job.job_id, once=True)
                self.repo.mark_vendor_deleted(job.job_id, str(item.payload.get("reason", "cleanup")))

    def _file_delete(self, item: Pending) -> None:
        path = Path(str(item.payload["path"]))
        # Only recordings on our volume: an item never names anything else, and never will.
        if path.resolve().parent != self.volume.audio_dir.resolve():
            raise ValueError(f"refusing to delete {path}: not a recording on the audio volume")
        # Under the item's lock: a resubmission from this file cancels the delete in its own
        # fenced write, and must never find the file gone after that write committed.
        with self.outbox.still_pending(item) as pending:
            if pending:
                self.volume.delete(path)

    def _redis_delete(self, item: Pending) -> None:
        keys = [str(k) for k in item.payload.get("keys", [])]
        # Only keys of this session: an item never names another's.
        if item.session_id is None or not all(k.endswith(str(item.session_id)) for k in keys):
            raise ValueError("refusing to delete Redis keys that are not this session's")
        if keys:
            if self.redis is None:
                raise RuntimeError("no Redis client in this process")
            self.redis.delete(*keys)

    def _webhook(self, item: Pending) -> None:
        self.notifier.deliver(item.payload, item.delivery_id)
