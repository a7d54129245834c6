"""A note as plain text (for exports, diffs and the CLI) and the diff between two versions."""

from __future__ import annotations

import difflib
from typing import Any

from verbatim.notes.risk import NOTHING_DETECTED


def plain_text(body: dict[str, Any], *, citations: bool = False, export: bool = False) -> str:
    """The note's text: risk flags first, then each section with its sentences (and citations if asked).

    ``export``: the record as it leaves Verbatim — no verifier tags (``[UNSUPPORTED]``), no segment
    ids; a signed note's sentences were each reviewed (``verbatim.notes.review``).
    """
    lines: list[str] = []
    risk = body.get("risk")
    if risk is not None:
        lines.append("RISK FLAGS")
        mentions = risk.get("note_mentions") or []
        if not risk.get("flags"):
            lines.append(f"  {risk.get('checked') or NOTHING_DETECTED}")
        for f in risk.get("flags", []):
            kind = f" ({f['kind']})" if f.get("kind") else ""
            when = _clock(f["start_s"])
            lines.append(f'  [{f["category"]}]{kind} {f["speaker"]} at {when}: "{f["quote"]}"{_asked(f)}')
        for d in risk.get("denials", []):
            lines.append(f'  denied when asked [{d["category"]}] {d["speaker"]} at {_clock(d["start_s"])}: '
                         f'"{d["quote"]}"{_asked(d)}')
        for h in risk.get("family_history", []):
            lines.append(f'  family or others\' history [{h["category"]}] {h["speaker"]} at {_clock(h["start_s"])}: '
                         f'"{h["quote"]}"')
        for m in mentions:
            said = "denied" if m.get("denied") else "mentioned"
            lines.append(f'  [{m["category"]}] {said} in the note ({m["section"]}, sentence {m["sentence"] + 1})')
        lines.append("")
    for section in body.get("sections", []):
        lines.append(str(section["name"]).upper())
        sentences = section.get("sentences", [])
        if not sentences:
            lines.append(f'  {section.get("empty", "No evidence for this section in the transcript.")}')
        for s in sentences:
            flag = "" if export or s.get("label", "supported") == "supported" else f' [{s["label"].upper()}]'
            lines.append(f"  {s['text']}{flag}")
            if citations and not export:
                for c in s.get("citations", []):
                    when = f'{_clock(c["start_s"])}–{_clock(c["end_s"])}'
                    lines.append(f'      ↳ {c["segment_id"]} {c["speaker"]} {when}')
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def diff(before: str, after: str, from_version: int, to_version: int) -> str:
    """A unified diff of two versions' plain text."""
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        fromfile=f"v{from_version}", tofile=f"v{to_version}"))


def _asked(entry: dict[str, Any]) -> str:
    q = entry.get("question")
    return f' (asked: "{q["quote"]}")' if q else ""


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m:02d}:{s:02d}"
