"""Energy-based voice activity detection and utterance splitting.

The threshold adapts to each file: it sits 30 % of the way from the noise floor
(10th percentile of frame energy) to the speech level (97th percentile), and at
most 45 dB below the speech level. That works for digital silence and for a
steady room-noise floor; it is not meant for loud non-stationary noise (music,
overlapping talk), where it marks too much as speech — which costs decoding time
but loses no words.

Utterances for the recogniser are cut in pauses (and at speaker changes the caller
names), so each stays at or under ``max_utt_s`` seconds without cutting words; only
talk with no pause of 0.15 s in ``max_utt_s`` seconds is cut blindly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FRAME_S = 0.01


@dataclass(frozen=True)
class Span:
    """A stretch of audio from frame ``start`` (inclusive) to ``end`` (exclusive); frames are 10 ms."""

    start: int
    end: int

    @property
    def length(self) -> int:
        return self.end - self.start


def speech_threshold_db(energy_db: np.ndarray) -> float:
    """Energy (dB) above which a frame counts as speech, from the file's energy distribution."""
    noise, peak = np.percentile(energy_db, [10, 97])
    # Over a very low floor (digital silence) 30 % of the range would admit faint
    # reverberation tails, so the threshold never sits more than 45 dB under the speech.
    return float(max(noise + 0.3 * (peak - noise), peak - 45.0))


def _runs(mask: np.ndarray) -> list[Span]:
    """Spans of consecutive True values in a boolean frame mask."""
    padded = np.concatenate([[False], mask, [False]]).astype(np.int8)
    edges = np.flatnonzero(np.diff(padded))
    return [Span(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True)]


def speech_mask(energy_db: np.ndarray, *, min_pause_s: float = 0.15, min_speech_s: float = 0.08) -> np.ndarray:
    """Boolean (n_frames,) mask: True where a 10 ms frame is speech.

    Pauses shorter than ``min_pause_s`` are filled (stop closures, short dips), then
    bursts shorter than ``min_speech_s`` are dropped (clicks).
    """
    # A 3-frame moving average keeps single-frame dips from splitting a word.
    smooth = np.convolve(energy_db, np.ones(3) / 3, mode="same")
    mask = smooth > speech_threshold_db(energy_db)
    for gap in _runs(~mask):
        if gap.start > 0 and gap.end < mask.size and gap.length * FRAME_S < min_pause_s:
            mask[gap.start : gap.end] = True
    for run in _runs(mask):
        if run.length * FRAME_S < min_speech_s:
            mask[run.start : run.end] = False
    return mask


def speech_spans(mask: np.ndarray) -> list[Span]:
    """Spans of speech frames in a mask from `speech_mask`."""
    return _runs(mask)


def utterances(
    mask: np.ndarray,
    *,
    breaks: np.ndarray | None = None,
    max_utt_s: float = 30.0,
    min_split_pause_s: float = 0.3,
    min_utt_s: float = 3.0,
    edge_s: float = 0.3,
) -> list[Span]:
    """Split speech into recogniser utterances of at most ``max_utt_s`` seconds.

    ``mask`` is a speech mask from `speech_mask`; ``breaks`` optionally lists frame
    indices where an utterance must end (speaker changes), so each utterance has one
    voice and its own cepstral mean. Speech is cut at every pause of at least
    ``min_split_pause_s``; pieces shorter than ``min_utt_s`` are joined to a neighbour
    (short utterances lose language-model context and get a poor cepstral mean) unless
    a break lies between them; a piece longer than ``max_utt_s`` (talk without pauses)
    is cut at its widest pauses. Each utterance keeps up to ``edge_s`` of the silence
    around it, since the recogniser expects leading and trailing silence.
    """
    n = mask.size
    max_len = int(round(max_utt_s / FRAME_S))
    min_len = int(round(min_utt_s / FRAME_S))
    edge = int(round(edge_s / FRAME_S))
    cuts = np.unique(np.asarray(breaks if breaks is not None else [], dtype=np.int64))
    runs: list[Span] = []
    for run in speech_spans(mask):
        inside = cuts[(cuts > run.start) & (cuts < run.end)]
        edges = [run.start, *inside.tolist(), run.end]
        runs.extend(Span(a, b) for a, b in zip(edges[:-1], edges[1:], strict=True))
    if not runs:
        return []

    def broken(a: Span, b: Span) -> bool:
        return bool(((cuts >= a.end) & (cuts <= b.start)).any())

    # Groups of runs separated by short pauses; each group is one utterance candidate.
    groups: list[list[Span]] = [[runs[0]]]
    for run in runs[1:]:
        prev = groups[-1][-1]
        if (run.start - prev.end) * FRAME_S < min_split_pause_s and not broken(prev, run):
            groups[-1].append(run)
        else:
            groups.append([run])
    merged: list[list[Span]] = []
    for group in groups:
        if merged:
            last = merged[-1]
            short = last[-1].end - last[0].start < min_len or group[-1].end - group[0].start < min_len
            if short and not broken(last[-1], group[0]) and group[-1].end - last[0].start <= max_len:
                merged[-1] = last + group
                continue
        merged.append(group)
    out: list[Span] = []
    for group in merged:
        out.extend(_split_group(group, max_len))
    # Pad with surrounding silence, never past the middle of the pause to a neighbour.
    padded: list[Span] = []
    for i, u in enumerate(out):
        lo = max(0, u.start - edge) if i == 0 else max(u.start - edge, (out[i - 1].end + u.start + 1) // 2)
        hi = min(n, u.end + edge) if i == len(out) - 1 else min(u.end + edge, (u.end + out[i + 1].start) // 2)
        padded.append(Span(lo, hi))
    return padded


def _split_group(group: list[Span], max_len: int) -> list[Span]:
    """Cut a group of speech runs into pieces of at most ``max_len`` frames, at its widest pauses."""
    start, end = group[0].start, group[-1].end
    if end - start <= max_len:
        return [Span(start, end)]
    # Cut at the widest pause (the one nearest the middle on a tie) and recurse;
    # with no pause at all, cut hard every max_len frames.
    mid = (start + end) // 2
    best: tuple[int, int, int] | None = None  # (-gap, distance to middle, cut frame)
    for a, b in zip(group, group[1:], strict=False):
        key = (a.end - b.start, abs(a.end - mid), a.end)
        if best is None or key < best:
            best = key
    if best is None:
        return [Span(s, min(s + max_len, end)) for s in range(start, end, max_len)]
    cut = best[2]
    left = [r for r in group if r.end <= cut]
    right = [r for r in group if r.start >= cut]
    return _split_group(left, max_len) + _split_group(right, max_len)
