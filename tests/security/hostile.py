"""Run the hostile-input table (``hostile_inputs.yaml``) against a running API process.

Shared by ``tests/security/test_hostile_inputs.py`` and ``bench/security.py``. The API runs as
``verbatim api`` in a child process (production mode, the runtime database role), set up by
``prepare`` with tokens, sessions and uploads the rows refer to. Each row is sent once; before
and after, a snapshot of what the API could have stored — a digest of every patient-data
table, every file under the data directory, the capture queue's length — must be equal.

Why our own code: the table is ours, and the requests it needs (heads announcing bodies never
sent, requests cut mid-header) are raw sockets no HTTP client library sends.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
import redis
import yaml
from sqlalchemy.engine import make_url

from tests.factories import ready_session, ring_setting
from tests.security.media import NOT_RECORDINGS, opus_bomb
from verbatim import keys
from verbatim.auth import create_token, revoke, token_id
from verbatim.config import load_settings
from verbatim.embedded import free_port
from verbatim.web import store

TABLE = Path(__file__).with_name("hostile_inputs.yaml")
SAMPLES = Path(__file__).resolve().parents[2] / "samples"
#: what a row's ``target`` names besides the API process: apps served in-process (no lifespan)
TARGETS = ("recognizer", "dev_api")
GIB = 1024**3

#: settings of the API the table runs against (the table's header states them too)
TABLE_SETTINGS: dict[str, object] = {
    "mode": "production",
    "header_timeout_s": 1.0,
    "upload_idle_s": 1.0,
    "max_open_uploads": 3,
    "max_open_upload_bytes": 3 * GIB,
    "min_free_bytes": 0,
}
#: tables an answer may change without storing patient data: the append-only logs, and the runs'
#: fencing tokens (a repeated withdrawal bumps the fence again, by design: any run still going stops), and
#: the page sessions (every page request extends its session; a sign-in shows in web_sign_in_links)
NOT_PATIENT_DATA = {"audit_log", "reliability_actions", "alembic_version", "durable_runs", "web_sessions"}
DEFAULT_NOT_STORED = ("session_row", "file", "enqueued")
#: every wait on the server is bounded by this (seconds); the server's own timeouts are 1 s
WAIT_S = 60.0


def load_rows(path: Path = TABLE) -> list[dict[str, Any]]:
    """The table's rows (dicts, as written)."""
    rows: list[dict[str, Any]] = yaml.safe_load(path.read_text())
    return rows


# --- the API under attack ------------------------------------------------------------------------
class ApiProcess:
    """``verbatim api`` as a child process (own process group) on a free port of 127.0.0.1."""

    def __init__(self, database_url: str, redis_url: str, data_dir: Path, **settings: object):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data_dir = data_dir
        self.metrics_token = secrets.token_urlsafe(24)
        env = {k: v for k, v in os.environ.items() if not k.startswith("VERBATIM_")}
        env.update({f"VERBATIM_{k.upper()}": str(v) for k, v in {**TABLE_SETTINGS, **settings}.items()})
        env.update(VERBATIM_DATABASE_URL=database_url, VERBATIM_REDIS_URL=redis_url, VERBATIM_DATA_DIR=str(data_dir),
                   VERBATIM_API_HOST="127.0.0.1", VERBATIM_API_PORT=str(self.port),
                   VERBATIM_RECOGNIZER_API_KEY=secrets.token_urlsafe(24),
                   VERBATIM_ASR_API_KEY=secrets.token_urlsafe(24), VERBATIM_METRICS_TOKEN=self.metrics_token,
                   VERBATIM_ENCRYPTION_KEYS=ring_setting())
        self.env = env
        self.log = data_dir.parent / f"{data_dir.name}-api.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "verbatim.cli", "api"], env=self.env, stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the API exited ({self.proc.returncode}):\n{self.log.read_text()[-2000:]}")
            try:
                if httpx.get(self.url + "/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("the API did not answer /healthz:\n" + self.log.read_text()[-2000:])

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


# --- what the rows refer to ---------------------------------------------------------------------
def good_metadata(**overrides: Any) -> dict[str, Any]:
    when = (datetime.now(UTC) - timedelta(hours=1)).replace(microsecond=0).isoformat()
    meta: dict[str, Any] = {"client_ids": ["client-x"], "recorded_at": when, "session_type": "individual",
                            "consent": {"obtained": True, "method": "verbal", "obtained_at": when}}
    meta.update(overrides)
    return meta


@dataclass
class Context:
    """A prepared API: its URL, data directory, the database (administrator's URL) and Redis behind it."""

    api: ApiProcess
    admin_db_url: str
    redis_url: str
    tokens: dict[str, str] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)
    client: httpx.Client = field(init=False)
    _cache: dict[str, bytes] = field(default_factory=dict)
    _targets: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.client = httpx.Client(base_url=self.api.url, timeout=WAIT_S)

    def target(self, name: str) -> Any:
        """A client of an in-process app: ``recognizer`` (the local recognizer in production mode) or
        ``dev_api`` (the API in development mode, for its OpenAPI document). Built on first use."""
        if name not in self._targets:
            from fastapi.testclient import TestClient

            folder = self.api.data_dir.parent / f"{self.api.data_dir.name}-{name}"
            common = {"data_dir": folder, "encryption_keys": self.api.env["VERBATIM_ENCRYPTION_KEYS"],
                      "database_url": self.admin_db_url, "redis_url": self.redis_url}
            if name == "recognizer":
                from verbatim.asr_server.app import create_app as recognizer_app

                app = recognizer_app(load_settings(mode="production", asr_engine="pocketsphinx",
                                                   asr_api_key=secrets.token_urlsafe(24), **common))
            else:
                from verbatim.api.app import create_app as api_app

                app = api_app(load_settings(mode="development", **common))
            self._targets[name] = TestClient(app)  # no `with`: the lifespan (pools, jobs) never starts
        return self._targets[name]

    def auth(self, who: str | None) -> dict[str, str]:
        if who in (None, "none"):
            return {}
        if who == "bad":
            return {"authorization": "Bearer " + secrets.token_urlsafe(32)}
        if who == "devkey":
            return {"authorization": "Bearer local-dev-key"}
        return {"authorization": f"Bearer {self.tokens[str(who)]}"}

    def audio(self, name: str) -> bytes:
        """A sample recording (``samples/<name>``) or a generated file (``media.py``)."""
        if name not in self._cache:
            if name in NOT_RECORDINGS:
                self._cache[name] = NOT_RECORDINGS[name]
            elif name == "opus_bomb_5h":
                path = self.api.data_dir.parent / f"bomb-{uuid.uuid4().hex[:6]}.webm"
                self._cache[name] = opus_bomb(path, 5 * 3600).read_bytes()
                path.unlink()
            else:
                self._cache[name] = (SAMPLES / name).read_bytes()
        return self._cache[name]

    def upload(self, who: str, client_ids: list[str], *, key: str | None = None) -> str:
        headers = {**self.auth(who), **({"idempotency-key": key} if key else {})}
        r = self.client.post("/v1/sessions", headers=headers, files={"audio": ("s.wav", self.audio("jfk.wav"))},
                             data={"metadata": json.dumps(good_metadata(client_ids=client_ids))})
        assert r.status_code == 201, r.text
        return str(r.json()["id"])

    def tus_create(self, who: str, length: int) -> str:
        r = self.client.post("/v1/uploads", headers={**self.auth(who), "tus-resumable": "1.0.0",
                                                      "upload-length": str(length)})
        assert r.status_code == 201, r.text
        return str(r.json()["upload_id"])

    def fill(self, value: Any) -> Any:
        """``value`` with placeholders filled and ``{text, repeat}`` objects expanded (recursively)."""
        if isinstance(value, dict):
            if set(value) <= {"text", "repeat"} and "text" in value:
                return str(self.fill(value["text"])) * int(value.get("repeat", 1))
            return {self.fill(k): self.fill(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.fill(v) for v in value]
        if isinstance(value, str):
            free = shutil.disk_usage(self.api.data_dir).free
            names = {**self.ids, "random_uuid": str(uuid.uuid4()), "free_plus_1gib": str(free + GIB),
                     "random_token": "vbt_" + secrets.token_urlsafe(32),
                     "random_ip": f"198.51.100.{secrets.randbelow(254) + 1}",
                     "alice_token": self.tokens["alice"], "alice_token_prefix": self.tokens["alice"][:8],
                     "key_300": "k" * 300,
                     "tus_metadata_5k": "filename " + base64.b64encode(b"a" * 4000).decode()}
            for name, filled in names.items():
                value = value.replace("{" + name + "}", filled)
            return value
        return value


def prepare(api: ApiProcess, admin_db_url: str, redis_url: str) -> Context:
    """Tokens, sessions and uploads the table refers to, created through the running API."""
    ctx = Context(api, admin_db_url, redis_url)
    people = {"alice": ("Alice", "North Clinic"), "bob": ("Bob", "South Clinic"), "carol": ("Carol", "North Clinic"),
              "dave": ("Dave", "North Clinic"), "eve": ("Eve", "North Clinic")}
    for name, (therapist, clinic) in people.items():
        ctx.tokens[name] = create_token(admin_db_url, therapist=therapist, clinic=clinic)
    ctx.tokens["admin"] = create_token(admin_db_url, clinic="North Clinic", scope="admin")
    ctx.tokens["north_admin"] = create_token(admin_db_url, clinic="North Clinic", scope="clinic_admin")
    ctx.tokens["south_admin"] = create_token(admin_db_url, clinic="South Clinic", scope="clinic_admin")
    ctx.tokens["revoked"] = create_token(admin_db_url, therapist="Rita", clinic="North Clinic")
    revoke(admin_db_url, token_id(admin_db_url, ctx.tokens["revoked"]))
    ctx.ids["alice_session"] = ctx.upload("alice", ["alice-client"], key="hostile-key-1")
    ctx.ids["bob_session"] = ctx.upload("bob", ["bob-client"])
    ctx.ids["withdrawn_session"] = ctx.upload("alice", ["withdrawn-client"])
    r = ctx.client.delete(f"/v1/sessions/{ctx.ids['withdrawn_session']}", headers=ctx.auth("alice"))
    assert r.status_code == 204, r.text
    ctx.ids["alice_upload"] = ctx.tus_create("alice", 1000)
    for _ in range(int(TABLE_SETTINGS["max_open_uploads"])):  # type: ignore[call-overload]
        ctx.tus_create("dave", 1000)
    ctx.tus_create("eve", 2 * GIB)
    _prepare_notes_and_pages(ctx)
    return ctx


def _prepare_notes_and_pages(ctx: Context) -> None:
    """A ready session of Alice's with a draft note, another with a signed note; page sessions of
    Alice and her clinic admin; an unused sign-in link of Bob's (another clinic)."""
    from verbatim.notes.run import run_note
    from verbatim.runtime import build_context

    settings = load_settings(mode="development", database_url=ctx.admin_db_url, redis_url=ctx.redis_url,
                             data_dir=ctx.api.data_dir.parent / f"{ctx.api.data_dir.name}-notes",
                             encryption_keys=ctx.api.env["VERBATIM_ENCRYPTION_KEYS"])
    dialogue = SAMPLES / "therapy_dialogue.json"
    for name in ("alice_ready", "alice_signed"):
        sid = ready_session(settings, dialogue, therapist="Alice", clinic="North Clinic")
        ctx.ids[name] = str(sid)
        r = ctx.client.post(f"/v1/sessions/{sid}/notes", json={"format": "soap"}, headers=ctx.auth("alice"))
        assert r.status_code == 202, r.text
        run_note(build_context(settings), uuid.UUID(r.json()["note_id"]))
        ctx.ids[name.replace("ready", "note").replace("signed", "signed_note")] = r.json()["note_id"]
    r = ctx.client.post(f"/v1/notes/{ctx.ids['alice_signed_note']}/sign", headers=ctx.auth("alice"))
    assert r.status_code == 200, r.text
    for who in ("alice", "north_admin"):
        started = store.start(ctx.admin_db_url, token_id(ctx.admin_db_url, ctx.tokens[who]))
        assert started is not None
        ctx.ids[f"{who}_page_cookie"], ctx.ids[f"{who}_page_csrf"] = started[0], started[1].csrf_token
    ctx.ids["bob_link"] = store.create_link(ctx.admin_db_url, token_id(ctx.admin_db_url, ctx.tokens["bob"]), 3600)
    ctx.ids["pre_csrf"] = secrets.token_urlsafe(24)


# --- what could have been stored ----------------------------------------------------------------
def snapshot(ctx: Context) -> dict[str, Any]:
    """Digest of every patient-data table, every file under the data directory, the queue length."""
    u = make_url(ctx.admin_db_url)
    with psycopg.connect(host=u.host, port=u.port or 5432, user=u.username, password=u.password,
                         dbname=u.database, autocommit=True) as conn:
        tables = [t for (t,) in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
                  if t not in NOT_PATIENT_DATA]
        db = {t: conn.execute(f'SELECT count(*), md5(coalesce(string_agg(x::text, \'|\' ORDER BY x::text), \'\')) '
                              f'FROM "{t}" x').fetchone() for t in tables}
    files = {str(p.relative_to(ctx.api.data_dir)): p.stat().st_size
             for p in ctx.api.data_dir.rglob("*") if p.is_file()}
    with redis.Redis.from_url(ctx.redis_url) as r:
        enqueued = int(r.llen(keys.CAPTURE_QUEUE))  # type: ignore[arg-type]
    return {"session_row": db, "file": files, "enqueued": enqueued}


# --- sending a row ------------------------------------------------------------------------------
@dataclass
class Answer:
    status: int | str  #: the HTTP status, or "closed" (the server hung up without one)
    headers: dict[str, str]
    text: str
    ms: float  #: from the request's head sent to the status line received (raw) / the whole exchange


def _read_answer(sock: socket.socket, started: float) -> Answer:
    raw = b""
    sock.settimeout(WAIT_S)
    try:
        while b"\r\n\r\n" not in raw:
            chunk = sock.recv(65536)
            if not chunk:
                break
            raw += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    ms = (time.monotonic() - started) * 1000
    if not raw.startswith(b"HTTP/"):
        return Answer("closed", {}, "", ms)
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    want = int(headers.get("content-length", "0"))
    try:
        while len(body) < want:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    return Answer(int(lines[0].split()[1]), headers, body.decode("utf-8", "replace"), ms)


def send_raw(ctx: Context, data: bytes) -> Answer:
    """Send ``data`` on a fresh connection and read the answer, or notice the server hang up."""
    with socket.create_connection(("127.0.0.1", ctx.api.port), timeout=WAIT_S) as sock:
        started = time.monotonic()
        if data:
            sock.sendall(data)
        return _read_answer(sock, started)


def send_head(ctx: Context, row: dict[str, Any], length: int, first: bytes = b"") -> Answer:
    """The row's head announcing ``length`` body bytes, then only ``first`` of them."""
    path = ctx.fill(row["path"])
    headers = {**{k.lower(): str(v) for k, v in ctx.fill(row.get("headers", {})).items()}, **ctx.auth(row.get("as"))}
    headers["content-length"] = str(length)
    head = f"{row['method']} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    with socket.create_connection(("127.0.0.1", ctx.api.port), timeout=WAIT_S) as sock:
        started = time.monotonic()
        sock.sendall(head.encode("latin-1") + first)
        return _read_answer(sock, started)


def _tus_finalize(ctx: Context, row: dict[str, Any], who: str) -> httpx.Response:
    audio = ctx.audio(row["body"]["tus_finalize"])
    upload_id = ctx.tus_create(who, len(audio))
    r = ctx.client.patch(f"/v1/uploads/{upload_id}", content=audio, headers={
        **ctx.auth(who), "tus-resumable": "1.0.0", "upload-offset": "0",
        "content-type": "application/offset+octet-stream"})
    assert r.status_code == 204, r.text
    return ctx.client.post("/v1/sessions", headers=ctx.auth(who),
                           json={"upload_id": upload_id, "metadata": good_metadata()})


def send(ctx: Context, row: dict[str, Any]) -> Answer:
    """Send one row's request; its answer."""
    body: dict[str, Any] = row.get("body") or {}
    who = row.get("as", "alice")
    if "raw" in body:
        return send_raw(ctx, str(ctx.fill(body["raw"]).replace("{alice_token}", ctx.tokens["alice"])).encode())
    if "head_only" in body:
        return send_head(ctx, {**row, "as": who}, int(ctx.fill(str(body["head_only"]))),
                         str(body.get("first", "")).encode())
    headers = {**{k: str(v) for k, v in ctx.fill(row.get("headers", {})).items()}, **ctx.auth(who)}
    if "cookies" in row:
        headers["cookie"] = "; ".join(f"{k}={v}" for k, v in ctx.fill(row["cookies"]).items())
    kwargs: dict[str, Any] = {"headers": headers, "params": ctx.fill(row.get("query", {}))}
    if "form" in body:
        kwargs["data"] = ctx.fill(body["form"])
    elif "json" in body:
        payload = ctx.fill(body["json"])
        if isinstance(payload, dict) and payload.get("metadata") == "good":
            payload["metadata"] = good_metadata()
        kwargs["json"] = payload
    elif "text" in body:
        kwargs["content"] = str(ctx.fill({"text": body["text"], "repeat": body.get("repeat", 1)})).encode()
    elif "gen" in body and body["gen"] == "chunked_zeros":
        size = int(body["kib"]) * 1024
        kwargs["content"] = iter([b"0" * 1024] * (size // 1024))
    elif "multipart" in body:
        part = body["multipart"]
        data = {}
        if not part.get("no_meta"):
            meta = ctx.fill(part["meta_text"]) if "meta_text" in part else json.dumps(
                good_metadata(**ctx.fill(part.get("meta", {}))))
            data["metadata"] = meta
        files = None if part.get("no_audio") else {
            "audio": (part.get("filename", "session.wav"), ctx.audio(part["audio"]), "audio/wav")}
        kwargs.update(data=data, files=files or {"other": ("x.txt", b"x", "text/plain")})
    started = time.monotonic()
    if "tus_finalize" in body:
        r = _tus_finalize(ctx, row, who)
    elif row.get("target") in TARGETS:
        r = ctx.target(row["target"]).request(row["method"], ctx.fill(row["path"]), **kwargs)
    else:
        r = ctx.client.request(row["method"], ctx.fill(row["path"]), **kwargs)
    return Answer(r.status_code, {k.lower(): v for k, v in r.headers.items()}, r.text,
                  (time.monotonic() - started) * 1000)


@dataclass
class Outcome:
    id: str
    finding: int
    status: int | str
    problems: list[str]
    ms: float

    @property
    def ok(self) -> bool:
        return not self.problems


def run_row(ctx: Context, row: dict[str, Any]) -> Outcome:
    """Send the row and check its answer and that nothing it names was stored."""
    # Each row is another attacker: the failure counts of earlier rows (one address, 127.0.0.1) are not its.
    with redis.Redis.from_url(ctx.redis_url) as r:
        for key in r.scan_iter(match=keys.AUTH_FAILURES_PREFIX + "*"):
            r.delete(key)
    before = snapshot(ctx)
    # ``times``: the same request sent again and again (each filled anew: a fresh random token); the
    # last answer is the one judged.
    for _ in range(int(row.get("times", 1)) - 1):
        send(ctx, row)
    answer = send(ctx, row)
    expected = row["expect"] if isinstance(row["expect"], list) else [row["expect"]]
    problems = []
    if answer.status not in expected:
        problems.append(f"status {answer.status}, expected {expected}: {answer.text[:300]}")
    if "error" in row and answer.text:
        try:
            code = json.loads(answer.text).get("error")
        except (ValueError, AttributeError):
            code = None
        if code != row["error"]:
            problems.append(f"error {code!r}, expected {row['error']!r}")
    for name, value in row.get("headers_out", {}).items():
        if answer.headers.get(name.lower()) != value:
            problems.append(f"header {name}: {answer.headers.get(name.lower())!r}, expected {value!r}")
    for wanted in ctx.fill(row.get("returned", [])):
        if wanted not in answer.text:
            problems.append(f"the answer lacks {wanted!r}")
    for name in row.get("headers_present", []):
        if name.lower() not in answer.headers:
            problems.append(f"no {name} header")
    for secret in ctx.fill(row.get("not_returned", [])):
        if secret in answer.text:
            problems.append(f"the answer contains {secret!r}")
    after = snapshot(ctx)
    for what in row.get("not_stored", DEFAULT_NOT_STORED):
        if before[what] != after[what]:
            problems.append(f"stored: {what} changed ({_diff(before[what], after[what])})")
    return Outcome(row["id"], int(row["finding"]), answer.status, problems, answer.ms)


def _diff(before: Any, after: Any) -> str:
    if isinstance(before, dict):
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        return ", ".join(changed)
    return f"{before} → {after}"


def digest(rows: list[dict[str, Any]]) -> str:
    """A short digest of the table (printed by the bench so figures name the table they ran)."""
    return hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()[:12]
