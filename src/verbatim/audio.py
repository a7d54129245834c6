"""Audio helpers shared by the upload API and the local recognizer.

`probe` tells whether a file is audio Verbatim accepts and how long it is, without
decoding the whole file when the container states its length. `decode_pcm16k` turns
any accepted file into the one shape the recognizer works on: float32 mono samples in
[-1, 1] at 16 000 Hz.

Files are identified by their content (FFmpeg's probing, via PyAV), never by their
name: a text file called ``x.wav`` is rejected. Accepted containers and codecs:

* WAV (PCM, A-law, mu-law), FLAC, MP3;
* Ogg with Opus, Vorbis or FLAC;
* MP4/M4A/MOV with AAC or ALAC;
* WebM/Matroska with Opus, Vorbis, AAC, FLAC or MP3 (a video stream beside the audio is ignored).

Files Verbatim stores are sealed (`verbatim.sealed`): pass the key ring and they are read through
it, a chunk at a time; clear files (a user's own recording, a benchmark clip) are read as they are.

Every refusal is an `AudioUnreadable` whose message can be shown to the person who
uploaded the file.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import BinaryIO

import av
import av.error
import numpy as np

from verbatim.errors import AudioTooLong, AudioUnreadable, SealedDataError
from verbatim.sealed import KeyRing, open_plain

SAMPLE_RATE = 16_000
"""Sample rate (Hz) of the arrays `decode_pcm16k` returns."""

# FFmpeg demuxer name -> (label we report, codecs we accept in it).
_ACCEPTED: dict[str, tuple[str, frozenset[str]]] = {
    "wav": ("wav", frozenset({"pcm_alaw", "pcm_mulaw"})),  # plus every pcm_* (see _codec_ok)
    "flac": ("flac", frozenset({"flac"})),
    "ogg": ("ogg", frozenset({"opus", "vorbis", "flac"})),
    "mp3": ("mp3", frozenset({"mp3", "mp3float"})),
    "mov,mp4,m4a,3gp,3g2,mj2": ("mp4", frozenset({"aac", "alac"})),
    "matroska,webm": ("matroska", frozenset({"opus", "vorbis", "aac", "flac", "mp3", "mp3float"})),
}
# WebM is the Matroska profile limited to Opus/Vorbis audio; FFmpeg reads both with one demuxer.
_WEBM_CODECS = frozenset({"opus", "vorbis"})

# Decoding the tail of a compressed file checks it is complete; a file whose decodable
# audio ends this much before its stated duration is called truncated.
_TAIL_S = 2.0
_TRUNCATION_TOLERANCE_S = 1.0

# FFmpeg's exceptions plus what the OS or PyAV raise on unreadable input.
_DECODE_ERRORS: tuple[type[BaseException], ...] = (av.error.FFmpegError, OSError, ValueError, EOFError)


@dataclass(frozen=True)
class AudioInfo:
    """What `probe` learned about an accepted audio file.

    ``container`` is one of wav, flac, ogg, mp3, mp4, webm, matroska; ``codec`` is FFmpeg's codec
    name (e.g. pcm_s16le, opus, aac); ``duration_s`` is in seconds (> 0);
    ``sample_rate`` in Hz; ``channels`` the channel count of the audio stream.
    """

    container: str
    codec: str
    duration_s: float
    sample_rate: int
    channels: int


def _codec_ok(demuxer: str, codec: str) -> bool:
    allowed = _ACCEPTED[demuxer][1]
    return codec in allowed or (demuxer == "wav" and codec.startswith("pcm_"))


def _check_wav_header(f: BinaryIO, size: int) -> None:
    """Raise AudioUnreadable when a RIFF/WAVE file's data chunk runs past the end of the file.

    FFmpeg happily plays a truncated WAV (it just stops early) and reports the duration
    the header promises, so truncation is caught here from the chunk sizes alone.
    """
    f.seek(0)
    head = f.read(12)
    if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
        return  # RF64/W64 and friends: leave them to FFmpeg
    pos = 12
    while True:
        f.seek(pos)
        chunk = f.read(8)
        if len(chunk) < 8:
            raise AudioUnreadable("WAV file has no audio data chunk (file cut short?)")
        tag, length = chunk[:4], struct.unpack("<I", chunk[4:])[0]
        if tag == b"data":
            # 0 and 0xFFFFFFFF are what streaming writers leave when they could not seek back.
            if length not in (0, 0xFFFFFFFF) and pos + 8 + length > size:
                raise AudioUnreadable(
                    f"WAV file is truncated: header promises {length} bytes of audio, "
                    f"file holds {max(size - pos - 8, 0)}"
                )
            return
        pos += 8 + length + (length & 1)  # chunks are padded to even sizes


def _frame_end_s(frame: av.AudioFrame) -> float | None:
    if frame.pts is None or frame.time_base is None or not frame.sample_rate:
        return None
    return float(frame.pts * frame.time_base) + frame.samples / frame.sample_rate


def _decoded_end_s(container: av.container.InputContainer, stream: av.audio.stream.AudioStream,
                   limit_s: float | None = None) -> float:
    """Decode from the current position to the end; return the end time (s) of the last frame.

    Raises AudioTooLong as soon as the audio passes ``limit_s``: a file that states no length
    (a decode bomb of tiny packets, hours long) is never decoded past the limit it will fail.
    """
    end = 0.0
    samples = 0
    for frame in container.decode(stream):
        samples += frame.samples
        t = _frame_end_s(frame)
        # Some demuxers give no timestamps: fall back to counting samples from the start.
        end = t if t is not None else samples / (frame.sample_rate or 1)
        if limit_s is not None and end > limit_s:
            raise AudioTooLong(end, limit_s)
    return end


def probe(path: str | os.PathLike[str], max_duration_s: float | None = None, ring: KeyRing | None = None) -> AudioInfo:
    """Identify an audio file by its content and return its `AudioInfo`.

    ``max_duration_s``: raise AudioTooLong for audio longer than this (seconds) — without
    decoding past it when the length must be measured. ``ring``: the key ring for a sealed file.

    Reads only the header and (for compressed formats) the first frame and the last
    ~2 s, so a 1 GiB WAV is probed in milliseconds. A file whose container does not
    state its duration (e.g. a MediaRecorder WebM) is demuxed once (packets counted, not
    decoded) to refuse a decode bomb cheaply, then decoded once to measure it.

    Raises AudioUnreadable for: a missing or empty file, content that is not one of the
    accepted containers/codecs, no audio stream, a zero duration, a decode bomb (fewer than
    `MIN_BYTES_PER_S` bytes per second of audio), or a truncated or corrupt file. A sealed file
    that cannot be opened raises SealedDataError: a key or disk problem, never the audio's fault.
    Truncation is caught when the container states a length: WAV
    (header sizes vs file size), FLAC, MP3 with a Xing/Info/VBRI header, MP4 and Matroska/WebM
    (audio stops before the stated end). Ogg and header-less MP3 state no length, so a
    file cut short there is simply shorter audio (still decodable, duration measured).
    """
    try:
        fh = open_plain(path, ring)
    except OSError as exc:
        raise AudioUnreadable(f"cannot read file: {exc.strerror or exc}") from exc
    with fh:
        return _probe_open(fh, max_duration_s)


def _probe_open(fh: BinaryIO, max_duration_s: float | None) -> AudioInfo:
    size = fh.seek(0, os.SEEK_END)
    fh.seek(0)
    if size == 0:
        raise AudioUnreadable("file is empty")
    try:
        with av.open(fh, mode="r") as container:
            demuxer = container.format.name
            if demuxer not in _ACCEPTED:
                raise AudioUnreadable(f"unsupported file type ({container.format.long_name or demuxer})")
            if not container.streams.audio:
                raise AudioUnreadable("file has no audio stream")
            stream = container.streams.audio[0]
            codec = stream.codec_context.name
            if not _codec_ok(demuxer, codec):
                raise AudioUnreadable(f"unsupported audio codec {codec!r} in {_ACCEPTED[demuxer][0]} file")
            if demuxer == "wav":
                _check_wav_header(fh, size)
            stated = _stated_duration_s(container, stream)
            first = next(iter(container.decode(stream)), None)
            if first is None:
                raise AudioUnreadable("file holds no decodable audio")
            sample_rate = stream.codec_context.sample_rate or first.sample_rate
            channels = stream.codec_context.channels or len(first.layout.channels)
            if stated is None:
                # Demuxing is ~10× cheaper than decoding: refuse a bomb before decoding any of it.
                _refuse_bomb_by_demuxing(container, stream, size, max_duration_s)
                container.seek(0)
                duration = _decoded_end_s(container, stream, max_duration_s)
                first_end = _frame_end_s(first) or first.samples / first.sample_rate
                duration = max(duration, first_end)
            elif demuxer == "mp3" and not _mp3_has_length_header(fh):
                # Without a Xing/Info/VBRI header FFmpeg guesses the length from the
                # bitrate, which is wrong for VBR: add up the frames instead (no decoding).
                duration = _demuxed_duration_s(container, stream)
            else:
                duration = stated
                if demuxer != "wav":
                    _check_tail(container, stream, stated)
    except (AudioUnreadable, AudioTooLong, SealedDataError):
        # SealedDataError is not the audio's fault (a key, a damaged disk): never called unreadable.
        raise
    except _DECODE_ERRORS as exc:
        raise AudioUnreadable(f"not a readable audio file ({_describe(exc)})") from exc
    if not duration > 0:
        raise AudioUnreadable("audio has zero duration")
    if max_duration_s is not None and duration > max_duration_s:
        raise AudioTooLong(duration, max_duration_s)
    # The audio really reaches `duration` (stated lengths passed the tail check): so few bytes
    # for so long is a bomb, not a truncated recording.
    if duration >= BOMB_CHECK_AFTER_S and size / duration < MIN_BYTES_PER_S:
        raise _bomb(size, duration)
    label = _ACCEPTED[demuxer][0]
    if label == "matroska" and codec in _WEBM_CODECS:
        label = "webm"
    return AudioInfo(
        container=label,
        codec=codec,
        duration_s=float(duration),
        sample_rate=int(sample_rate),
        channels=int(channels),
    )


MIN_BYTES_PER_S = 250
"""Fewest file bytes per second of audio a recording may have (2 kbit/s).

Speech codecs a phone records with need far more: Opus ≥ 6 kbit/s (750 B/s), AMR-NB 4.75 kbit/s,
AAC and MP3 more. A bomb of 2-byte Opus packets holds about 80 B/s (1.4 MB for 5 h).
"""

BOMB_CHECK_AFTER_S = 1800.0
"""Audio (s) a file may run before its bytes per second are judged: a long silent start is not a bomb."""


def _bomb(size: int, seconds: float) -> AudioUnreadable:
    return AudioUnreadable(
        f"refused as a decompression bomb: {size} bytes already decode to {seconds:.0f} s of audio "
        f"(fewer than {MIN_BYTES_PER_S} bytes per second; no recording is that small)"
    )


def _refuse_bomb_by_demuxing(container: av.container.InputContainer, stream: av.audio.stream.AudioStream,
                             size: int, limit_s: float | None) -> None:
    """Walk the packets (no decoding) and refuse a bomb as soon as it shows itself.

    Raises AudioUnreadable once ``BOMB_CHECK_AFTER_S`` of audio came from fewer than
    ``MIN_BYTES_PER_S`` bytes per second, or once the packets' timestamps pass ``limit_s`` by
    more than a second (AudioTooLong; the decode that follows measures exactly below that).
    """
    if stream.time_base is None:
        return
    tb = float(stream.time_base)
    container.seek(0)
    seen = 0
    end = 0.0
    for packet in container.demux(stream):
        if packet.stream is not stream or packet.size == 0:
            continue
        seen += packet.size
        if packet.pts is not None:
            end = max(end, (packet.pts + (packet.duration or 0)) * tb)
        elif packet.duration:
            end += packet.duration * tb
        if end >= BOMB_CHECK_AFTER_S and seen / end < MIN_BYTES_PER_S:
            raise _bomb(seen, end)
        if limit_s is not None and end > limit_s + 1.0:
            raise AudioTooLong(end, limit_s)


def _mp3_has_length_header(f: BinaryIO) -> bool:
    """True when the first MP3 frame carries a Xing/Info/VBRI header (an exact frame count)."""
    f.seek(0)
    head = f.read(10)
    start = 0
    if head[:3] == b"ID3" and len(head) == 10:
        # ID3v2 size: four 7-bit bytes, plus the 10-byte header.
        start = 10 + ((head[6] << 21) | (head[7] << 14) | (head[8] << 7) | head[9])
    f.seek(start)
    first_frame = f.read(4096)
    return any(tag in first_frame for tag in (b"Xing", b"Info", b"VBRI"))


def _demuxed_duration_s(container: av.container.InputContainer, stream: av.audio.stream.AudioStream) -> float:
    """Sum of the stream's packet durations (s), read without decoding."""
    container.seek(0)
    ticks = sum(packet.duration or 0 for packet in container.demux(stream) if packet.stream is stream)
    return float(ticks * stream.time_base) if stream.time_base is not None else 0.0


def _stated_duration_s(container: av.container.InputContainer, stream: av.audio.stream.AudioStream) -> float | None:
    """Duration (s) the container states for the stream, or None when it states none."""
    if stream.duration is not None and stream.time_base is not None and stream.duration > 0:
        return float(stream.duration * stream.time_base)
    if container.duration is not None and container.duration > 0:
        return container.duration / av.time_base
    return None


def _check_tail(container: av.container.InputContainer, stream: av.audio.stream.AudioStream, stated_s: float) -> None:
    """Decode the last ~2 s and raise AudioUnreadable if the audio stops well before ``stated_s``."""
    start = max(stated_s - _TAIL_S, 0.0)
    if stream.time_base is not None and start > 0:
        container.seek(int(start / stream.time_base), stream=stream, backward=True, any_frame=False)
    end = _decoded_end_s(container, stream)
    if start == 0.0 or end > 0.0:
        if end < stated_s - max(_TRUNCATION_TOLERANCE_S, 0.02 * stated_s):
            raise AudioUnreadable(f"file is truncated: audio stops at {end:.1f} s of a stated {stated_s:.1f} s")
    else:
        raise AudioUnreadable(f"file is truncated: no audio near its stated end ({stated_s:.1f} s)")


def _describe(exc: BaseException) -> str:
    if isinstance(exc, av.error.FFmpegError):
        return exc.strerror or type(exc).__name__
    return str(exc) or type(exc).__name__


def decode_pcm16k(path: str | os.PathLike[str], ring: KeyRing | None = None) -> np.ndarray:
    """Decode an accepted audio file (sealed: opened with ``ring``) to mono float32 in [-1, 1] at 16 000 Hz.

    Returns a 1-D array of shape (n_samples,); ``n_samples / 16000`` is the duration in
    seconds. Channels are averaged to mono and the rate converted by FFmpeg's resampler
    (PyAV `AudioResampler`), frame by frame: memory holds the output array plus one frame.

    Raises AudioUnreadable when the file cannot be opened or decoded, or holds no audio.
    """
    info = probe(path, ring=ring)
    # Preallocate from the probed duration (plus slack) so the output is not built from
    # a list of chunks and then copied; grow by doubling if the estimate was short.
    out = np.empty(int(info.duration_s * SAMPLE_RATE * 1.01) + SAMPLE_RATE, dtype=np.float32)
    n = 0
    try:
        with open_plain(path, ring) as fh, av.open(fh, mode="r") as container:
            stream = container.streams.audio[0]
            resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
            frames = container.decode(stream)
            while True:
                frame = next(frames, None)
                for res in resampler.resample(frame):
                    chunk = res.to_ndarray().reshape(-1)
                    if n + chunk.size > out.size:
                        out = np.resize(out, max(out.size * 2, n + chunk.size))
                    out[n : n + chunk.size] = chunk
                    n += chunk.size
                if frame is None:  # resample(None) above flushed the resampler
                    break
    except SealedDataError:
        raise
    except _DECODE_ERRORS as exc:
        raise AudioUnreadable(f"audio could not be decoded ({_describe(exc)})") from exc
    if n == 0:
        raise AudioUnreadable("file holds no decodable audio")
    np.clip(out[:n], -1.0, 1.0, out=out[:n])
    return out[:n].copy() if n < out.size * 0.9 else out[:n]
