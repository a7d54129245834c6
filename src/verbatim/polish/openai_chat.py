"""Polisher over an OpenAI-compatible chat endpoint (the ``openai`` client).

The model sees turn texts (never audio, never client names) and must answer JSON:
``{"turns": ["cleaned text", …], "therapist": "S1"}`` with one entry per input turn.
Anything else is a PolishError and publish falls back to the rule-based result for that
pass. Timeouts, 429 and 5xx are PolishTransient, retried on a wall-clock budget.
"""

from __future__ import annotations

import json

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
        try:
            response = self._client.chat.completions.create(
                model=self._model,
                messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": content}],
                response_format={"type": "json_object"},
                temperature=0,
            )
        except (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError) as exc:
            raise PolishTransient(str(exc)) from exc
        except openai.APIStatusError as exc:
            if exc.status_code >= 500:
                raise PolishTransient(str(exc)) from exc
            raise PolishError(f"chat endpoint answered {exc.status_code}") from exc
        if not response.choices:
            raise PolishError("chat endpoint answered without choices")
        text = response.choices[0].message.content or ""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PolishError("chat endpoint did not answer JSON") from exc
        if not isinstance(data, dict):
            raise PolishError("chat endpoint answered JSON that is not an object")
        return data

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
