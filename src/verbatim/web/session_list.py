"""The sessions page: the therapist's sessions, newest first, filtered and paged, with live progress.

``GET /app/sessions`` is the page; ``GET /app/sessions/rows`` is its table body alone, which the
page asks for again every few seconds (htmx polling) while a session is still being processed.
Both are audited as ``sessions_listed`` (the rows show client ids). Each row names the session's
type and, for the therapist's own notes, each client's note status in words (``note_status``: none,
drafting, draft, stale, signed, amended, failed), derived from the notes as they stand — nothing new
is stored. ``GET /app/upload`` is the upload form (resumable, through ``/v1/uploads``).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy import and_, exists, select

from verbatim import audit
from verbatim.api.deps import ServicesDep
from verbatim.api.sessions import WITHOUT_TURNS, _outs, visible
from verbatim.audit import Actor
from verbatim.db.engine import db_session
from verbatim.db.models import Note, NoteVersion, Session, Transcript
from verbatim.notes.states import RUNNABLE, NoteStatus
from verbatim.states import ACTIVE, SessionStatus
from verbatim.web.pages import ActorPageDep, PageDep, PageError, render

router = APIRouter(prefix="/app", include_in_schema=False)
PAGE_SIZE = 25
POLL_S = 3


#: a note status as the sessions list words it
NOTE_WORDS = {"none": "No note", "drafting": "Drafting", "draft": "Draft", "stale": "Draft, stale (transcript changed)",
              "signed": "Signed", "amended": "Signed, amended", "failed": "Draft failed"}


def note_status(status: str | None, *, stale: bool, amended: bool) -> str:
    """A note's status for the sessions list: ``none`` (no note), ``drafting`` (queued or being written),
    ``draft``, ``stale`` (a draft written from an older version of the record), ``signed``, ``amended``
    (signed, then amended), ``failed``."""
    if status is None:
        return "none"
    if status in RUNNABLE:
        return "drafting"
    if status == NoteStatus.DRAFT:
        return "stale" if stale else "draft"
    if status == NoteStatus.SIGNED:
        return "amended" if amended else "signed"
    return "failed"


def _note_statuses(db: Any, therapist_id: Any, session_ids: list[Any]) -> dict[Any, list[dict[str, Any]]]:
    """Per session: the newest note of each client (the caller's own notes), as ``{client_id, note_id,
    status}``, in client order. One query: staleness from the record's version, amended from the versions."""
    if therapist_id is None or not session_ids:
        return {}
    amended = exists().where(NoteVersion.note_id == Note.id, NoteVersion.kind == "amendment")
    rows = db.execute(
        select(Note.id, Note.session_id, Note.client_id, Note.status, Note.version, Note.transcript_version,
               Transcript.version.label("record_version"), amended.label("amended"))
        .outerjoin(Transcript, and_(Transcript.session_id == Note.session_id, Transcript.client_id == Note.client_id))
        .where(Note.session_id.in_(session_ids), Note.therapist_id == therapist_id)
        .order_by(Note.session_id, Note.client_id, Note.created_at.desc())).all()
    out: dict[Any, list[dict[str, Any]]] = {}
    seen: set[tuple[Any, str]] = set()
    for r in rows:
        if (r.session_id, r.client_id) in seen:
            continue  # an older note of the same client
        seen.add((r.session_id, r.client_id))
        stale = r.version > 0 and r.transcript_version is not None and r.record_version != r.transcript_version
        out.setdefault(r.session_id, []).append(
            {"client_id": r.client_id, "note_id": r.id, "status": note_status(r.status, stale=stale,
                                                                              amended=bool(r.amended))})
    return out


def listing(svc: ServicesDep, actor: Actor, status: SessionStatus | None, since: date | None, until: date | None,
            page: int, *, redact: bool) -> dict[str, Any]:
    """One page of the caller's visible sessions (newest first) and the filters, for a template. Audited."""
    stmt = select(Session).options(*WITHOUT_TURNS).where(visible(actor.principal))
    if status is not None:
        stmt = stmt.where(Session.status == status.value)
    if since is not None:
        stmt = stmt.where(Session.recorded_at >= datetime.combine(since, time(), UTC))
    if until is not None:
        stmt = stmt.where(Session.recorded_at < datetime.combine(until + timedelta(days=1), time(), UTC))
    offset = (page - 1) * PAGE_SIZE
    stmt = stmt.order_by(Session.created_at.desc(), Session.id).limit(PAGE_SIZE + 1).offset(offset)
    with db_session(svc.repo.url) as db:
        rows = list(db.execute(stmt).scalars())
        audit.record(db, actor, "sessions_listed", None,
                     {"count": min(len(rows), PAGE_SIZE), "offset": offset, "via": "web"})
        notes = {} if redact else _note_statuses(db, actor.principal.therapist_id, [r.id for r in rows[:PAGE_SIZE]])
    items = _outs(svc, rows[:PAGE_SIZE], redact=redact)
    query = {"status": status.value if status else "", "since": since.isoformat() if since else "",
             "until": until.isoformat() if until else ""}
    drafting = any(n["status"] == "drafting" for ns in notes.values() for n in ns)
    return {"items": items, "page_no": page, "has_next": len(rows) > PAGE_SIZE, "query": query,
            "live": drafting or any(i.status in ACTIVE for i in items), "statuses": [s.value for s in SessionStatus],
            "poll_s": POLL_S, "notes": notes, "note_words": NOTE_WORDS}


Text = Annotated[str, Query(max_length=20)]
PageNo = Annotated[int, Query(ge=1, le=100_000)]


def filters(status: str, since: str, until: str) -> tuple[SessionStatus | None, date | None, date | None]:
    """The filter form's fields (blank: no filter); PageError 422 naming the field that is wrong."""
    try:
        chosen = SessionStatus(status) if status else None
    except ValueError:
        raise PageError(422, f"Unknown status “{status}”: choose one from the list.") from None
    days: list[date | None] = []
    for name, raw in (("From", since), ("To", until)):
        try:
            days.append(date.fromisoformat(raw) if raw else None)
        except ValueError:
            raise PageError(422, f"“{name}” must be a date like 2026-11-30.") from None
    return chosen, days[0], days[1]


HOMES = {"therapist": "/app/sessions", "clinic_admin": "/app/clinic", "admin": "/app/ops"}


@router.get("")
def home(page: PageDep) -> Response:
    return RedirectResponse(HOMES.get(page.principal.scope, "/app/clinic"), 303)


@router.get("/sessions", response_class=HTMLResponse)
def sessions_page(request: Request, svc: ServicesDep, actor: ActorPageDep, status: Text = "",
                  since: Text = "", until: Text = "", page: PageNo = 1) -> Response:
    """The sessions page (a clinic admin is sent to the clinic's list)."""
    if actor.principal.scope != "therapist":
        return RedirectResponse("/app/clinic", 303)
    return render(request, "sessions.html", **listing(svc, actor, *filters(status, since, until), page,
                                                      redact=False))


@router.get("/sessions/rows", response_class=HTMLResponse)
def session_rows(request: Request, svc: ServicesDep, actor: ActorPageDep, status: Text = "",
                 since: Text = "", until: Text = "", page: PageNo = 1) -> Response:
    """The sessions table's rows alone (polled while any is in progress)."""
    return render(request, "_session_rows.html", **listing(svc, actor, *filters(status, since, until), page,
                                                           redact=actor.principal.scope != "therapist"))


@router.get("/upload", response_class=HTMLResponse)
def upload_page(request: Request, page: PageDep) -> Response:
    """Upload a recording with the client's consent (resumable; progress shown)."""
    if page.principal.scope != "therapist":
        return RedirectResponse("/app/clinic", 303)
    return render(request, "upload.html", now=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M"))
