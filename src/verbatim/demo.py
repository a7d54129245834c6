"""``verbatim demo``: the main job end to end, on this machine, in one command.

Starts the stack (embedded PostgreSQL/Redis when no URLs are set), uploads the sample
sessions through the HTTP API, shows live progress per session, prints each transcript
with speaker labels and its word error rate against the reference, and shuts down.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import httpx
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from verbatim.auth import create_token, token_id
from verbatim.client import ApiClient
from verbatim.stack import local_stack, settings_for_stack
from verbatim.web.store import sign_in_link

STAGES = ["queued", "recognizing", "checkpointed", "publishing", "ready"]
TIMEOUT_S = 900
ANALYSIS_TIMEOUT_S = 60
console = Console()


def samples_dir() -> Path:
    """The repository's ``samples/`` folder (next to the checkout, or in the current directory)."""
    for root in (Path(__file__).resolve().parents[2], Path.cwd()):
        if (root / "samples" / "jfk.wav").exists():
            return root / "samples"
    raise FileNotFoundError("samples/ not found: run the demo from the Verbatim checkout")


def reference_text(audio: Path) -> str | None:
    """The reference transcript shipped next to a sample, if any (.txt, or a turns .json)."""
    if audio.with_suffix(".txt").exists():
        return audio.with_suffix(".txt").read_text().strip()
    if audio.with_suffix(".json").exists():
        return " ".join(turn["text"] for turn in json.loads(audio.with_suffix(".json").read_text()))
    return None


def run_demo(files: list[Path], client_ids: list[str]) -> int:
    """Run the demo; returns the process exit code (0 when every session was published)."""
    files_given = bool(files)
    if not files:
        samples = samples_dir()
        files = [samples / "therapy_dialogue.wav", samples / "jfk.wav"]
    for f in files:
        if not f.is_file():
            console.print(f"[red]no such file: {f}[/red]")
            return 2
    console.print("starting the recognizer service, API, two capture workers and the sweep process…")
    with local_stack(settings_for_stack(), console.print, worker_names=f"demo{os.getpid()}") as stack:
        token = create_token(stack.servers.database_url, therapist="Demo Therapist", clinic="Demo Clinic",
                             expires_in_days=1)
        link = sign_in_link(stack.servers.database_url, token_id(stack.servers.database_url, token), stack.api_url,
                            stack.settings.sign_in_link_s)
        console.print(f"While the demo runs, the clinicians' pages are at {stack.api_url}/app — sign in as Demo "
                      f"Therapist with this one-time link: {link}")
        with ApiClient(stack.api_url, token) as api:
            ids = {}
            refused = 0
            for i, f in enumerate(files):
                clients = client_ids or [f"client-{i + 1}"]
                try:
                    ids[f] = api.upload(f, clients)["id"]
                except httpx.HTTPStatusError as exc:
                    refused += 1
                    console.print(f"[red]{f.name} refused ({exc.response.status_code}): {exc.response.text}[/red]")
                    continue
                console.print(f"uploaded {f.name} → session {ids[f]}")
            done = _follow(api, ids)
            ok = not refused and all(s["status"] == "ready" for s in done.values())
            for f, sid in ids.items():
                _print_transcript(api, f, sid, done[f])
                _print_suggestions(api, sid, done[f])
            for f, sid in ids.items():
                # A SOAP note for the therapy dialogue (or for each of your own recordings).
                if done[f]["status"] == "ready" and (files_given or f.stem.startswith("therapy")):
                    ok = _print_note(api, sid) and ok
        console.print(f"logs: {stack.log_dir}")
        console.print("shutting down…")
    return 0 if ok else 1


def _print_note(api: ApiClient, sid: str, timeout_s: float = 120.0) -> bool:
    """Ask for a SOAP note of the session's (first) client, wait for the draft, print it with citations and flags."""
    from verbatim.notes.show import print_note

    client = api.session(sid)["client_ids"][0]
    note_id = api.request_note(sid, "soap", client)["note_id"]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        note = api.note(note_id)
        if note["status"] not in ("queued", "drafting"):
            print_note(console, note)
            return bool(note["status"] == "draft")
        time.sleep(0.3)
    console.print(f"[red]note {note_id} not drafted within {timeout_s:.0f} s[/red]")
    return False


def _follow(api: ApiClient, ids: dict[Path, str]) -> dict[Path, dict]:
    """Rich progress bars per session until each is ready or failed (or the timeout)."""
    final: dict[Path, dict] = {}
    with Progress(TextColumn("{task.description:<28}"), BarColumn(), TextColumn("{task.fields[status]:<14}"),
                  TimeElapsedColumn(), console=console) as progress:
        tasks = {f: progress.add_task(f.name, total=len(STAGES) - 1, status="queued") for f in ids}
        deadline = time.monotonic() + TIMEOUT_S
        while len(final) < len(ids) and time.monotonic() < deadline:
            for f, sid in ids.items():
                if f in final:
                    continue
                session = api.session(sid)
                status = session["status"]
                step = STAGES.index(status) if status in STAGES else len(STAGES) - 1
                progress.update(tasks[f], completed=step, status=status)
                if status in ("ready", "failed", "blocked", "deleted"):
                    final[f] = session
            time.sleep(0.5)
    for f, sid in ids.items():
        final.setdefault(f, api.session(sid))
    return final


def _print_transcript(api: ApiClient, audio: Path, sid: str, session: dict) -> None:
    from verbatim.asr_server.scoring import word_error_rate

    console.rule(f"{audio.name}  ({session['status']}, runs={session['runs']}, polished={session['polished']})")
    if session["status"] != "ready":
        console.print(f"[red]failed: {session['failure_code']}[/red]")
        return
    body = api.transcript(sid)
    for record in body["transcripts"]:
        console.print(f"[bold]record for {record['client_id']}[/bold]")
        for seg in record["segments"]:
            colour = "cyan" if seg["speaker"] == "therapist" else "green"
            console.print(f"  [{colour}]{seg['speaker']:>10}[/{colour}] [{seg['start_s']:6.1f}s] {seg['text']}")
    for seg in body.get("unassigned", []):
        console.print(f"  [yellow]{'unassigned':>10}[/yellow] [{seg['start_s']:6.1f}s] {seg['text']}")
    reference = reference_text(audio)
    if reference is not None:
        # Everything heard: the first record's own turns (not placeholders) and the unassigned ones.
        own = [s for s in body["transcripts"][0]["segments"] if s["speaker"] != "other participant"]
        heard = " ".join(s["text"] for s in sorted(own + body.get("unassigned", []), key=lambda s: s["start_s"]))
        console.print(f"[bold]word error rate vs reference: {word_error_rate(reference, heard):.3f}[/bold] "
                      "(offline Whisper tiny.en recognizer)")


def _print_suggestions(api: ApiClient, sid: str, session: dict, shown: int = 15) -> None:
    """The reliability analysis's suggestions for the clinician to review (waits for the analysis)."""
    from rich.markup import escape

    if session["status"] != "ready":
        return
    deadline = time.monotonic() + ANALYSIS_TIMEOUT_S
    while api.analysis_progress(sid)["status"] not in ("done", "dead_lettered") and time.monotonic() < deadline:
        time.sleep(0.5)
    items = api.suggestions(sid)["suggestions"]
    console.print(f"[bold]suggestions to review: {len(items)}[/bold] "
                  "(POST /v1/suggestions/{id}/validate|ignore|revert)")
    for item in items[:shown]:
        if item["kind"] == "word":
            alternatives = ", ".join(item["alternatives"]) or "none"
            what = (f"word {item['original']!r} heard at confidence {item['confidence']:.2f} "
                    f"(alternatives: {alternatives})")
        elif item["kind"] == "speaker":
            what = f"speaker {item['original']} → {item['suggested']}? ({item['reason']})"
        else:
            what = f"polish edit: {item['original']!r} → {item['suggested']!r}"
        console.print(f"  [{item['start_s']:6.1f}s] {item['status']:>12}  {escape(what)}")
    if len(items) > shown:
        console.print(f"  … and {len(items) - shown} more")
