"""Recording on the phone (issue 26): Debian's Chromium records a known WAV through its fake
microphone into the recorder page, which keeps every chunk on the device until the server
confirmed it. Real parts throughout: the API as a process (killed to cut the network or to
restart the server), Chromium as a process (SIGKILLed and restarted on the same profile),
PostgreSQL, Redis."""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser

from tests.browser.conftest import Web, axe_violations, scaled_ms
from tests.browser.recorder_rig import (  # noqa: F401 - the other recorder tests import these from here
    ApiProcess,
    Phone,
    device_storage,
    finish_and_open_session,
    recorded_s,
    saved_chunks,
    sign_in,
    start_recording,
    wait_recorded,
    wav_from,
)
from tests.factories import token_for
from verbatim.config import Settings
from verbatim.db.repo import Repo

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "therapy_dialogue.wav"

# A session of several minutes of recording, with processes killed and restarted, on a shared machine.
pytestmark = pytest.mark.timeout(1200)


@pytest.fixture
def server(settings: Settings, data_dir: Path) -> Iterator[ApiProcess]:
    api = ApiProcess(settings, data_dir / "api.log")
    api.start()
    yield api
    api.kill()


@pytest.fixture
def phone(browser: Browser, tmp_path: Path) -> Iterator[Phone]:
    """A Chromium process of its own (fake microphone, lasting profile), driven by the session's Playwright."""
    p = Phone(browser.browser_type, tmp_path / "profile", tmp_path / "chromium.log")
    yield p
    p.close()


@pytest.fixture
def alice(settings: Settings) -> str:
    return token_for(settings, "Alice", "North Clinic")


def test_record_pause_resume_and_finish_leaves_nothing_on_the_device(
    phone: Phone, server: ApiProcess, alice: str, settings: Settings, tmp_path: Path
) -> None:
    page = phone.launch(SAMPLE)
    sign_in(page, server.url, alice)
    assert page.evaluate("() => window.isSecureContext")
    start_recording(page)
    wait_recorded(page, 3)
    page.get_by_role("button", name="Pause").click()
    page.locator("#recorder[data-state=paused]").wait_for()
    paused_at = saved_chunks(page)
    time.sleep(2.5)  # paused: nothing is recorded meanwhile
    assert saved_chunks(page) <= paused_at + 1  # at most the chunk MediaRecorder hands over on pause
    page.get_by_role("button", name="Resume").click()
    page.locator("#recorder[data-state=recording]").wait_for()
    wait_recorded(page, paused_at + 3)
    page.screenshot(path=str(tmp_path / "recording.png"))
    # Sent while recording: the server trails the microphone, it does not wait for the end.
    page.wait_for_function("() => document.getElementById('rec-sent').textContent !== '0:00'")
    recorded = recorded_s(page)
    sid = finish_and_open_session(page)
    row = Repo(settings.database_url or "").get(sid)
    assert row.client_ids == ["client-a"]
    assert abs(row.audio_duration_s - recorded) <= 2.5, (row.audio_duration_s, recorded)
    assert device_storage(page) == {"recordings": 0, "chunks": 0, "clear": False}
    assert not list(settings.tus_dir.glob("*.bin"))


def test_the_network_cut_three_times_and_the_server_restarted_lose_nothing(
    phone: Phone, server: ApiProcess, alice: str, settings: Settings, tmp_path: Path
) -> None:
    """The port closed (the API SIGKILLed: to the page, a dead network and a crashed server alike) three
    times: recording continues, chunks pile up encrypted on the device, then all are sent."""
    page = phone.launch(SAMPLE)
    sign_in(page, server.url, alice)
    start_recording(page)
    for cut in range(3):
        wait_recorded(page, saved_chunks(page) + 2)
        server.kill()
        page.locator("#recorder[data-online=no]").wait_for(timeout=scaled_ms(60_000))
        wait_recorded(page, saved_chunks(page) + 3)
        stored = device_storage(page)
        assert stored["recordings"] == 1 and stored["chunks"] >= 3 and stored["clear"] is False
        assert int(page.locator("#rec-waiting").inner_text()) >= 3  # the page shows how much is waiting
        page.screenshot(path=str(tmp_path / f"offline-{cut}.png"))
        server.start()
        page.locator("#recorder[data-online=yes]").wait_for(timeout=scaled_ms(60_000))
        page.wait_for_function("() => Number(document.getElementById('recorder').dataset.waiting) <= 1",
                               timeout=scaled_ms(60_000))
    recorded = recorded_s(page)
    sid = finish_and_open_session(page)
    row = Repo(settings.database_url or "").get(sid)
    assert abs(row.audio_duration_s - recorded) <= 2.5, (row.audio_duration_s, recorded)
    assert device_storage(page) == {"recordings": 0, "chunks": 0, "clear": False}


def test_a_forged_or_out_of_order_patch_is_refused_and_loses_nothing(
    phone: Phone, server: ApiProcess, alice: str, settings: Settings
) -> None:
    page = phone.launch(SAMPLE)
    sign_in(page, server.url, alice)
    start_recording(page)
    wait_recorded(page, 3)
    [info] = settings.tus_dir.glob("*.json")
    url = f"{server.url}/v1/uploads/{info.stem}"
    tus = {"authorization": f"Bearer {alice}", "tus-resumable": "1.0.0"}
    offset = int(httpx.head(url, headers=tus).headers["upload-offset"])
    patch = {**tus, "content-type": "application/offset+octet-stream"}
    behind = httpx.patch(url, content=b"x" * 100, headers={**patch, "upload-offset": str(max(offset - 50, 0))})
    assert behind.status_code == 409
    forged = httpx.patch(url, content=b"forged", headers={
        **patch, "upload-offset": behind.headers["upload-offset"],
        "upload-checksum": "sha256 " + base64.b64encode(hashlib.sha256(b"genuine").digest()).decode()})
    assert forged.status_code == 460
    other = token_for(settings, "Mallory", "South Clinic")
    assert httpx.head(url, headers={**tus, "authorization": f"Bearer {other}"}).status_code == 404
    wait_recorded(page, saved_chunks(page) + 2)
    recorded = recorded_s(page)
    sid = finish_and_open_session(page)
    row = Repo(settings.database_url or "").get(sid)
    assert abs(row.audio_duration_s - recorded) <= 2.5, (row.audio_duration_s, recorded)
    assert device_storage(page)["chunks"] == 0


def test_the_browser_killed_twice_mid_session_loses_at_most_a_chunk_each_time(
    phone: Phone, server: ApiProcess, alice: str, settings: Settings, tmp_path: Path
) -> None:
    page = phone.launch(SAMPLE)
    sign_in(page, server.url, alice)
    start_recording(page)
    fed = 0.0  # seconds of the source the fake microphone has played in earlier launches
    captured = 0
    for kill in range(2):
        at_launch = saved_chunks(page)
        wait_recorded(page, at_launch + 3)
        captured = saved_chunks(page)
        fed += captured - at_launch
        phone.kill()
        page = phone.launch(wav_from(SAMPLE, fed, tmp_path / f"from-{kill}.wav"))
        sign_in(page, server.url, alice)
        page.locator("#rec-found").wait_for()
        assert "At most the last second" in page.locator("#rec-found-text").inner_text()
        page.get_by_role("button", name="Continue recording (a new part)").click()
        page.locator("#recorder[data-state=recording]").wait_for()
    wait_recorded(page, captured + 3)
    sid = finish_and_open_session(page)
    row = Repo(settings.database_url or "").get(sid)
    stored = device_storage(page)
    assert stored == {"recordings": 0, "chunks": 0, "clear": False}
    # Every part's chunks but the last one a kill may catch unsaved: at most one chunk lost per kill.
    assert row.audio_duration_s >= captured + 3 - 2 - 1, (row.audio_duration_s, captured)


def test_a_second_tab_leaves_the_recording_to_the_first(phone: Phone, server: ApiProcess, alice: str) -> None:
    """One recorder per recording: a second tab finds it open elsewhere and neither sends nor records it."""
    page = phone.launch(SAMPLE)
    sign_in(page, server.url, alice)
    start_recording(page)
    wait_recorded(page, 2)
    assert page.context is not None
    second = page.context.new_page()
    second.goto(server.url + "/app/record")
    second.locator("#recorder[data-state=elsewhere]").wait_for()
    assert "open in another tab" in second.locator("#rec-found-text").inner_text()
    assert second.get_by_role("button", name="Start recording").is_disabled()
    second.close()
    wait_recorded(page, saved_chunks(page) + 2)
    assert page.locator("#recorder").get_attribute("data-state") == "recording"


def test_the_recorder_page_has_no_serious_accessibility_violations(web: Web, alice: str) -> None:
    web.sign_in(alice)
    web.go("/app/record")
    assert web.page.get_by_role("button", name="Start recording").is_visible()
    assert web.page.get_by_role("link", name="Record a session", exact=True).is_visible()
    assert axe_violations(web) == []
    manifest = web.page.request.get(web.url + "/app/static/recorder.webmanifest").json()
    assert manifest["start_url"] == "/app/record" and manifest["display"] == "standalone"
    worker = web.page.request.get(web.url + "/app/record-sw.js")
    assert worker.ok and "javascript" in worker.headers["content-type"]
