"""docker-compose.yml, Dockerfile and .env.example agree with the code (no Docker engine needed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
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
    # Numeric, so Kubernetes' runAsNonRoot can verify it (deploy/k8s runs every pod as 10001:10001).
    assert re.search(r"^USER 10001:10001$", text, re.M)


def test_env_example_lists_every_setting() -> None:
    text = (ROOT / ".env.example").read_text()
    listed = set(re.findall(r"^#? ?VERBATIM_([A-Z0-9_]+)=", text, re.M))
    assert listed == {name.upper() for name in Settings.model_fields}


def test_compose_holds_no_default_secret_and_keeps_the_recognizer_internal() -> None:
    doc = compose()
    text = (ROOT / "docker-compose.yml").read_text()
    assert "local-dev-key" not in text
    env = doc["x-verbatim"]["environment"]
    assert env["VERBATIM_MODE"] == "production"
    assert env["VERBATIM_RECOGNIZER_API_KEY"].startswith("${") and ":?" in env["VERBATIM_RECOGNIZER_API_KEY"]
    assert doc["networks"]["recognizer"]["internal"] is True
    asr = doc["services"]["asr-server"]
    assert asr["networks"] == ["recognizer"] and "ports" not in asr
    assert "VERBATIM_ASR_HOST" not in (ROOT / "Dockerfile").read_text().split("USER")[0].split("ENV", 1)[1] \
        .split("RUN")[0]


def test_production_refuses_default_secrets_and_development_allows_them() -> None:
    from verbatim.errors import ConfigError

    prod = Settings(mode="production")
    for role in ("api", "worker", "sweeper", "asr-server"):
        with pytest.raises(ConfigError, match="production"):
            prod.refuse_default_secrets(role)
    keyed = Settings(mode="production", recognizer_api_key="k1", asr_api_key="k2", key_file=Path("/run/ring.json"))
    for role in ("api", "worker", "sweeper", "asr-server"):
        keyed.refuse_default_secrets(role)
    for role in ("api", "worker", "sweeper", "asr-server"):  # no encryption key: nothing would be sealed
        with pytest.raises(ConfigError, match="encryption key"):
            keyed.model_copy(update={"key_file": None}).refuse_default_secrets(role)
    with pytest.raises(ConfigError, match="WEBHOOK_SECRET"):
        Settings(mode="production", recognizer_api_key="k1", webhook_url="https://x/hook",
                 key_file=Path("/run/ring.json")).refuse_default_secrets(
            "worker")
    Settings(mode="development").refuse_default_secrets("worker")
    assert (Settings(mode="production").docs_enabled, Settings(mode="development").docs_enabled) == (False, True)


def test_compose_mounts_the_key_ring_folder_so_a_rotation_reaches_running_containers() -> None:
    doc = compose()
    ring = doc["x-verbatim"]["environment"]["VERBATIM_KEY_FILE"]
    folder = ring.rsplit("/", 1)[0]
    # A rotation renames a new ring.json into place (a new inode): only a folder mount shows it to a
    # running process; a single-file mount (a compose secret) keeps the old inode until a restart.
    assert "secrets" not in doc, "the key ring must not be a single-file secret mount"
    for name in ("api", "worker-1", "worker-2", "sweeper", "analysis-worker", "asr-server", "migrate"):
        service = doc["services"][name]
        assert "secrets" not in service, name
        mounts = [v.rsplit(":", 2) for v in service["volumes"] if isinstance(v, str)]
        keyring = [m for m in mounts if len(m) == 3 and m[1] == folder]
        assert len(keyring) == 1 and keyring[0][2] == "ro", (name, service["volumes"])
        assert not keyring[0][0].endswith(".json"), "mount the folder, not the file"


def test_compose_runs_the_processes_as_the_runtime_role_and_migrates_as_the_administrator() -> None:
    doc = compose()
    assert doc["x-verbatim"]["environment"]["VERBATIM_DATABASE_URL"].startswith("postgresql+psycopg://verbatim_app:")
    migrate_url = doc["services"]["migrate"]["environment"]["VERBATIM_DATABASE_URL"]
    assert migrate_url.startswith("postgresql+psycopg://verbatim:")
    assert "VERBATIM_DB_APP_PASSWORD" in doc["services"]["migrate"]["environment"]
