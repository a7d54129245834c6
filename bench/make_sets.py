"""Build the recognizer's own test sets from synthetic voices, with exact turn times.

Run from the repository root: ``python bench/make_sets.py [OUT_DIR]`` (default ``bench/sets``).
Needs ``espeak-ng``, ``flite`` and ``sox`` on PATH (Debian: ``apt-get install espeak-ng flite sox``).
Writes sets in the format ``bench/asr.py --manifest`` reads (16 kHz mono 16-bit WAVs, paths
relative to the manifest):

* ``flips/manifest.json`` — pairs of short sentences that differ only by a word that flips the
  meaning (can/can't, do/don't, will/won't, did/didn't, is/isn't, a number, a time), each in
  several synthetic voices; every item names its flip word (``"flip_words"``). Scores
  ``flip_flag_recall``.
* ``flips_more/calibration.json`` and ``flips_more/heldout.json`` — 24 more such pairs (other
  sentences, eight voices), split by pair into two halves of alike make-up (negations, numbers,
  times): the doubt thresholds (`verbatim.asr_server.flips`) are calibrated on ``flips`` plus the
  calibration half (``bench/flip_calibrate.py``) and reported on the held-out half.
* ``alike/manifest.json`` — a three-person couples dialogue in three espeak-ng voices close in
  pitch (therapist, client_a, client_b), exact turn times written as the audio is joined
  (0.5 s of digital silence between turns), ``"speakers": 3``.

Deterministic for a given espeak-ng/flite version; the generated files are not the point, the
manifest format is: any set in that format can be scored.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import wave
from pathlib import Path

import numpy as np

from verbatim.asr_server.pcm_wav import write_pcm16

RATE = 16000

FLIP_PAIRS = [
    ("I can do that on Monday.", "I can't do that on Monday.", "can", "can't"),
    ("I do want to go back to work.", "I don't want to go back to work.", "do", "don't"),
    ("I will call my sister tonight.", "I won't call my sister tonight.", "will", "won't"),
    ("I did take the pills this morning.", "I didn't take the pills this morning.", "did", "didn't"),
    ("It is safe for me at home.", "It isn't safe for me at home.", "is", "isn't"),
    ("I took two of the tablets.", "I took ten of the tablets.", "two", "ten"),
    ("I woke up at four again.", "I woke up at five again.", "four", "five"),
    ("We meet at three on Thursday.", "We meet at nine on Thursday.", "three", "nine"),
]
# (plain, flipped, word in plain, word in flipped, half): the halves alternate within each kind of
# word, so both hold negations, numbers and times.
MORE_FLIP_PAIRS = [
    ("She can sleep through the night now.", "She can't sleep through the night now.", "can", "can't", "calibration"),
    ("I can remember what happened.", "I can't remember what happened.", "can", "can't", "heldout"),
    ("He does drink on weekends.", "He doesn't drink on weekends.", "does", "doesn't", "calibration"),
    ("I do feel safe with him.", "I don't feel safe with him.", "do", "don't", "heldout"),
    ("She will come to the next session.", "She won't come to the next session.", "will", "won't", "calibration"),
    ("My son would talk to me after school.", "My son wouldn't talk to me after school.", "would", "wouldn't",
     "heldout"),
    ("He did hit me last week.", "He didn't hit me last week.", "did", "didn't", "calibration"),
    ("I could tell my mother about it.", "I couldn't tell my mother about it.", "could", "couldn't", "heldout"),
    ("The new dose is helping.", "The new dose isn't helping.", "is", "isn't", "calibration"),
    ("I was afraid to leave the house.", "I wasn't afraid to leave the house.", "was", "wasn't", "heldout"),
    ("I have felt like hurting myself.", "I haven't felt like hurting myself.", "have", "haven't", "calibration"),
    ("The dreams are getting worse.", "The dreams aren't getting worse.", "are", "aren't", "heldout"),
    ("I should stop the medication.", "I shouldn't stop the medication.", "should", "shouldn't", "calibration"),
    ("We were arguing about money again.", "We weren't arguing about money again.", "were", "weren't", "heldout"),
    ("I sleep about six hours a night.", "I sleep about seven hours a night.", "six", "seven", "calibration"),
    ("She has been sober for eight months.", "She has been sober for eighteen months.", "eight", "eighteen",
     "heldout"),
    ("He takes fifteen milligrams each morning.", "He takes fifty milligrams each morning.", "fifteen", "fifty",
     "calibration"),
    ("It happened five years ago.", "It happened nine years ago.", "five", "nine", "heldout"),
    ("My daughter is four years old.", "My daughter is fourteen years old.", "four", "fourteen", "calibration"),
    ("I drink three glasses of wine a day.", "I drink two glasses of wine a day.", "three", "two", "heldout"),
    ("The appointment is at eleven tomorrow.", "The appointment is at seven tomorrow.", "eleven", "seven",
     "calibration"),
    ("I go to bed at one in the morning.", "I go to bed at two in the morning.", "one", "two", "heldout"),
    ("Call me after six tonight.", "Call me after eight tonight.", "six", "eight", "calibration"),
    ("I wake up at half past four.", "I wake up at half past five.", "four", "five", "heldout"),
]
MORE_FLIP_VOICES = [("espeak", "en-us"), ("espeak", "en-us+m3"), ("espeak", "en-us+f2"), ("espeak", "en-gb+m2"),
                    ("flite", "slt"), ("flite", "rms"), ("flite", "kal16"), ("flite", "awb")]
FLIP_VOICES = [("espeak", "en-us"), ("espeak", "en-us+m3"), ("espeak", "en-us+f2"),
               ("flite", "slt"), ("flite", "rms"), ("flite", "kal16")]

# Three voices close in pitch: one espeak-ng English voice, three variants, pitches 40-50.
ALIKE_VOICES = {"therapist": ("en-us+m1", 45), "client_a": ("en-us+m3", 50), "client_b": ("en-us+m2", 40)}
ALIKE_SCRIPT = [
    ("therapist", "Thank you both for coming in. Last week you each said the evenings were the hardest part."),
    ("client_a", "They still are. By the time we sit down to eat we are both too tired to talk."),
    ("client_b", "And when we do talk it turns into a list of chores."),
    ("therapist", "What would a better evening look like for each of you?"),
    ("client_b", "Ten quiet minutes together before anything else. No phones."),
    ("client_a", "I can do that. I would like us to take a walk on Sundays too."),
    ("therapist", "So ten minutes each evening, and a walk on Sunday. Is that fair to both of you?"),
    ("client_b", "Yes. I can do that."),
    ("client_a", "Me too. I will set a reminder."),
    ("therapist", "Good. Next week we will look at how it went."),
]


def _say(engine: str, voice: str, text: str, out: Path, pitch: int | None = None) -> np.ndarray:
    raw = out.with_suffix(".raw.wav")
    if engine == "espeak":
        cmd = ["espeak-ng", "-v", voice, "-s", "160", "-w", str(raw)]
        if pitch is not None:
            cmd += ["-p", str(pitch)]
        subprocess.run([*cmd, text], check=True)
    else:
        subprocess.run(["flite", "-voice", voice, "-t", text, "-o", str(raw)], check=True)
    subprocess.run(["sox", str(raw), "-r", str(RATE), "-c", "1", "-b", "16", str(out)], check=True)
    raw.unlink()
    with wave.open(str(out)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")




def _flip_items(out: Path, prefix: str, pairs: list[tuple[str, str, str, str]],
                voices: list[tuple[str, str]]) -> list[dict[str, object]]:
    """Each pair in each voice, both sides, 0.25 s of silence around each; manifest items."""
    items = []
    for p, (plain, flipped, word_a, word_b) in enumerate(pairs):
        for engine, voice in voices:
            for side, (text, word) in enumerate(((plain, word_a), (flipped, word_b))):
                name = f"{prefix}{p:02d}_{engine}_{voice.replace('+', '-')}_{'ab'[side]}.wav"
                pcm = _say(engine, voice, text, out / name)
                pad = np.zeros(RATE // 4, dtype=np.int16)
                write_pcm16(out / name, np.concatenate([pad, pcm, pad]))
                items.append({"id": name.removesuffix(".wav"), "audio": name, "text": text,
                              "flip_words": [word], "synthetic": True})
    return items


def flips(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    items = _flip_items(out, "flip", FLIP_PAIRS, FLIP_VOICES)
    (out / "manifest.json").write_text(json.dumps({"items": items}, indent=1))


def flips_more(out: Path) -> None:
    """The further pairs, one manifest per half (`MORE_FLIP_PAIRS`); ids are "more<pair>_…"."""
    out.mkdir(parents=True, exist_ok=True)
    for half in ("calibration", "heldout"):
        pairs = [pair[:4] for pair in MORE_FLIP_PAIRS if pair[4] == half]
        items = _flip_items(out, f"more_{half[:3]}", pairs, MORE_FLIP_VOICES)
        (out / f"{half}.json").write_text(json.dumps({"items": items}, indent=1))


def alike(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    pieces: list[np.ndarray] = []
    turns: list[dict[str, object]] = []
    pos = 0
    gap = np.zeros(RATE // 2, dtype=np.int16)
    with tempfile.TemporaryDirectory() as tmp:
        for i, (speaker, text) in enumerate(ALIKE_SCRIPT):
            voice, pitch = ALIKE_VOICES[speaker]
            pcm = _say("espeak", voice, text, Path(tmp) / f"t{i}.wav", pitch)
            # espeak pads each utterance with silence: trim it so turn times are the speech's.
            loud = np.flatnonzero(np.abs(pcm.astype(np.int32)) > 200)
            pcm = pcm[loud[0] : loud[-1] + 1] if loud.size else pcm
            if pieces:
                pieces.append(gap)
                pos += gap.size
            turns.append({"speaker": speaker, "start_s": pos / RATE, "end_s": (pos + pcm.size) / RATE, "text": text})
            pieces.append(pcm)
            pos += pcm.size
    write_pcm16(out / "couples_alike.wav", np.concatenate(pieces))
    item = {"id": "couples_alike", "audio": "couples_alike.wav", "text": " ".join(text for _, text in ALIKE_SCRIPT),
            "turns": turns, "speakers": 3, "synthetic": True}
    (out / "manifest.json").write_text(json.dumps({"items": [item]}, indent=1))


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent / "sets"
    flips(root / "flips")
    flips_more(root / "flips_more")
    alike(root / "alike")
    print(json.dumps({"flips": str(root / "flips" / "manifest.json"),
                      "flips_calibration": str(root / "flips_more" / "calibration.json"),
                      "flips_heldout": str(root / "flips_more" / "heldout.json"),
                      "alike": str(root / "alike" / "manifest.json")}))


if __name__ == "__main__":
    main()
