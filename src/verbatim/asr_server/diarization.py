"""Speaker diarization from voice embeddings: who speaks in each 10 ms frame.

Method (the usual embed-then-cluster recipe, e.g. resemblyzer's own diarization demo and
pyannote's clustering stage):

1. **Speech only.** The speech frames of the VAD mask are taken in order, pauses removed
   (resemblyzer trims silences the same way before embedding). The recording's level is raised
   to -30 dBFS over its speech if it is quieter (resemblyzer's ``normalize_volume``,
   increase only).
2. **Windows.** Windows of 1.6 s of speech (`speaker_encoder.WINDOW_FRAMES`) every 0.4 s are
   embedded by the speaker encoder (`speaker_encoder.embed`). Windows do not span pauses of
   0.25 s or more; a shorter stretch of speech is one shorter window.
3. **Clustering.** Windows of at least 1 s, average-linkage agglomerative clustering on
   cosine similarity: clusters merge while their mean pairwise similarity is at least
   ``MERGE_SIMILARITY``, then further until there are at most ``max_speakers``: the speaker
   count is found from the voices and bounded by the request. Clusters holding less than
   ``MIN_SPEAKER_S`` of speech are not believed to be speakers: each joins the one most like it.
   Then two rounds of nearest-centroid reassignment (spherical k-means) tidy the edges. For long
   recordings the tree is grown on at most ``_MAX_CLUSTER_WINDOWS`` evenly spaced windows and
   every window is then assigned to the nearest centroid: memory and time stay bounded.
4. **Frames.** Each speech frame scores each voice by the mean similarity of the windows that
   cover it to the voice's centroid; it takes the best voice — or ``UNASSIGNED`` (-1) when even
   the best is below ``ASSIGN_SIMILARITY``: the clustering cannot tie it to a voice (overlap,
   a cough, a stranger's short remark). Pauses take the label of the nearest speech frame.

Thresholds were set on the shared dialogues (../shared/data) and our similar-voice couples
dialogue (bench/make_sets.py: three espeak-ng voices close in pitch): mean cosine similarity
between windows of one voice was 0.79–0.87, between two voices 0.46–0.66 on the shared sets and
0.66–0.73 between the alike voices (therapist and client A: 0.73). At the former 0.68 those two
merged and client B's turns went to the therapist; at 0.75 all three stay apart and the shared
sessions keep their 2, 2 and 3 voices (0.78 too). ``MERGE_SIMILARITY`` sits between the closest
two voices and the loosest single voice.

Limits: overlapping speech gets one label (or none); voices that sound alike may merge; a
speaker with less than ``MIN_SPEAKER_S`` of speech is not separated; speaker changes are placed
to ~0.2–0.4 s (the window step), so a quick "yes" inside another's turn may be absorbed.
"""

from __future__ import annotations

import numpy as np

from verbatim.asr_server import speaker_encoder
from verbatim.asr_server.speaker_mel import mel_spectrogram

MERGE_SIMILARITY = 0.75
"""Mean cosine similarity (average linkage) at or above which two clusters are one voice."""
ASSIGN_SIMILARITY = 0.45
"""A frame whose best voice scores below this cosine similarity stays unassigned."""
MIN_SPEAKER_S = 3.0
"""Seconds of speech below which a cluster is not believed to be a speaker."""
UNASSIGNED = -1
"""Frame label of speech no voice could be tied to."""

_STEP = 40  # frames between windows (0.4 s)
_SPLIT_PAUSE = 25  # frames: windows never span a pause this long (0.25 s)
_MIN_CLUSTER_WINDOW = 100  # frames: shorter windows are assigned to voices but do not shape them
_TARGET_DBFS = -30.0
_MAX_CLUSTER_WINDOWS = 1500  # the average-linkage tree is O(n^2) in memory: 1500 windows = 18 MB
_REFINE_ROUNDS = 2


def diarize(audio: np.ndarray, speech: np.ndarray, max_speakers: int = 2) -> np.ndarray:
    """Frame labels only: see `diarize_with_margin`."""
    return diarize_with_margin(audio, speech, max_speakers)[0]


def diarize_with_margin(audio: np.ndarray, speech: np.ndarray, max_speakers: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Label every 10 ms frame with a speaker index, or ``UNASSIGNED``.

    ``audio`` is 16 kHz float32, ``speech`` its (n_frames,) boolean speech mask (frame ``i``
    = ``i * 0.01`` s). Returns an int64 array of shape (n_frames,) with values in
    ``{-1, 0..k-1}`` (k <= max_speakers), 0 being the first speaker heard. Without speech, or
    with ``max_speakers`` 1, every frame is 0.

    Also returns a float32 (n_frames,) margin: how much more the frame's voice scores than the
    next best (mean cosine similarity of the covering windows; 1.0 where there is one voice, 0.0
    on unassigned speech and pauses). A small margin means the voices could not be told apart there.
    """
    n = len(speech)
    labels = np.zeros(n, dtype=np.int64)
    margin = np.ones(n, dtype=np.float32)
    idx = np.flatnonzero(speech)
    if max_speakers < 2 or idx.size == 0:
        return labels, margin
    mel = mel_spectrogram(audio)
    if len(mel) < n:
        mel = np.pad(mel, ((0, n - len(mel)), (0, 0)))
    mel = mel[idx]
    mel *= _gain(audio, idx)  # in place: an hour's mel is ~55 MB
    windows = _windows(idx)
    emb = _embed(mel, windows)
    # Only windows long enough to describe a voice shape the clusters; all of them label frames.
    full = np.array([b - a >= _MIN_CLUSTER_WINDOW for a, b in windows])
    if not full.any():
        full[:] = True
    centroids = _cluster(emb[full], _fresh_seconds(windows)[full], max_speakers)
    frame_lab, frame_margin = _frame_labels(emb, windows, len(idx), centroids)
    out = np.full(n, UNASSIGNED, dtype=np.int64)
    out[idx] = frame_lab
    margin[:] = 0.0
    margin[idx] = frame_margin
    return _finish(out, idx), margin


def _gain(audio: np.ndarray, idx: np.ndarray) -> float:
    """Power gain (applied to the mel power) that lifts the speech to -30 dBFS; 1 if already louder."""
    hop = 160
    spans = [audio[i * hop : (i + 1) * hop] for i in idx[:: max(1, idx.size // 20_000)]]
    rms = float(np.sqrt(np.mean(np.concatenate(spans).astype(np.float64) ** 2))) if spans else 0.0
    if rms <= 1e-9:
        return 1.0
    change_db = _TARGET_DBFS - 20 * np.log10(rms)
    return float(10 ** (change_db / 10)) if change_db > 0 else 1.0


def _windows(idx: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) windows into the speech-only frame sequence.

    Windows never span a pause of ``_SPLIT_PAUSE`` frames or more (turns mostly change at
    pauses, and a window holding two voices describes neither). A stretch of speech shorter
    than a window is one shorter window; a longer one gets full windows every ``_STEP`` frames.
    """
    width = speaker_encoder.WINDOW_FRAMES
    breaks = np.flatnonzero(np.diff(idx) >= _SPLIT_PAUSE) + 1
    bounds = [0, *breaks.tolist(), len(idx)]
    out: list[tuple[int, int]] = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        if hi - lo <= width:
            out.append((lo, hi))
            continue
        starts = list(range(lo, hi - width + 1, _STEP))
        if starts[-1] + width < hi:
            starts.append(hi - width)  # the tail is covered too
        out.extend((st, st + width) for st in starts)
    return out


def _fresh_seconds(windows: list[tuple[int, int]]) -> np.ndarray:
    """(n_windows,) seconds of speech each window adds to those before it (windows overlap)."""
    out = np.empty(len(windows))
    prev_end = 0
    for i, (a, b) in enumerate(windows):
        out[i] = (b - max(a, prev_end)) * 0.01
        prev_end = b
    return out


def _embed(mel: np.ndarray, windows: list[tuple[int, int]]) -> np.ndarray:
    """(n_windows, 256) embeddings; windows of equal length are batched together."""
    emb = np.empty((len(windows), speaker_encoder.EMBEDDING_DIM), dtype=np.float32)
    by_length: dict[int, list[int]] = {}
    for i, (a, b) in enumerate(windows):
        by_length.setdefault(b - a, []).append(i)
    for length, rows in by_length.items():
        for k in range(0, len(rows), 256):  # bounded batches: an hour is ~9000 windows
            part = rows[k : k + 256]
            emb[part] = speaker_encoder.embed(np.stack([mel[windows[i][0] : windows[i][0] + length] for i in part]))
    return emb


def _average_linkage(emb: np.ndarray, seconds: np.ndarray, max_speakers: int) -> list[list[int]]:
    """Clusters (lists of row indices) of average-linkage AHC on cosine similarity.

    Merges while the best pair's mean similarity is at least MERGE_SIMILARITY or there are more
    than ``max_speakers`` clusters; then merges every cluster with less than MIN_SPEAKER_S of
    speech (``seconds`` per row) into the cluster most like it, smallest first.
    """
    sim = (emb @ emb.T).astype(np.float64)
    n = len(emb)
    size = np.ones(n)
    speech = seconds.astype(np.float64).copy()
    alive = np.ones(n, dtype=bool)
    members: list[list[int]] = [[i] for i in range(n)]
    np.fill_diagonal(sim, -np.inf)
    clusters = n
    while clusters > 1:
        small = alive & (speech < MIN_SPEAKER_S)
        flat = int(np.argmax(sim))
        i, j = divmod(flat, n)
        if sim[i, j] < MERGE_SIMILARITY and clusters <= max_speakers:
            if not small.any():
                break
            # A cluster too small to be a voice joins the one it is most like.
            i = int(np.flatnonzero(small)[np.argmin(speech[small])])
            j = int(np.argmax(sim[i]))
        # Average linkage: the merged cluster's mean similarity to k is the size-weighted mean.
        merged = (size[i] * sim[i] + size[j] * sim[j]) / (size[i] + size[j])
        sim[i], sim[:, i] = merged, merged
        sim[i, i] = -np.inf
        sim[j, :], sim[:, j] = -np.inf, -np.inf
        size[i] += size[j]
        speech[i] += speech[j]
        alive[j] = False
        members[i].extend(members[j])
        clusters -= 1
    return [members[i] for i in np.flatnonzero(alive)]


def _cluster(emb: np.ndarray, seconds: np.ndarray, max_speakers: int) -> np.ndarray:
    """(k, 256) unit centroids of the voices found, k in 1..max_speakers, in no particular order.

    ``seconds``: (n,) speech each window adds (see `_fresh_seconds`).
    """
    step = max(1, -(-len(emb) // _MAX_CLUSTER_WINDOWS))
    sample = emb[::step]
    groups = _average_linkage(sample, seconds[::step] * step, max_speakers)
    centroids = _normalise(np.stack([sample[g].mean(axis=0) for g in groups]))
    for _ in range(_REFINE_ROUNDS):
        if len(centroids) == 1:
            break
        nearest = (emb @ centroids.T).argmax(axis=1)
        updated = [emb[nearest == j].mean(axis=0) for j in range(len(centroids)) if (nearest == j).any()]
        centroids = _normalise(np.stack(updated))
    return centroids


def _normalise(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-9)


def _frame_labels(
    emb: np.ndarray, windows: list[tuple[int, int]], n_speech: int, centroids: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(n_speech,) voice index per speech frame, or UNASSIGNED, from the windows covering it; and
    the (n_speech,) margin of the best voice over the next (1.0 with one voice, 0.0 unassigned)."""
    scores = emb @ centroids.T  # (n_windows, k)
    total = np.zeros((n_speech + 1, len(centroids)))
    count = np.zeros(n_speech + 1)
    for (a, b), row in zip(windows, scores, strict=True):
        # Difference arrays: add the window's scores over [a, b) in O(1).
        total[a] += row
        total[b] -= row
        count[a] += 1
        count[b] -= 1
    mean = np.cumsum(total, axis=0)[:n_speech] / np.maximum(np.cumsum(count)[:n_speech, None], 1)
    best = mean.argmax(axis=1)
    assigned = mean.max(axis=1) >= ASSIGN_SIMILARITY
    if len(centroids) > 1:
        top2 = np.sort(mean, axis=1)[:, -2:]
        margin = (top2[:, 1] - top2[:, 0]).astype(np.float32)
    else:
        margin = np.ones(n_speech, dtype=np.float32)
    return np.where(assigned, best, UNASSIGNED), np.where(assigned, margin, 0.0).astype(np.float32)


def _finish(frame_lab: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Renumber voices by first appearance; pauses take the label of the nearest speech frame."""
    order: dict[int, int] = {}
    for lab in frame_lab[idx]:
        if lab != UNASSIGNED:
            order.setdefault(int(lab), len(order))
    lut = np.full(int(frame_lab.max()) + 2, UNASSIGNED, dtype=np.int64)  # index: label + 1
    for old, new in order.items():
        lut[old + 1] = new
    # Nearest speech frame for every frame (ties go to the earlier one).
    n = len(frame_lab)
    t = np.arange(n)
    pos = np.searchsorted(idx, t)
    left = idx[np.clip(pos - 1, 0, idx.size - 1)]
    right = idx[np.clip(pos, 0, idx.size - 1)]
    nearest = np.where(np.abs(t - left) <= np.abs(right - t), left, right)
    nearest[idx] = idx
    return lut[frame_lab[nearest] + 1]
