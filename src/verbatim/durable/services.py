"""What a kind of run needs of its process, as a structural type: every kind depends on this, not on a
concrete context, so no kind imports another's package (``verbatim.context.ProcessContext`` satisfies it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import redis

    from verbatim.config import Settings
    from verbatim.db.repo import Repo
    from verbatim.durable.cancel import CancelToken
    from verbatim.queue import CaptureQueue


class Services(Protocol):
    """The process's settings, database access, Redis client, queue and drain token."""

    @property
    def settings(self) -> Settings: ...

    @property
    def repo(self) -> Repo: ...

    @property
    def redis(self) -> redis.Redis: ...

    @property
    def queue(self) -> CaptureQueue: ...

    @property
    def cancel(self) -> CancelToken: ...

