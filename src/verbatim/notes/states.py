"""The states of a note (``notes.status``): each one line, every move one guarded UPDATE."""

from __future__ import annotations

from enum import StrEnum

from verbatim.durable.subjects import Subjects


class NoteStatus(StrEnum):
    """Where a note is."""

    QUEUED = "queued"  #: requested; no section written yet
    DRAFTING = "drafting"  #: a note run has checkpointed at least one section
    DRAFT = "draft"  #: drafted (version 1 written); the clinician reviews, edits, signs
    SIGNED = "signed"  #: locked by its signer (and co-signer, when required); changes are amendments
    FAILED = "failed"  #: the note run gave up (named failure code)


#: a note run has work to do
RUNNABLE = frozenset({NoteStatus.QUEUED, NoteStatus.DRAFTING})
#: the clinician may edit (a new version) or sign
EDITABLE = frozenset({NoteStatus.DRAFT})

#: the note run's subjects, for the durable-run core's stall net and run states
NOTE_SUBJECTS = Subjects("note", "notes", live=tuple(s.value for s in NoteStatus if s in RUNNABLE))
