"""``verbatim asr-server``: the part of the Speechmatics batch API v2 our client uses.

Endpoints (under ``/v2``): ``POST /jobs`` (multipart ``config`` + ``data_file``),
``GET /jobs/{id}``, ``GET /jobs/{id}/transcript`` (json-v2, or ``?format=txt``),
``DELETE /jobs/{id}`` (``?force=true`` for running jobs), ``GET /jobs``
(``created_before``, ``limit``). Bearer API-key auth. Jobs are stored on disk
(``JobStore``) and recognised by pocketsphinx in a bounded process pool.
"""

from __future__ import annotations

import asyncio
import hmac
import multiprocessing
import os
import threading
import time
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import asynccontextmanager
from typing import Any

import structlog
from fastapi import Depends, FastAPI, Header, HTTPException, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse

from verbatim.api.errors import ApiError
from verbatim.api.upload import receive
from verbatim.asr_server.faults import Armed, FaultState
from verbatim.asr_server.notify import notify_later
from verbatim.asr_server.store import JobStore, now_iso, parse_iso
from verbatim.config import Settings
from verbatim.errors import AudioUnreadable, SealedDataError
from verbatim.sealed import KeyRing, load_ring

JSON_V2 = "2.9"
#: the transcript of every job in fixed-delay mode (``asr_fixed_delay_s``): one word, one speaker
FIXED_RESULTS: list[dict[str, Any]] = [{
    "type": "word", "start_time": 0.1, "end_time": 0.6,
    "alternatives": [{"content": "hello", "confidence": 1.0, "language": "en", "speaker": "S1"}],
}]
log = structlog.get_logger("verbatim.asr_server")


def _recognise(audio: str, config: dict[str, Any], ring: KeyRing) -> tuple[list[dict[str, Any]], float]:
    """Runs in a pool process: decode + recognise + diarize one file. Returns (results, duration s)."""
    from verbatim.asr_server.engine import transcribe
    from verbatim.audio import probe

    tc = config.get("transcription_config") or {}
    results = transcribe(
        audio,
        diarization=tc.get("diarization") or "none",
        max_speakers=int((tc.get("speaker_diarization_config") or {}).get("max_speakers", 2)),
        language=tc.get("language", "en"),
        ring=ring,
    )
    return results, probe(audio, ring=ring).duration_s


def _text(results: list[dict[str, Any]]) -> str:
    from verbatim.recognizer.turns import results_to_turns

    return "\n".join(f"SPEAKER {t['speaker']}: {t['text']}" for t in results_to_turns(results))


def create_app(settings: Settings) -> FastAPI:
    """The recognizer service app; jobs live under ``settings.asr_dir``."""
    from verbatim.asr_server.speaker_encoder import verify_encoder

    # A changed model file refuses to start, before any job is accepted.
    verify_encoder()
    if settings.asr_engine == "whisper":
        from verbatim.asr_server.whisper import verify_model

        verify_model()  # a changed model file refuses to start, before any job is accepted
    ring = load_ring(settings)
    store = JobStore(settings.asr_dir, settings.asr_job_ttl_s, ring, keep_submissions=settings.asr_faults)
    stopping = threading.Event()
    pool_lock = threading.Lock()
    attempts: dict[str, int] = {}

    def new_pool() -> ProcessPoolExecutor:
        # spawn: the pool must not inherit the server's threads and sockets.
        return ProcessPoolExecutor(settings.asr_workers, mp_context=multiprocessing.get_context("spawn"))
    faults = FaultState()
    held: list[str] = []
    pool: dict[str, ProcessPoolExecutor] = {}

    def start(job_id: str) -> None:
        job = store.get(job_id)
        if job is None or job["status"] != "running":
            return
        if settings.asr_fixed_delay_s is not None:
            # Test/bench mode: done a fixed delay after submission, no CPU work (also after a restart).
            due = parse_iso(job["created_at"]).timestamp() + settings.asr_fixed_delay_s - time.time()
            timer = threading.Timer(max(0.0, due), lambda: done(job_id, FIXED_RESULTS, 1.0))
            timer.daemon = True
            timer.start()
            return
        try:
            future = pool["p"].submit(_recognise, str(store.audio_path(job_id)), job["config"], ring)
        except (BrokenProcessPool, RuntimeError):
            if stopping.is_set():
                return  # shutting down: the job stays running on disk for the next start
            renew_pool()
            future = pool["p"].submit(_recognise, str(store.audio_path(job_id)), job["config"], ring)
        future.add_done_callback(lambda f: finish(job_id, f))

    def finish(job_id: str, future: Future[tuple[list[dict[str, Any]], float]]) -> None:
        try:
            results, duration = future.result()
        except AudioUnreadable as exc:
            # Only the audio itself can make a job fail: its data is all there is of the session.
            store.reject(job_id, f"audio could not be recognised: {exc}")
            notify(job_id, "rejected")
            return
        except (BrokenProcessPool, CancelledError):
            # The pool died (shutdown, a killed or OOM'd pool process): not the audio's fault. The job
            # stays `running` on disk; a live server recognises it again in a fresh pool, and a
            # restarting one finds it at start-up.
            if not stopping.is_set():
                log.warning("asr_pool_broken", job_id=job_id)
                renew_pool()
                start(job_id)
            return
        except SealedDataError as exc:
            # The job's sealed audio cannot be opened (a key this process cannot find, a damaged
            # disk): not the audio's fault, and the audio is all there is of the session — never
            # reject. The job stays running (the caller's deadline still applies) until fixed.
            log.error("asr_job_unreadable", job_id=job_id, error=str(exc))
            attempts[job_id] = attempts.get(job_id, 0) + 1
            if attempts[job_id] < 3 and not stopping.is_set():
                start(job_id)
            return
        except Exception as exc:  # noqa: BLE001 - an engine bug must not reject good audio either
            log.error("asr_recognition_error", job_id=job_id, error=type(exc).__name__)
            attempts[job_id] = attempts.get(job_id, 0) + 1
            if attempts[job_id] < 3 and not stopping.is_set():
                start(job_id)
            else:
                store.reject(job_id, f"recognition failed: {type(exc).__name__}")
                notify(job_id, "rejected")
            return
        done(job_id, results, duration)

    def done(job_id: str, results: list[dict[str, Any]], duration: float) -> None:
        store.save_transcript(job_id, results, duration)
        notify(job_id, "success")

    def notify(job_id: str, status: str) -> None:
        job = store.get(job_id)
        if job is not None and job["status"] != "running":
            notify_later(job, status)

    def renew_pool() -> None:
        with pool_lock:
            old = pool.get("p")
            if old is not None and not getattr(old, "_broken", False):
                return  # another callback already replaced it
            pool["p"] = new_pool()
        if old is not None:
            old.shutdown(wait=False, cancel_futures=False)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        pool["p"] = new_pool()
        for job in store.all():
            if job["status"] == "running":  # a restart loses no job: recognise it again
                start(job["id"])
        yield
        stopping.set()
        pool["p"].shutdown(wait=False, cancel_futures=True)

    # Production hides the service's map as the API does (VERBATIM_API_DOCS): an attacker inside the
    # network learns nothing from it, and the Speechmatics documentation describes the API.
    docs = settings.docs_enabled
    app = FastAPI(title="Verbatim local recognizer (Speechmatics batch API v2 subset)", lifespan=lifespan,
                  docs_url="/docs" if docs else None, redoc_url="/redoc" if docs else None,
                  openapi_url="/openapi.json" if docs else None)

    def auth(authorization: str | None = Header(None)) -> None:
        # Constant time: the comparison must not tell an attacker how much of a guess was right.
        if not hmac.compare_digest((authorization or "").encode(), f"Bearer {settings.asr_api_key}".encode()):
            raise HTTPException(401, "invalid API key")

    async def inject(kind: str) -> Response | None:
        if not settings.asr_faults:
            return None
        faults.count(kind)
        armed = faults.take(kind)
        if armed is None:
            return None
        if armed.mode == "timeout":
            await asyncio.sleep(armed.delay_s)
            return None
        if armed.mode == "no_job":
            return JSONResponse({})
        if armed.mode == "truncated":
            return Response(b'{"job": {"id": "', media_type="application/json")
        if armed.mode == "created":
            return None  # answered by the status endpoint itself
        headers = {"Retry-After": str(armed.retry_after_s)} if armed.retry_after_s is not None else {}
        return JSONResponse({"code": int(armed.mode), "error": "injected fault"}, int(armed.mode), headers=headers)

    def job_or_error(job_id: str) -> dict[str, Any]:
        job = store.get(job_id)
        if job is None:
            raise HTTPException(404, "job not found")
        if job["status"] == "expired":
            raise HTTPException(410, "job expired")
        return job

    v2 = "/v2"

    @app.post(v2 + "/jobs", status_code=201, dependencies=[Depends(auth)])
    async def submit(request: Request) -> Response:
        if (fault := await inject("submit")) is not None:
            return fault
        # Streamed and sealed chunk by chunk into the job store's folder: the audio is never in a
        # clear temporary file (a parsed form would spool it to /tmp).
        target = settings.asr_dir / f".{uuid.uuid4().hex}.upload"
        try:
            upload = await receive(request, target, settings.max_upload_bytes, ring, settings.upload_idle_s,
                                   parts=("data_file", "config"))
        except ApiError as exc:
            raise HTTPException(exc.status, exc.detail) from exc
        config = upload.metadata
        if settings.asr_faults:
            faults.last_config = config
        job = await asyncio.to_thread(store.create, config, os.path.basename(upload.filename or "audio"), target)
        if settings.asr_faults and faults.take_reject():
            store.reject(job["id"], "injected: audio rejected")
        elif settings.asr_faults and faults.hold:
            held.append(job["id"])
        else:
            start(job["id"])
        return JSONResponse({"id": job["id"], "created_at": job["created_at"]}, 201)

    @app.get(v2 + "/jobs/{job_id}", dependencies=[Depends(auth)])
    async def status(job_id: str) -> Response:
        if settings.asr_faults and (armed := faults.peek("status")) is not None and armed.mode == "created":
            faults.take("status")
            return JSONResponse({"job": {**job_or_error(job_id), "status": "created"}})
        if (fault := await inject("status")) is not None:
            return fault
        if settings.asr_faults and store.get(job_id) and faults.take_delete_on_poll():
            store.delete(job_id)
        return JSONResponse({"job": job_or_error(job_id)})

    @app.get(v2 + "/jobs/{job_id}/transcript", dependencies=[Depends(auth)])
    async def transcript(job_id: str, format: str = "json-v2") -> Response:  # noqa: A002 - API name
        if (fault := await inject("transcript")) is not None:
            return fault
        job = job_or_error(job_id)
        results = store.transcript(job_id) if job["status"] == "done" else None
        if results is None:
            raise HTTPException(404, "transcript not ready")
        if format == "txt":
            return PlainTextResponse(_text(results))
        info = {k: job.get(k) for k in ("id", "created_at", "data_name", "duration", "tracking") if k in job}
        return JSONResponse(
            {
                "format": JSON_V2,
                "job": info,
                "metadata": {
                    "created_at": now_iso(),
                    "type": "transcription",
                    "transcription_config": job["config"].get("transcription_config", {}),
                },
                "results": results,
            }
        )

    @app.delete(v2 + "/jobs/{job_id}", dependencies=[Depends(auth)])
    async def delete(job_id: str, force: bool = False) -> Response:
        if (fault := await inject("delete")) is not None:
            return fault
        job = store.get(job_id)
        if job is None:
            raise HTTPException(404, "job not found")
        if job["status"] == "running" and not force:
            raise HTTPException(423, "job is running; pass force=true")
        return JSONResponse({"job": store.delete(job_id)})

    @app.get(v2 + "/jobs", dependencies=[Depends(auth)])
    async def list_jobs(created_before: str | None = None, created_after: str | None = None,
                        limit: int = 100) -> Response:
        if (fault := await inject("list")) is not None:
            return fault
        jobs = store.all()
        if created_before:
            cutoff = parse_iso(created_before)
            jobs = [j for j in jobs if parse_iso(j["created_at"]) < cutoff]
        if created_after:
            since = parse_iso(created_after)
            jobs = [j for j in jobs if parse_iso(j["created_at"]) > since]
        cap = faults.page_max if settings.asr_faults and faults.page_max else 10000
        return JSONResponse({"jobs": jobs[: max(1, min(limit, cap))]})

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    if settings.asr_faults:
        _fault_routes(app, faults, store, held, start)
    return app


def _fault_routes(app: FastAPI, faults: FaultState, store: JobStore, held: list[str], start: Any) -> None:
    @app.post("/_faults/fail")
    async def fail(body: dict[str, Any]) -> dict[str, str]:
        faults.arm(body.get("kind", "any"), Armed(str(body["mode"]), int(body.get("count", 1)),  # type: ignore[arg-type]
                                                  body.get("retry_after_s"), float(body.get("delay_s", 0))))
        return {"armed": "ok"}

    @app.post("/_faults/reject_next")
    async def reject_next(body: dict[str, Any]) -> dict[str, int]:
        faults.reject_next = int(body.get("count", 1))
        return {"reject_next": faults.reject_next}

    @app.post("/_faults/hold")
    async def hold(body: dict[str, Any]) -> dict[str, bool]:
        faults.hold = bool(body.get("hold", True))
        if not faults.hold:
            while held:
                start(held.pop(0))
        return {"hold": faults.hold}

    @app.post("/_faults/page_max")
    async def page_max(body: dict[str, Any]) -> dict[str, int | None]:
        faults.page_max = int(body["jobs"]) if body.get("jobs") else None
        return {"page_max": faults.page_max}

    @app.post("/_faults/delete_on_poll")
    async def delete_on_poll(body: dict[str, Any]) -> dict[str, int]:
        faults.delete_on_poll = int(body.get("count", 1))
        return {"delete_on_poll": faults.delete_on_poll}

    @app.post("/_faults/jobs/{job_id}/expire")
    async def expire(job_id: str) -> dict[str, str]:
        store.expire(job_id)
        return {"expired": job_id}

    @app.post("/_faults/reset")
    async def reset() -> dict[str, str]:
        faults.reset()
        while held:
            start(held.pop(0))
        return {"reset": "ok"}

    @app.get("/_faults/last_config")
    async def last_config() -> dict[str, Any]:
        return faults.last_config

    @app.get("/_faults/requests")
    async def requests() -> dict[str, int]:
        return faults.requests_seen()

    @app.get("/_faults/submissions")
    async def submissions() -> dict[str, int]:
        return store.submissions()
