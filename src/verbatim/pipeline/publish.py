"""Step 6 — Polish and publish: readability, speaker roles, the per-client split.

Past ``polished_runs`` runs the model passes are skipped and the transcript is published
as the recognizer heard it (a plain transcript beats no transcript). The split always runs.
"""

from __future__ import annotations

from typing import Any

import structlog

from verbatim.crash import crash_point
from verbatim.db.repo import CaptureState
from verbatim.durable.core import Ticket
from verbatim.errors import PolishError
from verbatim.leases import Lease
from verbatim.pipeline.context import RunContext
from verbatim.polish.rules import rule_therapist
from verbatim.polish.split import speaker_roles

log = structlog.get_logger("verbatim.publish")


def render(
    ctx: RunContext, turns: list[dict[str, Any]], client_ids: list[str], speaker_map: dict[str, str] | None,
    polish: bool, session_type: str | None = None,
) -> tuple[bool, list[dict[str, Any]]]:
    """(whether the model passes ran, the shown turns with their ``role``): the record's base.

    The per-client split is the record writer's (``verbatim.record.writer.publish``).
    Never mutates ``turns``. Model calls are bounded by the drain deadline.
    """
    shown = [{k: t[k] for k in ("speaker", "start_s", "end_s", "text")} for t in turns]
    therapist = None
    polished = False
    if polish:
        try:
            # Both passes over the same input: an LLM polisher answers both from one call.
            cleaned = ctx.cancel.bounded(lambda: ctx.polisher.readability(shown))
            therapist = ctx.cancel.bounded(lambda: ctx.polisher.therapist_speaker(shown))
            shown, polished = cleaned, True
        except PolishError as exc:
            log.warning("polish_failed", error=type(exc).__name__)
        crash_point("mid_polish")
    if therapist is None:
        therapist = rule_therapist(shown)
    roles = speaker_roles(shown, client_ids, therapist, speaker_map, session_type)
    return polished, [{**t, "role": roles[t["speaker"]]} for t in shown]


def publish(ctx: RunContext, ticket: Ticket[CaptureState], lease: Lease, turns: list[dict[str, Any]]) -> bool:
    """Write the published transcript(s) and mark the session ready (fenced). Returns ``polished``."""
    polish = ticket.run <= ctx.settings.polished_runs
    state = ticket.state
    polished, shown = render(ctx, turns, state.client_ids, state.speaker_map, polish, state.session_type)
    lease.check()
    ctx.cancel.check()
    ctx.repo.publish(ticket.subject_id, ticket.fence, ticket.run, polished, shown)
    crash_point("after_publish")
    return polished
