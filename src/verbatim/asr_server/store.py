"""The local recognizer's durable job store: one folder per job on disk.

``<root>/<job id>/job.json`` (metadata, written atomically), ``audio`` (the submitted
file) and ``transcript.json`` (json-v2, once done). ``audio`` and ``transcript.json`` are
sealed (`verbatim.sealed`, AES-256-GCM): patient data is never on this disk in clear. A
restart loses no job: running jobs are found again and recognised anew. Deleted jobs
disappear (a second delete is a 404); expired jobs (``asr_job_ttl_s`` after they finished;
never while running) keep only a tombstone (HTTP 410).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from verbatim.sealed import KeyRing, read_sealed, write_sealed_atomic
from verbatim.storage import private_dir


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_iso(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(".tmp")
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as fh:
        json.dump(data, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class JobStore:
    """Thread-safe store of batch jobs under ``root``; ``ttl_s`` seconds until a job expires.

    ``keep_submissions``: log every submission's session reference (fault tests count them);
    off in service, where a lasting job → session list would outlive withdrawn sessions.
    """

    def __init__(self, root: Path, ttl_s: float, ring: KeyRing, *, keep_submissions: bool = False):
        self.root = root
        self.ring = ring
        self.keep_submissions = keep_submissions
        self.ttl = timedelta(seconds=ttl_s)
        self._lock = threading.RLock()
        private_dir(root)
        self._ledger = root / "submissions.log"

    def _dir(self, job_id: str) -> Path:
        if not job_id.isalnum():
            raise KeyError(job_id)
        return self.root / job_id

    def create(self, config: dict[str, Any], data_name: str, sealed_audio: Path) -> dict[str, Any]:
        """Take ownership of ``sealed_audio`` (a sealed file on this volume) as a new running job; returns it."""
        job_id = uuid.uuid4().hex[:20]
        folder = self._dir(job_id)
        folder.mkdir(mode=0o700)
        with open(sealed_audio, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(sealed_audio, folder / "audio")
        job = {
            "id": job_id, "created_at": now_iso(), "data_name": data_name, "status": "running",
            "config": config, "errors": [],
        }
        if "tracking" in config:
            job["tracking"] = config["tracking"]
        _write_json(folder / "job.json", job)
        if self.keep_submissions:
            with self._lock, open(self._ledger, "a") as fh:
                reference = (config.get("tracking") or {}).get("reference", "")
                fh.write(f"{job_id}\t{reference}\n")
        return job

    def get(self, job_id: str) -> dict[str, Any] | None:
        """Job metadata, or None if it never existed or was deleted. Expires it lazily."""
        try:
            path = self._dir(job_id) / "job.json"
        except KeyError:
            return None
        with self._lock:
            if not path.exists():
                return None
            job = json.loads(path.read_text())
            # A job expires ttl after it finished, never while it runs: a slow recognition (a
            # loaded machine, a long session) must not lose the job it is working on.
            finished = job.get("finished_at")
            if job["status"] not in ("expired", "running") and finished is not None \
                    and parse_iso(finished) + self.ttl < datetime.now(UTC):
                self.expire(job_id)
                job["status"] = "expired"
            return job

    def update(self, job_id: str, **fields: Any) -> dict[str, Any] | None:
        with self._lock:
            job = self.get(job_id)
            if job is None or job["status"] in ("expired",):
                return job
            job.update(fields)
            _write_json(self._dir(job_id) / "job.json", job)
            return job

    def audio_path(self, job_id: str) -> Path:
        return self._dir(job_id) / "audio"

    def save_transcript(self, job_id: str, results: list[dict[str, Any]], duration: float) -> None:
        """Store json-v2 results and mark the job done (unless it was deleted meanwhile)."""
        with self._lock:
            job = self.get(job_id)
            if job is None or job["status"] != "running":
                return
            write_sealed_atomic(self._dir(job_id) / "transcript.json", json.dumps(results).encode(), self.ring)
            self.update(job_id, status="done", duration=duration, finished_at=now_iso())
            self.audio_path(job_id).unlink(missing_ok=True)

    def reject(self, job_id: str, message: str) -> None:
        with self._lock:
            self.update(job_id, status="rejected", finished_at=now_iso(),
                        errors=[{"timestamp": now_iso(), "message": message}])
            self.audio_path(job_id).unlink(missing_ok=True)

    def transcript(self, job_id: str) -> list[dict[str, Any]] | None:
        path = self._dir(job_id) / "transcript.json"
        return json.loads(read_sealed(path, self.ring)) if path.exists() else None

    def delete(self, job_id: str) -> dict[str, Any] | None:
        """Remove the job entirely; None if it did not exist (a second delete)."""
        with self._lock:
            job = self.get(job_id)
            if job is None:
                return None
            shutil.rmtree(self._dir(job_id), ignore_errors=True)
            job["status"] = "deleted"
            return job

    def expire(self, job_id: str) -> None:
        """Drop the job's data and keep a tombstone: later reads answer 410."""
        with self._lock:
            folder = self._dir(job_id)
            path = folder / "job.json"
            if not path.exists():
                return
            job = json.loads(path.read_text())
            job["status"] = "expired"
            for name in ("audio", "transcript.json"):
                (folder / name).unlink(missing_ok=True)
            _write_json(path, job)

    def all(self) -> list[dict[str, Any]]:
        """Every job still listed (not deleted), newest first."""
        jobs = []
        for folder in self.root.iterdir():
            if folder.is_dir():
                job = self.get(folder.name)
                if job is not None:
                    jobs.append(job)
        return sorted(jobs, key=lambda j: j["created_at"], reverse=True)

    def submissions(self) -> dict[str, int]:
        """Tracking reference → number of jobs ever submitted with it (fault-test bookkeeping)."""
        counts: dict[str, int] = {}
        if self._ledger.exists():
            for line in self._ledger.read_text().splitlines():
                _, _, reference = line.partition("\t")
                counts[reference] = counts.get(reference, 0) + 1
        return counts
