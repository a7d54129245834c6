"""Step 6 — Polish and publish: readability, speaker roles, the per-client split.

Past ``polished_runs`` runs the model passes are skipped and the transcript is published
as the recognizer heard it (a plain transcript beats no transcript). The split always runs.
"""

from __future__ import annotations

from typing import Any

import structlog

from verbatim.context import ProcessContext
from verbatim.crash import crash_point
from verbatim.db.repo import CaptureState
from verbatim.durable.core import Ticket
from verbatim.errors import PolishError
from verbatim.leases import Lease
from verbatim.polish.rules import rule_therapist
from verbatim.polish.split import is_gap, speaker_roles

log = structlog.get_logger("verbatim.publish")


def render(
    ctx: ProcessContext, turns: list[dict[str, Any]], client_ids: list[str], speaker_map: dict[str, str] | None,
    polish: bool, session_type: str | None = None,
) -> tuple[bool, list[dict[str, Any]]]:
    """(whether the model passes ran, the shown turns with their ``role``): the record's base.

    The per-client split is the record writer's (``verbatim.record.writer.publish``).
    Never mutates ``turns``. Model calls are bounded by the drain deadline.
    """
    # The recognizer's per-turn marks (speaker doubt, inaudible gaps) travel with the turn.
    kept: tuple[str, ...] = ("speaker", "start_s", "end_s", "text", "marks")
    shown: list[dict[str, Any]] = [{k: t[k] for k in kept if k in t} for t in turns]
    # Gaps hold no words: the model passes never see (or rewrite) them.
    speech = [t for t in shown if not is_gap(t)]
    therapist = None
    polished = False
    if polish:
        try:
            # Both passes over the same input: an LLM polisher answers both from one call.
            cleaned = ctx.cancel.bounded(lambda: ctx.polisher.readability(speech))
            therapist = ctx.cancel.bounded(lambda: ctx.polisher.therapist_speaker(speech))
            shown, polished = _with_gaps(shown, cleaned), True
        except PolishError as exc:
            log.warning("polish_failed", error=type(exc).__name__)
        crash_point("mid_polish")
    if therapist is None:
        therapist = rule_therapist(speech)
    roles = speaker_roles(shown, client_ids, therapist, speaker_map, session_type)
    return polished, [{**t, "role": roles[t["speaker"]]} for t in shown]


def _with_gaps(shown: list[dict[str, Any]], cleaned: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The polished speech turns with the gaps back in their places (raises PolishError on a count mismatch)."""
    if len(cleaned) == len(shown):
        return cleaned
    speech = [i for i, t in enumerate(shown) if not is_gap(t)]
    if len(cleaned) != len(speech):
        raise PolishError("the polisher returned a different number of turns")
    out = list(shown)
    for i, turn in zip(speech, cleaned, strict=True):
        out[i] = turn
    return out


def publish(ctx: ProcessContext, ticket: Ticket[CaptureState], lease: Lease, turns: list[dict[str, Any]]) -> bool:
    """Write the published transcript(s) and mark the session ready (fenced). Returns ``polished``."""
    polish = ticket.run <= ctx.settings.polished_runs
    state = ticket.state
    polished, shown = render(ctx, turns, state.client_ids, state.speaker_map, polish, state.session_type)
    lease.check()
    ctx.cancel.check()
    ctx.repo.publish(ticket.subject_id, ticket.fence, ticket.run, polished, shown)
    crash_point("after_publish")
    return polished
