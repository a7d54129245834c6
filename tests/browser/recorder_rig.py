"""The recorder tests' rig: a real API process and a real Chromium process, each killed with real signals.

``ApiProcess`` runs ``verbatim api`` on a fixed port: stopping it closes the port (the network
is gone for the page, service worker included — offline emulation would not cut a service
worker's fetches); starting it again on the same port is a server restart. ``Phone`` runs
Debian's Chromium headless with a fake microphone playing a WAV file
(``--use-file-for-fake-audio-capture``), on a profile folder that outlives the process, and
drives it with Playwright over CDP; ``kill()`` SIGKILLs the browser's whole process group.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
import wave
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from playwright.sync_api import Browser, BrowserContext, BrowserType, Page

from tests.browser.conftest import CHROMIUM, scaled_ms
from tests.conftest import settings_env
from verbatim.config import Settings
from verbatim.embedded import free_port


class ApiProcess:
    """``verbatim api`` as a child process on one port, for the whole test."""

    def __init__(self, settings: Settings, log: Path):
        self.settings = settings
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = settings_env(self.settings) | {"VERBATIM_API_PORT": str(self.port), "VERBATIM_API_HOST": "127.0.0.1"}
        with open(self.log, "ab") as out:
            self.popen = subprocess.Popen([sys.executable, "-m", "verbatim.cli", "api"], env=env, stdout=out,
                                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + scaled_ms(180_000) / 1000
        with httpx.Client(timeout=2) as http:  # one client: a loaded machine is slow to build TLS contexts
            while True:
                try:
                    if http.get(self.url + "/healthz").status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                assert self.popen.poll() is None, self.log.read_text(errors="replace")[-3000:]
                assert time.monotonic() < deadline, ("the API did not start: "
                                                     + self.log.read_text(errors="replace")[-3000:])
                time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL: the port closes at once (a crash, a deploy, the clinic's Wi-Fi gone — to the page, all alike)."""
        if self.popen is not None and self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(30)
        self.popen = None


def wav_from(source: Path, start_s: float, target: Path) -> Path:
    """``source`` from ``start_s`` on, as a new WAV (the fake microphone starts its file at 0 on every launch)."""
    with wave.open(str(source)) as w:
        rate = w.getframerate()
        w.setpos(min(int(start_s * rate), w.getnframes()))
        frames = w.readframes(w.getnframes())
        params = w.getparams()
    with wave.open(str(target), "wb") as out:
        out.setparams(params)
        out.writeframes(frames)
    return target


class Phone:
    """A Chromium process with a fake microphone and a lasting profile, driven over CDP."""

    def __init__(self, browser_type: BrowserType, profile: Path, log: Path):
        self.browser_type = browser_type
        self.profile = profile
        self.log = log
        self.popen: subprocess.Popen[bytes] | None = None
        self.browser: Browser | None = None
        self.context: BrowserContext | None = None
        self.page: Page | None = None

    def launch(self, audio: Path) -> Page:
        port = free_port()
        args = [CHROMIUM, "--headless=new", "--no-sandbox", "--no-first-run", "--no-default-browser-check",
                f"--remote-debugging-port={port}", f"--user-data-dir={self.profile}",
                "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
                f"--use-file-for-fake-audio-capture={audio}", "--autoplay-policy=no-user-gesture-required",
                "about:blank"]
        with open(self.log, "ab") as out:
            self.popen = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          start_new_session=True)
        deadline = time.monotonic() + scaled_ms(60_000) / 1000
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert self.popen.poll() is None, self.log.read_text(errors="replace")[-3000:]
                assert time.monotonic() < deadline, "chromium did not open its debugging port"
                time.sleep(0.1)
        self.browser = self.browser_type.connect_over_cdp(f"http://127.0.0.1:{port}")
        self.context = self.browser.contexts[0]
        self.context.set_default_timeout(scaled_ms(20_000))
        self.page = self.context.pages[0] if self.context.pages else self.context.new_page()
        return self.page

    def kill(self) -> None:
        """SIGKILL the browser and all its processes (renderer, GPU, network service): no unload, no flush."""
        if self.popen is not None and self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(30)
        self.popen = None
        self.browser = self.context = self.page = None

    def close(self) -> None:
        self.kill()


def sign_in(page: Page, base: str, token: str, then: str = "/app/record") -> None:
    page.goto(f"{base}/app/sign-in?next={then}")
    if urlsplit(page.url).path == then:
        return  # the profile still held a live page session
    page.get_by_label("Your access token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(".*" + re.escape(then) + "$"))


def device_storage(page: Page) -> dict[str, Any]:
    """What the recorder keeps in this profile's IndexedDB: counts of recordings and chunks."""
    result: dict[str, Any] = page.evaluate("""() => new Promise((resolve, reject) => {
        const open = indexedDB.open("verbatim-recorder", 1);
        open.onupgradeneeded = () => {
          open.result.createObjectStore("keys");
          open.result.createObjectStore("recordings", { keyPath: "id" });
          open.result.createObjectStore("chunks", { keyPath: ["rec", "part", "seq"] });
        };
        open.onerror = () => reject(open.error);
        open.onsuccess = () => {
          const t = open.result.transaction(["recordings", "chunks"], "readonly");
          const out = {};
          const r = t.objectStore("recordings").count(); r.onsuccess = () => { out.recordings = r.result; };
          const c = t.objectStore("chunks").count(); c.onsuccess = () => { out.chunks = c.result; };
          const clear = t.objectStore("chunks").getAll();
          clear.onsuccess = () => { out.clear = clear.result.some((x) => !(x.data instanceof ArrayBuffer)); };
          t.oncomplete = () => { open.result.close(); resolve(out); };
        };
    })""")
    return result


def wait_for(predicate: Any, timeout_ms: int, what: str) -> None:
    deadline = time.monotonic() + scaled_ms(timeout_ms) / 1000
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def start_recording(page: Page, client: str = "client-a") -> None:
    page.get_by_label("Client ids (comma-separated)").fill(client)
    page.get_by_label("I attest that every client consented to this recording.").check()
    page.get_by_role("button", name="Start recording").click()
    page.locator("#recorder[data-state=recording]").wait_for()


def recorded_s(page: Page) -> float:
    minutes, seconds = page.locator("#rec-elapsed").inner_text().split(":")
    return int(minutes) * 60 + int(seconds)


def saved_chunks(page: Page) -> int:
    value: int = page.evaluate("() => Number(document.getElementById('rec-saved').textContent.split(':')"
                               ".reduce((m, s) => m * 60 + Number(s), 0))")
    return value


def wait_recorded(page: Page, seconds: float) -> None:
    """Until the page has saved ``seconds`` of audio on the device (the machine may be slow: its clock, not ours)."""
    page.wait_for_function(f"() => Number(document.getElementById('rec-saved').textContent.split(':')"
                           f".reduce((m, s) => m * 60 + Number(s), 0)) >= {seconds}", timeout=scaled_ms(120_000))


def finish_and_open_session(page: Page) -> uuid.UUID:
    page.get_by_role("button", name="Stop and finish").click()
    page.wait_for_url("**/app/sessions/*", timeout=scaled_ms(120_000))
    return uuid.UUID(page.url.rsplit("/", 1)[1])
