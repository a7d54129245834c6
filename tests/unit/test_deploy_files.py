"""docker-compose.yml, Dockerfile and .env.example agree with the code (no Docker engine needed)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from verbatim.config import Settings

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict:  # type: ignore[type-arg]
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_has_every_role_with_healthchecks() -> None:
    services = compose()["services"]
    roles = {"postgres", "redis", "migrate", "api", "worker-1", "worker-2", "sweeper", "asr-server", "analysis-worker"}
    assert roles <= set(services)
    for name in roles - {"migrate"}:
        assert "test" in services[name]["healthcheck"], name
    assert services["migrate"]["command"] == ["migrate"]
    assert services["migrate"]["restart"] == "no"


def test_workers_drain_inside_an_eleven_minute_grace_period() -> None:
    services = compose()["services"]
    for name in ("worker-1", "worker-2"):
        assert services[name]["stop_grace_period"] == "11m"
        assert services[name]["command"][0] == "worker"
        assert services[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    defaults = Settings.model_fields
    assert defaults["drain_s"].default < 11 * 60 == defaults["shutdown_window_s"].default


def test_dockerfile_is_one_image_whose_command_picks_the_role() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r'^ENTRYPOINT \["verbatim"\]$', text, re.M), "exec form: the role is PID 1"
    assert re.search(r"^FROM python:3\.1[12]", text, re.M)
    for folder in ("src", "workers", "migrations"):
        assert f"COPY {folder} ./{folder}" in text
    assert "USER verbatim" in text


def test_env_example_lists_every_setting() -> None:
    text = (ROOT / ".env.example").read_text()
    listed = set(re.findall(r"^#? ?VERBATIM_([A-Z0-9_]+)=", text, re.M))
    assert listed == {name.upper() for name in Settings.model_fields}
