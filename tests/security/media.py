"""Files that are not what they claim: decode bombs and non-recordings, built on the fly."""

from __future__ import annotations

import os
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

#: a 2-byte Opus packet of 120 ms: TOC 0xfb (CELT fullband 20 ms frames, code 3: several frames),
#: then 0x06 (six frames, constant bitrate) — each frame 0 bytes long, decoded as silence
SILENT_120MS = b"\xfb\x06"
PACKET_SAMPLES = 5760  # 120 ms at 48 kHz


def opus_bomb(path: Path, seconds: int) -> Path:
    """A WebM with no Duration (live mode) of ``seconds`` of 2-byte silent Opus packets (120 ms each).

    5 h is 150 000 packets in about 1.4 MB: hours of audio for almost no bytes.
    """
    with av.open(str(path), "w", format="webm", options={"live": "1"}) as out:
        stream = out.add_stream("libopus", rate=48000)
        stream.layout = "mono"
        first = av.AudioFrame.from_ndarray(np.zeros((1, 960), dtype=np.int16), format="s16", layout="mono")
        first.sample_rate, first.pts = 48000, 0
        list(stream.encode(first))  # initialises the codec's header
        for i in range(seconds * 48000 // PACKET_SAMPLES):
            packet = av.Packet(SILENT_120MS)
            pts = i * PACKET_SAMPLES
            packet.stream, packet.pts, packet.dts, packet.duration = stream, pts, pts, PACKET_SAMPLES
            packet.time_base = Fraction(1, 48000)
            out.mux(packet)
    return path


WAV_HEADER_ONLY = (b"RIFF" + (36).to_bytes(4, "little") + b"WAVEfmt " + (16).to_bytes(4, "little")
                   + (1).to_bytes(2, "little") + (1).to_bytes(2, "little") + (16000).to_bytes(4, "little")
                   + (32000).to_bytes(4, "little") + (2).to_bytes(2, "little") + (16).to_bytes(2, "little")
                   + b"data" + (0).to_bytes(4, "little"))

#: name → bytes of a file that is not a usable recording
NOT_RECORDINGS: dict[str, bytes] = {
    "empty": b"",
    "png": b"\x89PNG\r\n\x1a\n" + b"\x00" * 2048,
    "elf": b"\x7fELF\x02\x01\x01" + b"\x00" * 4096,
    "wav_header_only": WAV_HEADER_ONLY,
    "random_64k": os.urandom(64 * 1024),
    "text": b"this is not a recording\n" * 100,
    "ebml_only": bytes.fromhex("1a45dfa3") + b"\x9f" + b"\x42\x86\x81\x01" * 8,
    "html": b"<!doctype html><html><body><script>alert(1)</script></body></html>",
}
