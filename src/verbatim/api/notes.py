"""Clinical notes: request (one per client), read, edit, sign, co-sign, amend, export; templates; batches.

Only the session's own therapist requests, edits and signs a note (404 for anyone else, as for
sessions); a colleague of the same clinic with an open break-glass grant on the session may read
it (audited as such); a trainee's signed note is co-signed by another therapist of the clinic.
Drafts are never exported: FHIR and PDF exports are of signed notes only. Every read, edit, sign
and export writes its audit row in the transaction that reads or changes the note.
"""

from __future__ import annotations

import contextlib
import uuid
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Response
from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from sqlalchemy import insert, select
from sqlalchemy.orm import Session as OrmSession

from verbatim import audit
from verbatim.api.break_glass import active_grant
from verbatim.api.deps import ActorDep, PrincipalDep, ServicesDep
from verbatim.api.errors import ApiError
from verbatim.auth import Principal
from verbatim.db.engine import db_session
from verbatim.db.models import Clinic, EhrIdentifier, Note, NoteBatch, NoteTemplate, NoteVersion, Session
from verbatim.errors import NotFound
from verbatim.free_text import FREE_TEXT, ONE_LINE, REASON
from verbatim.notes.drafter import judge
from verbatim.notes.fhir import document_reference
from verbatim.notes.pdf import document
from verbatim.notes.render import plain_text
from verbatim.notes.repo import NoteRepo
from verbatim.notes.service import Requested, request_note
from verbatim.notes.staleness import confirm_record, is_stale, record_version
from verbatim.notes.states import NOTE_SUBJECTS, NoteStatus
from verbatim.record import writer as record_writer
from verbatim.states import SessionStatus

router = APIRouter(tags=["notes"])

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=4000), FREE_TEXT]
SectionName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200), ONE_LINE]


class NoteRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: Annotated[str, ONE_LINE] = Field(min_length=1, max_length=60,
                                             description="soap, dap, birp, girp, or a template id")
    client_id: Annotated[str, ONE_LINE] | None = Field(None, max_length=200,
                                                       description="Whose note (required with several clients)")


class NoteAccepted(BaseModel):
    note_id: uuid.UUID
    session_id: uuid.UUID
    client_id: str
    status: str


class Citation(BaseModel):
    segment_id: str
    speaker: str
    start_s: float
    end_s: float
    quote: str


class Sentence(BaseModel):
    text: str
    citations: list[Citation]
    #: supported | unsupported | contradicted (the verifier's); unsupported and contradicted are shown flagged
    label: str
    support: float | None = None
    #: confirmed against a newer record and its evidence now belongs to another participant (quotes removed)
    record_moved: bool = False


class SectionOut(BaseModel):
    name: str
    sentences: list[Sentence]
    empty: str | None = None
    #: who wrote the section (``offline-drafter-1`` or ``openai:<model>``); None once edited
    writer: str | None = None


class NoteOut(BaseModel):
    id: uuid.UUID
    session_id: uuid.UUID
    client_id: str
    format: str
    status: str
    version: int
    writer: str | None
    transcript_version: int | None
    #: the current version of the client's record (None once it is gone)
    record_version: int | None = None
    #: drafted from an older version of the record: not signable until drafted again or confirmed
    #: against the current record (``POST /v1/notes/{id}/confirm-record``)
    stale: bool = False
    risk: dict[str, Any] | None
    sections: list[SectionOut]
    requires_cosign: bool
    signed_by: uuid.UUID | None
    signed_at: datetime | None
    cosigned_by: uuid.UUID | None
    cosigned_at: datetime | None
    amended: bool
    failure_code: str | None
    #: the note run's state (``verbatim.durable.subjects``): running, parked, due, overdue, blocked,
    #: cancelled; None when no run is outstanding
    run_state: str | None = None


class SectionEdit(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: SectionName
    sentences: list[Text] = Field(max_length=200)


class NoteEdit(BaseModel):
    """The note's new text: every section, each as its sentences. A sentence left as it was keeps its
    citations; a changed one keeps the citations of the sentence it replaced and is verified again."""

    model_config = ConfigDict(extra="forbid")
    sections: list[SectionEdit] = Field(min_length=1, max_length=30)


class Amendment(NoteEdit):
    reason: Annotated[str, StringConstraints(strip_whitespace=True, min_length=5, max_length=1000), REASON] = Field(
        description="Why the signed note is changed (kept with the amendment; readable words, at least 4 letters)")


class VersionOut(BaseModel):
    version: int
    kind: str
    diff: str
    reason: str | None
    author_id: uuid.UUID | None
    created_at: datetime


class TemplateSection(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: SectionName
    instruction: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000), FREE_TEXT]
    example: Annotated[str, StringConstraints(strip_whitespace=True, max_length=4000), FREE_TEXT] | None = None


class TemplateIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: SectionName
    sections: list[TemplateSection] = Field(min_length=1, max_length=20)


class TemplateOut(BaseModel):
    id: uuid.UUID
    name: str
    sections: list[TemplateSection]


class BatchIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: Annotated[str, ONE_LINE] = Field(min_length=1, max_length=60)
    session_ids: list[uuid.UUID] | None = Field(None, max_length=100)
    ready_today: bool = Field(False, description="All my sessions published today (UTC) instead of session_ids")


class BatchOut(BaseModel):
    batch_id: uuid.UUID
    notes: list[dict[str, Any]]
    progress: dict[str, int]


# --- helpers ---------------------------------------------------------------------------
def _therapist(who: Principal) -> uuid.UUID:
    if who.scope != "therapist" or who.therapist_id is None:
        raise NotFound("notes are their therapist's: use a therapist token")
    return who.therapist_id


def _own_session(db: OrmSession, who: Principal, session_id: uuid.UUID) -> Session:
    row = db.execute(select(Session).where(Session.id == session_id, Session.therapist_id == _therapist(who))
                     ).scalar_one_or_none()
    if row is None:
        raise NotFound(f"no session {session_id}")
    return row


def _enqueue(svc: Any, notes: list[Requested]) -> None:
    # After the commit; if the broker is down the due time (stall window) brings each note to the sweep.
    for n in notes:
        with contextlib.suppress(Exception):  # the sweep re-queues it
            svc.queue.enqueue_note(n.note_id)


def _out(db: OrmSession, repo: NoteRepo, note: Note) -> NoteOut:
    body = repo.current_body(db, note)
    amended = db.execute(select(NoteVersion.id).where(NoteVersion.note_id == note.id,
                                                      NoteVersion.kind == "amendment")).first() is not None
    return NoteOut(
        id=note.id, session_id=note.session_id, client_id=note.client_id, format=note.format, status=note.status,
        version=note.version, writer=note.writer, transcript_version=note.transcript_version,
        record_version=record_version(db, note), stale=is_stale(db, note), risk=body.get("risk"),
        sections=[SectionOut(**s) for s in body.get("sections", [])],
        requires_cosign=note.requires_cosign, signed_by=note.signed_by, signed_at=note.signed_at,
        cosigned_by=note.cosigned_by, cosigned_at=note.cosigned_at, amended=amended, failure_code=note.failure_code,
        run_state=phase.value if (phase := NOTE_SUBJECTS.phase(db, note.id)) else None,
    )


def _edited_body(db: OrmSession, repo: NoteRepo, note: Note, edit: NoteEdit) -> dict[str, Any]:
    before = repo.current_body(db, note)
    old = {s["name"]: s.get("sentences", []) for s in before.get("sections", [])}
    sections = []
    for section in edit.sections:
        previous = old.get(section.name, [])
        sentences = []
        for i, text in enumerate(section.sentences):
            same = next((p for p in previous if p["text"] == text), None)
            if same is not None:
                sentences.append(same)
                continue
            cites = previous[i]["citations"] if i < len(previous) else []
            sentences.append({"text": text, "citations": cites, **judge(text, cites), "edited": True})
        out: dict[str, Any] = {"name": section.name, "sentences": sentences}
        if not sentences:
            out["empty"] = "No evidence for this section in the transcript."
        sections.append(out)
    return {"sections": sections, "risk": before.get("risk")}


def _readable(db: OrmSession, svc: Any, who: Principal, note_id: uuid.UUID) -> tuple[Note, str]:
    """The note for a read, and the audit action: the owner's read, or a break-glass read."""
    repo = NoteRepo(svc.repo.url)
    if who.scope == "therapist":
        try:
            return repo.get(db, note_id, who.therapist_id), "note_read"
        except NotFound:
            pass
    note = db.get(Note, note_id)
    if note is None or note.clinic_id != who.clinic_id or not active_grant(svc.repo.url, who, note.session_id):
        raise NotFound(f"note {note_id} does not exist")
    return note, "note_read_break_glass"


# --- endpoints -------------------------------------------------------------------------
@router.post("/v1/sessions/{session_id}/notes", response_model=NoteAccepted, status_code=202)
def request(session_id: uuid.UUID, body: NoteRequest, svc: ServicesDep, who: PrincipalDep,
            actor: ActorDep) -> NoteAccepted:
    """Ask for a note of one client of the session, drafted in the background → 202 with its id.

    404: not your session. 422 ``unknown_format`` / ``client_not_in_session``; 409 ``not_ready``;
    410 ``transcript_expired``. Nothing is written or enqueued when the request is refused.
    """
    with db_session(svc.repo.url) as db:
        session = _own_session(db, who, session_id)
        made = request_note(db, svc.settings, session, body.format, body.client_id)
        audit.record(db, actor, "note_requested", session_id, {"note_id": str(made.note_id)})
    _enqueue(svc, [made])
    return NoteAccepted(note_id=made.note_id, session_id=session_id, client_id=made.client_id, status="queued")


@router.get("/v1/notes/{note_id}", response_model=NoteOut)
def read(note_id: uuid.UUID, svc: ServicesDep, who: PrincipalDep, actor: ActorDep) -> NoteOut:
    """The note: status, risk flags, sections with sentences, citations and verifier labels. Audited."""
    with db_session(svc.repo.url) as db:
        note, action = _readable(db, svc, who, note_id)
        audit.record(db, actor, action, note.session_id, {"note_id": str(note_id)})
        return _out(db, NoteRepo(svc.repo.url), note)


@router.get("/v1/notes/{note_id}/versions", response_model=list[VersionOut])
def versions(note_id: uuid.UUID, svc: ServicesDep, who: PrincipalDep, actor: ActorDep) -> list[VersionOut]:
    """Every version with its diff against the one before (draft, edits, amendments with reasons). Audited."""
    with db_session(svc.repo.url) as db:
        note = NoteRepo(svc.repo.url).get(db, note_id, _therapist(who))
        audit.record(db, actor, "note_versions_read", note.session_id, {"note_id": str(note_id)})
        rows = db.execute(select(NoteVersion).where(NoteVersion.note_id == note_id).order_by(NoteVersion.version)
                          ).scalars()
        return [VersionOut(version=r.version, kind=r.kind, diff=r.diff, reason=r.reason, author_id=r.author_id,
                           created_at=r.created_at) for r in rows]


@router.put("/v1/notes/{note_id}", response_model=NoteOut)
def edit(note_id: uuid.UUID, body: NoteEdit, svc: ServicesDep, who: PrincipalDep, actor: ActorDep) -> NoteOut:
    """Edit a drafted note: a new version, kept with its diff. 409 once signed (amend instead)."""
    repo = NoteRepo(svc.repo.url)
    with db_session(svc.repo.url) as db:
        note = repo.get(db, note_id, _therapist(who))
        if note.status != NoteStatus.DRAFT.value:
            raise ApiError(409, "not_editable", f"a {note.status} note cannot be edited"
                           + ("; a signed note is changed by an amendment (POST …/amend)"
                              if note.status == NoteStatus.SIGNED.value else ""))
        version = repo.add_version(db, note, _edited_body(db, repo, note, body), "edit", who.therapist_id)
        audit.record(db, actor, "note_edited", note.session_id, {"note_id": str(note_id), "version": version})
        db.flush()
        return _out(db, repo, note)


def _lock_session_of(db: OrmSession, note_id: uuid.UUID) -> None:
    """Lock the note's session row first (the lock order: session, then note): a withdrawal and a
    change of the record wait for the signature, or the signature waits for them and sees them."""
    session_id = db.execute(select(Note.session_id).where(Note.id == note_id)).scalar_one_or_none()
    if session_id is None:
        raise NotFound(f"note {note_id} does not exist")
    row = record_writer.lock(db, session_id)
    if row.status == SessionStatus.DELETED.value:
        raise NotFound(f"note {note_id} does not exist")


def refuse_unsignable(db: OrmSession, note: Note) -> None:
    """Every check a signature must pass beyond the note's status: one place, in the signing transaction."""
    if is_stale(db, note):
        raise ApiError(409, "stale_note",
                       f"this draft was written from version {note.transcript_version} of the transcript, which has "
                       f"changed since (now version {record_version(db, note)}): request a new draft, or confirm this "
                       "one against the current transcript (POST /v1/notes/{id}/confirm-record), then sign")


@router.post("/v1/notes/{note_id}/sign", response_model=NoteOut)
def sign(note_id: uuid.UUID, svc: ServicesDep, who: PrincipalDep, actor: ActorDep) -> NoteOut:
    """Sign (lock) a drafted note as its therapist: signer and time recorded; the retention clock starts.

    409 ``stale_note`` when the draft's record has changed since it was written."""
    repo = NoteRepo(svc.repo.url)
    with db_session(svc.repo.url) as db:
        _lock_session_of(db, note_id)
        note = repo.get(db, note_id, _therapist(who))
        if note.status == NoteStatus.DRAFT.value:
            refuse_unsignable(db, note)
        days = db.execute(select(Clinic.note_retention_days).where(Clinic.id == note.clinic_id)).scalar_one()
        keep = timedelta(days=days or svc.settings.note_retention_days)
        repo.sign(note, _therapist(who), cosign=False, retain_until=datetime.now(UTC) + keep)
        audit.record(db, actor, "note_signed", note.session_id, {"note_id": str(note_id), "version": note.version})
        db.flush()
        db.refresh(note)
        return _out(db, repo, note)


@router.post("/v1/notes/{note_id}/confirm-record", response_model=NoteOut)
def confirm_against_record(note_id: uuid.UUID, svc: ServicesDep, who: PrincipalDep, actor: ActorDep) -> NoteOut:
    """Confirm a stale draft against the current record: citations checked again (a turn now another
    participant's is dropped with its quote and its sentence marked unsupported), a new version. Audited.

    409 ``not_editable`` unless a draft; 409 ``not_stale`` when the record has not changed."""
    repo = NoteRepo(svc.repo.url)
    with db_session(svc.repo.url) as db:
        _lock_session_of(db, note_id)
        note = repo.get(db, note_id, _therapist(who))
        if note.status != NoteStatus.DRAFT.value:
            raise ApiError(409, "not_editable", f"a {note.status} note cannot be confirmed against the record")
        if not is_stale(db, note):
            raise ApiError(409, "not_stale", "this draft was written from the current transcript: nothing to confirm")
        try:
            version, dropped = confirm_record(db, repo, note, _therapist(who))
        except ValueError as exc:
            raise ApiError(410, "transcript_expired", "the transcript is gone: the draft cannot be confirmed") from exc
        audit.record(db, actor, "note_record_confirmed", note.session_id,
                     {"note_id": str(note_id), "version": version, "citations_dropped": dropped})
        db.flush()
        return _out(db, repo, note)


@router.post("/v1/notes/{note_id}/cosign", response_model=NoteOut)
def cosign(note_id: uuid.UUID, svc: ServicesDep, who: PrincipalDep, actor: ActorDep) -> NoteOut:
    """A supervisor (another therapist of the clinic) co-signs a trainee's signed note."""
    supervisor = _therapist(who)
    repo = NoteRepo(svc.repo.url)
    with db_session(svc.repo.url) as db:
        note = db.execute(select(Note).where(Note.id == note_id, Note.clinic_id == who.clinic_id).with_for_update()
                          ).scalar_one_or_none()
        if note is None:
            raise NotFound(f"note {note_id} does not exist")
        if note.therapist_id == supervisor:
            raise ApiError(409, "own_note", "a trainee cannot co-sign their own note")
        repo.sign(note, supervisor, cosign=True, retain_until=None)
        audit.record(db, actor, "note_cosigned", note.session_id, {"note_id": str(note_id)})
        db.flush()
        db.refresh(note)
        return _out(db, repo, note)


@router.post("/v1/notes/{note_id}/amend", response_model=NoteOut)
def amend(note_id: uuid.UUID, body: Amendment, svc: ServicesDep, who: PrincipalDep, actor: ActorDep) -> NoteOut:
    """Change a signed note: an amendment (new version with its reason and diff); the note stays signed."""
    repo = NoteRepo(svc.repo.url)
    with db_session(svc.repo.url) as db:
        note = repo.get(db, note_id, _therapist(who))
        if note.status != NoteStatus.SIGNED.value:
            raise ApiError(409, "not_signed", "only a signed note is amended; edit a draft with PUT")
        version = repo.add_version(db, note, _edited_body(db, repo, note, body), "amendment", who.therapist_id,
                                   body.reason)
        audit.record(db, actor, "note_amended", note.session_id, {"note_id": str(note_id), "version": version})
        db.flush()
        return _out(db, repo, note)


def _exportable(db: OrmSession, svc: Any, who: Principal, note_id: uuid.UUID) -> tuple[Note, dict[str, Any], bool]:
    repo = NoteRepo(svc.repo.url)
    note = repo.get(db, note_id, _therapist(who))
    if note.status != NoteStatus.SIGNED.value:
        raise ApiError(409, "not_signed", "drafts are never exported: sign the note first")
    if note.requires_cosign and note.cosigned_at is None:
        raise ApiError(409, "awaiting_cosign", "a trainee's note is exported once its supervisor co-signs it")
    amended = db.execute(select(NoteVersion.id).where(NoteVersion.note_id == note.id,
                                                      NoteVersion.kind == "amendment")).first() is not None
    return note, repo.current_body(db, note), amended


def note_pdf(note: Note, body: dict[str, Any], amended: bool) -> bytes:
    """The PDF of a signed note (header: client, session, signer, status)."""
    status = "amended" if amended else "final"
    header = [f"Client: {note.client_id}    Session: {note.session_id}", f"Format: {note.format}    Status: {status}",
              f"Signed by {note.signed_by} at {note.signed_at:%Y-%m-%d %H:%M} UTC" if note.signed_at else "",
              f"Drafted by {note.writer} from transcript version {note.transcript_version}"]
    return document("Clinical note", header, plain_text(body, citations=True))


@router.get("/v1/notes/{note_id}/fhir")
def export_fhir(note_id: uuid.UUID, svc: ServicesDep, who: PrincipalDep, actor: ActorDep) -> dict[str, Any]:
    """The signed note as a FHIR R4 DocumentReference (text/plain and PDF attachments). 409 for a draft."""
    with db_session(svc.repo.url) as db:
        note, body, amended = _exportable(db, svc, who, note_id)
        recorded = db.execute(select(Session.recorded_at).where(Session.id == note.session_id)).scalar_one_or_none()
        assert note.signed_at is not None
        mapped = {(r.kind, r.local_id): (r.system, r.value) for r in db.execute(
            select(EhrIdentifier).where(EhrIdentifier.clinic_id == note.clinic_id,
                                        EhrIdentifier.local_id.in_([note.client_id, str(note.therapist_id)]))
        ).scalars()}
        resource = document_reference(
            note_id=str(note.id), clinic_id=str(note.clinic_id), client_id=note.client_id,
            therapist_id=str(note.therapist_id), signed_at=note.signed_at, amended=amended, text=plain_text(body),
            pdf=note_pdf(note, body, amended), session_recorded_at=recorded,
            ehr_patient=mapped.get(("client", note.client_id)),
            ehr_practitioner=mapped.get(("practitioner", str(note.therapist_id))))
        audit.record(db, actor, "note_exported", note.session_id, {"note_id": str(note_id), "as": "fhir"})
    return resource


@router.get("/v1/notes/{note_id}/pdf", response_class=Response)
def export_pdf(note_id: uuid.UUID, svc: ServicesDep, who: PrincipalDep, actor: ActorDep) -> Response:
    """The signed note as PDF. 409 for a draft."""
    with db_session(svc.repo.url) as db:
        note, body, amended = _exportable(db, svc, who, note_id)
        data = note_pdf(note, body, amended)
        audit.record(db, actor, "note_exported", note.session_id, {"note_id": str(note_id), "as": "pdf"})
    return Response(data, media_type="application/pdf",
                    headers={"content-disposition": f'attachment; filename="note-{note_id}.pdf"'})


@router.post("/v1/templates", response_model=TemplateOut, status_code=201)
def create_template(body: TemplateIn, svc: ServicesDep, who: PrincipalDep, actor: ActorDep) -> TemplateOut:
    """A clinic template: named sections, each with an instruction and an optional example of style."""
    if who.scope not in ("therapist", "clinic_admin") or who.clinic_id is None:
        raise NotFound("templates belong to a clinic: use a therapist or clinic admin token")
    sections = [s.model_dump() for s in body.sections]
    with db_session(svc.repo.url) as db:
        tid = db.execute(insert(NoteTemplate).values(clinic_id=who.clinic_id, therapist_id=who.therapist_id,
                                                     name=body.name, sections=sections).returning(NoteTemplate.id)
                         ).scalar_one()
        audit.record(db, actor, "template_created", None, {"template_id": str(tid)})
    return TemplateOut(id=tid, name=body.name, sections=body.sections)


@router.post("/v1/notes/batch", response_model=BatchOut, status_code=202)
def batch(body: BatchIn, svc: ServicesDep, who: PrincipalDep, actor: ActorDep) -> BatchOut:
    """A morning's notes: one note per client of each session → a batch id; each note is its own durable run.

    All or nothing: one session not yours (404) or not ready (409) refuses the whole batch, nothing enqueued.
    """
    therapist = _therapist(who)
    if (body.session_ids is None) == (not body.ready_today):
        raise ApiError(422, "invalid_request", "give session_ids, or ready_today: true (not both)")
    with db_session(svc.repo.url) as db:
        if body.ready_today:
            start = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
            sessions = list(db.execute(select(Session).where(
                Session.therapist_id == therapist, Session.status == SessionStatus.READY.value,
                Session.finished_at >= start).order_by(Session.recorded_at)).scalars())
        else:
            sessions = [_own_session(db, who, sid) for sid in dict.fromkeys(body.session_ids or [])]
        if not sessions:
            raise ApiError(422, "no_sessions", "no session of yours is ready today")
        bid = db.execute(insert(NoteBatch).values(therapist_id=therapist).returning(NoteBatch.id)).scalar_one()
        made = [request_note(db, svc.settings, s, body.format, c, bid) for s in sessions for c in s.client_ids]
        audit.record(db, actor, "notes_batch_requested", None, {"batch_id": str(bid), "notes": len(made)})
    _enqueue(svc, made)
    with db_session(svc.repo.url) as db:
        return _batch_out(db, therapist, bid)


def _batch_out(db: OrmSession, therapist: uuid.UUID, batch_id: uuid.UUID) -> BatchOut:
    rows = db.execute(select(Note.id, Note.session_id, Note.client_id, Note.status, Note.sections).where(
        Note.batch_id == batch_id, Note.therapist_id == therapist).order_by(Note.created_at)).all()
    if not rows:
        raise NotFound(f"no batch {batch_id}")
    notes = [{"note_id": str(r.id), "session_id": str(r.session_id), "client_id": r.client_id, "status": r.status,
              "sections_done": len(r.sections or [])} for r in rows]
    progress: dict[str, int] = {}
    for n in notes:
        progress[n["status"]] = progress.get(n["status"], 0) + 1
    return BatchOut(batch_id=batch_id, notes=notes, progress=progress)


@router.get("/v1/notes/batch/{batch_id}", response_model=BatchOut)
def batch_progress(batch_id: uuid.UUID, svc: ServicesDep, who: PrincipalDep, actor: ActorDep) -> BatchOut:
    """Per-note progress of a batch (status and sections written so far). Audited."""
    with db_session(svc.repo.url) as db:
        out = _batch_out(db, _therapist(who), batch_id)
        audit.record(db, actor, "notes_batch_read", None, {"batch_id": str(batch_id)})
    return out



@router.get("/v1/sessions/{session_id}/clients/{client_id}/record.pdf", response_class=Response)
def client_record(session_id: uuid.UUID, client_id: str, svc: ServicesDep, who: PrincipalDep,
                  actor: ActorDep) -> Response:
    """A client's own record as one PDF, for a right-of-access request: their transcript split
    (the therapist's turns and their own; another participant's only as placeholders) and their
    signed notes. The session's therapist only. Audited."""
    from verbatim.db.models import Transcript

    repo = NoteRepo(svc.repo.url)
    with db_session(svc.repo.url) as db:
        session = _own_session(db, who, session_id)
        signed = list(db.execute(select(Note).where(Note.session_id == session_id, Note.client_id == client_id,
                                                    Note.status == NoteStatus.SIGNED.value)
                                 .order_by(Note.signed_at)).scalars())
        if client_id not in session.client_ids and not signed:
            raise NotFound(f"no client {client_id!r} in session {session_id}")
        segments = db.execute(select(Transcript.segments).where(Transcript.session_id == session_id,
                                                                Transcript.client_id == client_id)
                              ).scalar_one_or_none()
        lines = ["TRANSCRIPT"]
        if segments is None:
            lines.append("  (the transcript was deleted under its clinic's retention or withdrawn)")
        for seg in segments or []:
            lines.append(f"  [{seg['start_s']:7.1f}s] {seg['speaker']}: {seg['text']}")
        for note in signed:
            lines += ["", f"SIGNED NOTE {note.id} ({note.format}, signed {note.signed_at:%Y-%m-%d})"]
            lines.append(plain_text(repo.current_body(db, note)))
        audit.record(db, actor, "client_record_exported", session_id, {"notes": len(signed)})
    data = document(f"Record of {client_id}", [f"Session {session_id}, recorded {session.recorded_at:%Y-%m-%d}",
                                               f"Exported {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"],
                    "\n".join(lines))
    return Response(data, media_type="application/pdf",
                    headers={"content-disposition": f'attachment; filename="record-{session_id}.pdf"'})
