"""Printing a note on a terminal (the CLI and the demo): risk flags first, each sentence with its
citations; unsupported and contradicted sentences are marked, never hidden."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from verbatim.notes import risk_box

_COLOUR = {"supported": "green", "unsupported": "yellow", "contradicted": "red"}


def print_note(console: Console, note: dict[str, Any], *, citations: bool = True) -> None:
    """Print a note as answered by ``GET /v1/notes/{id}``."""
    console.rule(f"{note['format'].upper()} note for {note['client_id']}  ({note['status']}, v{note['version']}, "
                 f"written by {note.get('writer')})")
    risk = note.get("risk") or {}
    alarm = risk_box.state(risk) in (risk_box.FOUND, risk_box.NOTE_MENTIONS)
    title = "[bold red]RISK FLAGS[/bold red]" if alarm else "[bold]RISK FLAGS[/bold]"
    console.print(f"{title}: {escape(risk_box.headline(risk))}")
    for line in risk_box.lines(risk)[1:]:
        console.print(f"  {escape(line)}")
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
