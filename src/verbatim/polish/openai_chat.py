"""Polisher over an OpenAI-compatible chat endpoint (the ``openai`` client).

The model sees turn texts (never audio, never client names) and must answer JSON:
``{"turns": ["cleaned text", …], "therapist": "S1"}`` with one entry per input turn.
Anything else is a PolishError and publish falls back to the rule-based result for that
pass. Timeouts, 429 and 5xx are PolishTransient, retried on a wall-clock budget.
"""

from __future__ import annotations

import json
from typing import Any

import openai

from verbatim.errors import PolishError, PolishTransient
from verbatim.polish.base import Turn
from verbatim.retry import RetryPolicy

SYSTEM = (
    "You clean up therapy-session transcripts for readability. Fix casing and punctuation and drop "
    "filler words; never add, remove or reorder content. Identify which speaker label is the "
    'therapist. Answer only JSON: {"turns": [one cleaned string per input turn], "therapist": label}.'
)


class OpenAIChatPolisher:
    """Readability and roles by a chat model; ``base_url`` may be any OpenAI-compatible server."""

    name = "openai"

    def __init__(self, base_url: str, model: str, api_key: str | None, timeout_s: float, budget_s: float):
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or "unused", timeout=timeout_s,
                                     max_retries=0)
        self._model = model
        self._policy = RetryPolicy(attempts=5, budget_s=budget_s)
        self._cache: tuple[int, dict[str, object]] | None = None

    def _ask(self, turns: list[Turn]) -> dict[str, object]:
        key = hash(tuple((t["speaker"], t["text"]) for t in turns))
        if self._cache and self._cache[0] == key:
            return self._cache[1]
        payload = [{"speaker": t["speaker"], "text": t["text"]} for t in turns]
        for attempt in self._policy.attempts_iter():
            with attempt:
                answer = self._complete(json.dumps({"turns": payload}))
        self._cache = (key, answer)
        return answer

    def _complete(self, content: str) -> dict[str, object]:
        return complete_json(self._client, self._model, SYSTEM, content, {"type": "json_object"},
                             PolishTransient, PolishError)

    def readability(self, turns: list[Turn]) -> list[Turn]:
        if not turns:
            return []
        cleaned = self._ask(turns).get("turns")
        if not isinstance(cleaned, list) or len(cleaned) != len(turns) or not all(isinstance(c, str) for c in cleaned):
            raise PolishError("chat endpoint returned a different number of turns")
        return [{**t, "text": c} for t, c in zip(turns, cleaned, strict=True)]

    def therapist_speaker(self, turns: list[Turn]) -> str | None:
        if not turns:
            return None
        label = self._ask(turns).get("therapist")
        if label not in {t["speaker"] for t in turns}:
            raise PolishError("chat endpoint named a therapist label that is not a speaker")
        return str(label)


def complete_json(client: openai.OpenAI, model: str, system: str, content: str, response_format: Any,
                  transient: type[Exception], error: type[Exception]) -> dict[str, Any]:
    """One chat completion (temperature 0) whose answer must be a JSON object; returns it.

    ``response_format`` is the endpoint's (``json_object`` or a ``json_schema``). Timeouts, lost
    connections, 429 and 5xx raise ``transient`` (the caller's retry policy retries it); any other
    status, no choices or an answer that is not a JSON object raise ``error``. Shared by the
    polisher and the note writer.
    """
    try:
        response = client.chat.completions.create(
            model=model,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": content}],
            response_format=response_format,
            temperature=0,
        )
    except (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError) as exc:
        raise transient(str(exc)) from exc
    except openai.APIStatusError as exc:
        if exc.status_code >= 500:
            raise transient(str(exc)) from exc
        raise error(f"chat endpoint answered {exc.status_code}") from exc
    if not response.choices:
        raise error("chat endpoint answered without choices")
    try:
        data = json.loads(response.choices[0].message.content or "")
    except json.JSONDecodeError as exc:
        raise error("chat endpoint did not answer JSON") from exc
    if not isinstance(data, dict):
        raise error("chat endpoint answered JSON that is not an object")
    return data
