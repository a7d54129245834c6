"""The session page: the transcript as a conversation, per client, with the recognizer's doubts.

Reads go through the JSON API's own functions (``get_transcript``, ``list_suggestions``), so a
page is authorized and audited exactly as the API is: another therapist's session is a 404 page.
Low-confidence words are marked where they stand; validate / ignore / revert post to
``/app/suggestions/{id}/{action}``; speaker correction posts to ``/app/sessions/{id}/speakers``;
a segment's free-text correction to ``/app/sessions/{id}/segments/{seg}`` (``segment_edit.py``).
There is no audio to play: it was deleted once the recognizer had it, on purpose (DESIGN.md).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from verbatim import audit
from verbatim.api.deps import ServicesDep
from verbatim.api.errors import ApiError
from verbatim.api.segments import originals as corrected_originals
from verbatim.api.sessions import SpeakerMap, TranscriptOut, _load_own, _out, get_transcript, put_speakers
from verbatim.db.engine import db_session
from verbatim.polish.split import INAUDIBLE, THERAPIST, UNASSIGNED, is_gap, segment_id
from verbatim.reliability.api import SuggestionOut, _move, list_suggestions
from verbatim.reliability.suggestions import Action
from verbatim.states import ACTIVE, SessionStatus
from verbatim.web.notes_page import formats_and_notes
from verbatim.web.pages import ActorPageDep, CsrfDep, PageError, page_actor, render

router = APIRouter(prefix="/app", include_in_schema=False)


@dataclass
class Part:
    """A run of a segment's text; ``doubt`` is set on a low-confidence word."""

    text: str
    doubt: SuggestionOut | None = None


@dataclass
class Line:
    """One speaker turn as shown: who, when, the text in parts, the doubts that did not match a word."""

    index: int
    speaker: str
    label: str
    start_s: float
    end_s: float
    parts: list[Part]
    loose: list[SuggestionOut]
    #: the segment's words before a clinician's first free-text correction (None: never corrected)
    original: str | None = None

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts)

    @property
    def segment_id(self) -> str:
        return segment_id(self.index)


def _parts(text: str, doubts: list[SuggestionOut]) -> tuple[list[Part], list[SuggestionOut]]:
    """Split ``text`` around each doubted word (its current form: suggested once applied)."""
    parts, loose, rest = [], [], text
    for doubt in sorted(doubts, key=lambda d: d.start_s):
        if doubt.word_index is None:  # about the whole turn (polish, speaker): listed under it
            loose.append(doubt)
            continue
        shown = doubt.suggested if doubt.status in ("validated", "auto_applied") and doubt.suggested else doubt.original
        # Polish may have capitalised the word: find it regardless of case, show it as written.
        at = rest.casefold().find(shown.casefold()) if shown else -1
        if at < 0:
            loose.append(doubt)
            continue
        if at:
            parts.append(Part(rest[:at]))
        parts.append(Part(rest[at:at + len(shown)], doubt))
        rest = rest[at + len(shown):]
    if rest:
        parts.append(Part(rest))
    return parts, loose


def _speaker(role: str, label: str) -> str:
    if role == THERAPIST:
        return "Therapist"
    if role == UNASSIGNED:
        return f"Unassigned speaker {label}"
    if role == "other participant":
        return "Other participant"
    if role == INAUDIBLE:
        return "Not made out"
    return role


#: a client's record shows a turn no role claims yet in place, without its words (they are in no record)
NOT_YET_NAMED = "[speaker not yet named: the turn is under Unassigned turns]"


def _lines(segments: list[dict[str, Any]], indices: list[int], doubts: dict[int, list[SuggestionOut]],
           originals: dict[int, str] | None = None, unnamed: frozenset[str] = frozenset()) -> list[Line]:
    lines = []
    for i, seg in zip(indices, segments, strict=True):
        own = seg["speaker"] != "other participant"
        # A turn of a voice nobody has named is not known to be another participant's: say so in place.
        waiting = not own and seg["speaker_label"] in unnamed
        parts, loose = _parts(NOT_YET_NAMED if waiting else seg["text"], doubts.get(i, []) if own else [])
        who = f"Unassigned speaker {seg['speaker_label']}" if waiting else _speaker(seg["speaker"],
                                                                                    seg["speaker_label"])
        lines.append(Line(i, who, seg["speaker_label"], seg["start_s"], seg["end_s"], parts, loose,
                          (originals or {}).get(i) if own else None))
    return lines


def _view(transcript: TranscriptOut, turns: list[dict[str, Any]],
          doubts: list[SuggestionOut], originals: dict[int, str]) -> dict[str, Any]:
    by_turn: dict[int, list[SuggestionOut]] = {}
    for d in doubts:
        by_turn.setdefault(d.turn_index, []).append(d)
    unassigned = [s.model_dump() for s in transcript.unassigned]
    unnamed = frozenset(str(s["speaker_label"]) for s in unassigned)
    tabs = [{"client_id": t.client_id, "lines": _lines([s.model_dump() for s in t.segments],
                                                       list(range(len(t.segments))), by_turn,
                                                       originals, unnamed)}
            for t in transcript.transcripts]
    unassigned_at = [i for i, t in enumerate(turns) if t.get("role", UNASSIGNED) == UNASSIGNED]
    if len(unassigned_at) != len(unassigned):
        unassigned_at = list(range(len(unassigned)))
    return {"tabs": tabs, "unassigned": _lines(unassigned, unassigned_at, by_turn, originals),
            "pending": sum(1 for d in doubts if d.status == "pending")}


@router.get("/sessions/{session_id}", response_class=HTMLResponse)
def session_page(session_id: uuid.UUID, request: Request, svc: ServicesDep, actor: ActorPageDep) -> Response:
    """The session: status while it is processed; once ready, the transcript to review. Audited."""
    row = _load_own(svc, actor.principal, session_id)
    session = _out(svc, row)
    context: dict[str, Any] = {"session": session, "session_id": session_id, "live": session.status in ACTIVE,
                               "read_only": False}
    if session.status == SessionStatus.READY and session.transcript_expired_at is None:
        transcript = get_transcript(session_id, svc, actor.principal, actor)
        doubts = list_suggestions(session_id, svc, actor.principal, actor).suggestions
        turns = row.published_turns or []
        labels = list(dict.fromkeys(t["speaker"] for t in turns if not is_gap(t)))
        roles = {t["speaker"]: t.get("role", UNASSIGNED) for t in turns}
        with db_session(svc.repo.url) as db:
            corrected = corrected_originals(db, session_id)
        context.update(_view(transcript, turns, doubts, corrected), labels=labels, roles=roles,
                       choices=[THERAPIST, *row.client_ids, UNASSIGNED], **formats_and_notes(svc, actor, session_id))
    else:
        with db_session(svc.repo.url) as db:
            audit.record(db, actor, "session_read", session_id, {"via": "web"})
    return render(request, "session.html", **context)


@router.get("/sessions/{session_id}/status", response_class=HTMLResponse)
def session_status(session_id: uuid.UUID, request: Request, svc: ServicesDep, actor: ActorPageDep,
                   was: str = "") -> Response:
    """The status box alone (polled while processing); asks the page to reload once the status changed."""
    row = _load_own(svc, actor.principal, session_id)
    with db_session(svc.repo.url) as db:
        audit.record(db, actor, "session_read", session_id, {"via": "web"})
    response = render(request, "_session_status.html", session=_out(svc, row), live=row.status in ACTIVE)
    if was and was != row.status and row.status == SessionStatus.READY:
        response.headers["HX-Refresh"] = "true"
    return response


def _back(session_id: uuid.UUID, anchor: str = "") -> RedirectResponse:
    return RedirectResponse(f"/app/sessions/{session_id}{anchor}", 303)


@router.post("/suggestions/{suggestion_id}")
def review(suggestion_id: uuid.UUID, request: Request, svc: ServicesDep, page: CsrfDep,
           action: Annotated[str, Form(max_length=20)]) -> Response:
    """Validate, ignore or revert a suggestion (the button pressed); back to its place in the transcript."""
    moves = {"validate": Action.VALIDATED, "ignore": Action.IGNORED, "revert": Action.REVERTED}
    if action not in moves:
        raise PageError(422, "Choose validate, ignore or revert.")
    try:
        done = _move(svc, page.principal, page_actor(request, page), suggestion_id, moves[action])
    except ApiError as exc:
        raise PageError(exc.status, exc.detail) from exc
    return _back(done.session_id, f"#turn-{done.turn_index}")


def _speaker_form(form: FormData) -> dict[str, str]:
    return {k.removeprefix("speaker-"): str(v) for k, v in form.multi_items() if k.startswith("speaker-")}


@router.post("/sessions/{session_id}/speakers")
async def correct_speakers(session_id: uuid.UUID, request: Request, svc: ServicesDep, page: CsrfDep) -> Response:
    """Which speaker is the therapist, which client, which unassigned: republished in place. Audited."""
    mapping = _speaker_form(await request.form())
    if not mapping:
        raise PageError(422, "Choose a role for each speaker.")
    try:
        await run_in_threadpool(put_speakers, session_id, SpeakerMap(speakers=mapping), svc, page.principal,
                                page_actor(request, page))
    except ApiError as exc:
        raise PageError(exc.status, exc.detail) from exc
    return _back(session_id, "#speakers")
