"""FastAPI dependencies: the settings object, the caller's principal, runtime services."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import redis
from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from verbatim.api.errors import ApiError
from verbatim.api.guessing import Guessing, too_many
from verbatim.api.upload_slots import UploadSlots
from verbatim.audit import Actor
from verbatim.auth import Principal, resolve
from verbatim.config import Settings
from verbatim.db.repo import Repo
from verbatim.pipeline.cleanup import Cleanup
from verbatim.queue import CaptureQueue
from verbatim.resumable import ResumableUploads
from verbatim.storage import AudioVolume


@dataclass
class Services:
    """Per-process services of the API, built in the app's lifespan."""

    settings: Settings
    repo: Repo
    redis: redis.Redis
    queue: CaptureQueue
    volume: AudioVolume
    uploads: ResumableUploads
    cleanup: Cleanup
    upload_slots: UploadSlots
    guessing: Guessing


def services(request: Request) -> Services:
    return request.app.state.services


ServicesDep = Annotated[Services, Depends(services)]


#: declares the bearer token in the OpenAPI document (``securitySchemes``), so Swagger can authorize
#: and generated clients send it; ``auto_error=False``: the 401 is ours, in our error shape
BEARER = HTTPBearer(auto_error=False, scheme_name="bearerToken",
                    description="A token from `verbatim token create` (therapist, clinic_admin or admin scope)")


def principal(request: Request, svc: ServicesDep,
              _declared: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)] = None) -> Principal:
    """The caller, from ``Authorization: Bearer <token>``; 401 when missing, unknown, expired or revoked;
    429 after too many failures from the caller's address (``verbatim.api.guessing``).

    A request with a body was already authenticated by ``BodyGate`` (before its body was read).
    """
    gated = getattr(request.state, "principal", None)
    if isinstance(gated, Principal):
        return gated
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise ApiError(401, "unauthorized", "send Authorization: Bearer <token> (verbatim token create)")
    address = request.client.host if request.client else None
    # Checked before the token is: once throttled, a right guess answers as a wrong one does.
    throttled = svc.guessing.throttled(address, "bearer")
    if throttled is not None:
        raise too_many(throttled)
    found = resolve(svc.repo.url, token.strip())
    if found is None:
        svc.guessing.failed(address, "bearer", getattr(request.state, "request_id", None))
        raise ApiError(401, "unauthorized", "the token is unknown, expired or revoked")
    return found


PrincipalDep = Annotated[Principal, Depends(principal)]


def actor(request: Request, who: PrincipalDep) -> Actor:
    """Who acts (for the audit row): the principal, the client address, the request id."""
    return Actor(who, request.client.host if request.client else None,
                 getattr(request.state, "request_id", None))


ActorDep = Annotated[Actor, Depends(actor)]


def admin(who: PrincipalDep) -> Principal:
    """Only tokens with the admin scope pass (403 otherwise)."""
    if who.scope != "admin":
        raise ApiError(403, "forbidden", "this endpoint needs a token with the admin scope")
    return who


AdminDep = Annotated[Principal, Depends(admin)]
