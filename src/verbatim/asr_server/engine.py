"""The local recogniser: audio file in, Speechmatics json-v2 ``results`` out.

Pipeline (all in-process, no server state):

1. decode the file to 16 kHz mono float32 (`verbatim.audio.decode_pcm16k`);
2. compute 10 ms frame features and an energy-based speech mask (`features`, `vad`);
3. diarize the frames (`diarization`) unless ``diarization="none"``;
4. words: by default Whisper tiny.en through faster-whisper, in chunks of at most CHUNK_S cut at pauses
   (`verbatim.asr_server.whisper`); or (``VERBATIM_ASR_ENGINE=pocketsphinx``) cut speech
   into utterances of at most 30 s at pauses and speaker changes, and decode each with
   pocketsphinx 5 (bundled en-US acoustic model, language model and
   dictionary, default search settings). Decoding utterance by utterance keeps memory
   bounded, skips long silences, and gives each voice its own cepstral mean;
5. turn word segments into json-v2 items, label each word with the speaker holding
   most of its frames, and close every sentence-like stretch (a speaker turn, or speech
   followed by a pause of at least ``SENTENCE_PAUSE_S``) with a full stop.

Confidence: pocketsphinx 5's ``Segment.prob`` is the word's posterior probability in
the lattice, already converted from its internal log base-1.0001 domain to a linear
value (pocketsphinx's own ``segments(detailed=True)`` converts it back with
``logmath.log``). Rounding can push it slightly over 1, so it is clipped to [0, 1].

Determinism and thread safety: one `Decoder` per thread is created lazily (~0.25 s)
and kept. A pocketsphinx decoder carries feature and cepstral-mean state from one
utterance to the next (LibriVox/JFK results changed with what it had heard before), so
before every utterance both are reset to the freshly created decoder's (30 µs). Each
utterance is then decoded exactly as by a new decoder, and `transcribe` is a pure
function of its arguments and the file, whatever the worker did before.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from pocketsphinx import Decoder

from verbatim.asr_server import features, flips, vad, windows
from verbatim.asr_server.diarization import UNASSIGNED, diarize_with_margin
from verbatim.asr_server.windows import Gap
from verbatim.audio import SAMPLE_RATE, decode_pcm16k
from verbatim.sealed import KeyRing

SENTENCE_PAUSE_S = 0.6
"""A pause (seconds) at least this long between two words of one speaker ends a sentence."""
UNKNOWN_SPEAKER = "UU"
"""Speechmatics' speaker label when diarization is off."""
INAUDIBLE = "inaudible"
"""Tag of a gap item: speech in which no word could be recognised."""
SPEAKER_UNCERTAIN = "speaker_uncertain"
"""Tag of a word whose voice could not be told apart from another (`SPEAKER_MARGIN`)."""
SPEAKER_MARGIN = 0.04
"""A word whose voice beats the next best by less than this (mean cosine similarity) is tagged
``speaker_uncertain``: the turn holding it is marked for review instead of guessed silently."""
MIN_TURN_S = 1.0
"""A turn shorter than this between two turns of one other voice is too short to trust its label
(the diarizer places changes to ~0.2–0.4 s): it keeps its own label — never handed to the voice
around it, which may be the therapist's — and is tagged ``speaker_uncertain`` for review."""
_FRAME_S = 0.01
#: a word is heard in speech when at least this share of its frames is speech (else Whisper invented it)
MIN_VOICED_SHARE = 0.2
_DIARIZATION_MODES = ("speaker", "none")
_PRONOUN_I = frozenset({"i", "i'm", "i'll", "i've", "i'd"})

_local = threading.local()


def _decoder() -> tuple[Decoder, str]:
    """This thread's pocketsphinx decoder (created on first use) and its initial cepstral mean."""
    dec = getattr(_local, "decoder", None)
    if dec is None:
        dec = Decoder(samprate=SAMPLE_RATE, loglevel="FATAL")
        _local.decoder = dec
        _local.cmn_init = dec.get_cmn()
    return dec, _local.cmn_init


@dataclass(frozen=True)
class Word:
    """A recognised word: ``text`` spoken from ``start_s`` to ``end_s`` (seconds), ``confidence`` in [0, 1].

    ``stop``: the sentence-ending mark the recognizer heard after the word (".", "?" or "!"), or "".
    ``competitors``: (reading, probability) pairs a second decode left open for the word ("" = the
    word left out), judged by `flips.suggestion`; None when there was no second decode (an empty
    tuple: there was one, and it left nothing open).
    ``beam``: readings the third decode's n-best list holds in the word's place, (reading, how far
    the best hypothesis holding it falls behind the best of all, in mean log-probability per
    token, >= 0); ``prompted``: the same for its n-best lists after a priming prompt
    (`whisper.PRIMING_PROMPTS`). Both None where no third decode ran (`whisper`: only windows
    already in doubt).
    """

    text: str
    start_s: float
    end_s: float
    confidence: float
    stop: str = ""
    competitors: tuple[tuple[str, float], ...] | None = None
    beam: tuple[tuple[str, float], ...] | None = None
    prompted: tuple[tuple[str, float], ...] | None = None


def recognise(audio: np.ndarray, spans: list[vad.Span]) -> list[Word]:
    """Decode each utterance span (10 ms frames) of ``audio`` (16 kHz float32) and return its words in order.

    Silence, noise and sentence markers are dropped; alternative pronunciations
    (``word(2)``) are reported as the word itself.
    """
    dec, cmn_init = _decoder()
    words: list[Word] = []
    for span in spans:
        chunk = audio[span.start * features.HOP : span.end * features.HOP]
        pcm = (np.clip(chunk, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()
        # The decoder carries feature and cepstral-mean state from one utterance to the next,
        # so the same audio could be heard differently after another file: reset both, so a
        # recording always yields the same transcript (a resumed run must equal an uncrashed one).
        dec.reinit_feat()
        dec.set_cmn(cmn_init)
        # full_utt=True: the whole utterance at once, so the cepstral mean is this utterance's.
        dec.start_utt()
        dec.process_raw(pcm, full_utt=True)
        dec.end_utt()
        for seg in dec.seg():
            token = seg.word
            if not token or token[0] in "<[+":  # <s>, </s>, <sil>, [NOISE], ++GARBAGE++
                continue
            paren = token.find("(")
            if paren > 0:
                token = token[:paren]
            words.append(
                Word(
                    text=token,
                    start_s=(span.start + seg.start_frame) * _FRAME_S,
                    end_s=(span.start + seg.end_frame + 1) * _FRAME_S,  # end_frame is inclusive
                    confidence=float(min(max(seg.prob, 0.0), 1.0)),
                )
            )
    return words


def _speaker_changes(labels: np.ndarray, speech: np.ndarray) -> np.ndarray:
    """Frame indices where the speaker differs from that of the previous speech frame."""
    idx = np.flatnonzero(speech)
    if idx.size < 2:
        return np.empty(0, dtype=np.int64)
    lab = labels[idx]
    return idx[1:][lab[1:] != lab[:-1]]


def _word_speakers(words: list[Word], labels: np.ndarray, speech: np.ndarray) -> list[int]:
    """Speaker index for each word: the label (-1 = unassigned) held by most of its speech frames (all if none)."""
    out = []
    for w in words:
        a = int(round(w.start_s / _FRAME_S))
        b = max(a + 1, int(round(w.end_s / _FRAME_S)))
        seg = labels[a:b]
        voiced = seg[speech[a:b]]
        pick = voiced if voiced.size else seg
        # Labels start at -1 (unassigned): shift by one for bincount.
        out.append(int(np.bincount(pick + 1).argmax()) - 1 if pick.size else int(labels[min(a, labels.size - 1)]))
    return out


def _words(audio: np.ndarray, speech: np.ndarray, changes: np.ndarray | None) -> tuple[list[Word], list[Gap]]:
    """Words from the configured engine, and the speech in which none could be recognised.

    Whisper hears the recording in VAD-bounded windows (`windows.decoding_windows`), each on its
    own; pocketsphinx utterance by utterance. Then every stretch of speech longer than
    ``windows.GAP_MIN_S`` that no word covers is decoded again on its own (Whisper with its
    no-speech skip off); a stretch still empty is returned as a `Gap`, so the transcript shows
    it at its time instead of silence.
    """
    from verbatim.config import get_settings

    if not speech.any():
        return [], []  # Whisper invents words in silence: never ask it about a recording without speech
    if get_settings().asr_engine == "whisper":
        from verbatim.asr_server import whisper

        def decode(span: vad.Span, insist: bool, keep_from: int | None = None) -> list[Word]:
            offset = span.start * _FRAME_S
            heard = whisper.recognise(audio[span.start * features.HOP : span.end * features.HOP], insist=insist)
            shifted = [replace(w, start_s=round(w.start_s + offset, 3), end_s=round(w.end_s + offset, 3))
                       for w in heard]
            # The context before a window's own part was kept from the previous window.
            own = (keep_from if keep_from is not None else span.start) * _FRAME_S
            return heard_in_speech([w for w in shifted if (w.start_s + w.end_s) / 2 >= own], speech)

        words = [w for win in windows.decoding_windows(speech)
                 for w in decode(vad.Span(win.context, win.end), False, win.start)]
    else:
        def decode(span: vad.Span, insist: bool, keep_from: int | None = None) -> list[Word]:
            return recognise(audio, [span])

        words = recognise(audio, vad.utterances(speech, breaks=changes))
    gaps: list[Gap] = []
    edge = int(round(windows.EDGE_S / _FRAME_S))
    for stretch in windows.uncovered(speech, [(w.start_s, w.end_s) for w in words]):
        span = vad.Span(max(0, stretch.start - edge), min(len(speech), stretch.end + edge))
        found = [w for w in decode(span, True) if stretch.start * _FRAME_S - windows.WORD_REACH_S
                 <= (w.start_s + w.end_s) / 2 <= stretch.end * _FRAME_S + windows.WORD_REACH_S]
        words += found
        # What the second decode still left empty is a gap, at its own time.
        base = stretch.start * _FRAME_S
        rest = windows.uncovered(speech[stretch.start : stretch.end],
                                 [(w.start_s - base, w.end_s - base) for w in found])
        gaps += [Gap(round(base + r.start * _FRAME_S, 2), round(base + r.end * _FRAME_S, 2)) for r in rest]
    words.sort(key=lambda w: w.start_s)
    return words, gaps


def heard_in_speech(words: list[Word], speech: np.ndarray) -> list[Word]:
    """The ``words`` (seconds) our speech detection (``speech``: one bool per 10 ms frame) bears out.

    Whisper also invents words in pauses: a word is kept when at least ``MIN_VOICED_SHARE`` of its
    frames are speech — or, since Whisper's word times drift by a few hundred ms, when it sits next
    to speech that no such word explains (an "ask" timed just after the "ask" it heard).
    """
    voiced = [w for w in words if _voiced_share(w, speech) >= MIN_VOICED_SHARE]
    kept = {id(w) for w in voiced}
    return [w for w in words if id(w) in kept or _next_to_unexplained_speech(w, voiced, speech)]


def _next_to_unexplained_speech(word: Word, kept: list[Word], speech: np.ndarray) -> bool:
    """Whether speech within ``windows.WORD_REACH_S`` of ``word`` lies outside every ``kept`` word.

    At least ``MIN_VOICED_SHARE`` of the word's own length (10 ms frames) must be such speech, so a
    word Whisper invented in a long pause, or beside a word that already explains the speech
    there, is still dropped.
    """
    reach = windows.WORD_REACH_S
    a = max(0, int(round((word.start_s - reach) / _FRAME_S)))
    b = min(len(speech), int(round((word.end_s + reach) / _FRAME_S)))
    if b <= a:
        return False
    free = speech[a:b].copy()
    for other in kept:
        lo, hi = int(round(other.start_s / _FRAME_S)) - a, int(round(other.end_s / _FRAME_S)) - a
        if hi > 0 and lo < b - a:
            free[max(0, lo):max(0, hi)] = False
    own = max(1, int(round((word.end_s - word.start_s) / _FRAME_S)))
    return int(free.sum()) >= MIN_VOICED_SHARE * own


def _voiced_share(word: Word, speech: np.ndarray) -> float:
    """The share of a word's 10 ms frames that speech detection marks as speech (0..1)."""
    a = int(round(word.start_s / _FRAME_S))
    b = max(a + 1, int(round(word.end_s / _FRAME_S)))
    frames = speech[a:b]
    return float(frames.mean()) if frames.size else 0.0


@dataclass(frozen=True)
class Heard:
    """What the recognizer heard in a recording, before it is written as json-v2 (`to_results`).

    ``words`` in time order; ``speakers`` the json-v2 label of each ("S1", …, "UU"); ``gaps`` the
    speech no word could be recognised in; ``unsure`` per word, whether its voice is in doubt.
    """

    words: list[Word]
    speakers: list[str]
    gaps: list[Gap]
    unsure: list[bool]


def hear(
    path: str | os.PathLike[str],
    *,
    diarization: str = "speaker",
    max_speakers: int = 2,
    language: str = "en",
    ring: KeyRing | None = None,
) -> Heard:
    """The words, speakers and gaps of an audio file; arguments and errors as `transcribe`."""
    if language != "en":
        raise ValueError(f"language {language!r} is not supported by the local recogniser (only 'en')")
    if diarization not in _DIARIZATION_MODES:
        raise ValueError(f"diarization must be one of {_DIARIZATION_MODES}, not {diarization!r}")
    if max_speakers < 1:
        raise ValueError("max_speakers must be at least 1")
    audio = decode_pcm16k(path, ring)
    # Only the speech mask is kept: the other frame features of an hour are ~60 MB.
    speech = vad.speech_mask(features.compute(audio).energy_db)
    if diarization == "speaker":
        labels, margin = diarize_with_margin(audio, speech, max_speakers=max_speakers)
        changes = _speaker_changes(labels, speech)
    else:
        labels = np.zeros(len(speech), dtype=np.int64)
        margin = np.ones(len(speech), dtype=np.float32)
        changes = None
    words, gaps = _words(audio, speech, changes)
    speakers = _word_speakers(words, labels, speech)
    if diarization == "speaker":
        names: dict[int, str] = {UNASSIGNED: UNKNOWN_SPEAKER}
        tags = [names.setdefault(s, f"S{len(names)}") for s in speakers]
    else:
        tags = [UNKNOWN_SPEAKER] * len(words)
    unsure = [s != UNASSIGNED and _speaker_margin(w, margin, speech) < SPEAKER_MARGIN
              for w, s in zip(words, speakers, strict=True)]
    if diarization == "speaker":
        unsure = [a or b for a, b in zip(unsure, short_turns(words, speakers), strict=True)]
    return Heard(words, tags, gaps, unsure)


def transcribe(
    path: str | os.PathLike[str],
    *,
    diarization: str = "speaker",
    max_speakers: int = 2,
    language: str = "en",
    ring: KeyRing | None = None,
) -> list[dict[str, Any]]:
    """Recognise speech in an audio file (sealed: opened with ``ring``); return a json-v2 ``results`` list.

    Each word item is ``{"type": "word", "start_time": s, "end_time": s, "alternatives":
    [{"content", "confidence", "language", "speaker"}]}`` (times in seconds, ascending);
    each sentence ends with a ``{"type": "punctuation", "attaches_to": "previous",
    "is_eos": True, ...}`` full stop at the time its last word ends. Speakers are "S1",
    "S2", ... in order of first word, or "UU" when ``diarization`` is "none".

    Raises ValueError for an unsupported ``language`` (only "en"), ``diarization`` mode
    or ``max_speakers`` < 1, and `verbatim.errors.AudioUnreadable` for a bad file.
    """
    heard = hear(path, diarization=diarization, max_speakers=max_speakers, language=language, ring=ring)
    return to_results(heard.words, heard.speakers, language, heard.gaps, heard.unsure)


def short_turns(words: list[Word], speakers: list[int], min_turn_s: float = MIN_TURN_S) -> list[bool]:
    """Per word: whether it is in a run of one voice lasting under ``min_turn_s`` seconds (first
    word's start to last word's end) with one other voice on both sides (`MIN_TURN_S`)."""
    out = [False] * len(words)
    runs: list[tuple[int, int]] = []  # [start, end) word indices of runs of one speaker
    for i, s in enumerate(speakers):
        if runs and speakers[runs[-1][0]] == s:
            runs[-1] = (runs[-1][0], i + 1)
        else:
            runs.append((i, i + 1))
    for k in range(1, len(runs) - 1):
        a, b = runs[k]
        before, after = speakers[runs[k - 1][0]], speakers[runs[k + 1][0]]
        if before == after != UNASSIGNED and words[b - 1].end_s - words[a].start_s < min_turn_s:
            out[a:b] = [True] * (b - a)
    return out


def _speaker_margin(word: Word, margin: np.ndarray, speech: np.ndarray) -> float:
    """Mean margin of the word's voice over the next best across its speech frames (1.0 if none)."""
    a = int(round(word.start_s / _FRAME_S))
    b = max(a + 1, int(round(word.end_s / _FRAME_S)))
    voiced = margin[a:b][speech[a:b]]
    return float(voiced.mean()) if voiced.size else 1.0


def to_results(words: list[Word], speakers: list[str], language: str = "en",
               gaps: list[Gap] | tuple[Gap, ...] = (), unsure: list[bool] | None = None,
               doubt: flips.Doubt = flips.DOUBT) -> list[dict[str, Any]]:
    """Build json-v2 result items from words and their speaker tags, adding sentence ends and capitals.

    A sentence ends where the recognizer heard one (``Word.stop``: ".", "?" or "!"), at a change of
    speaker, at a pause of at least SENTENCE_PAUSE_S and before a gap; its mark is the recognizer's,
    else ".". Each gap (speech no word could be recognised in) is one item at its time:
    ``{"type": "gap", "start_time", "end_time", "alternatives": [{"content": "[inaudible 9.5 s]",
    "confidence": 0.0, "language", "tags": ["inaudible"]}]}`` — no speaker: nobody is known to
    have said it. A word whose voice was barely told apart is tagged ``speaker_uncertain``.
    A doubtful meaning-flip word (`flips.suggestion`: its probability or a competing reading) is
    tagged ``meaning_flip`` and carries the reading it may hide as a second alternative ("can" →
    "can't", "you" → "two"); ``doubt``: that rule's thresholds.
    """
    results: list[dict[str, Any]] = []
    sentence_start = True
    pending = sorted(gaps, key=lambda g: g.start_s)
    for i, (w, spk) in enumerate(zip(words, speakers, strict=True)):
        while pending and pending[0].start_s <= w.start_s:
            results.append(_gap_item(pending.pop(0), language))
            sentence_start = True
        text = w.text
        if sentence_start or text in _PRONOUN_I:
            text = text[:1].upper() + text[1:]
        item = _item("word", w.start_s, w.end_s, text, w.confidence, language, spk)
        if unsure is not None and unsure[i]:
            item["alternatives"][0]["tags"] = [SPEAKER_UNCERTAIN]
        slot = flips.in_flip_slot(words[i - 1].text if i and not sentence_start else None,
                                  words[i + 1].text if i + 1 < len(words) else None)
        other = flips.suggestion(w.text, w.confidence, sentence_start=sentence_start, competitors=w.competitors,
                                 beam=w.beam, prompted=w.prompted, slot=slot, doubt=doubt)
        if other is not None:
            # A doubtful negation, number, time or name, or a word a flipping reading competes with:
            # marked whatever the global threshold.
            best = item["alternatives"][0]
            best["tags"] = [*best.get("tags", []), flips.MEANING_FLIP]
            if other and other[:1].islower() and text[:1].isupper():
                other = other[:1].upper() + other[1:]
            if other:
                item["alternatives"].append({**best, "content": other, "confidence": round(1.0 - w.confidence, 3),
                                             "tags": best["tags"]})
        results.append(item)
        last = i == len(words) - 1
        sentence_start = (last or bool(w.stop) or speakers[i + 1] != spk
                          or words[i + 1].start_s - w.end_s >= SENTENCE_PAUSE_S
                          or bool(pending and pending[0].start_s <= words[i + 1].start_s))
        if sentence_start:
            stop = _item("punctuation", w.end_s, w.end_s, w.stop or ".", 1.0, language, spk)
            stop["attaches_to"] = "previous"
            stop["is_eos"] = True
            results.append(stop)
    results += [_gap_item(g, language) for g in pending]
    return results


def _gap_item(gap: Gap, language: str) -> dict[str, Any]:
    return {
        "type": "gap",
        "start_time": round(gap.start_s, 2),
        "end_time": round(gap.end_s, 2),
        "alternatives": [{"content": gap.label, "confidence": 0.0, "language": language, "tags": [INAUDIBLE]}],
    }


def _item(
    kind: str, start: float, end: float, content: str, confidence: float, language: str, speaker: str
) -> dict[str, Any]:
    return {
        "type": kind,
        "start_time": round(float(start), 2),
        "end_time": round(float(end), 2),
        "alternatives": [
            {"content": content, "confidence": round(confidence, 3), "language": language, "speaker": speaker}
        ],
    }
