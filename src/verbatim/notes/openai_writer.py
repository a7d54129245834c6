"""The model writer: an OpenAI-compatible chat endpoint asked for structured output.

Reuses the polisher's settings (``VERBATIM_LLM_*``) and its client (``openai``). Each call asks
for ``{"sentences": [{"text", "segment_ids"}]}`` under a JSON schema (``response_format``
``json_schema``, strict). Before anything leaves the machine, the record's names, phone
numbers, e-mail and street addresses are replaced by placeholders (``verbatim.notes.phi``)
and restored in the answer. A record longer than ``chunk_chars`` is drafted in chunks (each
chunk's candidate sentences, with their segment ids) and then synthesised in a final call
within the model's context. Citations are rebuilt from the segment ids against the client's
own record (an id not in it is dropped), and every sentence is labelled by the offline
verifier and then by the model as judge (one call per section; the offline label is kept
beside it). Transient faults (timeouts, 429, 5xx) are retried on a wall-clock budget;
anything else is a WriterError and the offline drafter writes that section.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import openai

from verbatim.config import Settings
from verbatim.errors import WriterError, WriterTransient
from verbatim.notes.drafter import NO_EVIDENCE, judge
from verbatim.notes.evidence import CLINICIAN, Unit
from verbatim.notes.formats import Section
from verbatim.notes.phi import Redactor
from verbatim.polish.openai_chat import complete_json
from verbatim.retry import RetryPolicy

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["sentences"],
    "properties": {"sentences": {"type": "array", "items": {
        "type": "object", "additionalProperties": False, "required": ["text", "segment_ids"],
        "properties": {"text": {"type": "string"}, "segment_ids": {"type": "array", "items": {"type": "string"}}},
    }}},
}

JUDGE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["labels"],
    "properties": {"labels": {"type": "array", "items": {
        "type": "object", "additionalProperties": False, "required": ["i", "label"],
        "properties": {"i": {"type": "integer"},
                       "label": {"type": "string", "enum": ["supported", "unsupported", "contradicted"]}},
    }}},
}

JUDGE = (
    "You check a clinical note against the transcript. For each claim, answer 'supported' if its "
    "evidence says it, 'contradicted' if the evidence says otherwise (a negation flipped, a number "
    "changed), 'unsupported' if the evidence does not say it. Answer only JSON: "
    '{"labels": [{"i": 0, "label": "supported"}]}.'
)

RULES = (
    "You write one section of a clinical note from a therapy session transcript. Write short sentences in "
    "the third person ('Client reports …', 'Therapist suggested …'). Every sentence must rest on the "
    "transcript and list the ids of the segments it rests on. Never add anything the transcript does not "
    "say. Write a negation ('denies …') only when the therapist asked and the client answered no. "
    "Placeholders such as [NAME_1] stand for real names: keep them as they are. If the transcript holds "
    "nothing for this section, answer an empty list. Answer only JSON: "
    '{"sentences": [{"text": "...", "segment_ids": ["seg-3"]}]}.'
)


class OpenAIWriter:
    """Writes note sections with a chat model; ``base_url`` may be any OpenAI-compatible server."""

    def __init__(self, base_url: str, model: str, api_key: str | None, timeout_s: float, budget_s: float,
                 known_names: Sequence[str] = (), chunk_chars: int = 24000):
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or "unused", timeout=timeout_s,
                                     max_retries=0)
        self.model = model
        self.name = f"openai:{model}"
        self._policy = RetryPolicy(attempts=5, budget_s=budget_s)
        self.known_names = list(known_names)
        self.chunk_chars = chunk_chars

    def section(self, sections: Sequence[Section], index: int, items: list[Unit],
                known: Sequence[str] = ()) -> dict[str, Any]:
        section = sections[index]
        redactor = Redactor([*self.known_names, *known, *sorted({u.speaker for u in items if u.role != CLINICIAN})])
        segments = _segments(items, redactor)
        chunks = _chunks(segments, self.chunk_chars)
        if len(chunks) == 1:
            answer = self._ask(section, {"segments": chunks[0]})
        else:
            candidates = [s for chunk in chunks for s in self._ask(section, {"segments": chunk})]
            answer = self._ask(section, {"candidates": candidates,
                                         "task": "merge these candidate sentences into the final section"})
        by_id = {u.segment_id: u for u in items}
        sentences = []
        for s in answer:
            cites = [by_id[i].citation() for i in dict.fromkeys(s["segment_ids"]) if i in by_id]
            text = redactor.restore(s["text"]).strip()
            if text:
                sentences.append({"text": text, "citations": cites, **judge(text, cites)})
        self._judge(sentences, redactor)
        out: dict[str, Any] = {"name": section.name, "sentences": sentences}
        if not sentences:
            out["empty"] = NO_EVIDENCE
        return out

    def _judge(self, sentences: list[dict[str, Any]], redactor: Redactor) -> None:
        """The model as judge: relabel cited sentences (redacted claim and evidence); the offline label
        stays when the model gives no usable answer. An uncited sentence stays unsupported."""
        claims = [{"i": i, "claim": redactor.redact(s["text"]),
                   "evidence": [redactor.redact(c["quote"]) for c in s["citations"]]}
                  for i, s in enumerate(sentences) if s["citations"]]
        if not claims:
            return
        try:
            for attempt in self._policy.attempts_iter():
                with attempt:
                    data = self._complete(JUDGE, json.dumps({"claims": claims}), "note_judge", JUDGE_SCHEMA)
        except WriterError:
            return
        labels = data.get("labels")
        if not isinstance(labels, list):
            return
        for entry in labels:
            if (isinstance(entry, dict) and isinstance(entry.get("i"), int) and 0 <= entry["i"] < len(sentences)
                    and entry.get("label") in ("supported", "unsupported", "contradicted")
                    and sentences[entry["i"]]["citations"]):
                sentences[entry["i"]]["offline_label"] = sentences[entry["i"]]["label"]
                sentences[entry["i"]]["label"] = entry["label"]
                sentences[entry["i"]]["judge"] = self.name

    def _ask(self, section: Section, payload: dict[str, Any]) -> list[dict[str, Any]]:
        system = f"{RULES}\nSection: {section.name}. {section.instruction}"
        if section.example:
            system += f"\nThe clinician's style, for example: {section.example}"
        content = json.dumps(payload)
        for attempt in self._policy.attempts_iter():
            with attempt:
                data = self._complete(system, content, "note_section", SCHEMA)
        sentences = data.get("sentences")
        if not isinstance(sentences, list) or not all(
                isinstance(s, dict) and isinstance(s.get("text"), str) and isinstance(s.get("segment_ids"), list)
                for s in sentences):
            raise WriterError("the model's answer does not follow the schema")
        return [{"text": s["text"], "segment_ids": [str(i) for i in s["segment_ids"]]} for s in sentences]

    def _complete(self, system: str, content: str, name: str, schema: dict[str, Any]) -> dict[str, Any]:
        schema_format = {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}
        return complete_json(self._client, self.model, system, content, schema_format, WriterTransient, WriterError)


def _segments(items: list[Unit], redactor: Redactor) -> list[dict[str, str]]:
    """One entry per segment of the record (its sentences joined), redacted; roles, never client ids."""
    out: dict[str, dict[str, str]] = {}
    for u in items:
        role = "therapist" if u.role == CLINICIAN else "client"
        entry = out.setdefault(u.segment_id, {"id": u.segment_id, "speaker": role, "text": ""})
        entry["text"] = f"{entry['text']} {redactor.redact(u.text)}".strip()
    return list(out.values())


def _chunks(segments: list[dict[str, str]], limit: int) -> list[list[dict[str, str]]]:
    chunks: list[list[dict[str, str]]] = [[]]
    size = 0
    for seg in segments:
        if chunks[-1] and size + len(seg["text"]) > limit:
            chunks.append([])
            size = 0
        chunks[-1].append(seg)
        size += len(seg["text"]) + 40
    return chunks


def make_writer(settings: Settings) -> OpenAIWriter:
    """The model writer from ``VERBATIM_LLM_*`` (``note_writer=openai`` requires a base URL at start-up)."""
    assert settings.llm_base_url
    return OpenAIWriter(settings.llm_base_url, settings.llm_model, settings.llm_api_key, settings.llm_timeout_s,
                        settings.llm_retry_budget_s)
