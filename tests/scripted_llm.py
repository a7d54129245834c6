"""A scripted OpenAI-compatible chat server for tests: a real HTTP server speaking the real protocol.

``POST /v1/chat/completions`` records each request body and answers a chat completion whose
content is a note section in the writer's schema: one sentence per client segment it was
sent (at most ``per_section``), citing that segment's id — or what ``script`` says next:
``"hold"`` (wait until ``release()``), ``"error:<status>"``, ``"bogus_ids"`` (cites ids that
do not exist). A judge request (``claims``) is answered ``judge_label`` for every claim.
Runs in a thread of the test process (uvicorn), so worker subprocesses reach it.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from verbatim.embedded import free_port


class ScriptedLLM:
    """The server's state: what it was sent, what it answers next."""

    def __init__(self, per_section: int = 2):
        self.requests: list[dict[str, Any]] = []
        self.script: list[str] = []
        self.default = "cite"
        self.per_section = per_section
        self.judge_label = "supported"  #: what the model as judge answers for every claim
        self._released = threading.Event()
        self._released.set()
        self.url = ""

    def hold(self) -> None:
        self._released.clear()
        self.default = "hold"

    def release(self) -> None:
        self.default = "cite"
        self._released.set()

    def sent_text(self) -> str:
        return json.dumps(self.requests)

    async def complete(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append(body)
        action = self.script.pop(0) if self.script else self.default
        if action == "hold":
            while not self._released.is_set():
                await asyncio.sleep(0.05)  # the test releases it
            action = "cite"
        if action.startswith("error:"):
            status = int(action.split(":", 1)[1])
            return JSONResponse({"error": {"message": "scripted failure", "type": "server_error"}}, status)
        payload = json.loads(body["messages"][-1]["content"])
        if "claims" in payload:  # the model as judge
            labels = [{"i": c["i"], "label": self.judge_label} for c in payload["claims"]]
            return self._answer(body, {"labels": labels})
        segments = payload.get("segments") or []
        clients = [s for s in segments if s["speaker"] == "client"][: self.per_section]
        if action == "bogus_ids":
            sentences = [{"text": "Client reports feeling better.", "segment_ids": ["seg-9999"]}]
        else:
            sentences = [{"text": f"Client reports: {s['text']}", "segment_ids": [s["id"]]} for s in clients]
        return self._answer(body, {"sentences": sentences})

    def _answer(self, body: dict[str, Any], answer: dict[str, Any]) -> JSONResponse:
        content = json.dumps(answer)
        return JSONResponse({
            "id": "chatcmpl-scripted", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "scripted"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        })


@contextmanager
def scripted_llm(per_section: int = 2) -> Iterator[ScriptedLLM]:
    """Start the server on a free port; yields its state (``.url`` is the OpenAI base URL)."""
    llm = ScriptedLLM(per_section)
    app = Starlette(routes=[Route("/v1/chat/completions", llm.complete, methods=["POST"])])
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    llm.url = f"http://127.0.0.1:{port}/v1"
    try:
        yield llm
    finally:
        llm.release()
        server.should_exit = True
        thread.join(5)
