"""Build a process's runtime objects from settings — called after fork, never at import."""

from __future__ import annotations

import redis

from verbatim.config import Settings
from verbatim.context import ProcessContext
from verbatim.db.repo import Repo
from verbatim.durable.outbox import Outbox
from verbatim.errors import ConfigError
from verbatim.pipeline.cleanup import Cleanup
from verbatim.pipeline.notify import Notifier
from verbatim.polish.base import Polisher
from verbatim.polish.openai_chat import OpenAIChatPolisher
from verbatim.polish.rules import RulePolisher
from verbatim.queue import CaptureQueue, celery_app
from verbatim.recognizer.client import Recognizer
from verbatim.retry import RetryPolicy
from verbatim.sealed import load_ring
from verbatim.storage import AudioVolume


def require_urls(settings: Settings) -> tuple[str, str]:
    """(database_url, redis_url); raises ConfigError when a process is started without them."""
    if not settings.database_url or not settings.redis_url:
        raise ConfigError(
            "VERBATIM_DATABASE_URL and VERBATIM_REDIS_URL must be set for this command "
            "(`verbatim up` and `verbatim demo` start embedded servers and set them for you)"
        )
    return settings.database_url, settings.redis_url


def redis_client(url: str) -> redis.Redis:
    """A Redis client with bounded timeouts (a dead server must not hang a run)."""
    return redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=5, health_check_interval=15)


def make_polisher(settings: Settings) -> Polisher:
    if settings.polisher == "openai":
        assert settings.llm_base_url
        return OpenAIChatPolisher(
            settings.llm_base_url, settings.llm_model, settings.llm_api_key, settings.llm_timeout_s,
            settings.llm_retry_budget_s,
        )
    return RulePolisher()


def make_recognizer(settings: Settings) -> Recognizer:
    return Recognizer(
        settings.recognizer_url,
        settings.recognizer_api_key,
        language=settings.recognizer_language,
        request_timeout_s=settings.recognizer_request_timeout_s,
        retry=RetryPolicy(
            attempts=settings.recognizer_max_attempts,
            budget_s=settings.recognizer_retry_budget_s,
            wait_max_s=settings.recognizer_poll_max_s,
        ),
        ring=load_ring(settings),
    )


def make_queue(settings: Settings) -> CaptureQueue:
    _, redis_url = require_urls(settings)
    return CaptureQueue(celery_app(redis_url))


def make_cleanup(settings: Settings, repo: Repo, recognizer: Recognizer, volume: AudioVolume,
                 client: redis.Redis | None = None) -> Cleanup:
    """The outbox's handlers for this process."""
    # A claimed item is hidden for one attempt's longest wait (plus margin): if the process that
    # claimed it dies, the item comes back that soon.
    claim_s = max(settings.recognizer_request_timeout_s, settings.webhook_timeout_s) + 5.0
    box = Outbox(repo.url, backoff_max_s=settings.outbox_backoff_max_s, claim_s=claim_s)
    return Cleanup(repo, box, recognizer, volume,
                   Notifier(settings.webhook_url, settings.webhook_secret, settings.webhook_timeout_s), client)


def build_context(settings: Settings) -> ProcessContext:
    """Everything a capture run or a sweep needs, for this process."""
    database_url, redis_url = require_urls(settings)
    repo = Repo(database_url, webhooks=bool(settings.webhook_url))
    recognizer = make_recognizer(settings)
    volume = AudioVolume.from_settings(settings)
    client = redis_client(redis_url)
    return ProcessContext(
        settings=settings,
        repo=repo,
        redis=client,
        recognizer=recognizer,
        polisher=make_polisher(settings),
        volume=volume,
        queue=make_queue(settings),
        cleanup=make_cleanup(settings, repo, recognizer, volume, client),
    )
