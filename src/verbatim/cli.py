"""``verbatim`` command line (typer + rich). Run ``verbatim --help``."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from verbatim.cli_keys import keys_app
from verbatim.config import Settings, get_settings, load_settings
from verbatim.errors import VerbatimError

if TYPE_CHECKING:
    from verbatim.client import ApiClient
    from verbatim.stack import Stack

app = typer.Typer(help="Verbatim: therapy session recordings in, speaker-labelled transcripts out.",
                  no_args_is_help=True, pretty_exceptions_enable=False)
token_app = typer.Typer(help="Create and revoke API tokens.", no_args_is_help=True)
sessions_app = typer.Typer(help="Inspect and retry sessions (admin).", no_args_is_help=True)
app.add_typer(token_app, name="token")
app.add_typer(sessions_app, name="sessions")
runs_app = typer.Typer(help="Every unfinished run of every kind, with its state (ops; no patient data).",
                       no_args_is_help=True)
app.add_typer(runs_app, name="runs")
notes_app = typer.Typer(help="Clinical notes: draft, show, sign, export (through the HTTP API).",
                        no_args_is_help=True)
app.add_typer(notes_app, name="notes")
clinic_app = typer.Typer(help="Clinic settings.", no_args_is_help=True)
app.add_typer(clinic_app, name="clinic")
app.add_typer(keys_app, name="keys")
console = Console()
#: Seconds uvicorn lets open requests finish after SIGTERM: the API's and the recognizer's (both sit
#: inside their pods' terminationGracePeriodSeconds, deploy/k8s).
API_GRACEFUL_SHUTDOWN_S = 10
ASR_GRACEFUL_SHUTDOWN_S = 5


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


def page_banner(database_url: str, api_url: str, link_s: float, therapist: str = "Local Therapist",
                clinic: str = "Local Clinic") -> str:
    """The pages' address and a one-time sign-in link for a therapist token made for it (1 day)."""
    from verbatim.auth import create_token, token_id
    from verbatim.web.store import sign_in_link

    token = create_token(database_url, therapist=therapist, clinic=clinic, expires_in_days=1)
    link = sign_in_link(database_url, token_id(database_url, token), api_url, link_s)
    return (f"Clinicians' pages: {api_url}/app — sign in as {therapist} with this one-time link "
            f"(valid {link_s / 60:.0f} min): {link}")


def _serve(stack: Stack) -> None:
    """Announce the stack, then keep it at full strength until Ctrl-C / SIGTERM."""
    try:
        console.print(f"Verbatim is up: API {stack.api_url} (docs at {stack.api_url}/docs); "
                      f"logs in {stack.log_dir}. Other `verbatim` commands run from this folder find it "
                      f"through {stack.env_file}. Ctrl-C to stop.")
        console.print(f"Ops gauges (Prometheus, the sweep process's): {stack.metrics_url}")
        console.print(page_banner(stack.servers.database_url, stack.api_url, stack.settings.sign_in_link_s))
        while True:
            time.sleep(1)
            # Servers first: a child that exits while its server is down comes back to a live one.
            for said in stack.servers.revive_dead():
                console.print(f"[yellow]{escape(said)}[/yellow]")
            for name in stack.respawn_exited():
                console.print(f"[yellow]{name} exited; restarted it[/yellow]")
    except KeyboardInterrupt:
        console.print("stopping (workers drain first)…")
        raise


@app.command()
def migrate() -> None:
    """Apply database migrations (safe when several processes run it at once).

    Needs only VERBATIM_DATABASE_URL, an administrator's (a Kubernetes migrate Job carries no Redis URL)."""
    from verbatim.db.migrate import upgrade
    from verbatim.errors import ConfigError

    database_url = _stack_settings().database_url
    if not database_url:
        raise ConfigError("VERBATIM_DATABASE_URL must be set for `verbatim migrate` (an administrator's URL: "
                          "the running processes connect as verbatim_app)")
    upgrade(database_url, app_password=get_settings().db_app_password)
    console.print("database schema, roles and grants are up to date")


@app.command()
def api() -> None:
    """Serve the HTTP API (uvicorn) on VERBATIM_API_HOST:VERBATIM_API_PORT."""
    import uvicorn

    from verbatim.api.app import create_app
    from verbatim.api.serve import server_options

    _configure_logs()
    s = get_settings()
    s.refuse_default_secrets("api")
    uvicorn.run(create_app(s), host=s.api_host, port=s.api_port, log_level="warning",
                timeout_graceful_shutdown=API_GRACEFUL_SHUTDOWN_S,
                **server_options(s))


@app.command("asr-server")
def asr_server() -> None:
    """Serve the local Speechmatics-compatible recognizer on VERBATIM_ASR_HOST:VERBATIM_ASR_PORT."""
    import uvicorn

    from verbatim.asr_server.app import create_app

    s = get_settings()
    s.refuse_default_secrets("asr-server")
    uvicorn.run(create_app(s), host=s.asr_host, port=s.asr_port, log_level="warning",
                timeout_graceful_shutdown=ASR_GRACEFUL_SHUTDOWN_S)


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
    _, redis_url = _urls()
    import time

    import redis as redis_lib

    from verbatim.durable.outage import Backoff, backend_of
    from verbatim.runtime import redis_client
    from verbatim.telemetry import metrics

    client = redis_client(redis_url)
    held = WorkerIdentity(client, ident, s.worker_lease_ttl_s)
    # Started during a Redis outage: wait it out (logged, with the gauge), never exit.
    backoff = Backoff("worker", base_s=0.5, max_s=s.outage_backoff_max_s)
    while True:
        try:
            held.claim()
            break
        except WorkerNameTaken as exc:
            console.print(f"[red]{exc}[/red]")
            raise typer.Exit(2) from None
        except redis_lib.RedisError as exc:
            time.sleep(backoff.failed("redis", exc))
    backoff.ok()
    # The name is ours, so its previous process is dead: its runs of every kind are due now, not a
    # lease TTL later.
    from verbatim.pipeline.sweeps import due_kinds
    from workers.tasks import context

    for kind in due_kinds(context()):
        try:
            recovered = recover(kind.store, client, ident, kind.lease_key)
        except Exception as exc:  # noqa: BLE001 - an outage: their due times (lease expiry) bring them back
            backoff.failed(backend_of(exc) or "database", exc)
            continue
        for sid in recovered:
            metrics.recoveries.labels(source="restart").inc()
            try:
                kind.enqueue(sid)
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
    ctx = build_context(_stack_settings())  # like the other commands: a running local stack's servers
    if ctx.settings.metrics_port:
        from prometheus_client import REGISTRY, start_http_server

        from verbatim.telemetry.ops import OpsCollector

        REGISTRY.register(OpsCollector(ctx.repo.url, ctx.redis))
        start_http_server(ctx.settings.metrics_port)
    from verbatim.api.recordings import finish_stalled

    run_forever(ctx, stop, finish_stalled)


@app.command()
def upload(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, readable=True, help="The recording")],
    client: Annotated[list[str], typer.Option(help="Client id (repeat for couples/family)")],
    token: Annotated[str, typer.Option(envvar="VERBATIM_TOKEN", help="Bearer token")],
    api_url: Annotated[str | None, typer.Option(envvar="VERBATIM_API_URL", help="Default: the running stack's")]
    = None,
    session_type: Annotated[str | None, typer.Option(
        help="individual | couples | family | group | dictation (default: from the number of --client)")] = None,
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
    link: Annotated[bool, typer.Option(help="Also print a one-time sign-in link to the web pages")] = False,
) -> None:
    """Issue a bearer token and print it (it is stored hashed and never shown again); its id goes to
    stderr, for `verbatim token revoke <id>`. With --link, a one-time sign-in link follows it
    (valid VERBATIM_SIGN_IN_LINK_S, on VERBATIM_PUBLIC_URL)."""
    from verbatim.auth import create_token, token_id
    from verbatim.web.store import sign_in_link

    database_url, _ = _urls()
    try:
        token = create_token(database_url, therapist=therapist, clinic=clinic, scope=scope, expires_in_days=days)
    except ValueError as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from exc
    print(token)
    found = token_id(database_url, token)
    print(f"token id (to revoke it): {found}", file=sys.stderr)
    if link:
        from verbatim.stack import running_stack_env

        s = get_settings()
        # a running `verbatim up`/`demo` serves the pages on the port it chose, not the configured one
        base = (s.public_url or running_stack_env(s.data_dir).get("VERBATIM_API_URL")
                or f"http://{s.api_host}:{s.api_port}")
        print(sign_in_link(database_url, found, base, s.sign_in_link_s))


@token_app.command("revoke")
def token_revoke(token_id: Annotated[uuid.UUID, typer.Argument(help="The token's id (printed by token create)")]
                 ) -> None:
    """Revoke a token by its id (never pass the clear token on a command line)."""
    from verbatim.auth import revoke

    database_url, _ = _urls()
    revoke(database_url, token_id)
    console.print("revoked")


@sessions_app.command("list")
def sessions_list(status: Annotated[str | None, typer.Option(
        help="Only this status: queued, recognizing, …, or parked (a live session whose capture run waits on "
             "the recognizer without a worker: the run's state, shown in place of its stored status)")] = None,
) -> None:
    """List sessions (most recently updated first), optionally by status; a parked session reads parked."""
    from verbatim.admin import display_statuses, list_sessions
    from verbatim.durable.store import RunStore
    from verbatim.states import DISPLAY_STATUSES

    if status is not None and status not in DISPLAY_STATUSES:
        raise typer.BadParameter(f"status must be one of {', '.join(DISPLAY_STATUSES)}")
    database_url = _urls()[0]
    rows = list_sessions(database_url, status)
    runs = RunStore(database_url, "capture").counts([row.id for row in rows])
    shown = display_statuses(database_url, rows)
    _print_rows(("status", "runs", "failure_code", "updated", "id"),
                [(shown[row.id], str(runs.get(row.id, 0)), row.failure_code or "",
                  row.updated_at.strftime("%Y-%m-%d %H:%M"), str(row.id)) for row in rows])


#: below this many columns a table of ids does not fit: each row is printed as two lines instead
WIDE_COLUMNS = 120


def _print_rows(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    """A table whose last column is a 36-character id; on a terminal narrower than ``WIDE_COLUMNS``,
    each row as the id with the first two fields, then the rest as ``name: value`` on an indented line."""
    if console.width >= WIDE_COLUMNS:
        table = Table(*headers[:-1])
        table.add_column(headers[-1], no_wrap=True, min_width=36)
        for row in rows:
            table.add_row(*row)
        console.print(table)
        return
    for row in rows:
        console.print(f"{row[-1]}  {row[0]}  {row[1]}", highlight=False, soft_wrap=True)
        rest = [f"{h}: {v}" for h, v in zip(headers[2:-1], row[2:-1], strict=True) if v]
        if rest:
            console.print("    " + " · ".join(rest), highlight=False, soft_wrap=True)


def _runs_rows(rows: list[Any]) -> list[tuple[str, ...]]:
    return [(r.kind, r.state.value, r.holder or "", r.since[:19], (r.next_due_at or "")[:19], str(r.runs),
             r.last_fault_code or "", r.subject_id) for r in rows]


RUNS_HEADERS = ("kind", "state", "holder", "since", "next due", "runs", "last fault", "subject")


@runs_app.command("list")
def runs_list(
    kind: Annotated[str | None, typer.Option(help="Only this kind of run (capture, note, …)")] = None,
    state: Annotated[str | None, typer.Option(
        help="Only this state: running, parked, due, overdue, blocked or cancelled")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line")] = False,
) -> None:
    """Every unfinished run, oldest change first: state, holder, since, next due, runs used, last fault."""
    from verbatim.ops_runs import RunState, list_runs
    from verbatim.runtime import redis_client

    try:
        wanted = RunState(state) if state else None
    except ValueError:
        raise typer.BadParameter(f"state must be one of {', '.join(s.value for s in RunState)}") from None
    database_url, redis_url = _urls()
    rows = list_runs(database_url, redis_client(redis_url), kind=kind, state=wanted)
    if as_json:
        for r in rows:
            print(json.dumps(r.as_dict()))
        return
    _print_rows(RUNS_HEADERS, _runs_rows(rows))


@runs_app.command("show")
def runs_show(subject_id: uuid.UUID) -> None:
    """The unfinished runs of one subject (a session's capture run, a note's run), as JSON."""
    from verbatim.ops_runs import show_run
    from verbatim.runtime import redis_client

    database_url, redis_url = _urls()
    for r in show_run(database_url, redis_client(redis_url), subject_id):
        print(json.dumps(r.as_dict(), indent=2))


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


TokenOpt = Annotated[str, typer.Option(envvar="VERBATIM_TOKEN", help="Bearer token")]
ApiUrlOpt = Annotated[str | None, typer.Option(envvar="VERBATIM_API_URL", help="Default: the running stack's")]


def _notes_call(token: str, api_url: str | None, call: Callable[[ApiClient], object]) -> object:
    """Call the API; an error answer or an unreachable API exits 1 with the reason."""
    import httpx

    from verbatim.client import ApiClient
    from verbatim.stack import running_stack_env

    url = api_url or running_stack_env(get_settings().data_dir).get("VERBATIM_API_URL", "http://127.0.0.1:8000")
    try:
        with ApiClient(url, token) as c:
            return call(c)
    except httpx.HTTPStatusError as exc:
        console.print(f"[red]refused ({exc.response.status_code}):[/red] {exc.response.text}")
        raise typer.Exit(1) from exc
    except httpx.TransportError as exc:
        console.print(f"[red]cannot reach the API at {url}: {exc}[/red]")
        raise typer.Exit(1) from exc


@notes_app.command("draft")
def notes_draft(
    session_id: uuid.UUID, token: TokenOpt, api_url: ApiUrlOpt = None,
    format: Annotated[str, typer.Option("--format", help="soap | dap | birp | girp | a template id")] = "soap",
    client: Annotated[str | None, typer.Option(help="Whose note (required with several clients)")] = None,
    wait: Annotated[bool, typer.Option(help="Wait for the draft and print it")] = True,
) -> None:
    """Ask for a note of a session's client; prints the note id (and, with --wait, the draft)."""
    from verbatim.notes.show import print_note

    made = _notes_call(token, api_url, lambda c: c.request_note(str(session_id), format, client))
    assert isinstance(made, dict)
    console.print(made["note_id"])
    if not wait:
        return
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        note = _notes_call(token, api_url, lambda c: c.note(made["note_id"]))
        assert isinstance(note, dict)
        if note["status"] not in ("queued", "drafting"):
            print_note(console, note)
            raise typer.Exit(0 if note["status"] == "draft" else 1)
        time.sleep(0.5)
    console.print("[yellow]still drafting; `verbatim notes show` it later[/yellow]")


@notes_app.command("show")
def notes_show(note_id: uuid.UUID, token: TokenOpt, api_url: ApiUrlOpt = None) -> None:
    """Print a note with its risk flags, citations and verifier labels."""
    from verbatim.notes.show import print_note

    note = _notes_call(token, api_url, lambda c: c.note(str(note_id)))
    assert isinstance(note, dict)
    print_note(console, note)


@notes_app.command("sign")
def notes_sign(note_id: uuid.UUID, token: TokenOpt, api_url: ApiUrlOpt = None) -> None:
    """Sign (lock) a drafted note."""
    note = _notes_call(token, api_url, lambda c: c.sign_note(str(note_id)))
    assert isinstance(note, dict)
    console.print(f"signed at {note['signed_at']}")


@notes_app.command("export")
def notes_export(
    note_id: uuid.UUID, token: TokenOpt, api_url: ApiUrlOpt = None,
    fhir: Annotated[bool, typer.Option("--fhir", help="FHIR R4 DocumentReference (JSON)")] = False,
    pdf: Annotated[bool, typer.Option("--pdf", help="PDF")] = False,
    out: Annotated[Path | None, typer.Option(help="File to write (default: stdout for FHIR, note-<id>.pdf)")] = None,
) -> None:
    """Export a signed note (drafts are never exported)."""
    if fhir == pdf:
        console.print("[red]choose one of --fhir or --pdf[/red]")
        raise typer.Exit(2)
    data = _notes_call(token, api_url, lambda c: c.export_note(str(note_id), "fhir" if fhir else "pdf"))
    assert isinstance(data, bytes)
    if fhir and out is None:
        sys.stdout.write(data.decode() + "\n")
        return
    target = out or Path(f"note-{note_id}.pdf")
    target.write_bytes(data)
    console.print(f"wrote {target}")


@clinic_app.command("ehr-id")
def clinic_ehr_id(
    clinic: Annotated[str, typer.Option(help="Clinic name")],
    system: Annotated[str, typer.Option(help="The EHR's identifier system, e.g. urn:oid:… or https://ehr.example/mrn")],
    value: Annotated[str, typer.Option(help="The EHR's identifier value")],
    client: Annotated[str | None, typer.Option(help="A client id of the clinic")] = None,
    therapist: Annotated[str | None, typer.Option(help="A therapist's name in the clinic")] = None,
) -> None:
    """Map a client id or a therapist to the EHR's identifier (FHIR exports use it for subject / author)."""
    from sqlalchemy import select
    from sqlalchemy.dialects.postgresql import insert

    from verbatim.db.engine import db_session
    from verbatim.db.models import Clinic, EhrIdentifier, Therapist

    if (client is None) == (therapist is None):
        console.print("[red]give one of --client or --therapist[/red]")
        raise typer.Exit(2)
    database_url, _ = _urls()
    with db_session(database_url) as db:
        clinic_id = db.execute(select(Clinic.id).where(Clinic.name == clinic)).scalar_one_or_none()
        if clinic_id is None:
            console.print(f"[red]no clinic named {clinic!r}[/red]")
            raise typer.Exit(2)
        local = client
        if therapist is not None:
            found = db.execute(select(Therapist.id).where(Therapist.clinic_id == clinic_id,
                                                          Therapist.name == therapist)).scalar_one_or_none()
            if found is None:
                console.print(f"[red]no therapist named {therapist!r} in {clinic!r}[/red]")
                raise typer.Exit(2)
            local = str(found)
        kind = "client" if client is not None else "practitioner"
        db.execute(insert(EhrIdentifier).values(clinic_id=clinic_id, kind=kind, local_id=local, system=system,
                                                value=value)
                   .on_conflict_do_update(constraint="uq_ehr_identifiers_local",
                                          set_={"system": system, "value": value}))
    console.print(f"{kind} {local} → {system}|{value}")


def _clinic_id(db: object, clinic: str) -> uuid.UUID:
    from sqlalchemy import select
    from sqlalchemy.orm import Session as OrmSession

    from verbatim.db.models import Clinic

    assert isinstance(db, OrmSession)
    found = db.execute(select(Clinic.id).where(Clinic.name == clinic)).scalar_one_or_none()
    if found is None:
        console.print(f"[red]no clinic named {clinic!r}[/red]")
        raise typer.Exit(2)
    return found


def _update_therapist(clinic: str, name: str, fields: Callable[[Any, uuid.UUID], dict[str, object]]) -> None:
    """Set ``fields(db, clinic_id)`` on the clinic's therapist ``name``, audited ``therapist_updated``
    (ids and field names only) in the same transaction; exit 2 with the reason when refused."""
    from verbatim import audit, staff
    from verbatim.db.engine import db_session
    from verbatim.errors import StaffInvalid

    database_url, _ = _urls()
    try:
        with db_session(database_url) as db:
            clinic_id = _clinic_id(db, clinic)
            therapist_id = staff.therapist_named(db, clinic_id, name)
            values = fields(db, clinic_id)
            staff.update_therapist(db, clinic_id, therapist_id, **values)
            detail: dict[str, object] = {"therapist_id": str(therapist_id), "fields": sorted(values), "via": "cli"}
            if "supervisor_id" in values:
                detail["supervisor_id"] = str(values["supervisor_id"]) if values["supervisor_id"] else None
            audit.record_system(db, "therapist_updated", clinic_id=clinic_id, detail=detail)
    except StaffInvalid as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from exc


@clinic_app.command("supervisor")
def clinic_supervisor(
    clinic: Annotated[str, typer.Option(help="Clinic name")],
    trainee: Annotated[str, typer.Option(help="The trainee therapist's name")],
    supervisor: Annotated[str | None, typer.Option(help="The supervising therapist's name")] = None,
    clear: Annotated[bool, typer.Option("--clear", help="Remove the trainee's supervisor")] = False,
) -> None:
    """Name the therapist who co-signs a trainee's notes (the only one who can). Audited."""
    from verbatim import staff

    if (supervisor is None) == (not clear):
        console.print("[red]give --supervisor NAME, or --clear[/red]")
        raise typer.Exit(2)

    def fields(db: Any, clinic_id: uuid.UUID) -> dict[str, object]:
        return {"supervisor_id": staff.therapist_named(db, clinic_id, supervisor) if supervisor else None}

    _update_therapist(clinic, trainee, fields)
    console.print(f"{trainee}: " + (f"notes co-signed by {supervisor}" if supervisor else "no supervisor"))


@clinic_app.command("therapist")
def clinic_therapist(
    clinic: Annotated[str, typer.Option(help="Clinic name")],
    name: Annotated[str, typer.Option(help="The therapist's name in the clinic")],
    display_name: Annotated[str | None, typer.Option(help='How exports name them, e.g. "Dana Reyes"')] = None,
    credentials: Annotated[str | None, typer.Option(help='e.g. "LCSW"')] = None,
) -> None:
    """Set how exports name a clinician (display name and credentials). Audited."""
    given: dict[str, object] = {k: v for k, v in (("display_name", display_name), ("credentials", credentials))
                                if v is not None}
    if not given:
        console.print("[red]give --display-name and/or --credentials[/red]")
        raise typer.Exit(2)
    _update_therapist(clinic, name, lambda _db, _clinic_id: given)
    console.print(f"{name}: exports name them {display_name or name}" + (f", {credentials}" if credentials else ""))


@clinic_app.command("time-zone")
def clinic_time_zone(
    clinic: Annotated[str, typer.Option(help="Clinic name")],
    zone: Annotated[str | None, typer.Argument(help="IANA time zone, e.g. America/Chicago; omit for UTC")] = None,
) -> None:
    """Set the time zone exports print the time of service in. Audited."""
    from verbatim import audit, staff
    from verbatim.db.engine import db_session
    from verbatim.errors import StaffInvalid

    database_url, _ = _urls()
    try:
        with db_session(database_url) as db:
            clinic_id = _clinic_id(db, clinic)
            staff.set_time_zone(db, clinic_id, zone)
            audit.record_system(db, "clinic_updated", clinic_id=clinic_id,
                                detail={"fields": ["time_zone"], "time_zone": zone, "via": "cli"})
    except StaffInvalid as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from exc
    console.print(f"{clinic}: times of service in {zone or 'UTC'}")


def main() -> None:
    # Everything any Verbatim process creates is its owner's alone (files 0600, folders 0700).
    os.umask(0o077)
    try:
        app()
    except VerbatimError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}")  # a log tail may hold [brackets]
        sys.exit(2)
    except Exception as exc:
        said = _database_fault(exc)
        if said is None:
            raise
        console.print(f"[red]error:[/red] {said}")
        sys.exit(2)


def _database_fault(exc: Exception) -> str | None:
    """What to tell a person when a command met a database it cannot use; None for any other fault.

    sqlalchemy is looked up only if a command imported it (most commands never touch the database)."""
    found = sys.modules.get("sqlalchemy.exc")
    if found is None:
        return None
    if isinstance(exc, found.ProgrammingError) and getattr(exc.orig, "sqlstate", None) == "42P01":
        # A database without Verbatim's tables: never migrated, or another database named by mistake.
        return "the database has no Verbatim tables: check VERBATIM_DATABASE_URL, or run `verbatim migrate` on it"
    if isinstance(exc, found.OperationalError):
        return "the database could not be reached: check VERBATIM_DATABASE_URL and that PostgreSQL is running"
    return None

if __name__ == "__main__":
    main()
