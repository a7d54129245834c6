"""A clinic's staff records: a trainee's named supervisor, how exports name a clinician, the clinic's time zone.

One writer for each, shared by the API (``/v1/clinic/…``, clinic admin scope) and the CLI
(``verbatim clinic …``); each caller writes its audit row in the same transaction. A supervisor
is another therapist of the same clinic; supervision never runs in a circle (a trainee cannot
supervise their own supervisor, directly or further up).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import select, update
from sqlalchemy.orm import Session as OrmSession

from verbatim.db.models import Clinic, Therapist
from verbatim.errors import StaffInvalid

UNSET = object()


@dataclass(frozen=True)
class StaffRow:
    """One therapist of a clinic as the admin sees them."""

    id: uuid.UUID
    name: str
    display_name: str | None
    credentials: str | None
    requires_cosign: bool
    supervisor_id: uuid.UUID | None


def _row(t: Therapist) -> StaffRow:
    return StaffRow(t.id, t.name, t.display_name, t.credentials, t.requires_cosign, t.supervisor_id)


def therapists(db: OrmSession, clinic_id: uuid.UUID) -> list[StaffRow]:
    """The clinic's therapists, by name."""
    rows = db.execute(select(Therapist).where(Therapist.clinic_id == clinic_id).order_by(Therapist.name)).scalars()
    return [_row(t) for t in rows]


def therapist_named(db: OrmSession, clinic_id: uuid.UUID, name: str) -> uuid.UUID:
    """The id of the clinic's therapist called ``name``; raises StaffInvalid ``unknown_therapist``."""
    found = db.execute(select(Therapist.id).where(Therapist.clinic_id == clinic_id, Therapist.name == name)
                       ).scalar_one_or_none()
    if found is None:
        raise StaffInvalid("unknown_therapist", f"no therapist named {name!r} in this clinic")
    return found


def _therapist(db: OrmSession, clinic_id: uuid.UUID, therapist_id: uuid.UUID) -> Therapist:
    t = db.execute(select(Therapist).where(Therapist.id == therapist_id, Therapist.clinic_id == clinic_id)
                   .with_for_update()).scalar_one_or_none()
    if t is None:
        raise StaffInvalid("unknown_therapist", f"no therapist {therapist_id} in this clinic")
    return t


def update_therapist(db: OrmSession, clinic_id: uuid.UUID, therapist_id: uuid.UUID, *,
                     supervisor_id: uuid.UUID | None | object = UNSET, display_name: str | None | object = UNSET,
                     credentials: str | None | object = UNSET, requires_cosign: bool | object = UNSET) -> StaffRow:
    """Change what is given (``UNSET`` leaves a field; None clears it); raises StaffInvalid.

    Naming a supervisor makes the therapist a trainee (``requires_cosign``) unless told otherwise.
    """
    t = _therapist(db, clinic_id, therapist_id)
    if supervisor_id is not UNSET:
        if supervisor_id is not None:
            assert isinstance(supervisor_id, uuid.UUID)
            if supervisor_id == therapist_id:
                raise StaffInvalid("own_supervisor", "a therapist cannot supervise themselves")
            above: uuid.UUID | None = _therapist(db, clinic_id, supervisor_id).id
            seen = set()
            while above is not None and above not in seen:
                if above == therapist_id:
                    raise StaffInvalid("supervision_cycle", "that supervisor is supervised by this therapist")
                seen.add(above)
                above = db.execute(select(Therapist.supervisor_id).where(Therapist.id == above)).scalar_one()
            if requires_cosign is UNSET:
                t.requires_cosign = True
        t.supervisor_id = supervisor_id
    if display_name is not UNSET:
        t.display_name = display_name  # type: ignore[assignment]
    if credentials is not UNSET:
        t.credentials = credentials  # type: ignore[assignment]
    if requires_cosign is not UNSET:
        t.requires_cosign = bool(requires_cosign)
    db.flush()
    return _row(t)


def set_time_zone(db: OrmSession, clinic_id: uuid.UUID, time_zone: str | None) -> None:
    """The clinic's IANA time zone (``Europe/Berlin``; None: UTC); raises StaffInvalid ``unknown_time_zone``."""
    if time_zone is not None:
        try:
            ZoneInfo(time_zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise StaffInvalid("unknown_time_zone", f"unknown time zone {time_zone!r}: use an IANA name such as "
                               "America/New_York") from None
    db.execute(update(Clinic).where(Clinic.id == clinic_id).values(time_zone=time_zone))
