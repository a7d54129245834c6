"""Clinical notes: request (one per client), read, edit, sign, co-sign, amend, export; templates; batches.

Only the session's own therapist requests, edits and signs a note (404 for anyone else, as for
sessions); a colleague of the same clinic with an open break-glass grant on the session may read
it (audited as such); a trainee's signed note is read and co-signed by the trainee's named supervisor
only (``therapists.supervisor_id``, set by the clinic admin). Signing asks for a decision on each
sentence the verifier doubts (``may_sign``).
Drafts are never exported: FHIR and PDF exports are of signed notes only. Every read, edit, sign
and export writes its audit row in the transaction that reads or changes the note.
"""

from __future__ import annotations

import contextlib
import uuid
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Response
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator
from sqlalchemy import insert, select
from sqlalchemy.orm import Session as OrmSession

from verbatim import audit
from verbatim.api.break_glass import active_grant
from verbatim.api.deps import ActorDep, PrincipalDep, ServicesDep
from verbatim.api.errors import ApiError
from verbatim.auth import Principal
from verbatim.db.engine import db_session
from verbatim.db.models import (
    Clinic,
    EhrIdentifier,
    Note,
    NoteBatch,
    NoteTemplate,
    NoteVersion,
    Session,
    Therapist,
)
from verbatim.errors import NotFound
from verbatim.free_text import FREE_TEXT, ONE_LINE, REASON
from verbatim.notes import review
from verbatim.notes.drafter import judge
from verbatim.notes.fhir import bundle
from verbatim.notes.formats import BUILT_IN
from verbatim.notes.note_risk import recheck
from verbatim.notes.pdf import document, signed_note
from verbatim.notes.record import Change, Party, SignedRecord, changed_sentences
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
    #: kept as written by the clinician despite the flag, at signing: ``{"by": therapist id, "at": time}``
    confirmed: dict[str, str] | None = None


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

    @field_validator("sections")
    @classmethod
    def _names_unique(cls, sections: list[SectionEdit]) -> list[SectionEdit]:
        # A sentence is named by its section and index (signing's decisions, citations): two sections
        # of one name would let one decision cover two sentences.
        names = [s.name.casefold() for s in sections]
        if len(set(names)) != len(names):
            raise ValueError("two sections have the same name: give each section its own name")
        return sections


class SentenceRef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    section: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    sentence: int = Field(ge=0, le=1000, description="0-based index of the sentence in its section")


class SignRequest(BaseModel):
    """The clinician's decision on each flagged sentence (unsupported, contradicted or uncited)."""

    model_config = ConfigDict(extra="forbid")
    confirm: list[SentenceRef] = Field(default_factory=list, max_length=500,
                                       description="Flagged sentences kept as written")
    remove: list[SentenceRef] = Field(default_factory=list, max_length=500,
                                      description="Flagged sentences removed before signing")
    version: int | None = Field(None, ge=1, description="The version reviewed; 409 version_moved if not current")


class Amendment(NoteEdit):
    """A signed note's new text, why it changes, and the clinician's decisions on what the change needs
    reviewed (see ``amend``)."""

    reason: Annotated[str, StringConstraints(strip_whitespace=True, min_length=5, max_length=1000), REASON] = Field(
        description="Why the signed note is changed (kept with the amendment; readable words, at least 4 letters)")
    confirm: list[SentenceRef] = Field(default_factory=list, max_length=500,
                                       description="Flagged changed sentences kept as written (positions in the "
                                                   "sections sent)")
    remove: list[SentenceRef] = Field(default_factory=list, max_length=500,
                                      description="Flagged changed sentences left out of the amendment")
    risk_acknowledged: list[SentenceRef] = Field(
        default_factory=list, max_length=500,
        description="The signed version's sentences about risk this amendment changes or takes out on purpose, "
                    "by section and index as a 409 removes_risk lists them; each listed one must be named")
    version: int | None = Field(None, ge=1, description="The signed version amended; 409 version_moved if not "
                                                        "current")


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
    # The risk check runs again over the edited text: words about risk the clinician adds are listed.
    return {"sections": sections, "risk": recheck(before.get("risk"), sections)}


def _readable(db: OrmSession, svc: Any, who: Principal, note_id: uuid.UUID) -> tuple[Note, str]:
    """The note for a read, and the audit action: the owner's read, or a break-glass read."""
    repo = NoteRepo(svc.repo.url)
    if who.scope == "therapist":
        try:
            return repo.get(db, note_id, who.therapist_id), "note_read"
        except NotFound:
            pass
    note = db.get(Note, note_id)
    if note is None or note.clinic_id != who.clinic_id:
        raise NotFound(f"note {note_id} does not exist")
    # The named supervisor reads a trainee's note once it is signed (to co-sign it), and only then.
    if note.requires_cosign and note.status == NoteStatus.SIGNED.value and _supervises(db, who, note):
        return note, "note_read_supervisor"
    if not active_grant(svc.repo.url, who, note.session_id):
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


def may_sign(db: OrmSession, repo: NoteRepo, note: Note, decision: SignRequest, signer: uuid.UUID
             ) -> dict[str, Any] | None:
    """Whether ``note`` may be signed now: the one place every signature's preconditions are checked.

    Returns the body to keep as a ``review`` version before signing (the flagged sentences removed
    or confirmed, with who confirmed them), or None when the current version is signed as it is.
    Raises ApiError 409 ``not_signable`` (not a draft), ``stale_note`` (drafted from an older version of
    the record: redraft, or confirm it against the current one), ``version_moved`` (the reviewed version is
    not the current one), ``needs_review`` (flagged sentences left undecided: listed in ``flagged``
    by section, index and reason, never their words); 422 ``not_flagged`` for a decision on a
    sentence that is not flagged, 422 ``conflicting_decision`` for one both confirmed and removed.
    """
    if note.status != NoteStatus.DRAFT.value:
        raise ApiError(409, "not_signable", f"a note is signed once drafted and only once (it is {note.status})")
    if is_stale(db, note):
        raise ApiError(409, "stale_note",
                       f"this draft was written from version {note.transcript_version} of the transcript, which has "
                       f"changed since (now version {record_version(db, note)}): request a new draft, or confirm this "
                       "one against the current transcript (POST /v1/notes/{id}/confirm-record), then sign")
    if decision.version is not None and decision.version != note.version:
        raise ApiError(409, "version_moved", f"you reviewed version {decision.version}; the note is now at "
                       f"version {note.version}: review it again")
    return _decided(repo.current_body(db, note), decision.confirm, decision.remove, signer, then="sign",
                    version=note.version)


def _decided(body: dict[str, Any], confirms: list[SentenceRef], removes: list[SentenceRef], by: uuid.UUID, *,
             then: str, version: int, among: set[tuple[str, int]] | None = None,
             extra: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """``body`` with the clinician's decisions applied, once every flagged sentence (of ``among``, when
    given) is decided; None when there was nothing to decide. Raises 422 ``conflicting_decision`` /
    ``not_flagged``, 409 ``needs_review`` (``extra`` joins its body) as ``may_sign`` describes."""
    confirm = {(r.section, r.sentence) for r in confirms}
    remove = {(r.section, r.sentence) for r in removes}
    flagged = [f for f in review.flagged(body) if among is None or (f.section, f.sentence) in among]
    # Decisions are checked before what is left undecided: a decision on the wrong sentence is the
    # clinician's mistake to correct (422), not more review (409).
    if confirm & remove:
        raise ApiError(422, "conflicting_decision", "a sentence is either confirmed or removed, not both: "
                       f"{len(confirm & remove)} sentence(s) are in both lists")
    unflagged = (confirm | remove) - {(f.section, f.sentence) for f in flagged}
    if unflagged:
        raise ApiError(422, "not_flagged", f"{len(unflagged)} decision(s) name a sentence that is not flagged "
                       "(section and index as listed in the flagged sentences): only flagged sentences are "
                       "confirmed or removed")
    left = [f for f in flagged if (f.section, f.sentence) not in confirm | remove]
    if left:
        raise ApiError(409, "needs_review", f"{len(left)} sentence(s) the verifier could not confirm from the "
                       f"record (unsupported, contradicted or uncited): remove or confirm each, then {then}",
                       extra={"flagged": [f.to_dict() for f in left], "version": version, **(extra or {})})
    if not confirm and not remove:
        return None
    try:
        return review.apply(body, confirm, remove, by, datetime.now(UTC))
    except review.ReviewInvalid as exc:
        raise ApiError(422, "not_flagged", str(exc)) from None


@router.post("/v1/notes/{note_id}/sign", response_model=NoteOut)
def sign(note_id: uuid.UUID, svc: ServicesDep, who: PrincipalDep, actor: ActorDep,
         decision: SignRequest | None = None) -> NoteOut:
    """Sign (lock) a drafted note as its therapist: signer and time recorded; the retention clock starts.

    A note with flagged sentences is signed only once each is removed or confirmed (``decision``;
    see ``may_sign``); the decisions are kept as a ``review`` version, the one signed.
    """
    signer = _therapist(who)
    repo = NoteRepo(svc.repo.url)
    with db_session(svc.repo.url) as db:
        _lock_session_of(db, note_id)
        note = repo.get(db, note_id, signer)
        reviewed = may_sign(db, repo, note, decision or SignRequest(version=None), signer)
        detail: dict[str, Any] = {"note_id": str(note_id)}
        if reviewed is not None:
            repo.add_version(db, note, reviewed, "review", signer)
            detail |= {"confirmed": len(decision.confirm) if decision else 0,
                       "removed": len(decision.remove) if decision else 0}
        days = db.execute(select(Clinic.note_retention_days).where(Clinic.id == note.clinic_id)).scalar_one()
        keep = timedelta(days=days or svc.settings.note_retention_days)
        repo.sign(note, signer, cosign=False, retain_until=datetime.now(UTC) + keep)
        audit.record(db, actor, "note_signed", note.session_id, {**detail, "version": note.version})
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


def _supervises(db: OrmSession, who: Principal, note: Note) -> bool:
    """Whether the caller is the named supervisor of the note's therapist (set by the clinic admin)."""
    if who.scope != "therapist" or who.therapist_id is None or note.clinic_id != who.clinic_id:
        return False
    named = db.execute(select(Therapist.supervisor_id).where(Therapist.id == note.therapist_id)).scalar_one()
    return named is not None and named == who.therapist_id


@router.post("/v1/notes/{note_id}/cosign", response_model=NoteOut)
def cosign(note_id: uuid.UUID, svc: ServicesDep, who: PrincipalDep, actor: ActorDep) -> NoteOut:
    """The trainee's named supervisor co-signs the trainee's signed note (404 for anyone else).

    409 ``own_note`` for the trainee; ``illegal_transition`` when the note is not a signed trainee
    note awaiting its co-signature.
    """
    supervisor = _therapist(who)
    repo = NoteRepo(svc.repo.url)
    with db_session(svc.repo.url) as db:
        note = db.execute(select(Note).where(Note.id == note_id, Note.clinic_id == who.clinic_id).with_for_update()
                          ).scalar_one_or_none()
        if note is not None and note.therapist_id == supervisor:
            raise ApiError(409, "own_note", "a trainee cannot co-sign their own note")
        if note is None or not _supervises(db, who, note):
            raise NotFound(f"note {note_id} does not exist")
        repo.sign(note, supervisor, cosign=True, retain_until=None)
        audit.record(db, actor, "note_cosigned", note.session_id, {"note_id": str(note_id)})
        db.flush()
        db.refresh(note)
        return _out(db, repo, note)


@router.post("/v1/notes/{note_id}/amend", response_model=NoteOut)
def amend(note_id: uuid.UUID, body: Amendment, svc: ServicesDep, who: PrincipalDep, actor: ActorDep) -> NoteOut:
    """Change a signed note: an amendment (new version with its reason and diff); the note stays signed.

    An amendment is signed like the note was, on what it changes: each changed sentence the verifier
    doubts (unsupported, contradicted, uncited) is confirmed or removed first (``confirm``/``remove``,
    by its position in the sections sent), and each sentence about risk it changes or takes out is
    named in ``risk_acknowledged`` (``verbatim.notes.review``). A trainee's co-signed note waits for
    its supervisor's co-signature again. Raises 409 ``not_signed``, ``version_moved``, ``needs_review``
    (``flagged``: section, index, reason; ``risk_removed`` too when it applies), ``removes_risk``
    (``risk_removed``: section and index in the signed version, category, denied — never words);
    422 ``not_flagged`` / ``conflicting_decision`` as signing does.
    """
    author = _therapist(who)
    repo = NoteRepo(svc.repo.url)
    with db_session(svc.repo.url) as db:
        _lock_session_of(db, note_id)
        note = repo.get(db, note_id, author)
        if note.status != NoteStatus.SIGNED.value:
            raise ApiError(409, "not_signed", "only a signed note is amended; edit a draft with PUT")
        if body.version is not None and body.version != note.version:
            raise ApiError(409, "version_moved", f"you amended version {body.version}; the note is now at "
                           f"version {note.version}: read it again and make your change on it")
        signed = repo.current_body(db, note)
        amended = _edited_body(db, repo, note, body)
        # Both reviews are asked for at once, so the clinician decides in one step; what the amendment
        # changes about risk is judged again on what would be saved, after the removals decided.
        acknowledged = {(r.section, r.sentence) for r in body.risk_acknowledged}

        def unacknowledged(losses: list[review.RiskLoss]) -> list[review.RiskLoss]:
            # All of them, once any is not named: the clinician acknowledges the whole list they are shown.
            return losses if any((x.section, x.sentence) not in acknowledged for x in losses) else []

        as_sent = review.risk_removed(signed, amended)
        warned = unacknowledged(as_sent)
        decided = _decided(amended, body.confirm, body.remove, author, then="amend", version=note.version,
                           among=review.changed(signed, amended),
                           extra={"risk_removed": [x.to_dict() for x in warned]} if warned else None)
        final = decided or amended
        losses = as_sent if decided is None else review.risk_removed(signed, final)
        left = unacknowledged(losses)
        if left:
            raise ApiError(409, "removes_risk", f"this amendment changes or takes out {len(left)} statement(s) about "
                           "risk the signed note made: keep them as they were, or name each in risk_acknowledged "
                           "(section and index as listed) and send the amendment again",
                           extra={"risk_removed": [x.to_dict() for x in left], "version": note.version})
        version = repo.add_version(db, note, final, "amendment", author, body.reason)
        detail: dict[str, Any] = {"note_id": str(note_id), "version": version}
        if body.confirm or body.remove:
            detail |= {"confirmed": len(body.confirm), "removed": len(body.remove)}
        if losses:
            detail["risk_removed"] = len(losses)
        # A supervisor's co-signature covers what they read: a trainee's amendment waits for a new one
        # (exports answer 409 awaiting_cosign until then).
        if note.requires_cosign and note.cosigned_at is not None:
            note.cosigned_by, note.cosigned_at = None, None
            detail["cosign_required_again"] = True
        audit.record(db, actor, "note_amended", note.session_id, detail)
        db.flush()
        return _out(db, repo, note)


def _exportable(db: OrmSession, svc: Any, who: Principal, note_id: uuid.UUID) -> tuple[Note, SignedRecord]:
    repo = NoteRepo(svc.repo.url)
    note = repo.get(db, note_id, _therapist(who))
    if note.status != NoteStatus.SIGNED.value:
        raise ApiError(409, "not_signed", "drafts are never exported: sign the note first")
    if note.requires_cosign and note.cosigned_at is None:
        raise ApiError(409, "awaiting_cosign", "a trainee's note is exported once its supervisor co-signs it")
    return note, signed_record(db, repo, note)


def signed_record(db: OrmSession, repo: NoteRepo, note: Note) -> SignedRecord:
    """The facts both exports of a signed note print (``verbatim.notes.record``)."""
    assert note.signed_at is not None
    clinic = db.execute(select(Clinic.name, Clinic.time_zone).where(Clinic.id == note.clinic_id)).one()
    session = db.execute(select(Session.recorded_at, Session.audio_duration_s, Session.session_type)
                         .where(Session.id == note.session_id)).one()
    changes = list(db.execute(select(NoteVersion).where(NoteVersion.note_id == note.id,
                                                        NoteVersion.kind == "amendment")
                              .order_by(NoteVersion.version)).scalars())
    # What each amendment changed, from the bodies (the stored diff carries verifier tags and risk lines).
    bodies = {v: b for v, b in db.execute(select(NoteVersion.version, NoteVersion.body).where(
        NoteVersion.note_id == note.id, NoteVersion.version.in_([c.version - 1 for c in changes])))}
    ids = {note.therapist_id, *(x for x in [note.cosigned_by, *(c.author_id for c in changes)] if x)}
    staff = {t.id: t for t in db.execute(select(Therapist).where(Therapist.id.in_(ids))).scalars()}
    local = [note.client_id, *(str(i) for i in ids)]
    mapped = {(r.kind, r.local_id): (r.system, r.value) for r in db.execute(
        select(EhrIdentifier).where(EhrIdentifier.clinic_id == note.clinic_id, EhrIdentifier.local_id.in_(local))
    ).scalars()}
    ns = f"urn:verbatim:clinic:{note.clinic_id}"

    def party(therapist_id: uuid.UUID) -> Party:
        t = staff[therapist_id]
        system, value = mapped.get(("practitioner", str(t.id)), (f"{ns}:practitioner", str(t.id)))
        return Party(t.display_name or t.name, system, value, t.credentials)

    ehr = mapped.get(("client", note.client_id))
    system, value = ehr or (f"{ns}:client", note.client_id)
    template = None if note.format in BUILT_IN else db.execute(
        select(NoteTemplate.name).where(NoteTemplate.id == note.template_id)).scalar_one_or_none()
    return SignedRecord(
        note_id=str(note.id), version=note.version, format_name=template or note.format.upper(),
        clinic=clinic.name, time_zone=clinic.time_zone or "UTC", clinician=party(note.therapist_id),
        client=Party(note.client_id, system, value), ehr_client=ehr is not None,
        session_start=session.recorded_at, duration_s=float(session.audio_duration_s),
        session_type=session.session_type, signed_at=note.signed_at, body=repo.current_body(db, note),
        cosigner=party(note.cosigned_by) if note.cosigned_by else None, cosigned_at=note.cosigned_at,
        amendments=[Change(c.version, c.created_at, c.reason or "", party(c.author_id or note.therapist_id),
                           *changed_sentences(bodies.get(c.version - 1) or {}, c.body)) for c in changes])


@router.get("/v1/notes/{note_id}/fhir")
def export_fhir(note_id: uuid.UUID, svc: ServicesDep, who: PrincipalDep, actor: ActorDep) -> dict[str, Any]:
    """The signed note as a FHIR R4 Bundle: its DocumentReference (PDF and text) and the Provenance of
    its signature(s) (``verbatim.notes.fhir``). 409 for a draft or a trainee's note not yet co-signed."""
    with db_session(svc.repo.url) as db:
        note, record = _exportable(db, svc, who, note_id)
        resource = bundle(record, plain_text(record.body, export=True), signed_note(record))
        audit.record(db, actor, "note_exported", note.session_id, {"note_id": str(note_id), "as": "fhir"})
    return resource


@router.get("/v1/notes/{note_id}/pdf", response_class=Response)
def export_pdf(note_id: uuid.UUID, svc: ServicesDep, who: PrincipalDep, actor: ActorDep,
               evidence: bool = False) -> Response:
    """The signed note as PDF (``evidence=true``: with the appendix of what each sentence rests on). 409 for a
    draft."""
    with db_session(svc.repo.url) as db:
        note, record = _exportable(db, svc, who, note_id)
        data = signed_note(record, evidence=evidence)
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
            lines.append(plain_text(repo.current_body(db, note), export=True))  # as signed: no verifier tags
        audit.record(db, actor, "client_record_exported", session_id, {"notes": len(signed)})
    data = document(f"Record of {client_id}", [f"Session {session_id}, recorded {session.recorded_at:%Y-%m-%d}",
                                               f"Exported {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"],
                    "\n".join(lines))
    return Response(data, media_type="application/pdf",
                    headers={"content-disposition": f'attachment; filename="record-{session_id}.pdf"'})
