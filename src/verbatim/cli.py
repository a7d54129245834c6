"""``verbatim`` command line (typer + rich). Run ``verbatim --help``."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from verbatim.cli_keys import keys_app
from verbatim.config import Settings, get_settings, load_settings
from verbatim.errors import VerbatimError
from verbatim.states import SessionStatus

if TYPE_CHECKING:
    from verbatim.stack import Stack

app = typer.Typer(help="Verbatim: therapy session recordings in, speaker-labelled transcripts out.",
                  no_args_is_help=True, pretty_exceptions_enable=False)
token_app = typer.Typer(help="Create and revoke API tokens.", no_args_is_help=True)
sessions_app = typer.Typer(help="Inspect and retry sessions (admin).", no_args_is_help=True)
app.add_typer(token_app, name="token")
app.add_typer(sessions_app, name="sessions")
clinic_app = typer.Typer(help="Clinic settings.", no_args_is_help=True)
app.add_typer(clinic_app, name="clinic")
app.add_typer(keys_app, name="keys")
console = Console()


def _stack_settings() -> Settings:
    """Settings whose missing URLs are taken from a running local stack's ``stack.env``."""
    from verbatim.stack import running_stack_env

    settings = get_settings()
    if not settings.database_url or not settings.redis_url:
        found = running_stack_env(settings.data_dir)
        settings = settings.model_copy(update={
            "database_url": settings.database_url or found.get("VERBATIM_DATABASE_URL"),
            "redis_url": settings.redis_url or found.get("VERBATIM_REDIS_URL"),
        })
    return settings


def _urls() -> tuple[str, str]:
    """(database URL, Redis URL): from the environment, else from a running local stack."""
    from verbatim.runtime import require_urls

    return require_urls(_stack_settings())


def _configure_logs() -> None:
    from verbatim.telemetry.logs import configure

    s = get_settings()
    configure(s.log_level, s.log_json)


@app.command()
def demo(
    files: Annotated[list[Path] | None, typer.Argument(help="Your own recordings (default: the samples)")] = None,
    client: Annotated[list[str] | None, typer.Option(help="Client id(s) for your recordings")] = None,
) -> None:
    """Start the whole stack, upload sessions, show progress, print transcripts, shut down."""
    from verbatim.demo import run_demo

    raise typer.Exit(run_demo(files or [], client or []))


@app.command()
def up() -> None:
    """Run the whole stack in the foreground (embedded servers when no URLs are set); Ctrl-C stops it."""
    from verbatim.stack import local_stack

    try:
        with local_stack(load_settings(), console.print) as stack:
            _serve(stack)
    except KeyboardInterrupt:
        console.print("stopped")


def _serve(stack: Stack) -> None:
    """Announce the stack, then keep it at full strength until Ctrl-C / SIGTERM."""
    try:
        console.print(f"Verbatim is up: API {stack.api_url} (docs at {stack.api_url}/docs); "
                      f"logs in {stack.log_dir}. Other `verbatim` commands run from this folder find it "
                      f"through {stack.env_file}. Ctrl-C to stop.")
        while True:
            time.sleep(1)
            for name in stack.respawn_exited():
                console.print(f"[yellow]{name} exited; restarted it[/yellow]")
    except KeyboardInterrupt:
        console.print("stopping (workers drain first)…")
        raise


@app.command()
def migrate() -> None:
    """Apply database migrations (safe when several processes run it at once)."""
    from verbatim.db.migrate import upgrade

    database_url, _ = _urls()
    upgrade(database_url, app_password=get_settings().db_app_password)
    console.print("database schema, roles and grants are up to date")


@app.command()
def api() -> None:
    """Serve the HTTP API (uvicorn) on VERBATIM_API_HOST:VERBATIM_API_PORT."""
    import uvicorn

    from verbatim.api.app import create_app

    _configure_logs()
    s = get_settings()
    s.refuse_default_secrets("api")
    # A bounded number of connections (more get 503 at once) and a short keep-alive: a client
    # holding connections open cannot starve the others.
    uvicorn.run(create_app(s), host=s.api_host, port=s.api_port, log_level="warning", timeout_graceful_shutdown=10,
                limit_concurrency=s.api_max_connections, timeout_keep_alive=5)


@app.command("asr-server")
def asr_server() -> None:
    """Serve the local Speechmatics-compatible recognizer on VERBATIM_ASR_HOST:VERBATIM_ASR_PORT."""
    import uvicorn

    from verbatim.asr_server.app import create_app

    s = get_settings()
    s.refuse_default_secrets("asr-server")
    uvicorn.run(create_app(s), host=s.asr_host, port=s.asr_port, log_level="warning", timeout_graceful_shutdown=5)


@app.command()
def worker(name: Annotated[str | None, typer.Option(
        help="Stable worker name (slot, e.g. capture-1; the identity is name@host). Two live processes never "
             "share one; a restarted worker recovers the runs its dead process held at once")] = None) -> None:
    """Run one capture worker (Celery, solo pool: one session per process)."""
    import os

    from verbatim.identity import WorkerIdentity, WorkerNameTaken, default_name, identity, recover

    # Before the settings are read (once per process): every run counted here records this name.
    ident = identity(name) if name else default_name()
    os.environ["VERBATIM_WORKER_NAME"] = ident
    get_settings.cache_clear()
    _configure_logs()
    s = get_settings()
    s.refuse_default_secrets("worker")
    database_url, redis_url = _urls()
    from verbatim.db.repo import Repo
    from verbatim.runtime import make_queue, redis_client
    from verbatim.telemetry import metrics

    client = redis_client(redis_url)
    held = WorkerIdentity(client, ident, s.worker_lease_ttl_s)
    try:
        held.claim()
    except WorkerNameTaken as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None
    # The name is ours, so its previous process is dead: its runs are due now, not a lease TTL later.
    queue = make_queue(s)
    for sid in recover(Repo(database_url).runs, client, ident):
        metrics.recoveries.labels(source="restart").inc()
        try:
            queue.enqueue(sid)
        except Exception:  # noqa: BLE001 - due now: the sweep queues it within a tick
            break
    from workers.app import app as celery

    try:
        celery.worker_main(
            ["worker", "--pool", "solo", "--concurrency", "1", "-Q", "capture", "-n", ident.split("@")[0] + "@%h",
             "--loglevel", "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat"]
        )
    finally:
        held.release()


@app.command("analysis-worker")
def analysis_worker(
    name: Annotated[str | None, typer.Option(help="Consumer name (default: host-pid-random)")] = None,
) -> None:
    """Run one reliability-analysis worker: consumes reliability:events (Redis Streams) until SIGTERM."""
    from verbatim.reliability.settings import get_reliability_settings
    from verbatim.reliability.worker import main as run_worker

    _configure_logs()
    database_url, redis_url = _urls()
    raise typer.Exit(run_worker(database_url, redis_url, get_reliability_settings(), consumer=name))


@app.command()
def sweeper() -> None:
    """Run the sweep process: due runs and the outbox every VERBATIM_SWEEP_TICK_S seconds, the periodic
    sweeps every VERBATIM_SWEEP_INTERVAL_S seconds, until SIGTERM or Ctrl-C."""
    import signal
    import threading

    from verbatim.pipeline.sweeps import run_forever
    from verbatim.runtime import build_context

    _configure_logs()
    get_settings().refuse_default_secrets("sweeper")
    _urls()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    ctx = build_context(get_settings())
    if ctx.settings.metrics_port:
        from prometheus_client import REGISTRY, start_http_server

        from verbatim.telemetry.ops import OpsCollector

        REGISTRY.register(OpsCollector(ctx.repo.url, ctx.redis))
        start_http_server(ctx.settings.metrics_port)
    run_forever(ctx, stop)


@app.command()
def upload(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, readable=True, help="The recording")],
    client: Annotated[list[str], typer.Option(help="Client id (repeat for couples/family)")],
    token: Annotated[str, typer.Option(envvar="VERBATIM_TOKEN", help="Bearer token")],
    api_url: Annotated[str | None, typer.Option(envvar="VERBATIM_API_URL", help="Default: the running stack's")]
    = None,
    session_type: Annotated[str | None, typer.Option(
        help="individual | couples | family | group (default: from the number of --client)")] = None,
    recorded_at: Annotated[datetime | None, typer.Option(
        help="When the session was recorded, with its UTC offset, e.g. 2026-11-30T10:00:00+01:00 "
        "(default: the file's modification time)",
        formats=["%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%d %H:%M:%S%z", "%Y-%m-%dT%H:%M%z"])] = None,
    consent_method: str = "verbal",
) -> None:
    """Upload a recording through the HTTP API and print the new session id."""
    from verbatim.client import ApiClient
    from verbatim.stack import running_stack_env

    url = api_url or running_stack_env(get_settings().data_dir).get("VERBATIM_API_URL", "http://127.0.0.1:8000")
    import httpx

    # Idempotency-Key: the file's digest and the session's parameters. Running the same upload again
    # returns the same session; the same file for other clients is another session.
    digest = hashlib.sha256()
    with open(file, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    recorded_at = recorded_at or datetime.fromtimestamp(file.stat().st_mtime, UTC)
    digest.update(json.dumps([client, session_type, recorded_at.isoformat()]).encode())
    try:
        with ApiClient(url, token) as c:
            session = c.upload(file, client, session_type=session_type, consent_method=consent_method,
                               idempotency_key=f"sha256-{digest.hexdigest()}", recorded_at=recorded_at)
    except httpx.HTTPStatusError as exc:
        console.print(f"[red]upload refused ({exc.response.status_code}):[/red] {exc.response.text}")
        raise typer.Exit(1) from exc
    except httpx.TransportError as exc:
        console.print(f"[red]cannot reach the API at {url}: {exc}[/red]")
        raise typer.Exit(1) from exc
    console.print(session["id"])


@app.command("deploy-drill")
def deploy_drill(
    sessions: Annotated[int, typer.Option(help="Sessions in flight during the restart")] = 20,
    drain: Annotated[float, typer.Option(help="Drain window of each worker, seconds")] = 2.0,
) -> None:
    """Rolling-restart the capture workers under load on a local stack; report what it cost."""
    from verbatim.drill import run_drill

    baseline, drilled = run_drill(sessions, drain_s=drain)
    table = Table("run", "sessions", "lost", "extra runs", "slowest (s)")
    for name, r in (("undisturbed", baseline), ("rolling restart", drilled)):
        table.add_row(name, str(r.sessions), str(r.sessions_lost), str(r.extra_runs), f"{r.slowest_s:.1f}")
    console.print(table)
    console.print(f"drain per worker (s): {', '.join(f'{d:.1f}' for d in drilled.drains_s)}")
    raise typer.Exit(1 if drilled.sessions_lost else 0)


@token_app.command("create")
def token_create(
    clinic: Annotated[str, typer.Option(help="Clinic name (created if new)")],
    therapist: Annotated[str | None, typer.Option(help="Therapist name (created if new)")] = None,
    scope: Annotated[str, typer.Option(help="therapist | clinic_admin | admin")] = "therapist",
    days: Annotated[float, typer.Option(help="Days until it expires", min=0.01, max=3650)] = 90,
) -> None:
    """Issue a bearer token and print it (it is stored hashed and never shown again); its id goes to
    stderr, for `verbatim token revoke <id>`."""
    from verbatim.auth import create_token, token_id

    database_url, _ = _urls()
    try:
        token = create_token(database_url, therapist=therapist, clinic=clinic, scope=scope, expires_in_days=days)
    except ValueError as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from exc
    print(token)
    print(f"token id (to revoke it): {token_id(database_url, token)}", file=sys.stderr)


@token_app.command("revoke")
def token_revoke(token_id: Annotated[uuid.UUID, typer.Argument(help="The token's id (printed by token create)")]
                 ) -> None:
    """Revoke a token by its id (never pass the clear token on a command line)."""
    from verbatim.auth import revoke

    database_url, _ = _urls()
    revoke(database_url, token_id)
    console.print("revoked")


@sessions_app.command("list")
def sessions_list(status: Annotated[SessionStatus | None, typer.Option(help="Only this status")] = None) -> None:
    """List sessions (most recently updated first), optionally by status."""
    from verbatim.admin import list_sessions
    from verbatim.durable.store import RunStore

    table = Table("status", "runs", "failure_code", "updated")
    table.add_column("id", no_wrap=True, min_width=36)
    database_url = _urls()[0]
    rows = list_sessions(database_url, status.value if status else None)
    runs = RunStore(database_url, "capture").counts([row.id for row in rows])
    for row in rows:
        table.add_row(row.status, str(runs.get(row.id, 0)), row.failure_code or "",
                      row.updated_at.strftime("%Y-%m-%d %H:%M"), str(row.id))
    console.print(table)


@sessions_app.command("show")
def sessions_show(session_id: uuid.UUID) -> None:
    """Show one session and its event log."""
    from verbatim.admin import show_session

    console.print_json(data=show_session(_urls()[0], session_id))


@sessions_app.command("retry")
def sessions_retry(session_id: uuid.UUID) -> None:
    """Retry a blocked session (after fixing the configuration): back to queued, then enqueued."""
    from verbatim.admin import retry_session

    _urls()
    retry_session(_stack_settings(), session_id)
    console.print(f"{session_id} queued again")


@clinic_app.command("retention")
def clinic_retention(
    clinic: Annotated[str, typer.Option(help="Clinic name")],
    days: Annotated[int | None, typer.Option(min=1, max=3650, help="Days a transcript is kept once ready; "
                                              "omit to use VERBATIM_TRANSCRIPT_RETENTION_DAYS")] = None,
) -> None:
    """Set how long the clinic's transcripts are kept once ready (the sweep deletes them after)."""
    from sqlalchemy import update

    from verbatim.db.engine import db_session
    from verbatim.db.models import Clinic

    database_url, _ = _urls()
    with db_session(database_url) as db:
        found = db.execute(update(Clinic).where(Clinic.name == clinic).values(transcript_retention_days=days)
                           .returning(Clinic.id)).one_or_none()
    if found is None:
        console.print(f"[red]no clinic named {clinic!r}[/red]")
        raise typer.Exit(2)
    console.print(f"{clinic}: transcripts kept {days or get_settings().transcript_retention_days} days once ready")


def main() -> None:
    # Everything any Verbatim process creates is its owner's alone (files 0600, folders 0700).
    os.umask(0o077)
    try:
        app()
    except VerbatimError as exc:
        console.print(f"[red]error:[/red] {exc}")
        sys.exit(2)


if __name__ == "__main__":
    main()
