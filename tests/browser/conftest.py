"""Browser tests: the real app under uvicorn, driven by Debian's chromium through Playwright.

Playwright's own browser download cannot work here: it is launched with ``executable_path``
(``VERBATIM_CHROMIUM``, default ``/usr/bin/chromium``). Without Playwright or that browser these
tests skip with a message saying how to get it (``apt-get install chromium``). Every request
the page makes outside the test server is refused and recorded: a page must not call out.
Screenshots go to each test's ``tmp_path``.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.api.conftest import LiveServer
from tests.conftest import AsrServer, make_settings
from tests.factories import token_for
from tests.reliability.conftest import publish_session
from verbatim.config import Settings

CHROMIUM = os.environ.get("VERBATIM_CHROMIUM", "/usr/bin/chromium")
HOW = ("install Debian's chromium (`apt-get install -y chromium`; `make install` does it as root) or point "
       "VERBATIM_CHROMIUM at a Chromium binary")

try:
    from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright
except ImportError:  # pragma: no cover - the dev extra installs it
    sync_playwright = None  # type: ignore[assignment]


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    if sync_playwright is None:
        pytest.skip("browser tests need the playwright package (pip install -e '.[dev]')")
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        pytest.skip(f"browser tests need Chromium at {CHROMIUM}: {HOW}")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield b
        b.close()


class Web:
    """The live server, its settings, a browser context confined to it, and what left it."""

    def __init__(self, server: LiveServer, context: BrowserContext, shots: Path):
        self.server = server
        self.settings: Settings = server.settings
        self.url = server.url
        self.context = context
        self.outside: list[str] = []
        self.shots = shots
        self.page: Page = context.new_page()

    def go(self, path: str) -> Any:
        return self.page.goto(self.url + path)

    def sign_in(self, token: str, then: str = "/app/sessions") -> None:
        self.go(f"/app/sign-in?next={then}")
        self.page.get_by_label("Your access token").fill(token)
        self.page.get_by_role("button", name="Sign in").click()
        self.page.wait_for_url(re.compile(r".*/app/(sessions|clinic|ops).*"))

    def shot(self, name: str) -> Path:
        path = self.shots / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def cookie(self) -> dict[str, Any] | None:
        return next((dict(c) for c in self.context.cookies() if c["name"] == "verbatim_session"), None)


def start_web(browser: Browser, settings: Settings, tmp_path: Path, **viewport: int) -> tuple[LiveServer, Web]:
    server = LiveServer(settings)
    server.start()
    context = browser.new_context(viewport={"width": viewport.get("width", 1280),
                                            "height": viewport.get("height", 800)})
    context.set_default_timeout(scaled_ms(15_000))
    web = Web(server, context, tmp_path)

    def guard(route: Any) -> None:
        if route.request.url.startswith(server.url):
            route.continue_()
        else:
            web.outside.append(route.request.url)
            route.abort()

    context.route("**/*", guard)
    return server, web


def scaled_ms(ms: int) -> int:
    """A deadline scaled for slow, shared machines (VERBATIM_TEST_SLOWDOWN, default 1)."""
    return int(ms * float(os.environ.get("VERBATIM_TEST_SLOWDOWN", "1")))


@pytest.fixture
def web(browser: Browser, settings: Settings, tmp_path: Path) -> Iterator[Web]:
    server, w = start_web(browser, settings, tmp_path)
    yield w
    w.context.close()
    server.stop()
    assert not w.outside, f"the pages called outside the server: {w.outside}"


@pytest.fixture
def alice(settings: Settings) -> str:
    return token_for(settings, "Alice", "North Clinic")


def settings_with(database_url: str, redis_url: str, asr: AsrServer, data_dir: Path, **extra: object) -> Settings:
    return make_settings(database_url, redis_url, asr, data_dir, **extra)


def published(database_url: str, raw: list[dict[str, Any]] | None = None, *, client_ids: list[str] | None = None,
              polish: bool = True, therapist: str = "Alice", clinic: str = "North Clinic") -> uuid.UUID:
    """A ready session of ``therapist`` whose published turns carry their roles, as the pipeline's
    publish step stores them (``pipeline/publish.py``)."""
    return publish_session(database_url, raw, therapist=therapist, clinic=clinic, client_ids=client_ids,
                           polish=polish)


def axe_violations(web: Web) -> list[dict[str, Any]]:
    """Serious and critical accessibility violations axe-core finds in the page as it stands
    (axe-core's own script, shipped by the axe-playwright-python package, run in the browser)."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(web.page)
    return [v for v in results.response["violations"] if v["impact"] in ("serious", "critical")]
