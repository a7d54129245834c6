"""Speaker roles and the per-client split (DESIGN.md step 6). Not a model pass: always runs.

Roles: each speaker label is ``"therapist"``, one of the session's client ids, or
``"unassigned"``. The clinician's correction (``speaker_map``) wins. Otherwise the therapist
label comes from the polisher (or the rule), and the other labels map to client ids in order
of first speech — but only when that mapping can be trusted:

- ``dictation`` (the therapist's memo): every voice is the therapist;
- one voice heard in any other session: unassigned — a recording of one voice may be the
  therapist or the client, and guessing would put words in the wrong mouth;
- speech the recognizer could not tie to a voice (label ``UU``): unassigned;
- one client: every other voice is that client (a single voice heard as two);
- several clients (couples, family, group): only when the recognizer heard exactly one voice
  per client. Fewer voices means two people were merged into one label, more means a voice
  was split or a stranger spoke: no automatic mapping can keep one client's words out of
  another's record, so those turns stay **unassigned** until the therapist names them
  (``PUT /v1/sessions/{id}/speakers``).

Each client's record holds the therapist's turns and that client's own turns; another
participant's turns — and unassigned ones — appear only as placeholders, so a record released
to one client never exposes another's words. A gap (speech the recognizer could not make out,
`recognizer.turns.NO_SPEAKER`, text ``[inaudible 9.5 s]``) belongs to nobody and holds no
words: it is shown as it is in every client's record (role ``INAUDIBLE``), so each reader sees
that something was said there. Per-turn ``marks`` (`recognizer.turns`) are kept on the segments.
"""

from __future__ import annotations

from typing import Any

from verbatim.polish.base import Turn
from verbatim.recognizer.turns import NO_SPEAKER

THERAPIST = "therapist"
UNASSIGNED = "unassigned"
PLACEHOLDER = "[another participant spoke]"
UNKNOWN_SPEAKER = "UU"
"""The recognizer's label for speech it could not tie to a voice (Speechmatics' unknown speaker)."""
INAUDIBLE = "inaudible"
"""Role of a gap turn (no speaker): shown in every client's record."""


def is_gap(turn: Turn) -> bool:
    """Whether a turn is a gap in the recognition (``[inaudible …]``, no speaker), not anyone's words."""
    return bool(turn.get("speaker") == NO_SPEAKER)


def segment_id(index: int) -> str:
    """The stable id of the ``index``-th recognized turn (0-based): ``seg-{index}``.

    Stable across corrections: every publish (first publish, speaker correction, applied
    suggestions) keeps one turn per recognized turn, in the recognizer's order, so the same id
    always names the same stretch of speech; a note's citations point at it.
    """
    return f"seg-{index}"


def speaker_count(client_ids: list[str], session_type: str) -> int:
    """How many voices the session implies: its clients and the therapist (``dictation``: the therapist alone)."""
    return 1 if session_type == "dictation" else len(client_ids) + 1


def speaker_roles(
    turns: list[Turn], client_ids: list[str], therapist: str | None, speaker_map: dict[str, str] | None,
    session_type: str | None = None,
) -> dict[str, str]:
    """Label → ``"therapist"``, a client id or ``"unassigned"``, for every speaker label in ``turns``.

    ``"UU"`` (speech the recognizer could not tie to a voice) is always unassigned unless the
    clinician's ``speaker_map`` names it. A ``dictation`` is the therapist's own memo: every voice
    is the therapist. In any other session a single voice is not assumed to be anyone: it stays
    unassigned for the therapist to name.
    """
    gaps = {NO_SPEAKER: INAUDIBLE} if any(is_gap(t) for t in turns) else {}
    labels = list(dict.fromkeys(t["speaker"] for t in turns if not is_gap(t)))  # in order of first speech
    if speaker_map:
        return {**gaps, **{label: speaker_map.get(label, UNASSIGNED) for label in labels}}
    roles: dict[str, str] = {**gaps, **{label: UNASSIGNED for label in labels if label == UNKNOWN_SPEAKER}}
    voices = [label for label in labels if label != UNKNOWN_SPEAKER]
    if session_type == "dictation":
        return {**roles, **{label: THERAPIST for label in voices}}
    if len(voices) == 1:
        return {**roles, voices[0]: UNASSIGNED}
    if therapist is not None and therapist in voices:
        roles[therapist] = THERAPIST
    others = [label for label in voices if label not in roles]
    if len(client_ids) == 1:
        roles.update({label: client_ids[0] for label in others})
    elif len(others) == len(client_ids):
        roles.update(zip(others, client_ids, strict=True))
    else:
        roles.update({label: UNASSIGNED for label in others})
    return roles


def split_per_client(
    turns: list[Turn], client_ids: list[str], roles: dict[str, str]
) -> dict[str, list[dict[str, Any]]]:
    """One record per client id: ``{client_id: [segment, …]}``; segments carry id, speaker, times, text.

    A turn whose label has no role is treated as unassigned (never as anyone's own words).
    """
    records: dict[str, list[dict[str, Any]]] = {}
    for client in client_ids:
        segments = []
        for index, turn in enumerate(turns):
            role = INAUDIBLE if is_gap(turn) else roles.get(turn["speaker"], UNASSIGNED)
            own = role in (THERAPIST, client, INAUDIBLE)
            segment = {
                "id": segment_id(index),
                "speaker": role if own else "other participant",
                "speaker_label": turn["speaker"],
                "start_s": round(float(turn["start_s"]), 3),
                "end_s": round(float(turn["end_s"]), 3),
                "text": turn["text"] if own else PLACEHOLDER,
            }
            # A mark (a doubtful speaker, a doubtful word) is about the words: only with them.
            if own and turn.get("marks"):
                segment["marks"] = list(turn["marks"])
            segments.append(segment)
        records[client] = segments
    return records


def unassigned_turns(turns: list[Turn], roles: dict[str, str]) -> list[dict[str, Any]]:
    """The turns no role claims, for the therapist to name (never part of a client's record)."""
    return [
        {"id": segment_id(i), "speaker": UNASSIGNED, "speaker_label": t["speaker"],
         "start_s": round(float(t["start_s"]), 3), "end_s": round(float(t["end_s"]), 3), "text": t["text"]}
        for i, t in enumerate(turns) if not is_gap(t) and roles.get(t["speaker"], UNASSIGNED) == UNASSIGNED
    ]
