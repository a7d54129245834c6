"""A small HTTP client for the Verbatim API (used by ``verbatim upload`` and the demo)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx


class ApiClient:
    """Calls ``/v1`` with a bearer token. Raises httpx.HTTPStatusError on error answers."""

    def __init__(self, base_url: str, token: str, timeout_s: float = 120.0):
        self._http = httpx.Client(base_url=base_url, headers={"authorization": f"Bearer {token}"},
                                  timeout=timeout_s)

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.close()

    def upload(
        self, path: Path, client_ids: list[str], *, session_type: str | None = None,
        consent_method: str = "verbal", idempotency_key: str | None = None, recorded_at: datetime | None = None,
    ) -> dict[str, Any]:
        """POST /v1/sessions with the file streamed from disk; returns the session JSON.

        ``session_type`` defaults to what the client count implies (1: individual, 2: couples,
        more: family); ``recorded_at`` to the file's modification time (when the phone finished it).
        """
        if session_type is None:
            session_type = {1: "individual", 2: "couples"}.get(len(client_ids), "family")
        when = recorded_at or datetime.fromtimestamp(path.stat().st_mtime, UTC)
        metadata = {
            "client_ids": client_ids,
            "recorded_at": when.isoformat(),
            "session_type": session_type,
            "consent": {"obtained": True, "method": consent_method, "obtained_at": datetime.now(UTC).isoformat()},
        }
        headers = {"idempotency-key": idempotency_key or uuid.uuid4().hex}
        with open(path, "rb") as fh:
            response = self._http.post(
                "/v1/sessions", files={"audio": (path.name, fh, "application/octet-stream")},
                data={"metadata": json.dumps(metadata)}, headers=headers,
            )
        response.raise_for_status()
        return response.json()

    def session(self, session_id: str) -> dict[str, Any]:
        response = self._http.get(f"/v1/sessions/{session_id}")
        response.raise_for_status()
        return response.json()

    def transcript(self, session_id: str) -> dict[str, Any]:
        response = self._http.get(f"/v1/sessions/{session_id}/transcript")
        response.raise_for_status()
        return response.json()

    def suggestions(self, session_id: str) -> dict[str, Any]:
        """GET /v1/sessions/{id}/suggestions: ``{"session_id", "suggestions": [...]}``."""
        response = self._http.get(f"/v1/sessions/{session_id}/suggestions")
        response.raise_for_status()
        return response.json()

    def analysis_progress(self, session_id: str) -> dict[str, Any]:
        """GET /v1/reliability/transcripts/{id}/progress: ``{"status", "source", …}``."""
        response = self._http.get(f"/v1/reliability/transcripts/{session_id}/progress")
        response.raise_for_status()
        return response.json()

    # --- notes ------------------------------------------------------------------------------
    def request_note(self, session_id: str, fmt: str, client_id: str | None = None) -> dict[str, Any]:
        """POST /v1/sessions/{id}/notes → ``{"note_id", "status", …}`` (202)."""
        body: dict[str, Any] = {"format": fmt, **({"client_id": client_id} if client_id else {})}
        response = self._http.post(f"/v1/sessions/{session_id}/notes", json=body)
        response.raise_for_status()
        return response.json()

    def note(self, note_id: str) -> dict[str, Any]:
        """GET /v1/notes/{id}: the note with sections, citations, labels and risk flags."""
        response = self._http.get(f"/v1/notes/{note_id}")
        response.raise_for_status()
        return response.json()

    def sign_note(self, note_id: str) -> dict[str, Any]:
        """POST /v1/notes/{id}/sign."""
        response = self._http.post(f"/v1/notes/{note_id}/sign")
        response.raise_for_status()
        return response.json()

    def export_note(self, note_id: str, as_: str) -> bytes:
        """GET /v1/notes/{id}/fhir (JSON bytes) or /pdf."""
        response = self._http.get(f"/v1/notes/{note_id}/{as_}")
        response.raise_for_status()
        return response.content
