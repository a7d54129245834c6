"""A note as plain text (for exports, diffs and the CLI) and the diff between two versions."""

from __future__ import annotations

import difflib
from typing import Any

from verbatim.notes import risk_box


def plain_text(body: dict[str, Any], *, citations: bool = False, export: bool = False) -> str:
    """The note's text: risk flags first, then each section with its sentences (and citations if asked).

    ``export``: the record as it leaves Verbatim — no verifier tags (``[UNSUPPORTED]``), no segment
    ids; a signed note's sentences were each reviewed (``verbatim.notes.review``).
    """
    lines: list[str] = []
    risk = body.get("risk")
    if risk is not None:
        lines.append("RISK FLAGS")
        lines += [f"  {line}" for line in risk_box.lines(risk)]
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


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m:02d}:{s:02d}"
