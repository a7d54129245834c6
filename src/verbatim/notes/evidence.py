"""A client's record as citable sentences: the only words a note of that client may rest on.

Input is one client's split (``transcripts.segments`` of that client): segments of the
therapist and of that client; another participant's turns are placeholders there and are
never read. Each sentence keeps its segment's id, speaker and times for its citation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from verbatim.notes import text as tx
from verbatim.recognizer.turns import SPEAKER_UNCERTAIN

GAP = re.compile(r"[\[(](?:inaudible|unintelligible|crosstalk|indiscernible)[^\])]*[\])]", re.I)
CLINICIAN = "clinician"
CLIENT = "client"


@dataclass(frozen=True)
class Unit:
    """One sentence of the record. ``role``: clinician or client; ``order``: its index among the units;
    ``position``: its segment's index in the record (another participant's turn between two
    units leaves a gap, so an answer is never attributed to a question put to someone else)."""

    order: int
    position: int
    segment_id: str
    role: str
    speaker: str
    start_s: float
    end_s: float
    text: str
    segment_text: str
    #: the sentence as said (``text`` is it without disfluencies): what a quote of it holds
    said: str = ""
    #: its segment is marked ``speaker_uncertain``: the recognizer could not tell whose voice it was
    speaker_uncertain: bool = False

    @property
    def question(self) -> bool:
        return self.text.rstrip().endswith("?")

    def citation(self) -> dict[str, Any]:
        """The citation of this unit's segment, with a snapshot of its words."""
        return {"segment_id": self.segment_id, "speaker": self.speaker, "start_s": self.start_s,
                "end_s": self.end_s, "quote": self.segment_text}


def units(segments: list[dict[str, Any]], client_id: str, clinician: str = "therapist", *,
          spoken: bool = False) -> list[Unit]:
    """The sentences of ``client_id``'s own record, in order; other participants' turns are skipped.

    ``segments``: ``[{id, speaker, start_s, end_s, text, marks?}]``; ``speaker`` is ``clinician``
    (the therapist), ``client_id``, or anyone else (skipped). Segments without an id (published
    before ids existed) get ``seg-{n}`` by position, which is what publishing assigns. A segment
    whose ``marks`` hold ``speaker_uncertain`` gives units with ``speaker_uncertain`` set.
    A sentence with a gap the recognizer marked (``GAP``) is left out, since what it says cannot be
    known, and so is a sentence of fillers alone. With ``spoken`` (the risk check's reading: everything
    the client said) the words either side of each gap are kept as sentences of their own instead — a
    safety net reads "like an eight [inaudible] i have the gun out on the table" for the words it has,
    and a recognizer that punctuates nothing puts a whole turn in one sentence — and a sentence of
    fillers is kept as said, since "mm-hmm" answers a question. The gap itself is never a unit's words.
    """
    out: list[Unit] = []
    for n, seg in enumerate(segments):
        speaker = str(seg.get("speaker", ""))
        if speaker == clinician:
            role = CLINICIAN
        elif speaker == client_id:
            role = CLIENT
        else:
            continue
        whole = tx.tidy(str(seg.get("text", "")))
        uncertain = SPEAKER_UNCERTAIN in (seg.get("marks") or ())
        for sentence_said in tx.sentences(whole):
            # A gap the recognizer marked ([inaudible]) is never quoted or cited: its sentence is left out
            # (the segment's other sentences stand), or with ``spoken`` cut at it.
            if GAP.search(sentence_said) and not spoken:
                continue
            for said in (p.strip() for p in GAP.split(sentence_said)):
                sentence = tx.clean(said) or (said if spoken and re.search(r"[^\W\d_]", said) else "")
                if not sentence:
                    continue
                out.append(Unit(len(out), n, str(seg.get("id") or f"seg-{n}"), role, speaker, float(seg["start_s"]),
                                float(seg["end_s"]), sentence, GAP.sub("…", whole), said, uncertain))
    return out


def follows(answer: Unit, question: Unit) -> bool:
    """Whether ``answer``'s segment comes right after ``question``'s (nobody spoke in between)."""
    return answer.position == question.position + 1


def by_segment(items: list[Unit]) -> dict[str, str]:
    """Segment id → its whole text (what a citation's quote snapshot holds)."""
    return {u.segment_id: u.segment_text for u in items}
