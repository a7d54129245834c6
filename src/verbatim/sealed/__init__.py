"""Patient data at rest: sealed (AES-256-GCM) files and the key ring that opens them.

`stream` is the file format (appendable segments of authenticated chunks), `ring` the keys,
`rotate` re-seals old files under the newest key. Every recording, tus upload and local
recognizer job file Verbatim writes goes through here; see docs/DESIGN.md "Data at rest".
"""

from verbatim.sealed.ring import KeyRing, load_ring
from verbatim.sealed.stream import (
    SealedReader,
    SegmentWriter,
    is_sealed,
    iter_plain,
    open_plain,
    read_sealed,
    seal_file,
    write_sealed_atomic,
)

__all__ = [
    "KeyRing", "SealedReader", "SegmentWriter", "is_sealed", "iter_plain", "load_ring", "open_plain",
    "read_sealed", "seal_file", "write_sealed_atomic",
]
