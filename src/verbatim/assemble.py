"""Join the parts of one recording (a phone's recorder restarted mid-session) into one file, in order.

A phone that recorded a session in parts — the browser was killed, the therapist continued —
sends each part as its own stream: a WebM (or MP4) whose timestamps start again at 0. Bytes
laid end to end are not one recording, so the parts' packets are remuxed (no re-encoding:
the audio is bit-identical) into one Matroska/WebM file whose timestamps run on from part to
part. Reading and writing stay sealed: the parts are read through `SealedReader`, the output
is sealed as it is written (Matroska written as a live, unseekable stream, so nothing needs
to be rewritten afterwards and no clear byte reaches the disk).

Why PyAV: FFmpeg's demuxers and muxers are what reads these containers; remuxing by hand is
not Verbatim's job.
"""

from __future__ import annotations

import os
from fractions import Fraction
from pathlib import Path

import av

from verbatim.errors import AudioUnreadable
from verbatim.sealed import KeyRing
from verbatim.sealed.stream import SealedReader, SegmentWriter

_WEBM_CODECS = frozenset({"opus", "vorbis"})


class _SealedSink:
    """An unseekable binary sink that seals what PyAV writes (what the muxer writes into)."""

    def __init__(self, writer: SegmentWriter):
        self.writer = writer

    def write(self, data: bytes) -> int:
        self.writer.write(data)
        return len(data)

    def seekable(self) -> bool:
        return False

    def flush(self) -> None:
        pass


def assemble(parts: list[Path], target: Path, ring: KeyRing) -> float:
    """Remux the sealed audio files ``parts`` in order into one new sealed file ``target``; returns seconds.

    ``target`` must not exist; it is created 0600 and fsynced. The first audio stream of each
    part is taken; every part must carry the same codec (one recorder, one format). Raises
    AudioUnreadable (nothing is left at ``target``) when a part cannot be read or the codecs
    differ.
    """
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            writer = SegmentWriter(fh, ring)
            seconds = _remux(parts, _SealedSink(writer), ring)
            writer.finish()
            fh.flush()
            os.fsync(fh.fileno())
        return seconds
    except BaseException:
        target.unlink(missing_ok=True)
        raise


def _container_for(codec: str) -> str:
    """WebM for its own codecs, WAV for PCM (what every recognizer reads), Matroska otherwise."""
    if codec in _WEBM_CODECS:
        return "webm"
    return "wav" if codec.startswith("pcm_") else "matroska"


def _remux(parts: list[Path], sink: _SealedSink, ring: KeyRing) -> float:
    output: av.container.OutputContainer | None = None
    out_stream = None
    codec = ""
    shift = Fraction(0)  # where the current part starts in the joined recording (seconds)
    try:
        for index, part in enumerate(parts):
            with SealedReader(part, ring) as reader, av.open(reader, "r") as source:
                if not source.streams.audio:
                    raise AudioUnreadable(f"part {index + 1} holds no audio")
                stream = source.streams.audio[0]
                if output is None:
                    codec = stream.codec_context.name
                    output = av.open(sink, "w", format=_container_for(codec))
                    out_stream = output.add_stream_from_template(stream)
                elif stream.codec_context.name != codec:
                    raise AudioUnreadable(f"part {index + 1} is {stream.codec_context.name}, not {codec} as the "
                                          "first part")
                assert out_stream is not None
                tb = stream.time_base or Fraction(1, 1000)
                first: int | None = None
                end = shift
                for packet in source.demux(stream):
                    if packet.pts is None:
                        continue  # the demuxer's end-of-stream marker
                    if first is None:
                        first = packet.pts
                    at = shift + (packet.pts - first) * tb
                    packet.stream = out_stream
                    packet.pts = packet.dts = int(at / (out_stream.time_base or Fraction(1, 1000)))
                    end = max(end, at + (packet.duration or 0) * tb)
                    output.mux(packet)
                shift = end
        if output is None:
            raise AudioUnreadable("no parts to join")
        return float(shift)
    except av.error.FFmpegError as exc:
        raise AudioUnreadable(f"a part of the recording cannot be read: {exc}") from exc
    finally:
        if output is not None:
            output.close()
