import pytest

from verbatim.config import load_settings
from verbatim.errors import ConfigError


def test_defaults_are_safe() -> None:
    s = load_settings()
    assert (s.lease_ttl_s, s.heartbeat_s, s.max_runs, s.polished_runs, s.drain_s) == (60, 15, 5, 3, 600)
    assert s.teardown_budget_s + s.teardown_attempt_timeout_s < s.shutdown_window_s - s.drain_s


def test_teardown_budget_must_fit_the_shutdown_window() -> None:
    with pytest.raises(ConfigError, match="teardown_budget_s"):
        load_settings(drain_s=640, shutdown_window_s=660, teardown_budget_s=20, teardown_attempt_timeout_s=5)


def test_heartbeat_must_be_well_inside_the_lease() -> None:
    with pytest.raises(ConfigError, match="heartbeat"):
        load_settings(lease_ttl_s=10, heartbeat_s=6)


def test_openai_polisher_needs_a_base_url() -> None:
    with pytest.raises(ConfigError, match="LLM_BASE_URL"):
        load_settings(polisher="openai")


def test_environment_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERBATIM_MAX_RUNS", "7")
    assert load_settings().max_runs == 7


def test_the_recognizer_listens_on_localhost_unless_told_otherwise() -> None:
    """It holds patient audio (security issue, item 3): only compose, on its internal network, widens it."""
    from pathlib import Path

    assert load_settings().asr_host == "127.0.0.1"
    dockerfile = (Path(__file__).resolve().parents[2] / "Dockerfile").read_text()
    assert "VERBATIM_ASR_HOST" not in dockerfile
