"""``/v1/clinic``: the clinic admin sets who supervises a trainee, how exports name a clinician, the time zone.

Clinic admin scope only (404 for any other token, as for everything not the caller's); every
change is audited (``therapist_updated``, ``clinic_updated``) with the fields changed and ids,
never names. The domain rules are ``verbatim.staff``'s.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from verbatim import audit, staff
from verbatim.api.deps import ActorDep, PrincipalDep, ServicesDep
from verbatim.api.errors import ApiError
from verbatim.auth import Principal
from verbatim.db.engine import db_session
from verbatim.errors import NotFound, StaffInvalid

router = APIRouter(prefix="/v1/clinic", tags=["clinic"])

Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200,
                                        pattern=r"^[^\x00-\x1f\x7f]+$")]
Credentials = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100,
                                               pattern=r"^[^\x00-\x1f\x7f]+$")]


class TherapistOut(BaseModel):
    id: uuid.UUID
    name: str
    display_name: str | None
    credentials: str | None
    requires_cosign: bool
    supervisor_id: uuid.UUID | None


class TherapistChange(BaseModel):
    """Only the fields given change; ``null`` clears one."""

    model_config = ConfigDict(extra="forbid")
    supervisor_id: uuid.UUID | None = Field(None, description="The trainee's supervisor (another therapist here)")
    display_name: Name | None = Field(None, description='How exports name the clinician, e.g. "Dana Reyes"')
    credentials: Credentials | None = Field(None, description='e.g. "LCSW", "PhD, LP"')
    requires_cosign: bool | None = Field(None, description="A trainee: signed notes also need the supervisor's")


class ClinicChange(BaseModel):
    model_config = ConfigDict(extra="forbid")
    time_zone: Annotated[str, StringConstraints(min_length=1, max_length=64)] | None = Field(
        None, description="IANA time zone exports print times in (null: UTC)")


def _clinic(who: Principal) -> uuid.UUID:
    if who.scope != "clinic_admin" or who.clinic_id is None:
        raise NotFound("the clinic's staff is managed with a clinic admin token")
    return who.clinic_id


def _invalid(exc: StaffInvalid) -> ApiError:
    return ApiError(404 if exc.code == "unknown_therapist" else 422, exc.code, str(exc))


@router.get("/therapists", response_model=list[TherapistOut])
def list_therapists(svc: ServicesDep, who: PrincipalDep, actor: ActorDep) -> list[TherapistOut]:
    """The clinic's therapists with their supervisor, display name and credentials. Audited."""
    clinic = _clinic(who)
    with db_session(svc.repo.url) as db:
        rows = staff.therapists(db, clinic)
        audit.record(db, actor, "therapists_listed", None, {"count": len(rows)})
    return [TherapistOut(**r.__dict__) for r in rows]


@router.patch("/therapists/{therapist_id}", response_model=TherapistOut)
def change_therapist(therapist_id: uuid.UUID, body: TherapistChange, svc: ServicesDep, who: PrincipalDep,
                     actor: ActorDep) -> TherapistOut:
    """Name (or clear) a trainee's supervisor, set how exports name a clinician. Audited.

    404 ``unknown_therapist`` (not of this clinic); 422 ``own_supervisor`` / ``supervision_cycle``.
    """
    clinic = _clinic(who)
    given: dict[str, Any] = {k: getattr(body, k) for k in body.model_fields_set}
    if not given:
        raise ApiError(422, "invalid_request", "give at least one of supervisor_id, display_name, credentials, "
                                               "requires_cosign")
    with db_session(svc.repo.url) as db:
        try:
            row = staff.update_therapist(db, clinic, therapist_id, **given)
        except StaffInvalid as exc:
            raise _invalid(exc) from None
        audit.record(db, actor, "therapist_updated", None, {
            "therapist_id": str(therapist_id), "fields": sorted(given),
            **({"supervisor_id": str(row.supervisor_id) if row.supervisor_id else None}
               if "supervisor_id" in given else {})})
    return TherapistOut(**row.__dict__)


@router.patch("", response_model=dict[str, Any])
def change_clinic(body: ClinicChange, svc: ServicesDep, who: PrincipalDep, actor: ActorDep) -> dict[str, Any]:
    """Set the clinic's time zone (exports print the time of service in it). Audited. 422 ``unknown_time_zone``."""
    clinic = _clinic(who)
    with db_session(svc.repo.url) as db:
        try:
            staff.set_time_zone(db, clinic, body.time_zone)
        except StaffInvalid as exc:
            raise _invalid(exc) from None
        audit.record(db, actor, "clinic_updated", None, {"fields": ["time_zone"], "time_zone": body.time_zone})
    return {"time_zone": body.time_zone}
