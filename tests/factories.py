"""Test data: therapists, sessions with real audio on the volume."""

from __future__ import annotations

import base64
import secrets
import uuid
from datetime import UTC, datetime
from pathlib import Path

from verbatim.audio import probe
from verbatim.auth import create_token, ensure_therapist
from verbatim.config import Settings
from verbatim.db.engine import db_session
from verbatim.db.models import Session
from verbatim.db.repo import Repo
from verbatim.sealed import iter_plain
from verbatim.storage import AudioVolume


def new_session(settings: Settings, audio: Path, client_ids: list[str] | None = None,
                therapist: str = "T. Test", clinic: str = "Test Clinic", session_type: str = "individual",
                **fields: object) -> uuid.UUID:
    """Insert a queued session whose recording is already on the volume (as after an upload)."""
    assert settings.database_url
    therapist_id, clinic_id = ensure_therapist(settings.database_url, therapist, clinic)
    volume = AudioVolume.from_settings(settings)
    sid = uuid.uuid4()
    tmp = volume.seal_incoming(iter_plain(audio, None))
    final = volume.commit(tmp, sid)
    info = probe(final, ring=volume.ring)
    row = Session(
        id=sid, therapist_id=therapist_id, clinic_id=clinic_id, status="queued",
        client_ids=client_ids or ["client-a"], recorded_at=datetime.now(UTC), session_type=session_type,
        consent={"obtained": True, "method": "verbal"}, audio_path=str(final), audio_sha256="0" * 64,
        audio_bytes=final.stat().st_size, audio_duration_s=info.duration_s, audio_format=info.container,
        **fields,
    )
    with db_session(settings.database_url) as db:
        db.add(row)
        db.flush()
        # As the API does: the capture run's row, due after the stall window.
        Repo(settings.database_url).runs.ensure(db, sid, settings.session_deadline_s, settings.stall_s)
    return sid


class SessionView:
    """A session row plus its capture run's count and fencing token (tests read them together)."""

    def __init__(self, repo: Repo, sid: uuid.UUID):
        self.row = repo.get(sid)
        state = repo.runs.state(sid)
        self.runs = state.runs
        self.fence = state.fence
        self.due_at = state.due_at

    def __getattr__(self, name: str) -> object:
        return getattr(self.row, name)


def view(repo: Repo, sid: uuid.UUID) -> SessionView:
    """The session ``sid`` with ``runs``, ``fence`` and ``due_at`` of its capture run."""
    return SessionView(repo, sid)


def token_for(settings: Settings, therapist: str, clinic: str = "Test Clinic", scope: str = "therapist") -> str:
    assert settings.database_url
    return create_token(settings.database_url, therapist=therapist if scope == "therapist" else None,
                        clinic=clinic, scope=scope)


def ring_setting() -> str:
    """A VERBATIM_ENCRYPTION_KEYS value holding one fresh key (for production-mode settings in tests)."""
    return "k1:" + base64.b64encode(secrets.token_bytes(32)).decode()
