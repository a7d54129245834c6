"""Benchmark uploads of a 1 GiB recording into a real API process; prints figures, asserts nothing.

Run from the repository root: ``.venv/bin/python bench/upload.py [--size-mib 1024]``.

What it does:
1. writes a valid 16 kHz mono 16-bit WAV of ``--size-mib`` MiB (default 1 GiB, ≈ 9.3 h) into a
   temp folder, streaming a repeated block of noise (never held in memory), and times that
   write + fsync: the **baseline**, raw disk write throughput of this machine, same process;
2. starts ``verbatim api`` as a subprocess (PostgreSQL from ``VERBATIM_DATABASE_URL`` in a
   scratch database, else an embedded server; always a private embedded Redis, so no worker
   of anyone else's sees the bench's capture messages), with ``VERBATIM_MAX_DURATION_S``
   large enough for the file;
3. samples the API process's RSS every 50 ms from a thread (psutil);
4. uploads the file as ``multipart/form-data`` (httpx streams it from disk) and times it;
5. uploads it again through tus: one PATCH aborted (RST) at 50 %, HEAD for the offset,
   a PATCH resuming from there, then ``POST /v1/sessions`` with the upload id, and checks
   the session's SHA-256 (as stored, and of the file on the volume) equals the file's.

Everything Verbatim stores is sealed (AES-256-GCM, `verbatim.sealed`), so step 1 also seals the
same bytes into a second file in this process (write + fsync timed the same way): sealed vs
clear write throughput is the cost of encryption at rest on this machine, and the uploads'
throughput is compared with both.

Figures: RSS growth is peak RSS minus the RSS after a warm-up upload (MiB); throughput is
bytes / wall time of the whole request, server-side probe, fsync and commit included (MiB/s).
The last line is one JSON object: ``{"rss_growth_mib", "throughput_mib_s", "tus_resumed_ok",
"clear_write_mib_s", "sealed_write_mib_s", "sealed_vs_clear", "upload_vs_clear_write"}``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psutil
from scratch_db import database  # bench/ is on sys.path: the script's own folder
from waits import wait_exit

from verbatim.auth import create_token
from verbatim.db.engine import db_session, dispose_all
from verbatim.db.models import Session
from verbatim.embedded import EmbeddedRedis, free_port
from verbatim.sealed import KeyRing, SegmentWriter, iter_plain
from verbatim.sealed.ring import read_ring_file

MIB = 1024 * 1024
SAMPLES = Path(__file__).resolve().parents[1] / "samples"
BLOCK = 8 * MIB
SEND_CHUNK = 256 * 1024


# --- the recording --------------------------------------------------------------------------


def write_wav(path: Path, size: int) -> tuple[str, float]:
    """Write a ``size``-byte PCM WAV (16 kHz, mono, s16le) of noise; return (hex SHA-256, seconds spent).

    The time covers writing and fsync only (hashing is done between writes but not timed),
    so bytes / seconds is raw disk write throughput.
    """
    data_bytes = size - 44
    assert data_bytes > 0 and data_bytes % 2 == 0
    header = (b"RIFF" + struct.pack("<I", 36 + data_bytes) + b"WAVE"
              + b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, 16000, 32000, 2, 16)
              + b"data" + struct.pack("<I", data_bytes))
    noise = os.urandom(BLOCK)
    digest = hashlib.sha256(header)
    spent = 0.0
    with open(path, "wb", buffering=0) as fh:
        t = time.perf_counter()
        fh.write(header)
        spent += time.perf_counter() - t
        left = data_bytes
        while left:
            block = noise[: min(BLOCK, left)]
            t = time.perf_counter()
            fh.write(block)
            spent += time.perf_counter() - t
            digest.update(block)
            left -= len(block)
        t = time.perf_counter()
        os.fsync(fh.fileno())
        spent += time.perf_counter() - t
    return digest.hexdigest(), spent


def seal_copy(source: Path, target: Path, ring: KeyRing) -> float:
    """Seal ``source`` into ``target`` as an upload does (SegmentWriter, then fsync); return seconds spent.

    Reading the clear source is not timed (it is in the page cache after write_wav), so bytes /
    seconds compares with write_wav's figure: the same write, encrypted.
    """
    spent = 0.0
    with open(source, "rb") as src, open(target, "wb", buffering=0) as out:
        writer = SegmentWriter(out, ring)
        while block := src.read(SEND_CHUNK):
            t = time.perf_counter()
            writer.write(block)
            spent += time.perf_counter() - t
        t = time.perf_counter()
        writer.finish()
        os.fsync(out.fileno())
        spent += time.perf_counter() - t
    return spent


def sha256_file(path: Path, ring: KeyRing | None = None) -> str:
    """SHA-256 of a file's plain text (sealed files opened with ``ring``)."""
    digest = hashlib.sha256()
    for chunk in iter_plain(path, ring, BLOCK):
        digest.update(chunk)
    return digest.hexdigest()


def metadata() -> dict[str, Any]:
    now = datetime.now(UTC).isoformat()
    return {"client_ids": ["bench-client"], "recorded_at": now, "session_type": "individual",
            "consent": {"obtained": True, "method": "verbal", "obtained_at": now}}


# --- servers and the API process ------------------------------------------------------------


class ApiProcess:
    """``verbatim api`` in its own process group, with its RSS sampled every ``period_s``."""

    def __init__(self, env: dict[str, str], log: Path, port: int, period_s: float = 0.05):
        self.url = f"http://127.0.0.1:{port}"
        self.port = port
        with open(log, "ab") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "verbatim.cli", "api"], env=env, stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        self.log = log
        self.ps = psutil.Process(self.proc.pid)
        self.period_s = period_s
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def wait_ready(self, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("verbatim api exited:\n" + self.log.read_text(errors="replace")[-2000:])
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/readyz", timeout=2).status_code == 200:
                    self._thread.start()
                    return
            time.sleep(0.2)
        raise RuntimeError("verbatim api did not become ready")

    def rss(self) -> int:
        return int(self.ps.memory_info().rss)

    def reset_peak(self) -> int:
        """Start a new measurement; returns the current RSS (bytes)."""
        now = self.rss()
        self.peak = now
        return now

    def _sample(self) -> None:
        while not self._stop.wait(self.period_s):
            with contextlib.suppress(psutil.Error):
                self.peak = max(self.peak, self.rss())

    def stop(self) -> None:
        self._stop.set()
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                wait_exit(self.proc, 30, "the API server after SIGKILL")


# --- the two upload paths -------------------------------------------------------------------


def multipart_upload(api: ApiProcess, token: str, path: Path) -> tuple[dict[str, Any], float]:
    """POST /v1/sessions with the file streamed from disk; returns (session JSON, seconds)."""
    with open(path, "rb") as fh, httpx.Client(base_url=api.url, timeout=600) as http:
        t = time.perf_counter()
        r = http.post("/v1/sessions", files={"audio": (path.name, fh, "audio/wav")},
                      data={"metadata": json.dumps(metadata())}, headers={"authorization": f"Bearer {token}"})
        spent = time.perf_counter() - t
    r.raise_for_status()
    return r.json(), spent


def _raw_patch(api: ApiProcess, token: str, upload_id: str, path: Path, offset: int, stop_at: int | None
               ) -> tuple[int, dict[str, str]] | None:
    """PATCH the file from ``offset`` to its end over a raw socket.

    With ``stop_at``, abort the connection (RST) once that many bytes of the file were sent
    and return None; else return (status, headers) of the answer.
    """
    size = path.stat().st_size
    sock = socket.create_connection(("127.0.0.1", api.port))
    try:
        sock.sendall(
            f"PATCH /v1/uploads/{upload_id} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {token}\r\n"
            f"Tus-Resumable: 1.0.0\r\nUpload-Offset: {offset}\r\nContent-Type: application/offset+octet-stream\r\n"
            f"Content-Length: {size - offset}\r\n\r\n".encode()
        )
        with open(path, "rb") as fh:
            fh.seek(offset)
            position = offset
            while position < size:
                chunk = fh.read(min(SEND_CHUNK, size - position) if stop_at is None
                                else min(SEND_CHUNK, size - position, stop_at - position))
                sock.sendall(chunk)
                position += len(chunk)
                if stop_at is not None and position >= stop_at:
                    # SO_LINGER 0: close() sends RST, like a phone dropping off the network mid-send.
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    return None
        sock.settimeout(600)
        raw = b""
        while b"\r\n\r\n" not in raw:
            more = sock.recv(65536)
            if not more:
                break
            raw += more
        head = raw.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
        headers = {k.lower(): v for k, _, v in (line.partition(": ") for line in head[1:])}
        return int(head[0].split()[1]), headers
    finally:
        sock.close()


def tus_upload_with_a_cut(api: ApiProcess, token: str, path: Path, sha: str) -> dict[str, Any]:
    """Create, PATCH to 50 % and abort, HEAD, resume, finalize; returns figures and the verdict."""
    size = path.stat().st_size
    auth = {"authorization": f"Bearer {token}", "tus-resumable": "1.0.0"}
    with httpx.Client(base_url=api.url, headers=auth, timeout=600) as http:
        t0 = time.perf_counter()
        created = http.post("/v1/uploads", headers={"upload-length": str(size)})
        created.raise_for_status()
        upload_id = created.json()["upload_id"]
        t = time.perf_counter()
        _raw_patch(api, token, upload_id, path, 0, stop_at=size // 2)
        first_s = time.perf_counter() - t
        offset = -1
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # 423 while the server still holds the cut PATCH's lock
            head = http.head(f"/v1/uploads/{upload_id}")
            if head.status_code == 200:
                offset = int(head.headers["upload-offset"])
                break
            time.sleep(0.1)
        t = time.perf_counter()
        answer = _raw_patch(api, token, upload_id, path, offset, stop_at=None)
        second_s = time.perf_counter() - t
        assert answer is not None
        status, headers = answer
        t = time.perf_counter()
        done = http.post("/v1/sessions", json={"upload_id": upload_id, "metadata": metadata()},
                         headers={"x-content-sha256": sha})
        finalize_s = time.perf_counter() - t
        total_s = time.perf_counter() - t0
    out: dict[str, Any] = {
        "cut_offset": offset, "resume_status": status, "final_offset": int(headers.get("upload-offset", -1)),
        "finalize_status": done.status_code, "first_patch_s": first_s, "second_patch_s": second_s,
        "finalize_s": finalize_s, "total_s": total_s,
    }
    out["session"] = done.json() if done.status_code == 201 else done.text
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--size-mib", type=int, default=1024, help="size of the generated WAV (MiB)")
    args = parser.parse_args()
    size = args.size_mib * MIB
    scratch = Path(tempfile.mkdtemp(prefix="verbatim-bench-upload-"))
    scratch.chmod(0o755)  # an embedded PostgreSQL runs as another user under root
    api: ApiProcess | None = None
    redis_server = EmbeddedRedis(scratch / "redis", free_port())
    try:
        wav = scratch / "recording.wav"
        print(f"writing a {size / MIB:.0f} MiB WAV to {wav} …", flush=True)
        sha, write_s = write_wav(wav, size)
        disk_mib_s = size / MIB / write_s
        print(f"baseline: raw disk write + fsync in this process: {disk_mib_s:.0f} MiB/s ({write_s:.2f} s)")
        sealed_s = seal_copy(wav, scratch / "sealed.bin", KeyRing.generate())
        (scratch / "sealed.bin").unlink()
        sealed_mib_s = size / MIB / sealed_s
        print(f"sealed write (AES-256-GCM, 64 KiB chunks) + fsync: {sealed_mib_s:.0f} MiB/s ({sealed_s:.2f} s), "
              f"{100 * sealed_mib_s / disk_mib_s:.0f} % of clear")
        duration_s = (size - 44) / 32000
        redis_server.start()
        with database(scratch) as db_url:
            data_dir = scratch / "data"
            port = free_port()
            env = dict(os.environ, VERBATIM_DATABASE_URL=db_url, VERBATIM_REDIS_URL=redis_server.url,
                       VERBATIM_DATA_DIR=str(data_dir), VERBATIM_API_PORT=str(port), VERBATIM_MODE="development",
                       VERBATIM_MAX_DURATION_S=str(int(duration_s) + 3600),
                       VERBATIM_MAX_UPLOAD_BYTES=str(max(size + MIB, 2 * 1024 * MIB)), VERBATIM_LOG_LEVEL="WARNING")
            api = ApiProcess(env, scratch / "api.log", port)
            api.wait_ready()
            token = create_token(db_url, therapist="Bench Therapist", clinic="Bench Clinic")
            multipart_upload(api, token, SAMPLES / "jfk.wav")  # warm-up: imports, pools, first-request paths
            time.sleep(0.5)

            base = api.reset_peak()
            session, multipart_s = multipart_upload(api, token, wav)
            time.sleep(0.2)
            multipart_growth = (api.peak - base) / MIB
            multipart_mib_s = size / MIB / multipart_s
            print(f"multipart: {multipart_s:.2f} s, {multipart_mib_s:.0f} MiB/s, API RSS {base / MIB:.0f} MiB "
                  f"→ peak +{multipart_growth:.1f} MiB; session {session['id']} ({session['duration_s']:.0f} s audio)")
            # Make room on the volume: the first session's 1 GiB is not needed any more.
            httpx.delete(f"{api.url}/v1/sessions/{session['id']}", headers={"authorization": f"Bearer {token}"},
                         timeout=60).raise_for_status()

            base = api.reset_peak()
            tus = tus_upload_with_a_cut(api, token, wav, sha)
            time.sleep(0.2)
            tus_growth = (api.peak - base) / MIB
            ok = tus["finalize_status"] == 201 and 0 < tus["cut_offset"] < size and tus["final_offset"] == size
            if ok:
                sid = uuid.UUID(tus["session"]["id"])
                with db_session(db_url) as db:
                    row = db.get(Session, sid)
                    stored = row.audio_sha256 if row is not None else None
                    audio_path = Path(row.audio_path) if row is not None and row.audio_path else None
                ring = read_ring_file(data_dir / "keys" / "ring.json")  # development mode's generated ring
                on_volume = sha256_file(audio_path, ring) if audio_path is not None else None
                ok = stored == sha == on_volume and not any((data_dir / "tus").iterdir())
            tus_mib_s = size / MIB / (tus["first_patch_s"] + tus["second_patch_s"] + tus["finalize_s"])
            print(f"tus: cut at {tus['cut_offset']} of {size} bytes ({100 * tus['cut_offset'] / size:.1f} %), "
                  f"resume → {tus['resume_status']} at offset {tus['final_offset']}, finalize → "
                  f"{tus['finalize_status']} ({tus['finalize_s']:.2f} s incl. server-side SHA-256); "
                  f"{tus_mib_s:.0f} MiB/s over the two PATCHes + finalize; RSS peak +{tus_growth:.1f} MiB; "
                  f"SHA-256 matches: {ok}")
            dispose_all()
            rss_growth = max(multipart_growth, tus_growth)
            print(f"summary: API peak RSS growth {rss_growth:.1f} MiB (aim ≤ 64); multipart {multipart_mib_s:.0f} "
                  f"MiB/s vs raw disk write {disk_mib_s:.0f} MiB/s ({100 * multipart_mib_s / disk_mib_s:.0f} %)")
            api.stop()
            api = None
        print(json.dumps({"rss_growth_mib": round(rss_growth, 1), "throughput_mib_s": round(multipart_mib_s, 1),
                          "tus_resumed_ok": ok, "clear_write_mib_s": round(disk_mib_s, 1),
                          "sealed_write_mib_s": round(sealed_mib_s, 1),
                          "sealed_vs_clear": round(sealed_mib_s / disk_mib_s, 3),
                          "upload_vs_clear_write": round(multipart_mib_s / disk_mib_s, 3)}))
    finally:
        if api is not None:
            api.stop()
        redis_server.stop()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
