"""Speaker roles and the per-client split (DESIGN.md step 6). Not a model pass: always runs.

Speakers other than the therapist map to client ids in order of first speech, unless the
clinician corrected the mapping (``speaker_map``: label → ``"therapist"`` or a client id).
Each client's record holds the therapist's turns and that client's own turns; another
participant's turns appear only as placeholders, so a record released to one client never
exposes another's words.
"""

from __future__ import annotations

from typing import Any

from verbatim.polish.base import Turn

THERAPIST = "therapist"
PLACEHOLDER = "[another participant spoke]"


def speaker_roles(
    turns: list[Turn], client_ids: list[str], therapist: str | None, speaker_map: dict[str, str] | None
) -> dict[str, str]:
    """Label → ``"therapist"`` or a client id, for every speaker label in ``turns``."""
    if speaker_map:
        roles = dict(speaker_map)
    else:
        roles = {therapist: THERAPIST} if therapist else {}
        pending = iter(client_ids)
        for turn in turns:
            label = turn["speaker"]
            if label not in roles:
                # More voices than client ids: extra voices fold into the last client.
                roles[label] = next(pending, client_ids[-1])
    for turn in turns:
        roles.setdefault(turn["speaker"], client_ids[-1])
    return roles


def split_per_client(
    turns: list[Turn], client_ids: list[str], roles: dict[str, str]
) -> dict[str, list[dict[str, Any]]]:
    """One record per client id: ``{client_id: [segment, …]}``; segments carry speaker, times, text."""
    records: dict[str, list[dict[str, Any]]] = {}
    for client in client_ids:
        segments = []
        for turn in turns:
            role = roles[turn["speaker"]]
            own = role in (THERAPIST, client)
            segments.append(
                {
                    "speaker": role if own else "other participant",
                    "speaker_label": turn["speaker"],
                    "start_s": round(float(turn["start_s"]), 3),
                    "end_s": round(float(turn["end_s"]), 3),
                    "text": turn["text"] if own else PLACEHOLDER,
                }
            )
        records[client] = segments
    return records
