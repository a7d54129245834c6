"""Benchmark the local recogniser against the sample pack; prints figures, asserts nothing.

Run from the repository root: ``.venv/bin/python bench/asr.py``.

Reports, for the engine (`verbatim.asr_server.engine.transcribe`):
* WER on the six LibriVox clips (pooled) and on jfk.wav;
* speaker attribution on both synthetic dialogues, as recorded and with the pauses
  between turns cut to 0.1 s;
* the real-time factor (processing s / audio s) pooled over every sample file;
* the family session (three voices, ``max_speakers`` 4 — more than there are): DER (our own
  frame-level scorer, `scoring.diarization_error_rate`: no collar, optimal one-to-one mapping),
  speakers found, speaker attribution;
* low-confidence flags at the reliability threshold (`ReliabilitySettings.confidence_threshold`)
  over every sample file: count, precision (flagged words that are wrong, aligned with jiwer)
  and recall (wrong words that are flagged);
* peak RSS of a process recognising a 60-minute recording (the sample files concatenated and
  repeated), measured as the child's ``ru_maxrss`` (``--no-long`` skips it: ~8 CPU minutes);
and the same WER/RTF for the baseline: pocketsphinx's default whole-file decode (one
utterance, fresh decoder per file, no diarization), run in this process.

The last line is one JSON object with the headline figures.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
import wave
from pathlib import Path

import numpy as np
from pocketsphinx import Decoder

from verbatim.asr_server.engine import transcribe
from verbatim.asr_server.scoring import (
    diarization_error_rate,
    flag_scores,
    load_turns,
    pooled_wer,
    results_text,
    speaker_attribution,
    splice_turns,
    word_error_rate,
    wrong_words,
)
from verbatim.reliability.settings import ReliabilitySettings

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
DIALOGUES = ("therapy_dialogue", "therapy_dialogue_two_male")
FAMILY = "family_session"
LONG_S = 3600.0


def read_wav(path: Path) -> np.ndarray:
    """16-bit mono WAV samples as int16."""
    with wave.open(str(path)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")


def write_wav(path: Path, pcm: np.ndarray) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(pcm.astype("<i2").tobytes())


def baseline(path: Path) -> str:
    """pocketsphinx default: the whole file as one utterance, fresh decoder."""
    dec = Decoder(samprate=16000)
    dec.start_utt()
    dec.process_raw(read_wav(path).tobytes(), full_utt=True)
    dec.end_utt()
    hyp = dec.hyp()
    return hyp.hypstr if hyp is not None else ""


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def long_recording_peak_rss_mib() -> float:
    """Peak RSS (MiB) of a fresh process recognising a 60-minute recording of the sample files."""
    clips = [read_wav(p) for p in sorted(SAMPLES.glob("*.wav"))]
    gap = np.zeros(8000, dtype=np.int16)
    one_round = np.concatenate([x for c in clips for x in (c, gap)])
    pcm = np.tile(one_round, int(np.ceil(LONG_S * 16000 / one_round.size)))[: int(LONG_S * 16000)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "long.wav"
        write_wav(path, pcm)
        del pcm, one_round, clips
        code = ("import sys; from verbatim.asr_server.engine import transcribe; "
                "r = transcribe(sys.argv[1], max_speakers=4); print(sum(x['type'] == 'word' for x in r))")
        out = subprocess.run([sys.executable, "-c", code, str(path)], check=True, capture_output=True, text=True)
    print(f"60-min recording    : {out.stdout.strip()} words recognised")
    # ru_maxrss of children is in KiB on Linux: the largest peak of any waited-for child.
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main() -> None:
    refs = dict(line.rstrip("\n").split("\t", 1) for line in (SAMPLES / "references.tsv").read_text().splitlines())
    refs["jfk.wav"] = (SAMPLES / "jfk.txt").read_text().strip()
    for name in (*DIALOGUES, FAMILY):
        refs[f"{name}.wav"] = " ".join(t.text for t in load_turns(SAMPLES / f"{name}.json"))

    transcribe(SAMPLES / "jfk.wav")  # warm-up: decoder creation is a one-off per process
    hyps: dict[str, str] = {}
    results: dict[str, list] = {}
    audio_s = engine_s = base_s = engine_cpu_s = base_cpu_s = 0.0
    base_hyps: dict[str, str] = {}
    for name in refs:
        path = SAMPLES / name
        dur = read_wav(path).size / 16000
        c0, t0 = time.process_time(), time.perf_counter()
        res = transcribe(path, max_speakers=4 if name == f"{FAMILY}.wav" else 2)
        c1, t1 = time.process_time(), time.perf_counter()
        base_hyps[name] = baseline(path)
        c2, t2 = time.process_time(), time.perf_counter()
        engine_cpu_s += c1 - c0
        base_cpu_s += c2 - c1
        audio_s += dur
        engine_s += t1 - t0
        base_s += t2 - t1
        results[name] = res
        hyps[name] = results_text(res)
        speakers = sorted({r["alternatives"][0]["speaker"] for r in res if r["type"] == "word"})
        print(
            f"{name:40s} {dur:6.1f} s  rtf {(t1 - t0) / dur:.3f} (baseline {(t2 - t1) / dur:.3f})  "
            f"WER {word_error_rate(refs[name], hyps[name]):.3f} (baseline "
            f"{word_error_rate(refs[name], base_hyps[name]):.3f})  speakers {','.join(speakers)}"
        )

    # 0.1 s-gap variants: scored for attribution only (the RTF is over the sample files).
    attribution: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in DIALOGUES:
            turns = load_turns(SAMPLES / f"{name}.json")
            attribution[name] = speaker_attribution(results[f"{name}.wav"], turns)
            pcm, cut_turns = splice_turns(read_wav(SAMPLES / f"{name}.wav"), turns, 0.1)
            path = Path(tmp) / f"{name}_gap0.1.wav"
            write_wav(path, pcm)
            res = transcribe(path)
            attribution[f"{name}_gap0.1"] = speaker_attribution(res, cut_turns)

    family_turns = load_turns(SAMPLES / f"{FAMILY}.json")
    family = results[f"{FAMILY}.wav"]
    der_family = diarization_error_rate(family, family_turns)
    speakers_family = len({r["alternatives"][0]["speaker"] for r in family if r["type"] == "word"} - {"UU"})
    attribution_family = speaker_attribution(family, family_turns)
    threshold = ReliabilitySettings().confidence_threshold
    scored = [pair for name in refs for pair in wrong_words(refs[name], results[name])]
    flags, precision, recall = flag_scores(scored, threshold)
    peak_rss = None if "--no-long" in sys.argv else long_recording_peak_rss_mib()

    librivox = [n for n in refs if n not in ("jfk.wav", FAMILY + ".wav", *(f"{d}.wav" for d in DIALOGUES))]
    wer_lv = pooled_wer((refs[n], hyps[n]) for n in librivox)
    wer_jfk = word_error_rate(refs["jfk.wav"], hyps["jfk.wav"])
    base_lv = pooled_wer((refs[n], base_hyps[n]) for n in librivox)
    base_jfk = word_error_rate(refs["jfk.wav"], base_hyps["jfk.wav"])
    print()
    print(f"WER LibriVox pooled : engine {wer_lv:.3f}   baseline {base_lv:.3f}")
    print(f"WER jfk             : engine {wer_jfk:.3f}   baseline {base_jfk:.3f}")
    for name, value in attribution.items():
        print(f"speaker attribution : {name:35s} {value:.3f}")
    print(
        f"RTF pooled          : engine {engine_s / audio_s:.3f}   baseline {base_s / audio_s:.3f}"
        f"   ({audio_s:.1f} s of audio, {len(refs)} files; wall clock)"
    )
    print(f"RTF pooled, CPU time: engine {engine_cpu_s / audio_s:.3f}   baseline {base_cpu_s / audio_s:.3f}")
    print(f"family session      : DER {der_family:.3f}  speakers found {speakers_family} (of 3)  "
          f"attribution {attribution_family:.3f}")
    print(f"low-confidence flags: {flags} of {len(scored)} words below {threshold}  precision "
          f"{_fmt(precision)}  recall {_fmt(recall)} (wrong words: {sum(w for _, w in scored)})")
    print(f"60-min recording    : peak RSS {_fmt(peak_rss)} MiB")
    sys.stdout.flush()
    print(
        json.dumps(
            {
                "wer_librivox": round(wer_lv, 4),
                "wer_jfk": round(wer_jfk, 4),
                "speaker_attribution": round(attribution[DIALOGUES[0]], 4),
                "speaker_attribution_two_male": round(attribution[DIALOGUES[1]], 4),
                "rtf": round(engine_s / audio_s, 4),
                "cpu_s_per_audio_s": round(engine_cpu_s / audio_s, 4),
                "cpu_s_per_audio_s_baseline": round(base_cpu_s / audio_s, 4),
                "der_family": round(der_family, 4),
                "speakers_found_family": speakers_family,
                "speaker_attribution_family": round(attribution_family, 4),
                "peak_rss_mib_60min": None if peak_rss is None else round(peak_rss, 1),
                "flags": flags,
                "flag_precision": None if precision is None else round(precision, 4),
                "flag_recall": None if recall is None else round(recall, 4),
            }
        )
    )


if __name__ == "__main__":
    main()
