"""Decoding windows for Whisper, bounded by our speech mask, and the speech no word covers.

Why our own windows (not faster-whisper's sequential 30 s seek over a long chunk): faster-whisper
walks a long input window by window and moves its seek by what the model said about the window
it just heard. Three of its rules drop speech without a trace on long recordings: a window whose
``no_speech_prob`` is high and whose text is improbable is skipped whole (30 s); a window whose
text ends on a lone timestamp moves the seek to the window's end, skipping whatever Whisper did
not bother to transcribe after it; and the seek follows the last word's timestamp, so a drifting
timestamp shifts every later window. Where the windows fall — and so which turns are lost —
depends on everything heard before, which is why the same 8.6 s turn vanished in 2 of its 5
copies in a 20-minute recording and never alone.

Here every window is one Whisper input (at most ``WINDOW_S`` seconds, under Whisper's 30 s), cut
in pauses our speech mask found, each decoded on its own with no text carried from the previous
one (``condition_on_previous_text=False``), so a window's words depend only on its own audio
(plus up to ``CONTEXT_S`` of the speech just before it, heard again and not kept).
What is left uncovered — a stretch the mask calls speech where no recognised word lies
(`uncovered`) — is re-decoded on its own by the engine; what stays empty after that is reported
as a gap (`Gap`), never as silence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from verbatim.asr_server import vad

WINDOW_S = 28.0
"""Longest decoding window (seconds): Whisper hears 30 s at a time; 2 s margin for edge padding."""
CONTEXT_S = 5.0
"""Speech before a window's own part that it hears again as context (seconds, at most)."""
EDGE_S = 0.3
"""Silence kept on each side of a window (Whisper expects a little before and after speech)."""
JOIN_PAUSE_S = 2.0
"""Speech separated by a pause shorter than this may share a window; a longer pause starts a new
one (long silences inside a window invite Whisper to invent words)."""
GAP_MIN_S = 2.0
"""A stretch of speech longer than this with no word in it is re-decoded, then reported as a gap."""
GAP_BRIDGE_S = 0.5
"""Uncovered speech separated by pauses shorter than this is one stretch."""
WORD_REACH_S = 0.25
"""A word covers the speech this far either side of its timestamps (word timings drift a little)."""

_FRAME_S = vad.FRAME_S


@dataclass(frozen=True)
class Gap:
    """Speech from ``start_s`` to ``end_s`` (seconds) in which no word could be recognised."""

    start_s: float
    end_s: float

    @property
    def label(self) -> str:
        """The transcript's mark for the gap, e.g. ``[inaudible 12.4 s]``."""
        return f"[inaudible {self.end_s - self.start_s:.1f} s]"


@dataclass(frozen=True)
class Window:
    """One Whisper input: frames [``context``, ``end``) are decoded; the words whose middle lies in
    [``start``, ``end``) are kept. [``context``, ``start``) is speech the previous window already
    owns, heard again only so that a turn opening this window is not its first sound (Whisper tiny
    mishears a window's opening words without a little speech before them)."""

    context: int
    start: int
    end: int


def decoding_windows(speech: np.ndarray, window_s: float = WINDOW_S, context_s: float = CONTEXT_S) -> list[Window]:
    """Windows to decode, each at most ``window_s`` seconds including its context and edges.

    ``speech`` is the (n_frames,) mask from `vad.speech_mask` (10 ms frames). Speech is split
    into utterances at pauses (`vad.utterances`), then consecutive utterances are packed into one
    window while its own part stays within ``window_s - context_s`` and the pause between them
    is under ``JOIN_PAUSE_S``; packing keeps the count of 30 s encoder passes (the cost) near the
    speech's length / 23 s. The own parts [start, end) never overlap and every speech frame is
    kept from exactly one window. A window's context starts at the first utterance of the previous
    ``context_s`` seconds (never mid-utterance), or has none after a long pause.
    """
    edge = int(round(EDGE_S / _FRAME_S))
    limit = int(round((window_s - context_s) / _FRAME_S))
    join = int(round(JOIN_PAUSE_S / _FRAME_S))
    reach = int(round(context_s / _FRAME_S))
    pieces = vad.utterances(speech, max_utt_s=window_s - context_s - 2 * EDGE_S, min_utt_s=0.0, edge_s=0.0)
    packed: list[vad.Span] = []
    for piece in pieces:
        if packed:
            last = packed[-1]
            if piece.start - last.end < join and piece.end - last.start + 2 * edge <= limit:
                packed[-1] = vad.Span(last.start, piece.end)
                continue
        packed.append(piece)
    n = speech.size
    out: list[Window] = []
    for i, w in enumerate(packed):
        # Edges never reach past the middle of the pause to a neighbour: no frame is owned twice.
        lo = max(0, w.start - edge) if i == 0 else max(w.start - edge, (packed[i - 1].end + w.start + 1) // 2)
        hi = min(n, w.end + edge) if i == len(packed) - 1 else min(w.end + edge, (w.end + packed[i + 1].start) // 2)
        heard = [p.start for p in pieces if w.start - reach <= p.start < w.start and w.start - p.end < join]
        context = max(0, heard[0] - edge) if heard else lo
        out.append(Window(min(context, lo), lo, hi))
    return out


def uncovered(speech: np.ndarray, words: list[tuple[float, float]], min_s: float = GAP_MIN_S) -> list[vad.Span]:
    """Stretches of speech (frame spans) that no word covers and that last longer than ``min_s`` seconds.

    ``words`` are (start_s, end_s) of the recognised words; each covers its own span widened by
    ``WORD_REACH_S`` on both sides. Uncovered speech runs less than ``GAP_BRIDGE_S`` apart form
    one stretch; a stretch's length is from its first to its last uncovered speech frame.
    """
    n = speech.size
    covered = np.zeros(n + 1, dtype=np.int32)
    reach = WORD_REACH_S / _FRAME_S
    for start, end in words:
        a = max(0, int(np.floor(start / _FRAME_S - reach)))
        b = min(n, int(np.ceil(end / _FRAME_S + reach)))
        if b > a:
            covered[a] += 1
            covered[b] -= 1
    open_speech = speech & (np.cumsum(covered)[:n] == 0)
    bridge = int(round(GAP_BRIDGE_S / _FRAME_S))
    stretches: list[vad.Span] = []
    for run in vad.speech_spans(open_speech):
        if stretches and run.start - stretches[-1].end < bridge:
            stretches[-1] = vad.Span(stretches[-1].start, run.end)
        else:
            stretches.append(run)
    return [s for s in stretches if s.length * _FRAME_S > min_s]
