"""A recording that stops arriving (issue 26, item 2) in real browsers: the phone recording it dies;
on another device the therapist finishes it with what arrived and sees it labelled partial; when the
dead phone is opened again it finds that session instead of making a second one, and keeps nothing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from tests.browser.conftest import scaled_ms
from tests.browser.recorder_rig import ApiProcess, Phone, device_storage, sign_in
from tests.browser.test_recorder import (  # noqa: F401 - fixtures
    SAMPLE,
    alice,
    phone,
    saved_chunks,
    server,
    start_recording,
    wait_recorded,
)
from verbatim.config import Settings
from verbatim.db.repo import Repo

pytestmark = pytest.mark.timeout(1200)


@pytest.fixture
def laptop(browser: Browser, tmp_path: Path) -> Iterator[Phone]:
    """A second device: its own Chromium process and profile."""
    p = Phone(browser.browser_type, tmp_path / "laptop-profile", tmp_path / "laptop.log")
    yield p
    p.close()


def test_a_recording_that_stops_arriving_is_finished_as_partial_from_another_device(
    phone: Phone, laptop: Phone, server: ApiProcess, alice: str, settings: Settings  # noqa: F811 - fixtures
) -> None:
    page = phone.launch(SAMPLE)
    sign_in(page, server.url, alice)
    start_recording(page)
    wait_recorded(page, 4)
    page.wait_for_function("() => Number(document.getElementById('recorder').dataset.waiting) <= 1",
                           timeout=scaled_ms(60_000))
    sent = saved_chunks(page) - 1
    phone.kill()  # the phone dies mid-session and is not opened again for now

    other = laptop.launch(SAMPLE)
    sign_in(other, server.url, alice)
    other.locator("#rec-stopped").wait_for()
    [item] = other.locator("#rec-stopped-list li").all()
    item.get_by_role("button", name="Finish with what arrived").click()
    other.wait_for_url("**/app/sessions/*", timeout=scaled_ms(120_000))
    sid = uuid.UUID(other.url.rsplit("/", 1)[1])
    label = other.locator("#partial-recording")
    assert "Partial recording" in label.inner_text()
    row = Repo(settings.database_url or "").get(sid)
    assert row.partial_recording is not None and row.partial_recording["reason"] == "finished"
    assert row.audio_duration_s >= sent - 1, (row.audio_duration_s, sent)
    assert not list(settings.tus_dir.glob("*.bin"))  # the uploads are the session's now

    # The phone comes back: it finds its recording finished elsewhere, opens that session, keeps nothing.
    page = phone.launch(SAMPLE)
    sign_in(page, server.url, alice)
    page.wait_for_url(f"**/app/sessions/{sid}", timeout=scaled_ms(120_000))
    assert device_storage(page) == {"recordings": 0, "chunks": 0, "clear": False}
