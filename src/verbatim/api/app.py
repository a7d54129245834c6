"""The HTTP API (FastAPI): ``/v1`` endpoints, the clinicians' pages at ``/app``, OpenAPI at ``/docs``,
``/healthz``, ``/readyz``, ``/metrics``."""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Metric, generate_latest
from sqlalchemy import text

from verbatim import web
from verbatim.api import errors
from verbatim.api.admin import router as admin_router
from verbatim.api.audit_log import router as audit_router
from verbatim.api.body_gate import BodyGate
from verbatim.api.break_glass import router as break_glass_router
from verbatim.api.callbacks import router as callbacks_router
from verbatim.api.clinic_staff import router as clinic_staff_router
from verbatim.api.deps import Services
from verbatim.api.early_close import CloseOnUnreadBody
from verbatim.api.guessing import Guessing
from verbatim.api.notes import router as notes_router
from verbatim.api.recordings import router as recordings_router
from verbatim.api.request_id import RequestId
from verbatim.api.security_headers import SecurityHeaders
from verbatim.api.segments import router as segments_router
from verbatim.api.session_metadata import SessionMetadata
from verbatim.api.sessions import router as sessions_router
from verbatim.api.tus import OPENAPI_TAG as TUS_TAG
from verbatim.api.tus import router as tus_router
from verbatim.api.upload_slots import UploadSlots
from verbatim.config import Settings
from verbatim.db.engine import dispose_all, engine
from verbatim.db.repo import Repo
from verbatim.reliability.api import router as reliability_router
from verbatim.resumable import ResumableUploads
from verbatim.runtime import make_cleanup, make_queue, make_recognizer, redis_client, require_urls
from verbatim.storage import AudioVolume
from verbatim.telemetry.metrics import WORKER_ONLY


def create_app(settings: Settings) -> FastAPI:
    """Build the API app; connections are made in its lifespan (per process), not here."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        database_url, redis_url = require_urls(settings)
        client = redis_client(redis_url)
        repo = Repo(database_url, webhooks=bool(settings.webhook_url))
        volume = AudioVolume.from_settings(settings)
        recognizer = make_recognizer(settings)
        app.state.services = Services(
            settings=settings,
            repo=repo,
            redis=client,
            queue=make_queue(settings),
            volume=volume,
            uploads=ResumableUploads(settings.tus_dir, settings.tus_expiry_s, volume.ring),
            cleanup=make_cleanup(settings, repo, recognizer, volume, client),
            upload_slots=UploadSlots(settings.max_concurrent_uploads),
            guessing=Guessing(client, settings.auth_failures_per_min, database_url),
        )
        yield
        recognizer.close()
        client.close()
        dispose_all()

    app = FastAPI(
        title="Verbatim",
        description="Therapy session recordings in, speaker-labelled transcripts out.",
        version="0.1.0",
        openapi_tags=[TUS_TAG],
        lifespan=lifespan,
        # Production hides the API's map (a setting): docs are for developers and integrators.
        # /docs itself is served from local Swagger UI files by verbatim.web (no CDN).
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json" if settings.docs_enabled else None,
    )
    _publish_upload_schemas(app)
    errors.install(app)
    # Order: the last added runs first. CloseOnUnreadBody must see every early answer the gate gives.
    app.add_middleware(BodyGate, database_url=lambda: app.state.services.repo.url, idle_s=settings.upload_idle_s,
                       web_idle_s=settings.web_idle_s, guessing=lambda: app.state.services.guessing)
    app.add_middleware(CloseOnUnreadBody)
    app.add_middleware(RequestId)
    app.add_middleware(SecurityHeaders)
    app.include_router(sessions_router)
    app.include_router(reliability_router)
    app.include_router(tus_router)
    app.include_router(recordings_router)
    app.include_router(admin_router)
    app.include_router(audit_router)
    app.include_router(break_glass_router)
    app.include_router(callbacks_router)
    app.include_router(notes_router)
    app.include_router(clinic_staff_router)
    app.include_router(segments_router)
    web.install(app, settings)

    @app.get("/healthz", tags=["ops"])
    def healthz() -> dict[str, str]:
        """The process is up."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["ops"])
    def readyz(response: Response) -> dict[str, str]:
        """PostgreSQL and Redis answer (503 otherwise)."""
        svc: Services = app.state.services
        checks = {}
        try:
            with engine(svc.repo.url).connect() as conn:
                conn.execute(text("SELECT 1"))
            checks["postgres"] = "ok"
        except Exception as exc:  # noqa: BLE001
            checks["postgres"] = type(exc).__name__
        try:
            svc.redis.ping()
            checks["redis"] = "ok"
        except Exception as exc:  # noqa: BLE001
            checks["redis"] = type(exc).__name__
        if any(v != "ok" for v in checks.values()):
            response.status_code = 503
        return checks

    @app.get("/metrics", tags=["ops"], include_in_schema=False)
    def metrics(request: Request) -> Response:
        """Prometheus metrics: open in development; in production only with VERBATIM_METRICS_TOKEN (404 else)."""
        token = settings.metrics_token
        if token is None and not settings.development:
            return Response(status_code=404)
        if token is not None:
            sent = request.headers.get("authorization", "")
            if not hmac.compare_digest(sent.encode(), f"Bearer {token}".encode()):
                return Response(status_code=401, headers={"www-authenticate": "Bearer"})
        return Response(generate_latest(_ApiMetrics()), media_type=CONTENT_TYPE_LATEST)

    return app


def _publish_upload_schemas(app: FastAPI) -> None:
    """Add ``SessionMetadata`` (and what it refers to) to the OpenAPI document's components: the upload
    reads its body itself (two body types on one path), so FastAPI would not publish the schema a
    phone developer generates a client from."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = build()
            schema = SessionMetadata.model_json_schema(ref_template="#/components/schemas/{model}")
            components = doc.setdefault("components", {}).setdefault("schemas", {})
            components.update(schema.pop("$defs", {}))
            components["SessionMetadata"] = schema
            app.openapi_schema = doc
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


class _ApiMetrics:
    """The default registry without the worker-only families (``metrics.WORKER_ONLY``)."""

    def collect(self) -> Iterator[Metric]:
        return (m for m in REGISTRY.collect() if m.name not in WORKER_ONLY)
