"""Printing a note on a terminal (the CLI and the demo): risk flags first, each sentence with its
citations; unsupported and contradicted sentences are marked, never hidden."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from verbatim.notes.risk import NOTHING_DETECTED

_COLOUR = {"supported": "green", "unsupported": "yellow", "contradicted": "red"}


def print_note(console: Console, note: dict[str, Any], *, citations: bool = True) -> None:
    """Print a note as answered by ``GET /v1/notes/{id}``."""
    console.rule(f"{note['format'].upper()} note for {note['client_id']}  ({note['status']}, v{note['version']}, "
                 f"written by {note.get('writer')})")
    risk = note.get("risk") or {}
    if risk.get("flags"):
        console.print("[bold red]RISK FLAGS[/bold red]")
        for f in risk["flags"]:
            kind = f" ({f['kind']})" if f.get("kind") else ""
            console.print(f"  [red]{f['category']}[/red]{escape(kind)} {f['speaker']} at {f['start_s']:.1f}s: "
                          f"\"{escape(f['quote'])}\"")
            if f.get("reason"):
                console.print(f"    [dim]why: {escape(f['reason'])}[/dim]")
    else:
        console.print(f"[bold]RISK FLAGS[/bold]: {escape(risk.get('checked') or NOTHING_DETECTED)}")
    for d in risk.get("denials", []):
        asked = f" (asked: \"{escape(d['question']['quote'])}\")" if d.get("question") else ""
        console.print(f"  denied when asked ({d['category']}): \"{escape(d['quote'])}\" at {d['start_s']:.1f}s{asked}")
    for h in risk.get("family_history", []):
        console.print(f"  family or others' history ({h['category']}): \"{escape(h['quote'])}\" at {h['start_s']:.1f}s")
    for section in note.get("sections", []):
        console.print(f"[bold]{section['name']}[/bold]")
        if not section["sentences"]:
            console.print(f"  [dim]{section.get('empty')}[/dim]")
        for s in section["sentences"]:
            colour = _COLOUR.get(s["label"], "white")
            mark = "" if s["label"] == "supported" else f" [{colour}][{s['label'].upper()}][/{colour}]"
            console.print(f"  {escape(s['text'])}{mark}")
            if citations:
                cites = ", ".join(f"{c['segment_id']} {c['speaker']} {c['start_s']:.1f}–{c['end_s']:.1f}s"
                                  for c in s["citations"])
                console.print(f"    [dim]↳ {cites}[/dim]")
