"""A therapist at a desk uploads the therapy dialogue from the page and watches it reach ready.

Real parts throughout: the page's resumable upload (tus-js-client → /v1/uploads with the page
session and its CSRF token), a capture worker process, the local recognizer, htmx polling.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.conftest import Web, scaled_ms
from tests.faults.conftest import Cluster
from verbatim.config import Settings

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "therapy_dialogue.wav"


@pytest.fixture
def cluster(settings: Settings, data_dir: Path) -> Iterator[Cluster]:
    logs = data_dir / "logs"
    logs.mkdir(exist_ok=True)
    c = Cluster(settings, logs)
    yield c
    c.stop()


def test_upload_from_the_page_and_watch_it_reach_ready(web: Web, alice: str, cluster: Cluster) -> None:
    cluster.worker()
    web.sign_in(alice)
    page = web.page
    page.get_by_role("link", name="Upload a recording").first.click()
    page.get_by_label("Recording (audio file)").set_input_files(str(SAMPLE))
    page.get_by_label("Client ids (comma-separated)").fill("client-a")
    web.shot("upload-form")
    page.get_by_role("button", name="Upload").click()
    # Consent not attested: the browser's own check stops the form; nothing is sent.
    assert page.url.endswith("/app/upload")
    page.get_by_label("I attest that every client consented to this recording.").check()
    page.get_by_role("button", name="Upload").click()
    page.wait_for_url(re.compile(r".*/app/sessions/[0-9a-f-]{36}$"), timeout=scaled_ms(60_000))
    sid = page.url.rsplit("/", 1)[1]
    web.shot("session-processing")
    # The status box polls; once ready the page reloads itself with the transcript.
    page.get_by_text("No audio to play.").wait_for(timeout=scaled_ms(240_000))
    assert cluster.status(uuid.UUID(sid)) == "ready"
    assert page.get_by_role("heading", name="client-a's record").is_visible()
    assert page.locator("li.turn").count() >= 4
    web.shot("session-ready")
    web.go("/app/sessions")
    row = page.locator("#session-rows tr", has_text="client-a")
    assert row.locator(".status-ready").is_visible()
    web.shot("sessions")
