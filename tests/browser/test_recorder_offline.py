"""The recorder without a network (issue 26, items 3-4): its service worker opens the page with the
server gone, after the browser was killed offline; the page session lost with the browser is
renewed by signing in again in another tab, and nothing recorded meanwhile is lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.conftest import scaled_ms
from tests.browser.recorder_rig import ApiProcess, Phone, device_storage, sign_in, wav_from
from tests.browser.test_recorder import (  # noqa: F401 - fixtures
    SAMPLE,
    alice,
    finish_and_open_session,
    phone,
    saved_chunks,
    server,
    start_recording,
    wait_recorded,
)
from verbatim.config import Settings
from verbatim.db.repo import Repo

pytestmark = pytest.mark.timeout(1200)


def test_killed_offline_the_recorder_reopens_from_its_service_worker_and_loses_nothing(
    phone: Phone, server: ApiProcess, alice: str, settings: Settings, tmp_path: Path  # noqa: F811 - fixtures
) -> None:
    page = phone.launch(SAMPLE)
    sign_in(page, server.url, alice)
    page.wait_for_function("() => navigator.serviceWorker.controller !== null", timeout=scaled_ms(60_000))
    start_recording(page)
    wait_recorded(page, 3)
    server.kill()
    page.locator("#recorder[data-online=no]").wait_for(timeout=scaled_ms(60_000))
    wait_recorded(page, saved_chunks(page) + 2)
    first_part = saved_chunks(page)
    phone.kill()  # offline, mid-session

    page = phone.launch(wav_from(SAMPLE, first_part, tmp_path / "rest.wav"))
    page.goto(server.url + "/app/record")  # nothing listens on the port: the service worker answers
    page.locator("#rec-found").wait_for()
    assert device_storage(page)["chunks"] >= 2
    page.get_by_role("button", name="Continue recording (a new part)").click()
    page.locator("#recorder[data-state=recording]").wait_for()
    wait_recorded(page, first_part + 3)
    server.start()
    # The page session died with the browser: the page asks for a new sign-in and keeps recording.
    page.locator("#recorder[data-auth=needed]").wait_for(timeout=scaled_ms(60_000))
    assert page.get_by_role("link", name="Sign in again").is_visible()
    other = page.context.new_page()
    sign_in(other, server.url, alice, then="/app/sessions")
    other.close()
    page.locator("#recorder[data-auth=ok]").wait_for(timeout=scaled_ms(60_000))
    page.wait_for_function("() => Number(document.getElementById('recorder').dataset.waiting) <= 1",
                           timeout=scaled_ms(60_000))
    total = saved_chunks(page)
    sid = finish_and_open_session(page)
    row = Repo(settings.database_url or "").get(sid)
    assert row.audio_duration_s >= total - 2, (row.audio_duration_s, total)  # at most the chunk the kill caught
    assert device_storage(page) == {"recordings": 0, "chunks": 0, "clear": False}
