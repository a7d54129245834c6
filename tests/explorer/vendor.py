"""An in-process recognizer that keeps the Speechmatics batch API's contract, for the explorer.

The real ``Recognizer`` (and under it the real ``speechmatics-batch`` client) talks to it: its
httpx client's transport is swapped for an ``httpx.MockTransport`` whose handler answers
``/v2/jobs`` as the API documents it (submit, status, transcript json-v2, delete, list with
``created_before``/``created_after``/``limit``), and 429/5xx on demand. A job's words come from
the script the explorer gave for its session (looked up by the job's tracking reference).
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from verbatim.recognizer.client import Recognizer

#: one turn of a scripted session: (speaker label the recognizer reports, its words)
Line = tuple[str, list[str]]


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse(value: str) -> datetime:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


@dataclass
class Job:
    id: str
    session: str
    created_at: datetime
    config: dict[str, Any]
    polls_left: int  #: status answers of "running" before it is done
    status: str = "running"


@dataclass
class FakeVendor:
    """The vendor's side: jobs, scripts per session id, and armed faults (HTTP codes for the next calls)."""

    scripts: dict[str, list[Line]] = field(default_factory=dict)
    jobs: dict[str, Job] = field(default_factory=dict)
    faults: list[int] = field(default_factory=list)
    polls: int = 0  #: how many "running" answers a new job gives before it is done
    clock: timedelta = timedelta()  #: the vendor's clock runs ahead with the explorer's time moves
    calls: int = 0

    def now(self) -> datetime:
        return datetime.now(UTC) + self.clock

    def install(self, recognizer: Recognizer) -> None:
        """Point ``recognizer``'s own httpx client at this vendor (nothing else of it changes)."""
        http = recognizer._client._transport._client  # noqa: SLF001 - the client builds its httpx client itself
        assert http is not None
        http._transport = httpx.MockTransport(self.handle)  # noqa: SLF001

    def jobs_of(self, session_id: uuid.UUID | str) -> list[Job]:
        return [j for j in self.jobs.values() if j.session == str(session_id)]

    # --- the API ---------------------------------------------------------------------
    def handle(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        if self.faults:
            code = self.faults.pop(0)
            return httpx.Response(code, json={"code": code, "error": "injected"},
                                  headers={"Retry-After": "0"} if code == 429 else {})
        path = request.url.path
        found = re.fullmatch(r".*/v2/jobs(?:/([^/]+))?(/transcript)?/?", path)
        if not found:
            return httpx.Response(404, json={"error": "no such route"})
        job_id, transcript = found.group(1), found.group(2)
        if request.method == "POST" and job_id is None:
            return self._submit(request)
        if request.method == "GET" and job_id is None:
            return self._list(request)
        job = self.jobs.get(job_id or "")
        if job is None:
            return httpx.Response(404, json={"code": 404, "error": "Job not found"})
        if job.status == "expired":
            return httpx.Response(410, json={"code": 410, "error": "Job expired"})
        if request.method == "DELETE":
            del self.jobs[job.id]
            return httpx.Response(200, json={"job": self._details(job)})
        if transcript:
            if job.status != "done":
                return httpx.Response(404, json={"code": 404, "error": "transcript not ready"})
            return httpx.Response(200, json=self._transcript(job))
        if job.status == "running":
            if job.polls_left <= 0:
                job.status = "done"
            job.polls_left -= 1
        return httpx.Response(200, json={"job": self._details(job)})

    def _submit(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        boundary = request.headers["content-type"].split("boundary=", 1)[1].encode()
        config: dict[str, Any] = {}
        for part in body.split(b"--" + boundary):
            head, _, content = part.partition(b"\r\n\r\n")
            if b'name="config"' in head:
                config = json.loads(content.rstrip(b"\r\n"))
        reference = str((config.get("tracking") or {}).get("reference", ""))
        job = Job(uuid.uuid4().hex[:16], reference, self.now(), config, self.polls)
        self.jobs[job.id] = job
        return httpx.Response(201, json={"id": job.id, "created_at": _iso(job.created_at)})

    def _list(self, request: httpx.Request) -> httpx.Response:
        q = request.url.params
        jobs = sorted(self.jobs.values(), key=lambda j: j.created_at, reverse=True)
        if q.get("created_before"):
            jobs = [j for j in jobs if j.created_at < _parse(q["created_before"])]
        if q.get("created_after"):
            jobs = [j for j in jobs if j.created_at > _parse(q["created_after"])]
        limit = int(q.get("limit", "100"))
        return httpx.Response(200, json={"jobs": [self._details(j) for j in jobs[:limit]]})

    def _details(self, job: Job) -> dict[str, Any]:
        return {"id": job.id, "created_at": _iso(job.created_at), "data_name": "audio", "status": job.status,
                "duration": 10, "config": job.config, "tracking": job.config.get("tracking"), "errors": []}

    def _transcript(self, job: Job) -> dict[str, Any]:
        results: list[dict[str, Any]] = []
        t = 0.0
        for label, words in self.scripts.get(job.session, []):
            for w in words:
                results.append({"type": "word", "start_time": round(t, 2), "end_time": round(t + 0.3, 2),
                                "alternatives": [{"content": w, "confidence": 0.95, "language": "en",
                                                  "speaker": label}]})
                t += 0.35
            results.append({"type": "punctuation", "start_time": round(t, 2), "end_time": round(t, 2),
                            "attaches_to": "previous", "is_eos": True,
                            "alternatives": [{"content": ".", "confidence": 1.0, "language": "en",
                                              "speaker": label}]})
            t += 1.5  # a pause between turns: each line is its own speaker turn
        return {"format": "2.9", "job": {"id": job.id, "created_at": _iso(job.created_at), "data_name": "audio",
                                         "duration": int(t) + 1, "tracking": job.config.get("tracking")},
                "metadata": {"created_at": _iso(self.now()), "type": "transcription",
                             "transcription_config": job.config.get("transcription_config", {})},
                "results": results}
