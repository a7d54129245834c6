"""Note formats: SOAP, DAP, BIRP, GIRP built in, clinic templates, and the benchmark's template.

A format is an ordered list of sections; each section has a ``kind`` (which evidence the
offline drafter selects for it: see ``verbatim.notes.drafter.CUES``), an ``instruction`` (what
a model writer is asked to write) and an optional ``example`` of the clinician's style.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from verbatim.errors import NoteRequestInvalid


@dataclass(frozen=True)
class Section:
    """One section of a note format."""

    name: str
    kind: str
    instruction: str
    example: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "instruction": self.instruction, "example": self.example}


def _s(name: str, kind: str, instruction: str) -> Section:
    return Section(name, kind, instruction)


BUILT_IN: dict[str, tuple[Section, ...]] = {
    "soap": (
        _s("Subjective", "subjective", "What the client reports: symptoms, feelings, events, in their own words."),
        _s("Objective", "objective", "What was observed or measured in session: ratings, scores, presentation."),
        _s("Assessment", "assessment", "The clinician's interpretation: patterns, progress, formulation."),
        _s("Plan", "plan", "Next steps: homework, interventions to continue, the next session."),
    ),
    "dap": (
        _s("Data", "data", "What the client reported and what was observed, including ratings."),
        _s("Assessment", "assessment", "The clinician's interpretation of the data: patterns, progress."),
        _s("Plan", "plan", "Next steps: homework, interventions, the next session."),
    ),
    "birp": (
        _s("Behavior", "behavior", "The client's presentation and what they reported."),
        _s("Intervention", "intervention", "What the clinician did: techniques, suggestions, psychoeducation."),
        _s("Response", "response", "How the client responded to the interventions."),
        _s("Plan", "plan", "Next steps: homework, the next session."),
    ),
    "girp": (
        _s("Goals", "goal", "The client's treatment goals addressed in this session."),
        _s("Intervention", "intervention", "What the clinician did toward the goals."),
        _s("Response", "response", "How the client responded."),
        _s("Plan", "plan", "Next steps toward the goals."),
    ),
    # Mirrors the sections of the aci-bench reference notes (bench/notes.py; CC BY 4.0).
    "aci": (
        _s("CHIEF COMPLAINT", "complaint", "Why the patient came in, in a few words."),
        _s("HISTORY OF PRESENT ILLNESS", "subjective",
           "The patient's account of the problem: onset, course, symptoms."),
        _s("REVIEW OF SYSTEMS", "ros", "Symptoms asked about, endorsed or denied."),
        _s("PHYSICAL EXAMINATION", "exam", "The clinician's examination findings."),
        _s("RESULTS", "results", "Tests, imaging and their results."),
        _s("ASSESSMENT AND PLAN", "plan", "Diagnosis, reasoning, treatment and follow-up."),
    ),
}

#: formats a clinician may ask for by name (``aci`` is the benchmark's, not a clinical format)
CLINICAL = ("soap", "dap", "birp", "girp")

_KIND_BY_NAME = {
    "subjective": "subjective", "objective": "objective", "assessment": "assessment", "plan": "plan",
    "data": "data", "behavior": "behavior", "behaviour": "behavior", "intervention": "intervention",
    "interventions": "intervention", "response": "response", "goals": "goal", "goal": "goal",
    "presenting problem": "complaint", "chief complaint": "complaint", "homework": "plan", "next steps": "plan",
}


def template_sections(raw: list[dict[str, Any]]) -> tuple[Section, ...]:
    """Sections of a clinic template; a section named like a known kind ("Plan") gets that kind, else ``custom``."""
    return tuple(
        Section(str(s["name"]), _KIND_BY_NAME.get(str(s["name"]).strip().lower(), "custom"),
                str(s.get("instruction") or ""), s.get("example"))
        for s in raw
    )


def sections_of(fmt: str, template: list[dict[str, Any]] | None = None) -> tuple[Section, ...]:
    """The sections of a built-in format, or of the given template's sections; raises NoteRequestInvalid."""
    if template is not None:
        return template_sections(template)
    try:
        return BUILT_IN[fmt]
    except KeyError:
        raise NoteRequestInvalid(
            "unknown_format", f"unknown note format {fmt!r}: use one of {', '.join(CLINICAL)} or a template id"
        ) from None
