"""Partition drill: Verbatim's parts on separate hosts, the network between them cut mid-run.

The hosts are Linux network namespaces this drill makes and removes itself (root needed; no
traffic leaves them): ``pg`` (a private PostgreSQL), ``redis`` (a private Redis), ``api`` (the
API, the sweep process and the local recognizer), ``w1`` and ``w2`` (capture workers, two
processes on w1, twice as many on w2). Each host has a veth pair to a router namespace; a cut is a pair of
``ip rule … blackhole`` policy rules in the router, so packets between the two hosts vanish
without an answer, as on a real partition (a refused connection would be an easier case). The
machine's own PostgreSQL and Redis are never touched; the drill's servers listen only inside
their namespaces. The bench process reaches the hosts through one more veth pair (the observer,
never cut).

Scenarios, each with ``--sessions`` fresh uploads in flight (the recognizer takes
``--job-s`` per job and runs wait in their worker, so leases are held across the cut):
cut one worker host from Redis for ``--cut-s``; then from PostgreSQL; then the API host (with
the sweeper) from both. Measured:

- ``sessions_lost``: sessions not ready at the end, or seen at any poll without audio, vendor
  job id or saved turns (the copy went before a replacing write);
- ``stale_writes``: committed writes to a session by a worker whose fencing token was lower than
  one already committed for that session (PostgreSQL triggers record, per write, the token the
  writing worker took — its connections carry its name as ``application_name`` — and the highest
  token committed when the write ran);
- ``recovery_over_lease_max``: for every lease that expired instead of being released, the time
  from its holder's last renewal to another run's lease on the same session (both seen by Redis
  keyspace notifications), divided by the lease TTL. The sweep tick is
  ``VERBATIM_SWEEP_TICK_S`` (2 s by default: the production tick); the lease 60 s, heartbeat 15 s.

Prints the scenario table; last stdout line one JSON object. ``--quick`` uses test timings
(lease 6 s, heartbeat 1.5 s, tick 0.5 s, cuts of 20 s): tests/faults/test_partition.py.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import redis
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parents[1]
PREFIX = "vbp"  # every namespace and link this drill makes starts with it
ROUTER = f"{PREFIX}-router"
SUBNET = "10.231"  # 10.231.<n>.0/24 per host: inside the drill's own namespaces only
HOSTS = {"pg": 1, "redis": 2, "api": 3, "w1": 4, "w2": 5}
OBSERVER_NET = 250
PG_PORT, REDIS_PORT, API_PORT, ASR_PORT = 5432, 6379, 8000, 8700
READY = "drill-server-ready"


def ip_of(host: str) -> str:
    return f"{SUBNET}.{HOSTS[host]}.2"


def sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, check=check, capture_output=True, text=True, timeout=60)


# --- the network -------------------------------------------------------------------------------


class Network:
    """The router, one namespace per host, and the observer link; ``cut``/``heal`` between hosts."""

    def __init__(self) -> None:
        self.cuts: list[tuple[str, str]] = []

    def up(self) -> None:
        self.down()  # what a killed earlier drill left
        sh("ip", "netns", "add", ROUTER)
        sh("ip", "-n", ROUTER, "link", "set", "lo", "up")
        sh("ip", "netns", "exec", ROUTER, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        for host, n in HOSTS.items():
            ns = f"{PREFIX}-{host}"
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", f"to-{host}",
               "netns", ROUTER)
            sh("ip", "-n", ROUTER, "addr", "add", f"{SUBNET}.{n}.1/24", "dev", f"to-{host}")
            sh("ip", "-n", ROUTER, "link", "set", f"to-{host}", "up")
            sh("ip", "-n", ns, "addr", "add", f"{SUBNET}.{n}.2/24", "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            sh("ip", "-n", ns, "route", "add", "default", "via", f"{SUBNET}.{n}.1")
        # The observer: this process, in the machine's namespace, reaches the hosts (and only them).
        sh("ip", "link", "add", f"{PREFIX}-obs", "type", "veth", "peer", "name", "to-obs", "netns", ROUTER)
        sh("ip", "-n", ROUTER, "addr", "add", f"{SUBNET}.{OBSERVER_NET}.1/24", "dev", "to-obs")
        sh("ip", "-n", ROUTER, "link", "set", "to-obs", "up")
        sh("ip", "addr", "add", f"{SUBNET}.{OBSERVER_NET}.2/24", "dev", f"{PREFIX}-obs")
        sh("ip", "link", "set", f"{PREFIX}-obs", "up")
        sh("ip", "route", "add", f"{SUBNET}.0.0/16", "via", f"{SUBNET}.{OBSERVER_NET}.1")

    def down(self) -> None:
        sh("ip", "link", "del", f"{PREFIX}-obs", check=False)  # takes its route along
        listed = sh("ip", "netns", "list", check=False).stdout.split()
        for ns in listed:
            if ns.startswith(f"{PREFIX}-"):
                sh("ip", "netns", "del", ns, check=False)

    def cut(self, a: str, b: str) -> None:
        """Drop every packet between hosts ``a`` and ``b`` (both ways), silently."""
        for src, dst in ((a, b), (b, a)):
            sh("ip", "-n", ROUTER, "rule", "add", "from", ip_of(src), "to", ip_of(dst), "blackhole")
        self.cuts.append((a, b))

    def heal(self) -> None:
        for a, b in self.cuts:
            for src, dst in ((a, b), (b, a)):
                sh("ip", "-n", ROUTER, "rule", "del", "from", ip_of(src), "to", ip_of(dst), "blackhole", check=False)
        self.cuts = []


def in_host(host: str, *cmd: str) -> list[str]:
    return ["ip", "netns", "exec", f"{PREFIX}-{host}", *cmd]


# --- the servers inside their hosts -----------------------------------------------------------


def serve_postgres(data_dir: Path, host_ip: str) -> None:
    """(Run inside the pg host.) A private PostgreSQL on ``host_ip``, trusting the drill's subnet."""
    from verbatim.embedded import EmbeddedPostgres

    first = EmbeddedPostgres(data_dir, PG_PORT, fast=True)  # initdb, on the host's loopback
    first.start()
    first.stop()
    with open(data_dir / "pg_hba.conf", "a") as hba:
        hba.write(f"host all all {SUBNET}.0.0/16 trust\n")
    server = EmbeddedPostgres(data_dir, PG_PORT, fast=True, host=host_ip)
    _serve_until_term(server)


def serve_redis(data_dir: Path, host_ip: str) -> None:
    from verbatim.embedded import EmbeddedRedis

    _serve_until_term(EmbeddedRedis(data_dir, REDIS_PORT, host=host_ip))


def _serve_until_term(server: Any) -> None:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server.start()
    print(READY, flush=True)
    stop.wait()
    server.stop()


# --- the drill's own record of writes (triggers in the drill's private database) -----------------

TRIGGERS = """
CREATE TABLE drill_fences (id bigserial PRIMARY KEY, subject uuid, app text, fence bigint);
CREATE TABLE drill_writes (id bigserial PRIMARY KEY, subject uuid, app text, token bigint, committed_max bigint,
                           at timestamptz DEFAULT clock_timestamp());
CREATE FUNCTION drill_fence() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
  IF NEW.kind = 'capture' AND (TG_OP = 'INSERT' OR NEW.fence IS DISTINCT FROM OLD.fence) THEN
    INSERT INTO drill_fences (subject, app, fence) VALUES (NEW.subject_id, current_setting('application_name'),
                                                          NEW.fence);
  END IF;
  RETURN NULL;
END $$;
CREATE FUNCTION drill_write() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
  IF current_setting('application_name') LIKE 'capture-%' THEN
    INSERT INTO drill_writes (subject, app, token, committed_max)
    SELECT NEW.id, current_setting('application_name'),
           (SELECT fence FROM drill_fences f WHERE f.subject = NEW.id
              AND f.app = current_setting('application_name') ORDER BY f.id DESC LIMIT 1),
           (SELECT max(fence) FROM drill_fences f WHERE f.subject = NEW.id
              AND f.app <> current_setting('application_name'));
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER drill_fence AFTER INSERT OR UPDATE ON durable_runs FOR EACH ROW EXECUTE FUNCTION drill_fence();
CREATE TRIGGER drill_write AFTER UPDATE ON sessions FOR EACH ROW EXECUTE FUNCTION drill_write();
"""
# SECURITY DEFINER: the processes connect as verbatim_app, which may not write the drill's tables.
# A write's token is the fence its worker took last for that session; ``committed_max`` is the
# highest fence another worker had committed when the write's statement ran (READ COMMITTED: its
# snapshot). A write with token < committed_max came from a run a newer one had already replaced.
STALE = "SELECT count(*) FROM drill_writes WHERE token IS NOT NULL AND committed_max > token"


# --- watching leases --------------------------------------------------------------------------


@dataclass
class LeaseWatch:
    """Follows every ``lease:<session>`` key by Redis keyspace notifications; records takeovers.

    A lease that *expired* (Redis's ``expired`` event, never a ``del``) and is then SET again is
    a takeover; its recovery time runs from the old lease's last SET or renewal (``set`` /
    ``expire`` events) to the new SET. Notifications are pushed, so a takeover run that holds its
    lease for a few milliseconds (the job was already done) is seen too, as a poll would not.
    The drill's Redis is its own: the watcher turns notifications on there.
    """

    client: redis.Redis
    ttl_s: float
    takeovers: list[tuple[str, float]] = field(default_factory=list)  # (session, seconds)
    events: list[str] = field(default_factory=list)  #: what the watcher saw, for the --keep logs
    failures: int = 0  #: times the notification connection broke (then re-subscribed)
    _renewed: dict[str, float] = field(default_factory=dict)  # session → last SET or renewal (monotonic)
    _expired: set[str] = field(default_factory=set)
    _stop: threading.Event = field(default_factory=threading.Event)
    _ready: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        threading.Thread(target=self._loop, daemon=True).start()
        if not self._ready.wait(30):
            raise RuntimeError("the lease watcher could not subscribe to the drill's Redis")

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        db = self.client.connection_pool.connection_kwargs.get("db", 0)
        while not self._stop.is_set():
            try:
                # K: keyspace channel; g: del/expire; x: expired; $: set.
                self.client.config_set("notify-keyspace-events", "Kgx$")
                pubsub = self.client.pubsub(ignore_subscribe_messages=True)
                pubsub.psubscribe(f"__keyspace@{db}__:lease:*")
                self._ready.set()
                while not self._stop.is_set():
                    message = pubsub.get_message(timeout=0.25)
                    if message is not None:
                        self._seen(message["channel"].decode().split(":", 1)[1], message["data"].decode())
            except redis.RedisError:
                self.failures += 1
                self._stop.wait(0.5)

    def _seen(self, key: str, event: str) -> None:
        if key.count(":") != 1:  # capture leases only (lease:<session>)
            return
        sid, now = key.split(":", 1)[1], time.monotonic()
        self.events.append(f"{now:.3f} {sid} {event}")
        if event == "set":
            if sid in self._expired and sid in self._renewed:
                self.takeovers.append((sid, now - self._renewed[sid]))
            self._expired.discard(sid)
            self._renewed[sid] = now
        elif event == "expire":  # the heartbeat's PEXPIRE (and SET's own PX)
            self._renewed[sid] = now
        elif event == "expired":
            self._expired.add(sid)
        elif event == "del":  # released by its run: not a takeover when SET again
            self._expired.discard(sid)
            self._renewed.pop(sid, None)


# --- the drill --------------------------------------------------------------------------------


@dataclass
class Timings:
    lease_ttl_s: float = 60.0
    heartbeat_s: float = 15.0
    sweep_tick_s: float = 2.0
    cut_s: float = 120.0
    #: longer than the lease: a run cut off mid-job outlives its lease, so another worker takes over
    job_s: float = 90.0

    def env(self) -> dict[str, str]:
        return {"VERBATIM_LEASE_TTL_S": str(self.lease_ttl_s), "VERBATIM_HEARTBEAT_S": str(self.heartbeat_s),
                "VERBATIM_SWEEP_TICK_S": str(self.sweep_tick_s), "VERBATIM_ASR_FIXED_DELAY_S": str(self.job_s),
                # Runs wait for the recognizer in their worker, holding the lease (parking would free it).
                "VERBATIM_RECOGNIZER_PARK_AFTER_S": "3600", "VERBATIM_RECOGNIZER_POLL_MAX_S": "2",
                "VERBATIM_WORKER_LEASE_TTL_S": str(max(self.lease_ttl_s, 10.0))}


QUICK = Timings(lease_ttl_s=6.0, heartbeat_s=1.5, sweep_tick_s=0.5, cut_s=20.0, job_s=12.0)
SCENARIOS = [
    ("w1 cut from Redis", [("w1", "redis")]),
    ("w1 cut from PostgreSQL", [("w1", "pg")]),
    ("API host (sweeper) cut from both", [("api", "redis"), ("api", "pg")]),
]


@dataclass
class Outcome:
    name: str
    sessions: int
    ready: int
    lost: int
    takeovers: int
    recovery_max_s: float | None
    recovery_min_s: float | None
    elapsed_s: float
    after_heal_s: float = 0.0  #: from the end of the cut to the last session's end


class Drill:
    def __init__(self, timings: Timings, sessions: int, workers_per_host: int, work: Path) -> None:
        self.t, self.n, self.per_host, self.work = timings, sessions, workers_per_host, work
        self.net = Network()
        self.procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.specs: dict[str, tuple[str, tuple[str, ...], dict[str, str] | None]] = {}
        self.respawned: list[str] = []
        self.admin_url = f"postgresql+psycopg://postgres@{ip_of('pg')}:{PG_PORT}/verbatim"
        self.redis_url = f"redis://{ip_of('redis')}:{REDIS_PORT}/0"
        self.data_dir = work / "data"
        self.never_held: set[str] = set()
        self.violations: set[str] = set()

    # -- processes --
    def spawn(self, name: str, host: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        self.specs[name] = (host, args, env)
        log = open(self.work / f"{name}.log", "ab")  # noqa: SIM115 - the child keeps it
        proc = subprocess.Popen(in_host(host, *args), stdout=log, stderr=subprocess.STDOUT,
                                env=env or dict(os.environ), start_new_session=True)
        self.procs.append((name, proc))
        return proc

    def respawn_dead(self) -> None:
        """Start again any Verbatim process that exited, as an orchestrator would (and say so)."""
        for i, (name, proc) in enumerate(list(self.procs)):
            if proc.poll() is not None and name not in ("postgres", "redis"):
                self.respawned.append(name)
                print(f"  {name} exited ({proc.returncode}): started again", flush=True)
                self.procs.pop(i)
                host, args, env = self.specs[name]
                self.spawn(name, host, *args, env=env)
                return

    def wait_line(self, proc: subprocess.Popen[bytes], name: str, timeout_s: float = 120) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if READY in (self.work / f"{name}.log").read_text(errors="replace"):
                return
            if proc.poll() is not None:
                break
            time.sleep(0.2)
        raise RuntimeError(f"{name} did not start: see {self.work / (name + '.log')}")

    def verbatim_env(self, **extra: str) -> dict[str, str]:
        from verbatim.db.roles import runtime_url

        env = {k: v for k, v in os.environ.items() if not k.startswith(("VERBATIM_", "PG"))}
        env.update(self.t.env())
        env.update(VERBATIM_MODE="development", VERBATIM_DATA_DIR=str(self.data_dir),
                   VERBATIM_KEY_FILE=str(self.work / "ring.json"),
                   VERBATIM_DATABASE_URL=runtime_url(self.admin_url), VERBATIM_REDIS_URL=self.redis_url,
                   VERBATIM_RECOGNIZER_URL=f"http://{ip_of('api')}:{ASR_PORT}/v2",
                   VERBATIM_API_HOST=ip_of("api"), VERBATIM_API_PORT=str(API_PORT),
                   VERBATIM_ASR_HOST=ip_of("api"), VERBATIM_ASR_PORT=str(ASR_PORT), **extra)
        return env

    def start(self) -> None:
        from verbatim.db.migrate import upgrade
        from verbatim.sealed.ring import create_ring_file

        self.net.up()
        self.work.chmod(0o755)  # PostgreSQL runs as its own user under root
        me = [sys.executable, str(Path(__file__).resolve())]
        pg = self.spawn("postgres", "pg", *me, "--serve", "postgres", str(self.work / "pg"), ip_of("pg"))
        rd = self.spawn("redis", "redis", *me, "--serve", "redis", str(self.work / "redis"), ip_of("redis"))
        self.wait_line(pg, "postgres")
        self.wait_line(rd, "redis")
        with psycopg.connect(host=ip_of("pg"), port=PG_PORT, user="postgres", dbname="postgres",
                             autocommit=True) as conn:
            conn.execute("CREATE DATABASE verbatim")
        upgrade(self.admin_url)
        with psycopg.connect(self._conninfo(), autocommit=True) as conn:
            conn.execute(TRIGGERS)
        self.data_dir.mkdir(mode=0o700)
        create_ring_file(self.work / "ring.json")
        cli = [sys.executable, "-m", "verbatim.cli"]
        self.spawn("asr-server", "api", *cli, "asr-server", env=self.verbatim_env())
        self.spawn("api", "api", *cli, "api", env=self.verbatim_env(PGAPPNAME="api"))
        self.spawn("sweeper", "api", *cli, "sweeper", env=self.verbatim_env(PGAPPNAME="sweeper"))
        # w2 is never cut: it has room for its own runs and every run of w1, so a takeover waits
        # for the lease, not for a free worker.
        for host, count in (("w1", self.per_host), ("w2", 2 * self.per_host)):
            for k in range(count):
                name = f"capture-{host[1]}{chr(ord('a') + k)}"
                self.spawn(name, host, *cli, "worker", "--name", name, env=self.verbatim_env(PGAPPNAME=name))
        self._wait_http(f"http://{ip_of('api')}:{API_PORT}/readyz")
        self._wait_http(f"http://{ip_of('api')}:{ASR_PORT}/healthz")

    def _conninfo(self) -> str:
        u = make_url(self.admin_url)
        return f"host={u.host} port={u.port} user=postgres dbname={u.database} application_name=drill"

    def _wait_http(self, url: str, timeout_s: float = 180) -> None:
        import httpx

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with suppress(httpx.HTTPError):
                if httpx.get(url, timeout=3).status_code == 200:
                    return
            time.sleep(0.5)
        raise RuntimeError(f"{url} did not answer in {timeout_s:.0f} s (logs in {self.work})")

    def stop(self) -> None:
        self.net.heal()
        for _, proc in reversed(self.procs):
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
                os.killpg(proc.pid, signal.SIGCONT)  # a worker stopped by run_scenario, interrupted
        for _, proc in reversed(self.procs):
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        self.net.down()

    # -- one scenario --
    def check_copies(self, db: psycopg.Connection[Any], ids: list[str]) -> dict[str, str]:
        """Every session's status; a live one without audio, job id or saved turns is recorded as lost."""
        query = ("SELECT id::text, status, audio_path, vendor_job_id,"
                 " raw_turns IS NOT NULL OR published_turns IS NOT NULL FROM sessions WHERE id = ANY(%s::uuid[])")
        self.respawn_dead()
        status = {}
        gone = []
        for sid, st, audio, _, _ in db.execute(query, (ids,)).fetchall():
            status[sid] = st
            if st not in ("ready", "failed") and not (audio and Path(audio).exists()):
                gone.append(sid)
        # Read again after looking at the files: a delete follows the write that replaced the copy,
        # so a row read now shows that write if the file was deleted before we looked.
        for sid, st, _, job, turns in db.execute(query, (gone,)).fetchall() if gone else []:
            if st not in ("ready", "failed") and not (job or turns):
                self.violations.add(sid)
        return status

    def run_scenario(self, name: str, cuts: list[tuple[str, str]], token: str, watch: LeaseWatch) -> Outcome:
        from verbatim.client import ApiClient
        from verbatim.demo import samples_dir

        started = time.monotonic()
        before = len(watch.takeovers)
        clip = samples_dir() / "jfk.wav"
        target = cuts[0][0]
        # w2 (twice w1's workers) would take every session first: it waits, stopped, until w1
        # holds its share, so the cut host is mid-run when the cut comes.
        paused = [p for who, p in self.procs if who.startswith("capture-2")] if target == "w1" else []
        for proc in paused:
            os.killpg(proc.pid, signal.SIGSTOP)
        with ApiClient(f"http://{ip_of('api')}:{API_PORT}", token) as api:
            ids = [api.upload(clip, [f"client-{uuid.uuid4().hex[:6]}"])["id"] for _ in range(self.n)]
        with psycopg.connect(self._conninfo(), autocommit=True) as db:
            # Cut while the target holds runs (a worker host) or while runs are in flight (the API host).
            want = min(self.per_host, self.n) if paused else 1
            deadline = time.monotonic() + 120 + self.t.job_s
            while time.monotonic() < deadline:
                held = db.execute("SELECT count(*) FROM durable_runs WHERE kind = 'capture' AND holder LIKE %s"
                                  " AND subject_id = ANY(%s::uuid[])",
                                  ("capture-1%" if paused else "capture-%", ids)).fetchone()
                if held and held[0] >= want:
                    break
                self.check_copies(db, ids)
                time.sleep(0.25)
            held_by_target = held[0] if held else 0
            for proc in paused:
                os.killpg(proc.pid, signal.SIGCONT)
            for a, b in cuts:
                self.net.cut(a, b)
            print(f"  {name}: cut at {time.monotonic() - started:.0f} s, {held_by_target} runs held there",
                  flush=True)
            cut_end = time.monotonic() + self.t.cut_s
            while time.monotonic() < cut_end:
                self.check_copies(db, ids)
                time.sleep(0.5)
            self.net.heal()
            healed = time.monotonic()
            # Bounded: a session waits at most its recognizer job, a few leases and a stalled TCP
            # retransmission after the cut (PostgreSQL clients resume on their next retry).
            deadline = time.monotonic() + 600 + 10 * self.t.lease_ttl_s
            status: dict[str, str] = {}
            while time.monotonic() < deadline:
                status = self.check_copies(db, ids)
                if all(s in ("ready", "failed", "blocked") for s in status.values()):
                    break
                time.sleep(0.5)
        ready = sum(1 for s in status.values() if s == "ready")
        mine = [s for sid, s in watch.takeovers[before:] if sid in ids]
        return Outcome(name, self.n, ready, sum(1 for sid in ids if status.get(sid) != "ready"
                                                 or sid in self.violations),
                       len(mine), max(mine) if mine else None, min(mine) if mine else None,
                       time.monotonic() - started, time.monotonic() - healed)

    def run(self) -> dict[str, Any]:
        from verbatim.auth import create_token

        token = create_token(self.admin_url, therapist="Drill", clinic="Drill", expires_in_days=1)
        watch = LeaseWatch(redis.Redis.from_url(self.redis_url, socket_timeout=5), self.t.lease_ttl_s)
        watch.start()
        outcomes = []
        try:
            for name, cuts in SCENARIOS:
                outcomes.append(self.run_scenario(name, cuts, token, watch))
                o = outcomes[-1]
                print(f"  {o.name}: {o.ready}/{o.sessions} ready in {o.elapsed_s:.0f} s, "
                      f"{o.takeovers} takeovers", flush=True)
        finally:
            watch.stop()
            (self.work / "lease-watch.log").write_text("\n".join(watch.events) + "\n")
            if watch.failures:
                print(f"lease watcher: its connection broke {watch.failures} times (re-subscribed)", flush=True)
        with psycopg.connect(self._conninfo(), autocommit=True) as db:
            stale = db.execute(STALE).fetchone()[0]  # type: ignore[index]
            writes = db.execute("SELECT count(*) FROM drill_writes").fetchone()[0]  # type: ignore[index]
        return report(outcomes, int(stale), int(writes), self.t)


def report(outcomes: list[Outcome], stale: int, writes: int, t: Timings) -> dict[str, Any]:
    print(f"\n{'scenario':38} {'sessions':>8} {'ready':>5} {'lost':>4} {'takeovers':>9} "
          f"{'recovery max':>12} {'/ lease':>7} {'elapsed':>8} {'after heal':>10}")
    for o in outcomes:
        rec = f"{o.recovery_max_s:.1f} s" if o.recovery_max_s is not None else "-"
        ratio = f"{o.recovery_max_s / t.lease_ttl_s:.2f}" if o.recovery_max_s is not None else "-"
        print(f"{o.name:38} {o.sessions:>8} {o.ready:>5} {o.lost:>4} {o.takeovers:>9} {rec:>12} {ratio:>7} "
              f"{o.elapsed_s:>6.0f} s {o.after_heal_s:>8.0f} s")
    recoveries = [o.recovery_max_s for o in outcomes if o.recovery_max_s is not None]
    fastest = [o.recovery_min_s for o in outcomes if o.recovery_min_s is not None]
    print(f"worker writes to sessions recorded: {writes}; stale (token below one already committed): {stale}")
    print(f"lease {t.lease_ttl_s:g} s, heartbeat {t.heartbeat_s:g} s, sweep tick {t.sweep_tick_s:g} s, "
          f"cuts of {t.cut_s:g} s")
    return {
        "partitions": len(outcomes),
        "sessions": sum(o.sessions for o in outcomes),
        "sessions_lost": sum(o.lost for o in outcomes),
        "stale_writes": stale,
        "recovery_over_lease_max": round(max(recoveries) / t.lease_ttl_s, 3) if recoveries else None,
        "recovery_over_lease_min": round(min(fastest) / t.lease_ttl_s, 3) if fastest else None,
        "takeovers": sum(o.takeovers for o in outcomes),
        "after_heal_max_s": round(max(o.after_heal_s for o in outcomes), 1),
        "lease_ttl_s": t.lease_ttl_s,
        "sweep_tick_s": t.sweep_tick_s,
        "cut_s": t.cut_s,
    }


@contextmanager
def drill(timings: Timings, sessions: int, workers_per_host: int, keep: bool = False) -> Iterator[Drill]:
    work = Path(tempfile.mkdtemp(prefix="verbatim-partition-"))
    d = Drill(timings, sessions, workers_per_host, work)
    try:
        d.start()
        yield d
    finally:
        d.stop()
        if not keep:
            import shutil

            shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=6, help="uploads in flight per scenario (default 6)")
    parser.add_argument("--w1-workers", type=int, default=3,
                        help="capture workers on w1 (default 3); w2, never cut, has twice as many")
    parser.add_argument("--cut-s", type=float, help="how long each cut lasts (default 120 s; --quick 20 s)")
    parser.add_argument("--quick", action="store_true", help="test timings (lease 6 s, tick 0.5 s)")
    parser.add_argument("--keep", action="store_true", help="keep the logs folder")
    parser.add_argument("--serve", nargs=3, metavar=("KIND", "DIR", "IP"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        kind, folder, ip = args.serve
        (serve_postgres if kind == "postgres" else serve_redis)(Path(folder), ip)
        return
    if os.geteuid() != 0:
        sys.exit("the partition drill makes network namespaces: run it as root")
    timings = QUICK if args.quick else Timings()
    if args.cut_s:
        timings = Timings(**{**timings.__dict__, "cut_s": args.cut_s})
    with drill(timings, args.sessions, args.w1_workers, keep=args.keep) as d:
        result = d.run()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
