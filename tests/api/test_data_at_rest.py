"""Data at rest (security issue, item 13): nothing of a recording or a transcript is on disk in clear.

Real API over real PostgreSQL and Redis; the real local recognizer for its job store; a real
`verbatim keys rotate` process SIGKILLed half-way.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from tests.api.conftest import Api
from tests.conftest import API_KEY, SAMPLES, AsrServer
from verbatim.recognizer.client import JobState, Recognizer
from verbatim.retry import RetryPolicy
from verbatim.sealed import is_sealed, read_sealed, seal_file
from verbatim.sealed.ring import read_ring_file
from verbatim.sealed.rotate import usage

JFK = SAMPLES / "jfk.wav"


def _windows(plain: bytes, size: int = 4096) -> list[bytes]:
    """Slices of the plain text spread over it: any of them found on disk means clear data leaked."""
    step = max(len(plain) // 16, 1)
    return [plain[i : i + size] for i in range(0, max(len(plain) - size, 1), step)]


def _no_clear_copy(folder: Path, plain: bytes) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            raw = path.read_bytes()
            assert not any(w in raw for w in _windows(plain)), f"{path} holds clear audio"


def test_uploads_are_sealed_private_and_read_back_exactly(api: Api, alice: str) -> None:
    plain = JFK.read_bytes()
    r = api.upload(alice, JFK)
    assert r.status_code == 201, r.text
    upload_id = api.tus_upload(alice, JFK, complete=False)
    stored = api.settings.audio_dir / f"{r.json()['id']}.audio"
    partial = api.settings.tus_dir / f"{upload_id}.bin"
    assert api.plain(stored) == plain and api.plain(partial) == plain[: len(plain) // 2]
    _no_clear_copy(api.settings.data_dir, plain)
    assert (stored.stat().st_mode & 0o777, partial.stat().st_mode & 0o777) == (0o600, 0o600)
    for folder in (api.settings.audio_dir, api.settings.incoming_dir, api.settings.tus_dir):
        assert folder.stat().st_mode & 0o777 == 0o700, folder


def test_a_tampered_partial_upload_is_refused_not_used(api: Api, alice: str) -> None:
    upload_id = api.tus_upload(alice, JFK)
    partial = api.settings.tus_dir / f"{upload_id}.bin"
    raw = bytearray(partial.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    partial.write_bytes(bytes(raw))
    r = api.finalize(alice, upload_id)
    assert r.status_code in (409, 422), r.text  # never a session made of altered audio
    assert list(api.settings.audio_dir.iterdir()) == []


def test_the_local_recognizer_keeps_its_jobs_sealed(asr: AsrServer) -> None:
    recognizer = Recognizer(asr.url + "/v2", API_KEY, request_timeout_s=10, retry=RetryPolicy(attempts=3, budget_s=20))
    asr.fault("hold", hold=True)  # the job waits with its audio in the store
    job_id = recognizer.submit(JFK, uuid.uuid4())
    audio = asr.data_dir / "asr-jobs" / job_id / "audio"
    assert is_sealed(audio) and audio.stat().st_mode & 0o777 == 0o600
    _no_clear_copy(asr.data_dir / "asr-jobs", JFK.read_bytes())
    asr.fault("hold", hold=False)
    deadline = time.monotonic() + 120
    while recognizer.state(job_id) is JobState.RUNNING and time.monotonic() < deadline:
        time.sleep(0.2)
    transcript = asr.data_dir / "asr-jobs" / job_id / "transcript.json"
    assert is_sealed(transcript) and b"country" not in transcript.read_bytes()
    assert any("country" in str(item) for item in recognizer.transcript(job_id))
    recognizer.delete(job_id)
    recognizer.close()


def test_keys_rotate_killed_half_way_loses_nothing_and_finishes_on_the_next_run(tmp_path: Path) -> None:
    env = dict(os.environ, VERBATIM_MODE="development", VERBATIM_DATA_DIR=str(tmp_path))
    env.pop("VERBATIM_KEY_FILE", None)
    env.pop("VERBATIM_ENCRYPTION_KEYS", None)
    cli = [sys.executable, "-m", "verbatim.cli", "keys"]
    subprocess.run([*cli, "list"], env=env, check=True, capture_output=True)  # generates the first ring
    ring_path = tmp_path / "keys" / "ring.json"
    first = read_ring_file(ring_path)
    audio = tmp_path / "audio"
    audio.mkdir()
    plains = {audio / f"{uuid.uuid4()}.audio": os.urandom(200_000 + i) for i in range(6)}
    for path, plain in plains.items():
        seal_file(path, plain, first)

    killed = subprocess.run([*cli, "rotate"], env=dict(env, VERBATIM_CRASH_POINT="mid_key_rotate"),
                            capture_output=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    ring = read_ring_file(ring_path)
    assert set(first.keys) < set(ring.keys)  # the old key is still there
    assert all(read_sealed(p, ring) == plain for p, plain in plains.items())
    assert usage([audio]) == {first.current: 5, ring.current: 1}

    subprocess.run([*cli, "rotate", "--no-new-key"], env=env, check=True, capture_output=True)
    assert usage([audio]) == {ring.current: 6}
    assert all(read_sealed(p, ring) == plain for p, plain in plains.items())
    assert not any(p.name.endswith(".rekey") for p in audio.iterdir())


def test_production_without_a_key_refuses_to_start(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERBATIM_")}
    env.update(VERBATIM_MODE="production", VERBATIM_DATA_DIR=str(tmp_path), VERBATIM_ASR_API_KEY="not-default",
               VERBATIM_ASR_PORT="1")
    r = subprocess.run([sys.executable, "-m", "verbatim.cli", "asr-server"], env=env, capture_output=True, timeout=60)
    assert r.returncode != 0 and b"encryption key" in r.stdout + r.stderr
    assert not (tmp_path / "keys").exists()  # production never generates a key of its own
