"""Clinical notes on the pages: request a draft, watch it written, read it beside its evidence, edit, sign, export.

Every action goes through the JSON API's own functions (``verbatim.api.notes``: ``request``,
``read``, ``edit``, ``sign``, ``amend``, ``export_pdf``, ``export_fhir``), so authorization
and audit are identical to the API's: another therapist's note is a 404 page, a draft is never
exported (409 page), every read, edit, sign and export is audited. Forms are CSRF-checked.

``GET /app/notes/{id}`` shows the note beside the client's record: each sentence links to the
segments it cites (``note.js`` highlights them in the record beside the note; where the record is
not beside the note — a tablet's single column — the cited words open inline under the sentence;
without script the link jumps to the first). While the note is written, ``…/progress`` is polled
(htmx, every second) and shows the sections written so far; once drafted it asks the page to reload.
The note's versions (draft, edits, signing review, amendments with their reasons) are listed with
their diffs for its therapist (``notes_api.versions``: audited ``note_versions_read``).

A draft autosaves: ``note.js`` posts the edit form to ``…/autosave`` a moment after typing stops
(and at least every ``MAX_WAIT`` while typing goes on), which is an edit like any other (a new
version, audited ``note_edited``) answered as JSON with the page's changed parts. Each save is a
request, so typing keeps the page session alive. Until a save is answered, the typed text is kept in
the browser's ``sessionStorage`` (key ``verbatim.unsaved.<note id>.<version>``, never sent
anywhere but this server); when the session has expired, the page says so, links to sign-in, and
after sign-in restores the text and saves it, then forgets it.
"""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from pydantic import ValidationError
from sqlalchemy import select
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from verbatim.api import notes as notes_api
from verbatim.api.deps import ServicesDep
from verbatim.api.errors import ApiError
from verbatim.api.sessions import get_transcript
from verbatim.audit import Actor
from verbatim.db.engine import db_session
from verbatim.db.models import Note, NoteTemplate, Therapist
from verbatim.errors import NoteRequestInvalid, NotFound
from verbatim.notes import review
from verbatim.notes.formats import BUILT_IN
from verbatim.notes.states import RUNNABLE
from verbatim.web.pages import ActorPageDep, CsrfDep, PageError, env, page_actor, render

router = APIRouter(prefix="/app", include_in_schema=False)


def formats_and_notes(svc: Any, actor: Actor, session_id: uuid.UUID) -> dict[str, Any]:
    """For the session page's notes card: the formats offered (built in + the clinic's templates)
    and the caller's notes of this session, newest first."""
    who = actor.principal
    with db_session(svc.repo.url) as db:
        templates = db.execute(select(NoteTemplate.id, NoteTemplate.name).where(
            NoteTemplate.clinic_id == who.clinic_id).order_by(NoteTemplate.name)).all()
        notes = db.execute(select(Note.id, Note.client_id, Note.format, Note.status, Note.created_at).where(
            Note.session_id == session_id, Note.therapist_id == who.therapist_id).order_by(Note.created_at.desc())
        ).all()
    names = {str(t.id): t.name for t in templates}
    formats = [(f, f.upper()) for f in BUILT_IN] + list(names.items())
    return {"formats": formats, "notes": [{**n._asdict(), "format_name": names.get(n.format, n.format.upper())}
                                          for n in notes]}


def _page_error(exc: ApiError | NoteRequestInvalid) -> PageError:
    if isinstance(exc, ApiError):
        return PageError(exc.status, exc.detail)
    return PageError({"not_ready": 409, "transcript_expired": 410}.get(exc.code, 422), str(exc))


@router.post("/sessions/{session_id}/notes")
async def request_draft(session_id: uuid.UUID, request: Request, svc: ServicesDep, page: CsrfDep) -> Response:
    """Ask for a draft (format, client) → the note's page, where it is watched being written."""
    form = await request.form()
    try:
        body = notes_api.NoteRequest(format=str(form.get("format", "")), client_id=str(form.get("client_id") or "")
                                     or None)
        made = await run_in_threadpool(notes_api.request, session_id, body, svc, page.principal,
                                       page_actor(request, page))
    except ValidationError as exc:
        raise PageError(422, "Choose a format and a client for the note.") from exc
    except (ApiError, NoteRequestInvalid) as exc:
        raise _page_error(exc) from exc
    return RedirectResponse(f"/app/notes/{made.note_id}", 303)


def _evidence(svc: Any, actor: Actor, note: notes_api.NoteOut) -> tuple[list[dict[str, Any]], str | None]:
    """The client's record beside the note, or (when it is gone) why, and the citations' snapshots instead."""
    try:
        transcript = get_transcript(note.session_id, svc, actor.principal, actor)
    except (ApiError, NotFound) as exc:
        # Gone under retention, or (for a trainee's supervisor) not theirs to read whole.
        quoted = {c.segment_id: c.model_dump() | {"id": c.segment_id, "text": c.quote}
                  for s in note.sections for x in s.sentences for c in x.citations}
        why = exc.detail if isinstance(exc, ApiError) else "The whole record is its therapist's"
        return sorted(quoted.values(), key=lambda c: c["start_s"]), why
    record = next((t for t in transcript.transcripts if t.client_id == note.client_id), None)
    return ([s.model_dump() for s in record.segments] if record else []), None


_WHY = {"unsupported": "the cited words do not say this", "contradicted": "the cited words say otherwise",
        "uncited": "no words of the record cited"}


def _flagged(note: notes_api.NoteOut) -> list[dict[str, Any]]:
    """The sentences a signature waits on, with their words (shown to the note's own therapist only)."""
    if note.status != "draft":
        return []
    body = {"sections": [s.model_dump() for s in note.sections]}
    texts = {(s.name, i): x.text for s in note.sections for i, x in enumerate(s.sentences)}
    return [{**f.to_dict(), "text": texts[(f.section, f.sentence)], "why": _WHY.get(f.reason, f.reason)}
            for f in review.flagged(body)]


def _context(svc: Any, actor: Actor, note_id: uuid.UUID) -> dict[str, Any]:
    note = notes_api.read(note_id, svc, actor.principal, actor)
    return {"note": note, "running": note.status in RUNNABLE, "flagged": _flagged(note),
            "supervising": actor.principal.therapist_id != _owner(svc, note_id)}


_KIND_WORDS = {"draft": "Drafted", "edit": "Edited", "review": "Reviewed at signing", "amendment": "Amended",
               "record_confirmed": "Checked against the current transcript"}


#: the stored diff's verifier tags, in the words the note page uses for them
_TAG_WORDS = {" [UNSUPPORTED]": " (⚠ unsupported: the cited words do not say this)",
              " [CONTRADICTED]": " (⚠ contradicted by the cited words)"}


def _diff_lines(diff: str) -> list[tuple[str, str]]:
    """A unified diff as (kind, line) for the page: ``add``, ``del``, ``hunk`` or ``same`` (file headers
    dropped; verifier tags said in words)."""
    out = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            continue
        kind = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "same")
        for tag, words in _TAG_WORDS.items():
            if line.endswith(tag):
                line = line[: -len(tag)] + words
        out.append((kind, line))
    return out


def _versions(svc: Any, actor: Actor, note_id: uuid.UUID) -> list[dict[str, Any]]:
    """The note's versions, newest first, with their diffs, reasons and authors' names, for its therapist
    (audited ``note_versions_read``); [] for anyone else (a supervisor, a break-glass reader)."""
    if actor.principal.therapist_id is None:
        return []
    try:
        rows = notes_api.versions(note_id, svc, actor.principal, actor)
    except (ApiError, NotFound):
        return []
    with db_session(svc.repo.url) as db:
        names = dict(db.execute(select(Therapist.id, Therapist.name).where(
            Therapist.id.in_({r.author_id for r in rows if r.author_id}))).all())
    return [{"version": r.version, "kind": _KIND_WORDS.get(r.kind, r.kind), "reason": r.reason,
             "author": names.get(r.author_id) if r.author_id else None, "created_at": r.created_at,
             "lines": _diff_lines(r.diff)} for r in reversed(rows)]


def _owner(svc: Any, note_id: uuid.UUID) -> uuid.UUID | None:
    with db_session(svc.repo.url) as db:
        return db.execute(select(Note.therapist_id).where(Note.id == note_id)).scalar_one_or_none()


@router.get("/notes/{note_id}", response_class=HTMLResponse)
def note_page(note_id: uuid.UUID, request: Request, svc: ServicesDep, actor: ActorPageDep) -> Response:
    """The note beside its evidence; forms to edit, sign, amend; exports once signed. Audited."""
    context = _context(svc, actor, note_id)
    segments, gone = _evidence(svc, actor, context["note"]) if not context["running"] else ([], None)
    versions = _versions(svc, actor, note_id) if not context["running"] else []
    return render(request, "note.html", segments=segments, gone=gone, versions=versions, **context)


@router.get("/notes/{note_id}/progress", response_class=HTMLResponse)
def note_progress(note_id: uuid.UUID, request: Request, svc: ServicesDep, actor: ActorPageDep) -> Response:
    """The sections written so far (polled while the note is written); reloads the page once it is drafted."""
    context = _context(svc, actor, note_id)
    response = render(request, "_note_progress.html", **context)
    if not context["running"]:
        response.headers["HX-Refresh"] = "true"
    return response


def _sections(form: FormData) -> list[notes_api.SectionEdit]:
    """``section-{i}-name`` and ``section-{i}-text`` (one sentence a line) → the note's sections, in order."""
    count = sum(1 for k in form if k.startswith("section-") and k.endswith("-name"))
    out = []
    for i in range(count):
        text = str(form.get(f"section-{i}-text", ""))
        out.append(notes_api.SectionEdit(name=str(form.get(f"section-{i}-name", "")),
                                         sentences=[line.strip() for line in text.splitlines() if line.strip()]))
    return out


def _decision(form: FormData, sections: list[notes_api.SectionEdit] | None = None) -> notes_api.SignRequest:
    """``flag-{i}-section``, ``-sentence`` and ``-decision`` (confirm | remove) → the sign request.

    With ``sections`` (an amendment's text as sent), a decision counts only while the sentence at its place
    is still the one it was asked about (``flag-{i}-text``): text typed between asking and sending moves the
    sentences, and a decision must never land on another one — it is asked again instead."""
    confirm, remove = [], []
    sent = str(form.get("version", ""))
    version = int(sent) if sent.isdigit() else None
    count = sum(1 for k in form if k.startswith("flag-") and k.endswith("-section"))
    texts = {(s.name, i): x for s in sections or [] for i, x in enumerate(s.sentences)}
    for i in range(count):
        ref = notes_api.SentenceRef(section=str(form.get(f"flag-{i}-section", "")),
                                    sentence=int(str(form.get(f"flag-{i}-sentence", "-1"))))
        if sections is not None and texts.get((ref.section, ref.sentence)) != str(form.get(f"flag-{i}-text", "")):
            return notes_api.SignRequest(version=version)
        choice = form.get(f"flag-{i}-decision")
        if choice == "confirm":
            confirm.append(ref)
        elif choice == "remove":
            remove.append(ref)
    return notes_api.SignRequest(confirm=confirm, remove=remove, version=version)


def _amendment(form: FormData) -> notes_api.Amendment:
    """The amend form → the amendment, with the decisions its review step asked for (``_decision``) and the
    acknowledgement (``risk-acknowledged``) of the sentences about risk it changes or takes out."""
    sections = _sections(form)
    decided = _decision(form, sections)
    # The tick covers the risk sentences the review step listed (``risk-{i}-section``/``-sentence``), and
    # only those: one taken out after the list was shown is listed again.
    count = sum(1 for k in form if k.startswith("risk-") and k.endswith("-section"))
    acknowledged = [notes_api.SentenceRef(section=str(form.get(f"risk-{i}-section", "")),
                                          sentence=int(str(form.get(f"risk-{i}-sentence", "-1"))))
                    for i in range(count)] if form.get("risk-acknowledged") == "yes" else []
    return notes_api.Amendment(sections=sections, reason=str(form.get("reason", "")), confirm=decided.confirm,
                               remove=decided.remove, version=decided.version, risk_acknowledged=acknowledged)


def _amend_review(request: Request, svc: Any, actor: Actor, note_id: uuid.UUID, body: notes_api.Amendment,
                  asked: ApiError) -> Response:
    """The note page again, the amendment as typed in its form, with what it must decide before it is saved:
    each changed sentence the verifier doubts (keep or leave out) and the risk statements it takes out."""
    context = _context(svc, actor, note_id)
    sent = {(s.name, i): x for s in body.sections for i, x in enumerate(s.sentences)}
    signed = {(s.name, i): x.text for s in context["note"].sections for i, x in enumerate(s.sentences)}
    asked_flags: list[dict[str, Any]] = list(asked.extra.get("flagged") or [])  # type: ignore[call-overload]
    asked_risk: list[dict[str, Any]] = list(asked.extra.get("risk_removed") or [])  # type: ignore[call-overload]
    flagged = [{**f, "text": sent.get((f["section"], f["sentence"]), ""), "why": _WHY.get(f["reason"], f["reason"])}
               for f in asked_flags]
    lost = [{**x, "text": signed.get((x["section"], x["sentence"]), ""),
             "what": _RISK_WORDS.get(x["category"], x["category"])} for x in asked_risk]
    segments, gone = _evidence(svc, actor, context["note"])
    return render(request, "note.html", 409, segments=segments, gone=gone, versions=_versions(svc, actor, note_id),
                  amend_review={"reason": body.reason, "flagged": flagged, "risk_removed": lost,
                                "sections": [{"name": s.name, "text": "\n".join(s.sentences)} for s in body.sections]},
                  **context)


#: a risk category in the words of the amend form's warning
_RISK_WORDS = {"suicide": "suicide", "self_harm": "self-harm", "harm_to_others": "harm to others",
               "abuse": "abuse", "neglect": "neglect"}


def _based_on(svc: Any, actor: Actor, note_id: uuid.UUID, form: FormData) -> None:
    """Refuse (409) an edit made on a version that is no longer the note's current one (another window
    saved since): the edit would silently undo that window's work. A form without ``version`` is not checked."""
    sent = str(form.get("version", ""))
    if not sent.isdigit():
        return
    with db_session(svc.repo.url) as db:
        now = db.execute(select(Note.version).where(
            Note.id == note_id, Note.therapist_id == actor.principal.therapist_id)).scalar_one_or_none()
    if now is not None and now != int(sent):
        raise PageError(409, f"This draft was saved as version {now} from another window since you opened version "
                             f"{sent}. Your text was not saved: copy it, reload the page, and apply it again.")


def _fragment(request: Request, name: str, **context: Any) -> str:
    return env.get_template(name).render(request=request, page=request.state.page_session, **context)


@router.post("/notes/{note_id}/autosave")
async def autosave(note_id: uuid.UUID, request: Request, svc: ServicesDep, page: CsrfDep) -> Response:
    """The edit form, saved in the background → JSON ``{"version", "meta", "sections", "sign"}`` (the new
    version and the page's parts that change with it, as HTML). Errors as JSON ``{"detail"}`` with their status
    (409: not a draft any more, or saved from another window since; 422: the text is refused)."""
    form = await request.form()
    actor = page_actor(request, page)
    try:
        _based_on(svc, actor, note_id, form)
        note = await run_in_threadpool(notes_api.edit, note_id, notes_api.NoteEdit(sections=_sections(form)), svc,
                                       page.principal, actor)
    except PageError as exc:
        return JSONResponse({"detail": exc.message}, exc.status)
    except ValidationError as exc:
        errors = exc.errors()
        why = str(errors[0].get("msg", "invalid")).removeprefix("Value error, ") if errors else "invalid"
        return JSONResponse({"detail": f"Not saved: {why}."}, 422)
    except ApiError as exc:
        return JSONResponse({"detail": exc.detail}, exc.status)
    context = {"note": note, "flagged": _flagged(note), "supervising": False}
    return JSONResponse({"version": note.version, "meta": _fragment(request, "_note_meta.html", **context),
                         "sections": _fragment(request, "_note_sections.html", **context),
                         "sign": _fragment(request, "_note_sign.html", **context)},
                        headers={"cache-control": "no-store"})


@router.post("/notes/{note_id}/{action}")
async def change(note_id: uuid.UUID, action: str, request: Request, svc: ServicesDep, page: CsrfDep) -> Response:
    """``edit`` (a draft: new version), ``sign``, ``confirm-record`` (a stale draft against the current
    record), ``amend`` (a signed note, with a reason) → back to the note."""
    form = await request.form()
    actor = page_actor(request, page)
    try:
        if action == "edit":
            _based_on(svc, actor, note_id, form)
            await run_in_threadpool(notes_api.edit, note_id, notes_api.NoteEdit(sections=_sections(form)), svc,
                                    page.principal, actor)
        elif action == "amend":
            body = _amendment(form)
            try:
                await run_in_threadpool(notes_api.amend, note_id, body, svc, page.principal, actor)
            except ApiError as exc:
                if exc.code not in ("needs_review", "removes_risk"):
                    raise
                return await run_in_threadpool(_amend_review, request, svc, actor, note_id, body, exc)
        elif action == "sign":
            await run_in_threadpool(notes_api.sign, note_id, svc, page.principal, actor, _decision(form))
        elif action == "confirm-record":
            await run_in_threadpool(notes_api.confirm_against_record, note_id, svc, page.principal, actor)
        elif action == "cosign":
            await run_in_threadpool(notes_api.cosign, note_id, svc, page.principal, actor)
        else:
            raise PageError(404, "There is no such page.")
    except (ValidationError, ValueError) as exc:
        reason = " and the reason for the amendment (at least 5 characters)" if action == "amend" else ""
        errors = exc.errors() if isinstance(exc, ValidationError) else [{"msg": str(exc)}]
        why = str(errors[0].get("msg", "invalid")).removeprefix("Value error, ") if errors else "invalid"
        raise PageError(422, f"Each section needs a name; each sentence at most 4000 characters{reason}, all of "
                             f"readable text ({why}). Nothing was changed.") from exc
    except ApiError as exc:
        raise _page_error(exc) from exc
    return RedirectResponse(f"/app/notes/{note_id}", 303)


@router.get("/notes/{note_id}/pdf")
def note_pdf(note_id: uuid.UUID, svc: ServicesDep, actor: ActorPageDep) -> Response:
    """The signed note as PDF (a download); a draft answers the 409 page. Audited as an export."""
    try:
        return notes_api.export_pdf(note_id, svc, actor.principal, actor)
    except ApiError as exc:
        raise _page_error(exc) from exc


@router.get("/notes/{note_id}/fhir")
def note_fhir(note_id: uuid.UUID, svc: ServicesDep, actor: ActorPageDep) -> Response:
    """The signed note as a FHIR R4 DocumentReference (a JSON download); a draft answers the 409 page."""
    try:
        resource = notes_api.export_fhir(note_id, svc, actor.principal, actor)
    except ApiError as exc:
        raise _page_error(exc) from exc
    return JSONResponse(resource, media_type="application/fhir+json", headers={
        "content-disposition": f'attachment; filename="note-{note_id}.fhir.json"', "cache-control": "no-store"})
