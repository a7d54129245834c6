"""Benchmark the local recogniser against the sample pack; prints figures, asserts nothing.

Run from the repository root: ``.venv/bin/python bench/asr.py``.

Reports, for the engine (`verbatim.asr_server.engine.transcribe`):
* WER on the six LibriVox clips (pooled) and on jfk.wav;
* speaker attribution on both synthetic dialogues, as recorded and with the pauses
  between turns cut to 0.1 s;
* the real-time factor (processing s / audio s) pooled over every sample file;
and the same WER/RTF for the baseline: pocketsphinx's default whole-file decode (one
utterance, fresh decoder per file, no diarization), run in this process.

The last line is one JSON object with the headline figures.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import wave
from pathlib import Path

import numpy as np
from pocketsphinx import Decoder

from verbatim.asr_server.engine import transcribe
from verbatim.asr_server.scoring import (
    load_turns,
    pooled_wer,
    results_text,
    speaker_attribution,
    splice_turns,
    word_error_rate,
)

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
DIALOGUES = ("therapy_dialogue", "therapy_dialogue_two_male")


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


def main() -> None:
    refs = dict(line.rstrip("\n").split("\t", 1) for line in (SAMPLES / "references.tsv").read_text().splitlines())
    refs["jfk.wav"] = (SAMPLES / "jfk.txt").read_text().strip()
    for name in DIALOGUES:
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
        res = transcribe(path)
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

    librivox = [n for n in refs if n not in ("jfk.wav", *(f"{d}.wav" for d in DIALOGUES))]
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
            }
        )
    )


if __name__ == "__main__":
    main()
