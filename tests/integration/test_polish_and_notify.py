"""The OpenAI-compatible polisher against a small local chat server, and signed webhooks."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.conftest import SAMPLES, AsrServer
from tests.factories import new_session
from verbatim.config import Settings
from verbatim.errors import NotificationFailed, PolishError
from verbatim.pipeline.notify import Notifier
from verbatim.pipeline.run import Outcome, run_capture
from verbatim.polish.openai_chat import OpenAIChatPolisher
from verbatim.runtime import build_context


class Recorder:
    """A local HTTP server: answers with queued (status, body) pairs and records requests."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.answers: list[tuple[int, Any]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server API
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                recorder.requests.append((self.path, dict(self.headers), body))
                status, payload = recorder.answers.pop(0) if recorder.answers else (200, {})
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    r = Recorder()
    yield r
    r.server.shutdown()


def chat(content: dict[str, Any]) -> dict[str, Any]:
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": json.dumps(content)}}]}


TURNS = [{"speaker": "S1", "start_s": 0.0, "end_s": 1.0, "text": "how are you um"},
         {"speaker": "S2", "start_s": 1.0, "end_s": 2.0, "text": "fine"}]


def test_openai_polisher_cleans_turns_and_names_the_therapist(recorder: Recorder) -> None:
    recorder.answers = [(500, {"error": "busy"}),  # transient: retried within the budget
                        (200, chat({"turns": ["How are you?", "Fine."], "therapist": "S1"}))]
    polisher = OpenAIChatPolisher(recorder.url + "/v1", "test-model", "k", timeout_s=5, budget_s=10)
    cleaned = polisher.readability(TURNS)
    assert [t["text"] for t in cleaned] == ["How are you?", "Fine."]
    assert [t["start_s"] for t in cleaned] == [0.0, 1.0]
    assert polisher.therapist_speaker(TURNS) == "S1"  # same input: answered from the same call
    assert len(recorder.requests) == 2
    sent = json.loads(recorder.requests[-1][2])
    assert sent["model"] == "test-model" and recorder.requests[-1][0] == "/v1/chat/completions"
    assert TURNS[0]["text"] == "how are you um"  # input untouched


def test_openai_polisher_refuses_a_changed_turn_count(recorder: Recorder) -> None:
    recorder.answers = [(200, chat({"turns": ["only one"], "therapist": "S1"}))]
    polisher = OpenAIChatPolisher(recorder.url + "/v1", "m", None, timeout_s=5, budget_s=5)
    with pytest.raises(PolishError):
        polisher.readability(TURNS)


def test_webhook_is_queued_with_the_status_signed_and_delivered_at_least_once(
    recorder: Recorder, settings: Settings, asr: AsrServer
) -> None:
    """The notification commits with the status it announces; a refused delivery is retried by the
    outbox with the same delivery id (receivers dedupe by it) and a signed timestamp."""
    recorder.answers = [(503, {}), (200, {})]
    ctx = build_context(settings.model_copy(update={"webhook_url": recorder.url + "/hook",
                                                    "webhook_secret": "s3cret"}))
    sid = new_session(ctx.settings, SAMPLES / "jfk.wav")
    assert run_capture(ctx, sid) is Outcome.READY
    assert len(recorder.requests) == 1  # tried at once, refused: still pending
    deadline = time.monotonic() + 60
    while ctx.cleanup.outbox.pending(sid):
        assert time.monotonic() < deadline
        ctx.cleanup.deliver()
        time.sleep(0.2)
    assert len(recorder.requests) == 2
    (_, first, _), (path, headers, body) = recorder.requests
    event = json.loads(body)
    assert (path, event["event"], event["session_id"], event["run"]) == ("/hook", "transcript_ready", str(sid), 1)
    assert first["x-verbatim-delivery"] == headers["x-verbatim-delivery"] == event["delivery_id"]
    ts = headers["x-verbatim-timestamp"]
    expected = hmac.new(b"s3cret", ts.encode() + b"." + body, hashlib.sha256).hexdigest()
    assert headers["x-verbatim-signature"] == "sha256=" + expected
    ctx.recognizer.close()


def test_one_delivery_attempt_raises_unless_acknowledged(recorder: Recorder) -> None:
    recorder.answers = [(500, {})]
    with pytest.raises(NotificationFailed):
        Notifier(recorder.url + "/hook", None, timeout_s=2.0).deliver({"event": "session_failed"}, uuid.uuid4())
    assert len(recorder.requests) == 1  # one attempt: the outbox retries, not the notifier
