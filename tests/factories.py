"""Test data: therapists, sessions with real audio on the volume."""

from __future__ import annotations

import base64
import secrets
import uuid
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import text

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


def force_due(database_url: str, sid: uuid.UUID, in_s: float = 0.0, kind: str = "capture") -> None:
    """Arrange a due time as a test's setup (unconditional; the product's own writes never are)."""
    with db_session(database_url) as db:
        db.execute(text("UPDATE durable_runs SET due_at = now() + make_interval(secs => :s) "
                        "WHERE kind = :k AND subject_id = :id"), {"s": in_s, "k": kind, "id": sid})


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


def ready_session(settings: Settings, turns_file: Path, speakers: dict[str, str] | None = None,
                  therapist: str = "T. Test", clinic: str = "Test Clinic", session_type: str = "individual",
                  **fields: object) -> uuid.UUID:
    """Insert a ready session whose transcript is published from a sample dialogue (``[{speaker, …}]``).

    ``speakers`` maps the file's speaker names to roles (``therapist`` or a client id); by
    default ``therapist`` stays and every other name is a client id. The split is the real one.
    """
    import json

    from sqlalchemy import insert, update

    from verbatim.db.models import Transcript
    from verbatim.polish.split import speaker_roles, split_per_client

    assert settings.database_url
    turns = json.loads(turns_file.read_text())
    mapping = speakers or {t["speaker"]: t["speaker"] for t in turns}
    clients = list(dict.fromkeys(r for r in (mapping[t["speaker"]] for t in turns) if r != "therapist"))
    labels = {name: f"S{i + 1}" for i, name in enumerate(dict.fromkeys(t["speaker"] for t in turns))}
    shown = [{"speaker": labels[t["speaker"]], "start_s": t["start_s"], "end_s": t["end_s"], "text": t["text"]}
             for t in turns]
    roles = speaker_roles(shown, clients, None, {labels[k]: v for k, v in mapping.items()})
    records = split_per_client(shown, clients, roles)
    therapist_id, clinic_id = ensure_therapist(settings.database_url, therapist, clinic)
    sid = uuid.uuid4()
    fields.setdefault("status", "ready")
    row = Session(
        id=sid, therapist_id=therapist_id, clinic_id=clinic_id, client_ids=clients,
        recorded_at=datetime.now(UTC), session_type=session_type if len(clients) == 1 else "couples",
        consent={"obtained": True, "method": "verbal"}, audio_path=None, audio_sha256="0" * 64, audio_bytes=1,
        audio_duration_s=float(turns[-1]["end_s"]), audio_format="wav", polished=False,
        raw_turns=shown, published_turns=[{**t, "role": roles[t["speaker"]]} for t in shown],
        polished_turns=[{**t, "role": roles[t["speaker"]]} for t in shown], finished_at=datetime.now(UTC),
        **fields,
    )
    with db_session(settings.database_url) as db:
        db.add(row)
        db.flush()
        for client_id, segments in records.items():
            db.execute(insert(Transcript).values(session_id=sid, client_id=client_id, segments=segments,
                                                 polished=False))
        if speakers is not None:
            # The mapping a test gives is the clinician's: every later change of the record keeps it.
            db.execute(update(Session).where(Session.id == sid).values(speaker_map={labels[k]: v
                                                                                    for k, v in mapping.items()}))
    return sid
