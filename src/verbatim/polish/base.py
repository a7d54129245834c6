"""The Polisher interface: model passes over checkpointed speaker turns.

A turn is ``{"speaker": "S1", "start_s", "end_s", "text", …}``. Polishers never see audio
and never change timings; they return new turn lists and leave their input untouched
(the checkpoint is the raw record).
"""

from __future__ import annotations

from typing import Any, Protocol

Turn = dict[str, Any]


class Polisher(Protocol):
    """A readability pass and a speaker-role pass."""

    name: str

    def readability(self, turns: list[Turn]) -> list[Turn]:
        """Same turns, same order and timings, with cleaned text (casing, punctuation, fillers)."""
        ...

    def therapist_speaker(self, turns: list[Turn]) -> str | None:
        """The speaker label (e.g. ``"S1"``) of the therapist, or None if there are no turns."""
        ...
