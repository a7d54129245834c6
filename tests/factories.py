"""Test data: therapists, sessions with real audio on the volume."""

from __future__ import annotations

import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path

from verbatim.audio import probe
from verbatim.auth import create_token, ensure_therapist
from verbatim.config import Settings
from verbatim.db.engine import db_session
from verbatim.db.models import Session
from verbatim.storage import AudioVolume


def new_session(settings: Settings, audio: Path, client_ids: list[str] | None = None,
                therapist: str = "T. Test", clinic: str = "Test Clinic", **fields: object) -> uuid.UUID:
    """Insert a queued session whose recording is already on the volume (as after an upload)."""
    assert settings.database_url
    therapist_id, clinic_id = ensure_therapist(settings.database_url, therapist, clinic)
    volume = AudioVolume(settings.audio_dir, settings.incoming_dir)
    sid = uuid.uuid4()
    tmp = volume.new_incoming()
    shutil.copyfile(audio, tmp)
    final = volume.commit(tmp, sid)
    info = probe(final)
    row = Session(
        id=sid, therapist_id=therapist_id, clinic_id=clinic_id, status="queued",
        client_ids=client_ids or ["client-a"], recorded_at=datetime.now(UTC), session_type="individual",
        consent={"obtained": True, "method": "verbal"}, audio_path=str(final), audio_sha256="0" * 64,
        audio_bytes=final.stat().st_size, audio_duration_s=info.duration_s, audio_format=info.container,
        **fields,
    )
    with db_session(settings.database_url) as db:
        db.add(row)
    return sid


def token_for(settings: Settings, therapist: str, clinic: str = "Test Clinic", scope: str = "therapist") -> str:
    assert settings.database_url
    return create_token(settings.database_url, therapist=therapist if scope == "therapist" else None,
                        clinic=clinic, scope=scope)
