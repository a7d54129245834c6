"""Build a process's runtime objects from settings — called after fork, never at import."""

from __future__ import annotations

import redis

from verbatim.config import Settings
from verbatim.db.repo import Repo
from verbatim.errors import ConfigError
from verbatim.pipeline.context import RunContext
from verbatim.pipeline.notify import Notifier
from verbatim.polish.base import Polisher
from verbatim.polish.openai_chat import OpenAIChatPolisher
from verbatim.polish.rules import RulePolisher
from verbatim.queue import CaptureQueue, celery_app
from verbatim.recognizer.client import Recognizer
from verbatim.retry import RetryPolicy
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
    )


def make_queue(settings: Settings, client: redis.Redis) -> CaptureQueue:
    _, redis_url = require_urls(settings)
    return CaptureQueue(celery_app(redis_url), client, settings.queue_marker_ttl_s)


def build_context(settings: Settings) -> RunContext:
    """Everything a capture run or a sweep needs, for this process."""
    database_url, redis_url = require_urls(settings)
    client = redis_client(redis_url)
    return RunContext(
        settings=settings,
        repo=Repo(database_url),
        redis=client,
        recognizer=make_recognizer(settings),
        polisher=make_polisher(settings),
        volume=AudioVolume(settings.audio_dir, settings.incoming_dir),
        queue=make_queue(settings, client),
        notifier=Notifier(settings.webhook_url, settings.webhook_secret, settings.webhook_budget_s),
    )
