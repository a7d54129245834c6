"""Record a known 5-minute file on the recorder page through real Chromium, with 2 browser kills and
3 network cuts; prints figures, asserts nothing (issue 26, item 8).

Run from the repository root (it takes the recording's length plus a few minutes)::

    python bench/recorder.py --data /work/shared/data/audio [--minutes 5] [--kills 2] [--cuts 3]

``--data`` is an outside set: a folder of 16 kHz WAV files with known words — ``<name>.json``
(turns ``[{"start_s", "end_s", "text"}]``), ``<name>.txt``, or a line ``<name>.wav<TAB>words`` of
``references.tsv``. Its files are joined (1 s of silence between them, whole files only) into a
source of at least ``--minutes``; its reference is every turn (or file) at its place.

What runs: ``verbatim api`` as a process (scratch PostgreSQL database, private embedded Redis) and
Debian's Chromium headless with a fake microphone playing the source, on a lasting profile (the
test rig, `tests.browser.recorder_rig`). The therapist signs in, records; the network is cut
(the API process SIGKILLed: its port closed, which cuts the service worker's fetches too) for
``--offline-s`` seconds, three times; the browser is SIGKILLed twice and relaunched on the same
profile after ``--dead-s`` seconds, its fake microphone playing the source from where the session
is by then (a session goes on while the phone is dead); the page finds the recording and continues
it as a new part. At the end of the source the therapist finishes; the session opens.

Figures (last stdout line, one JSON object):

* ``kills_survived``: kills after which the page found the recording and it went on (int);
* ``offline_periods``: cuts the page recorded through and caught up after (int);
* ``max_gap_s``: the longest stretch of audio the browser had captured (while it was alive and
  recording: each part from where its audio aligns, for as long as the page's recorder clock ran,
  read just before the kill or the finish) missing from the session's assembled recording, found
  by aligning the recording with the source (log-energy envelopes, 10 ms frames; the recording cut
  into its parts at the lengths the server's copies of the parts hold; each part's place by
  cross-correlation, then every 2 s window of it checked at that place);
* ``downtime_s``: time the browser was dead or not yet recording again (no recorder captures that);
* ``wer_delta``: the session's WER minus a direct upload's of the same source file, both over the
  audio the browser captured (the reference: turns with most of their span captured; the direct
  upload's words: those recognised in the captured spans). Both are recognised by the engine the
  asr-server runs (`verbatim.asr_server.engine.transcribe`, diarization off): the session's words
  are what the capture run would get for its recording;
* ``device_chunks_left``: chunks left in the browser's IndexedDB once the session exists (int);
* ``upload_lag_s_p95``: how far the server trails the microphone while online (recorded seconds
  minus seconds the server confirmed, sampled every second outside cuts, kills and catch-ups).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import wave
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
from playwright.sync_api import Page, sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the rig lives with the tests

from bench.scratch_db import database  # noqa: E402
from tests.browser.recorder_rig import (  # noqa: E402
    ApiProcess,
    Phone,
    device_storage,
    finish_and_open_session,
    saved_chunks,
    sign_in,
    start_recording,
    wait_for,
    wav_from,
)
from verbatim.audio import decode_pcm16k  # noqa: E402
from verbatim.auth import create_token  # noqa: E402
from verbatim.config import load_settings  # noqa: E402
from verbatim.db.repo import Repo  # noqa: E402
from verbatim.embedded import EmbeddedRedis, free_port  # noqa: E402
from verbatim.sealed.stream import SealedReader  # noqa: E402
from verbatim.storage import AudioVolume  # noqa: E402

RATE = 16000
FRAME = 160  # 10 ms
WINDOW_S = 2.0


@dataclass
class Turn:
    start_s: float
    end_s: float
    text: str


# --- the source ---------------------------------------------------------------------------------
def references(data: Path) -> dict[str, list[Turn]]:
    """Each WAV of ``data`` with known words: its turns (times within the file)."""
    tsv: dict[str, str] = {}
    if (data / "references.tsv").exists():
        for line in (data / "references.tsv").read_text().splitlines():
            name, _, words = line.partition("\t")
            if words:
                tsv[name.strip()] = words.strip()
    found: dict[str, list[Turn]] = {}
    for wav in sorted(data.glob("*.wav")):
        with wave.open(str(wav)) as w:
            if w.getframerate() != RATE or w.getnchannels() != 1 or w.getsampwidth() != 2:
                continue
            length = w.getnframes() / RATE
        if wav.with_suffix(".json").exists():
            found[wav.name] = [Turn(float(t["start_s"]), float(t["end_s"]), str(t["text"]))
                               for t in json.loads(wav.with_suffix(".json").read_text()) if t.get("text")]
        elif wav.with_suffix(".txt").exists():
            found[wav.name] = [Turn(0.0, length, wav.with_suffix(".txt").read_text().strip())]
        elif wav.name in tsv:
            found[wav.name] = [Turn(0.0, length, tsv[wav.name])]
    return found


def build_source(data: Path, seconds: float, target: Path) -> tuple[np.ndarray, list[Turn]]:
    """Join whole files of ``data`` (1 s of silence between) until ``seconds``; (int16 samples, turns)."""
    refs = references(data)
    if not refs:
        raise SystemExit(f"no 16 kHz mono WAV with known words in {data}")
    pieces: list[np.ndarray] = []
    turns: list[Turn] = []
    at = 0.0
    names = list(refs)
    i = 0
    while at < seconds:
        name = names[i % len(names)]
        i += 1
        with wave.open(str(data / name)) as w:
            samples = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
        length = len(samples) / RATE
        if at + length > seconds + 15 and any(
                _length(data / n) <= seconds + 15 - at for n in names):  # overshoots: a shorter file fits
            if i > 4 * len(names):
                break
            continue
        pieces += [samples, np.zeros(RATE, dtype="<i2")]
        turns += [Turn(at + t.start_s, at + t.end_s, t.text) for t in refs[name]]
        at += length + 1.0
    audio = np.concatenate(pieces)
    with wave.open(str(target), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE)
        out.writeframes(audio.tobytes())
    return audio, turns


def _length(path: Path) -> float:
    with wave.open(str(path)) as w:
        return w.getnframes() / w.getframerate()


# --- alignment ----------------------------------------------------------------------------------
def envelope(samples: np.ndarray) -> np.ndarray:
    """Log energy per 10 ms frame (float samples in any scale)."""
    x = samples.astype(np.float64)
    n = len(x) // FRAME
    frames = x[: n * FRAME].reshape(n, FRAME)
    return np.log10((frames ** 2).mean(axis=1) + 1e-10)


def best_offset(part: np.ndarray, source: np.ndarray, lo: int = 0, hi: int | None = None) -> tuple[int, float]:
    """(frame offset in ``source`` where ``part`` fits best within [lo, hi], normalised correlation)."""
    hi = len(source) - len(part) if hi is None else min(hi, len(source) - len(part))
    lo = max(0, lo)
    if hi < lo or len(part) < 10:
        return lo, 0.0
    seg = source[lo : hi + len(part)]
    p = (part - part.mean()) / (part.std() + 1e-9)
    corr = np.correlate(seg, p, mode="valid")
    csum = np.concatenate([[0.0], np.cumsum(seg)])
    csq = np.concatenate([[0.0], np.cumsum(seg ** 2)])
    n = len(p)
    mean = (csum[n:] - csum[:-n]) / n
    var = np.maximum((csq[n:] - csq[:-n]) / n - mean ** 2, 1e-12)
    score = corr / (n * np.sqrt(var))  # p has zero mean and unit deviation: Pearson's r per place
    k = int(np.argmax(score))
    return lo + k, float(score[k])


def covered_spans(recording: np.ndarray, source: np.ndarray,
                  part_lengths_s: list[float]) -> list[list[tuple[float, float]]]:
    """Per part, the source spans (seconds) its audio in ``recording`` holds.

    The part's place in the source is where its whole envelope correlates best; then every 2 s
    window (hop 0.5 s) finds its own place within 1.5 s of that, and each 10 ms frame takes the
    shift of the nearest window that could tell (speech, r ≥ 0.5). A chunk lost inside a part
    shifts the frames after it: the source frames no frame lands on are what is missing.
    """
    rec_env, src_env = envelope(recording), envelope(source)
    spans: list[list[tuple[float, float]]] = []
    start = 0
    for length_s in part_lengths_s:
        n = min(int(round(length_s * 100)), len(rec_env) - start)
        part = rec_env[start : start + n]
        start += n
        if len(part) < 50:
            spans.append([])
            continue
        place, _ = best_offset(part, src_env)
        win, hop = int(WINDOW_S * 100), int(WINDOW_S * 25)
        centres, shifts = [], []
        for w0 in range(0, max(1, len(part) - win + 1), hop):
            piece = part[w0 : w0 + win]
            at, r = best_offset(piece, src_env, place + w0 - 150, place + w0 + 150)
            if piece.std() >= 0.2 and r >= 0.5:
                centres.append(w0 + len(piece) / 2)
                shifts.append(at - w0)
        if not centres:
            centres, shifts = [len(part) / 2], [place]
        frames = np.arange(len(part))
        nearest = np.abs(frames[:, None] - np.asarray(centres)[None, :]).argmin(axis=1)
        landed = np.unique(frames + np.asarray(shifts)[nearest])
        runs: list[tuple[float, float]] = []
        for f in landed:
            if runs and f <= runs[-1][1] * 100 + 2:
                runs[-1] = (runs[-1][0], (f + 1) / 100)
            else:
                runs.append((f / 100, (f + 1) / 100))
        spans.append(runs)
    return spans


def _merge(spans: list[tuple[float, float]], slack: float = 0.02) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1] + slack:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def longest_missing(captured: tuple[float, float], covered: list[tuple[float, float]]) -> float:
    """The longest stretch of ``captured`` that no span of ``covered`` holds (seconds)."""
    a, b = captured
    longest, at = 0.0, a
    for c, d in _merge(covered):
        if d <= at:
            continue
        if c > at:
            longest = max(longest, min(c, b) - at)
        at = max(at, d)
        if at >= b:
            break
    return max(longest, b - at) if at < b else longest


# --- words --------------------------------------------------------------------------------------
def words_of(results: list[dict[str, Any]], spans: list[tuple[float, float]] | None = None) -> str:
    out = []
    for item in results:
        if item.get("type") != "word":
            continue
        mid = (float(item["start_time"]) + float(item["end_time"])) / 2
        if spans is None or any(a <= mid < b for a, b in spans):
            out.append(item["alternatives"][0]["content"])
    return " ".join(out)


def reference_in(turns: list[Turn], spans: list[tuple[float, float]]) -> str:
    """The words of the turns most of whose span lies in ``spans``."""
    kept = []
    for t in turns:
        inside = sum(max(0.0, min(b, t.end_s) - max(a, t.start_s)) for a, b in spans)
        if inside >= 0.5 * (t.end_s - t.start_s):
            kept.append(t.text)
    return " ".join(kept)


# --- the page -----------------------------------------------------------------------------------
def page_figures(page: Page) -> dict[str, Any]:
    """Recorded and sent seconds (the page's own figures), chunks waiting, online."""
    figures: dict[str, Any] = page.evaluate("""() => {
        const secs = (id) => document.getElementById(id).textContent.split(':').reduce((m, s) => m * 60 + Number(s), 0);
        const root = document.getElementById('recorder');
        return {recorded: secs('rec-elapsed'), sent: secs('rec-sent'), waiting: Number(root.dataset.waiting || 0),
                online: root.dataset.online !== 'no', state: root.dataset.state};
    }""")
    return figures


def part_recorded_s(page: Page) -> float:
    """Seconds the current part has recorded, by the page's recorder clock (MediaRecorder running)."""
    value: float = page.evaluate("""() => {
        const r = document.getElementById('recorder');
        const running = r.dataset.state === 'recording' ? Date.now() - Number(r.dataset.elapsedAt) : 0;
        return (Number(r.dataset.elapsedMs) + running - Number(r.dataset.partFromMs)) / 1000;
    }""")
    return value


def parts_saved(page: Page) -> list[dict[str, Any]]:
    """Each part of the unfinished recording, as the device's IndexedDB holds it: ``chunks`` saved
    (int), ``declared`` (its whole length sent: bool), ``upload`` (its tus upload id, or None)."""
    parts: list[dict[str, Any]] = page.evaluate("""() => new Promise((resolve, reject) => {
        const open = indexedDB.open("verbatim-recorder", 1);
        open.onerror = () => reject(open.error);
        open.onsuccess = () => {
          const r = open.result.transaction(["recordings"], "readonly").objectStore("recordings").getAll();
          r.onsuccess = () => {
            open.result.close();
            resolve(r.result.length ? r.result[0].parts.map((p) => ({chunks: p.nextSeq, declared: !!p.declared,
              upload: p.uploadUrl ? p.uploadUrl.split("/").pop() : null})) : []);
          };
        };
    })""")
    return parts


def part_seconds(path: Path, ring: Any) -> float:
    """Where the next part starts in the assembled recording: this part's first packet to its last
    packet's end (seconds), as `verbatim.assemble` joins parts (an upload file cut short by a kill
    reads up to its last whole packet)."""
    with SealedReader(path, ring) as reader, av.open(reader, "r") as container:
        stream = container.streams.audio[0]
        tb = stream.time_base or Fraction(1, 1000)
        first: int | None = None
        end = Fraction(0)
        for packet in container.demux(stream):
            if packet.pts is None:
                continue
            first = packet.pts if first is None else first
            end = max(end, (packet.pts - first + (packet.duration or 0)) * tb)
    return float(end)


class Clock:
    """Where the session is in the source, by wall time (the fake microphone plays in real time)."""

    def __init__(self) -> None:
        self.source_at = 0.0  # source second the current part's microphone started at
        self.since = time.monotonic()

    def now(self) -> float:
        return self.source_at + time.monotonic() - self.since


def sleep_until(clock: Clock, source_s: float, page: Page, lags: list[float], sample: bool) -> None:
    """Let the session run until the source reaches ``source_s``, sampling the upload lag every second."""
    deadline = time.monotonic() + (source_s - clock.now()) + 60
    while clock.now() < source_s:
        if time.monotonic() > deadline:
            raise SystemExit(f"the session clock never reached {source_s:.0f} s of the source")
        if sample:
            f = page_figures(page)
            if f["online"] and f["state"] == "recording":
                lags.append(max(0.0, f["recorded"] - f["sent"]))
        time.sleep(max(0.0, min(1.0, source_s - clock.now())))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="folder of WAVs with known words (outside set)")
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--kills", type=int, default=2)
    parser.add_argument("--cuts", type=int, default=3)
    parser.add_argument("--offline-s", type=float, default=15.0, help="how long each network cut lasts")
    parser.add_argument("--dead-s", type=float, default=5.0, help="how long the browser stays dead after a kill")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="verbatim-bench-recorder-"))
    scratch.chmod(0o755)  # an embedded PostgreSQL runs as another user under root
    source_path = scratch / "source.wav"
    source, turns = build_source(args.data, args.minutes * 60, source_path)
    length_s = len(source) / RATE
    print(f"source: {length_s:.1f} s from {args.data}, {len(turns)} reference turns", flush=True)
    redis_server = EmbeddedRedis(scratch / "redis", free_port())
    redis_server.start()
    api: ApiProcess | None = None
    try:
        with database(scratch) as db_url, sync_playwright() as pw:
            settings = load_settings(mode="development", database_url=db_url, redis_url=redis_server.url,
                                     data_dir=scratch / "data",
                                     log_level="WARNING")
            token = create_token(db_url, therapist="Bench Therapist", clinic="Bench Clinic")
            api = ApiProcess(settings, scratch / "api.log")
            api.start()
            phone = Phone(pw.chromium, scratch / "profile", scratch / "chromium.log")
            figures = record(args, api, phone, token, source_path, length_s, scratch)
            phone.close()
            sid = figures.pop("session_id")
            row = Repo(db_url).get(sid)
            ring = AudioVolume.from_settings(settings).ring
            assert row.audio_path is not None
            recording = decode_pcm16k(row.audio_path, ring)
            print(f"session {sid}: {row.audio_duration_s:.1f} s of audio in {len(figures['parts_s'])} parts",
                  flush=True)
            score(figures, recording, source, turns, row.audio_path, ring, source_path)
    finally:
        if api is not None:
            api.kill()
        redis_server.stop()
        shutil.rmtree(scratch, ignore_errors=True)


def record(args: argparse.Namespace, api: ApiProcess, phone: Phone, token: str, source_path: Path, length_s: float,
           scratch: Path) -> dict[str, Any]:
    """Drive the session; returns the timeline (captured spans, downtime, counts, lag samples) and the session id."""
    end_at = length_s - 3.0
    # Events spread over the source: cuts and kills alternate, none in the first or last 20 s.
    plan: list[str] = []
    cuts, kills_left = args.cuts, args.kills
    while cuts or kills_left:
        if cuts:
            plan.append("cut")
            cuts -= 1
        if kills_left:
            plan.append("kill")
            kills_left -= 1
    step = (end_at - 40) / (len(plan) + 1)
    clock = Clock()
    page = phone.launch(source_path)
    sign_in(page, api.url, token)
    start_recording(page)
    clock.since = time.monotonic()
    captured: list[tuple[float, float, float]] = []  # (estimated start, bench clock at end, recorder s)
    lags: list[float] = []
    downtime = 0.0
    kills = offline = 0
    part_start = 0.0  # source second the current part started at (estimated; the alignment finds it)
    for n, event in enumerate(plan):
        sleep_until(clock, 20 + step * (n + 1), page, lags, sample=True)
        if event == "cut":
            api.kill()
            page.locator("#recorder[data-online=no]").wait_for(timeout=60_000)
            sleep_until(clock, clock.now() + args.offline_s, page, lags, sample=False)
            api.start()
            page.locator("#recorder[data-online=yes]").wait_for(timeout=120_000)
            wait_for(lambda page=page: page_figures(page)["waiting"] <= 1,
                     120_000, "the page to catch up after a cut")
            offline += 1
            continue
        killed_at = clock.now()
        captured.append((part_start, killed_at, part_recorded_s(page)))
        dead_since = time.monotonic()
        phone.kill()
        time.sleep(args.dead_s)
        # The session went on meanwhile: the microphone resumes where it is now, plus the relaunch.
        part_start = killed_at + (time.monotonic() - dead_since) + 3.0
        page = phone.launch(wav_from(source_path, part_start, scratch / f"from-{n}.wav"))
        sign_in(page, api.url, token)
        page.locator("#rec-found").wait_for(timeout=120_000)
        page.get_by_role("button", name="Continue recording (a new part)").click()
        page.locator("#recorder[data-state=recording]").wait_for(timeout=60_000)
        # The microphone started its file (at part_start) when the part began: the clock follows it.
        clock.source_at, clock.since = part_start, time.monotonic()
        downtime += time.monotonic() - dead_since
        kills += 1
    sleep_until(clock, end_at, page, lags, sample=True)
    captured.append((part_start, clock.now(), part_recorded_s(page)))
    # Each earlier part's length is read from what the server holds of it, not from the device's
    # count of chunks: Chromium's chunks hold 1.02 s each (the first 60 ms Opus frame past each
    # 1000 ms), so counting seconds by chunks puts a part's last 1-2 s in the next part and reports
    # them missing. The parts are complete on the server once the page has declared their length.
    wait_for(lambda page=page: all(p["declared"] for p in parts_saved(page)[:-1]), 120_000,
             "the page to send every earlier part whole")
    parts = parts_saved(page)
    ring = AudioVolume.from_settings(api.settings).ring
    held_s = [part_seconds(api.settings.tus_dir / f"{p['upload']}.bin", ring) for p in parts[:-1]]
    print("parts: " + ", ".join(f"{p['chunks']} chunks" + (f", {s:.2f} s on the server" if i < len(held_s) else "")
                                for i, (p, s) in enumerate(zip(parts, held_s + [0.0], strict=True))), flush=True)
    total = saved_chunks(page)
    sid = finish_and_open_session(page)
    left = device_storage(page)["chunks"]
    print(f"recorded {total} s on the device in {len(parts)} parts; {kills} kills, {offline} cuts", flush=True)
    return {"session_id": sid, "captured": captured, "parts_s": held_s + [float(parts[-1]["chunks"])],
            "chunks": [p["chunks"] for p in parts], "downtime_s": downtime,
            "kills": kills, "offline": offline, "lags": lags, "device_chunks_left": left}


def gaps(timeline: list[tuple[float, float, float]], recording: np.ndarray, source: np.ndarray, parts_s: list[float],
         say: bool = False) -> tuple[float, list[tuple[float, float]]]:
    """(The longest captured stretch missing from ``recording`` in seconds, each part's captured span in the
    source), the recording split into parts of ``parts_s`` seconds."""
    covered = covered_spans(recording * 32768.0, source, parts_s)
    captured: list[tuple[float, float]] = []
    max_gap = 0.0
    for (est_start, end, recorded_s), spans in zip(timeline, covered, strict=True):
        if not spans:
            continue
        # Where this part's microphone really began is where its audio aligns; it captured for as
        # long as the page's recorder clock ran (read just before the kill), not the bench's clock.
        start = spans[0][0]
        span = (start, start + recorded_s)
        captured.append(span)
        gap = longest_missing(span, spans)
        if say:
            print(f"  (the bench's clock says {end - est_start:.1f} s, the recorder's {recorded_s:.1f} s)", flush=True)
            held = sum(b - a for a, b in spans)
            print(f"part captured {span[0]:.1f}–{span[1]:.1f} s of the source; held {held:.1f} s; "
                  f"longest gap {gap:.2f} s", flush=True)
        max_gap = max(max_gap, gap)
    return max_gap, captured


def score(figures: dict[str, Any], recording: np.ndarray, source: np.ndarray, turns: list[Turn], audio_path: str,
          ring: Any, source_path: Path) -> None:
    from verbatim.asr_server.engine import transcribe
    from verbatim.asr_server.scoring import word_error_rate

    parts_s: list[float] = figures["parts_s"]
    # The last part was stopped by the finish: it is the rest of the recording.
    parts_s[-1] = len(recording) / RATE - sum(parts_s[:-1])
    max_gap, captured = gaps(figures["captured"], recording, source, parts_s, say=True)
    counted = [float(n) for n in figures["chunks"][:-1]]
    counted_gap, _ = gaps(figures["captured"], recording, source, counted + [len(recording) / RATE - sum(counted)])
    print(f"(split by chunk counts, one chunk taken as 1 s, the longest gap would read {counted_gap:.2f} s)",
          flush=True)
    print("recognising the session's recording and the source (direct upload) …", flush=True)
    session_words = words_of(transcribe(audio_path, diarization="none", ring=ring))
    direct_words = words_of(transcribe(source_path, diarization="none"), captured)
    reference = reference_in(turns, captured)
    wer_session = word_error_rate(reference, session_words)
    wer_direct = word_error_rate(reference, direct_words)
    print(f"WER over the captured audio: session {wer_session:.3f}, direct upload {wer_direct:.3f}", flush=True)
    lags = sorted(figures["lags"])
    p95 = lags[min(len(lags) - 1, int(0.95 * len(lags)))] if lags else None
    print(json.dumps({
        "kills_survived": int(figures["kills"]), "offline_periods": int(figures["offline"]),
        "max_gap_s": round(max_gap, 2), "downtime_s": round(figures["downtime_s"], 1),
        "wer_delta": round(wer_session - wer_direct, 4), "device_chunks_left": int(figures["device_chunks_left"]),
        "upload_lag_s_p95": p95,
    }))


if __name__ == "__main__":
    main()
