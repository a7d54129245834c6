"""`verbatim token create --link` gives the address a running local stack serves its pages on."""

from __future__ import annotations

from pathlib import Path

import pytest

from verbatim.stack import STACK_ENV_FILE


def test_the_sign_in_link_is_on_the_running_stacks_port(database_url: str, redis_url: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from verbatim import cli as verbatim_cli
    from verbatim.config import get_settings

    # `verbatim up` chose port 54321 and said so in stack.env; the configured port is another
    (tmp_path / STACK_ENV_FILE).write_text(f"VERBATIM_DATABASE_URL={database_url}\nVERBATIM_REDIS_URL={redis_url}\n"
                                           "VERBATIM_API_URL=http://127.0.0.1:54321\n")
    for name in ("VERBATIM_DATABASE_URL", "VERBATIM_REDIS_URL", "VERBATIM_PUBLIC_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VERBATIM_MODE", "development")
    monkeypatch.setenv("VERBATIM_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("VERBATIM_API_PORT", "8000")
    get_settings.cache_clear()
    try:
        done = CliRunner().invoke(verbatim_cli.app, ["token", "create", "--clinic", "Link Clinic", "--therapist",
                                                     "Dr Link", "--link"])
    finally:
        get_settings.cache_clear()
    assert done.exit_code == 0, done.output
    links = [line for line in done.output.splitlines() if "/app/" in line]
    assert links and links[-1].startswith("http://127.0.0.1:54321/"), done.output
