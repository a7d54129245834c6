"""The recognizer's job notification: ``POST /v1/recognizer/callbacks/{submission}``.

Each submission asks the vendor (Speechmatics ``notification_config``) to POST here when its
job finishes, with the job id and status as query parameters (``?id=…&status=…``) and a
per-submission secret in ``X-Verbatim-Callback-Secret``. The route is outside bearer-token
authentication (``BodyGate.OPEN_ROUTES``, with its own 16 KiB body cap); the secret is the
proof. Only its SHA-256 is stored, compared in constant time.

A valid first notification makes the parked session due now and queues a run; the run then
asks the vendor itself (the notification is a hint, never trusted for the job's state).
Answers: 202 accepted; 401 no secret; 403 wrong secret or a job id that is not this
submission's; 404 unknown submission (or one that asked for no notification); 409 a replay.
Every 4xx changes nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from typing import Annotated

import structlog
from fastapi import APIRouter, Header, Query
from sqlalchemy import func, select, update

from verbatim import audit
from verbatim.api.deps import ServicesDep
from verbatim.api.errors import ApiError
from verbatim.db.engine import db_session
from verbatim.db.models import VendorSubmission

log = structlog.get_logger("verbatim.callbacks")

router = APIRouter(prefix="/v1/recognizer", tags=["recognizer"])


@router.post("/callbacks/{submission_id}", status_code=202)
def job_notified(
    submission_id: str,
    svc: ServicesDep,
    secret: Annotated[str | None, Header(alias="X-Verbatim-Callback-Secret")] = None,
    job_id: Annotated[str | None, Query(alias="id", max_length=100)] = None,
    status: Annotated[str | None, Query(max_length=40)] = None,
) -> dict[str, str]:
    """Accept the recognizer's "job finished" notification for one submission (see the module docstring)."""
    if not secret:
        raise ApiError(401, "unauthorized", "send the submission's secret in X-Verbatim-Callback-Secret")
    try:
        sub_id = uuid.UUID(submission_id)
    except ValueError:
        raise ApiError(404, "not_found", "no submission with this id asked for a notification") from None
    offered = hashlib.sha256(secret.encode()).digest()
    with db_session(svc.repo.url) as db:
        row = db.execute(
            select(VendorSubmission.session_id, VendorSubmission.vendor_job_id,
                   VendorSubmission.callback_secret_sha256, VendorSubmission.notified_at)
            .where(VendorSubmission.id == sub_id).with_for_update()
        ).one_or_none()
        if row is None or row.callback_secret_sha256 is None:
            raise ApiError(404, "not_found", "no submission with this id asked for a notification")
        if not hmac.compare_digest(offered, row.callback_secret_sha256):
            raise ApiError(403, "forbidden", "the secret does not match this submission")
        if job_id is not None and row.vendor_job_id is not None and job_id != row.vendor_job_id:
            raise ApiError(403, "forbidden", "this job is not the submission's job")
        if row.notified_at is not None:
            raise ApiError(409, "already_notified", "this submission's notification was already received")
        db.execute(update(VendorSubmission).where(VendorSubmission.id == sub_id).values(notified_at=func.now()))
        # Same transaction: a parked session is due now; a run in flight will park due now.
        svc.repo.runs.poke(db, row.session_id)
        audit.record_system(db, "recognizer_notified", row.session_id, detail={"status": status})
    try:
        svc.queue.enqueue(row.session_id)
    except Exception as exc:  # noqa: BLE001 - the due time set above brings the session back
        log.warning("callback_enqueue_failed", session_id=str(row.session_id), error=type(exc).__name__)
    return {"status": "accepted"}
