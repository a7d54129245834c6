"""Tables of the clinicians' web pages: cookie sessions and one-time sign-in links.

Both hold only SHA-256 digests of their secrets (as ``api_tokens`` does), and both point at
the bearer token they speak for: revoking that token ends every page session made from it.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, String
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from verbatim.db.models import Base, _now


class WebSession(Base):
    """A signed-in browser: cookie digest → token; ends ``VERBATIM_WEB_IDLE_S`` after ``last_seen_at``
    (database clock) or at sign-out (``revoked_at``). ``csrf_token`` is sent back in every form."""

    __tablename__ = "web_sessions"
    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    token_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), ForeignKey("api_tokens.id"), nullable=False,
                                                index=True)
    csrf_token: Mapped[str] = mapped_column(String(64), nullable=False)
    created_at: Mapped[datetime] = _now()
    last_seen_at: Mapped[datetime] = _now()
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class SignInLink(Base):
    """A one-time sign-in link (``verbatim token create --link``): code digest → token, used at most once."""

    __tablename__ = "web_sign_in_links"
    code_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    token_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), ForeignKey("api_tokens.id"), nullable=False)
    created_at: Mapped[datetime] = _now()
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
