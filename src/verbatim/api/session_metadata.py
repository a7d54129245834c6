"""The session metadata a recording is uploaded with: clients, session type, recording time, consent.

One model for every way a recording arrives — multipart, a finished tus upload, the recorder's
deferred-length upload (checked when it is created, so a phone learns of a mistake while it can
still fix it, not when the recording is finished without it).
"""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from verbatim.api.errors import ApiError
from verbatim.free_text import check_single_line
from verbatim.polish.split import UNASSIGNED

EARLIEST_RECORDING = datetime(2000, 1, 1, tzinfo=UTC)
RESERVED_ROLES = frozenset({"therapist", "other participant"})


class Consent(BaseModel):
    """The client's consent to recording, attested by the therapist."""

    model_config = ConfigDict(extra="forbid")
    obtained: Literal[True]
    method: Literal["verbal", "written", "electronic"]
    obtained_at: datetime

    @field_validator("obtained_at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("obtained_at needs a time zone (e.g. 2026-11-30T10:00:00+00:00)")
        return value


class SessionMetadata(BaseModel):
    """The ``metadata`` part of an upload."""

    model_config = ConfigDict(extra="forbid")
    client_ids: list[Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$")]] = Field(
        min_length=1, max_length=12
    )
    recorded_at: datetime
    # dictation: the therapist's own memo about one client (the single voice is the therapist).
    session_type: Literal["individual", "couples", "family", "group", "dictation"]
    consent: Consent

    @field_validator("client_ids")
    @classmethod
    def _distinct_clients(cls, ids: list[str]) -> list[str]:
        # NFKC first: look-alike forms of one id (full-width letters, ligatures) become one id.
        ids = [unicodedata.normalize("NFKC", i).strip() for i in ids]
        for i in ids:
            if not i:
                raise ValueError("a client id must not be blank")
            if any(unicodedata.category(ch) in ("Co", "Cn") for ch in i):
                raise ValueError("a client id holds a private-use or unassigned character")
            check_single_line(i)  # controls, lone surrogates, format characters (bidi, zero-width)
        if len({i.casefold() for i in ids}) != len(ids):
            raise ValueError("client ids must be distinct")
        reserved = {i for i in ids if i.casefold() in RESERVED_ROLES or i.casefold() == UNASSIGNED}
        if reserved:
            raise ValueError(f"{sorted(reserved)} is a role name, not a client id")
        return ids

    @model_validator(mode="after")
    def _clients_fit_the_session_type(self) -> SessionMetadata:
        if self.session_type == "dictation" and len(self.client_ids) != 1:
            raise ValueError(f"a dictation is about one client, not {len(self.client_ids)}")
        if self.session_type == "individual" and len(self.client_ids) != 1:
            raise ValueError(f"an individual session has one client, not {len(self.client_ids)}; use couples, "
                             "family or group")
        if self.session_type == "couples" and len(self.client_ids) != 2:
            raise ValueError("a couples session has two clients")
        if self.consent.obtained_at > datetime.now(UTC) + timedelta(minutes=10):
            raise ValueError("consent.obtained_at is in the future")
        return self

    @field_validator("recorded_at")
    @classmethod
    def _plausible_time(cls, value: datetime) -> datetime:
        # A recording from before 2000 or from the future is a clock or client bug; refusing it
        # here also keeps every stored time inside what PostgreSQL and Python both represent.
        if value.tzinfo is None:
            raise ValueError("recorded_at needs a time zone (e.g. 2026-11-30T10:00:00+00:00)")
        if not EARLIEST_RECORDING <= value <= datetime.now(UTC) + timedelta(days=1):
            raise ValueError("recorded_at must be between 2000-01-01 and now")
        return value


def validate_metadata(raw: dict[str, Any]) -> SessionMetadata:
    """The upload's metadata as SessionMetadata; ApiError 422 (``missing_consent`` or ``invalid_metadata``)."""
    try:
        return SessionMetadata.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        code = "missing_consent" if where.startswith("consent") else "invalid_metadata"
        raise ApiError(422, code, f"metadata.{where}: {first['msg']}") from exc
