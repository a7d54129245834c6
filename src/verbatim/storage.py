"""The audio volume: finished recordings, sealed, written atomically, deleted only when replaced.

A recording is written under ``incoming/`` as it arrives — sealed with the key ring's current
key (`verbatim.sealed`), so no clear audio ever reaches the disk — fsynced, then renamed into
``audio/<session id>.audio``: ``audio/`` only ever holds complete files. Folders are 0700,
files 0600.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from verbatim.sealed import KeyRing, load_ring, open_plain, seal_file

if TYPE_CHECKING:
    from verbatim.config import Settings


class AudioVolume:
    """Where recordings live between upload and the recognizer's acknowledgement."""

    def __init__(self, audio_dir: Path, incoming_dir: Path, ring: KeyRing):
        self.audio_dir = audio_dir
        self.incoming_dir = incoming_dir
        self.ring = ring
        private_dir(audio_dir)
        private_dir(incoming_dir)

    @classmethod
    def from_settings(cls, settings: Settings) -> AudioVolume:
        """The volume under ``settings.data_dir`` with the settings' key ring (KeyRingError without one)."""
        return cls(settings.audio_dir, settings.incoming_dir, load_ring(settings))

    def open(self, path: str | Path) -> BinaryIO:
        """A recording's plain text, for reading (seekable; decrypted a chunk at a time)."""
        return open_plain(path, self.ring)

    def seal_incoming(self, pieces: Iterable[bytes]) -> Path:
        """Seal ``pieces`` into a new ``incoming/`` file (fsynced) and return its path; for tools and tests."""
        target = self.new_incoming()
        try:
            seal_file(target, iter(pieces), self.ring)
        except BaseException:
            target.unlink(missing_ok=True)
            raise
        return target

    def path_for(self, session_id: uuid.UUID) -> Path:
        """Final path of a session's recording."""
        return self.audio_dir / f"{session_id}.audio"

    def new_incoming(self) -> Path:
        """A fresh temporary path for an upload in progress (name carries no user input)."""
        return self.incoming_dir / f"{uuid.uuid4().hex}.part"

    def commit(self, incoming: Path, session_id: uuid.UUID) -> Path:
        """fsync ``incoming``, rename it to the session's final path and fsync the folder."""
        with open(incoming, "rb") as fh:
            os.fsync(fh.fileno())
        final = self.path_for(session_id)
        os.replace(incoming, final)
        # The orphan grace counts from arrival here, not from the last byte written upstream.
        os.utime(final)
        fsync_dir(self.audio_dir)
        return final

    def delete(self, path: str | Path | None) -> bool:
        """Delete a recording; True if a file was removed. Missing files count as deleted."""
        if not path:
            return False
        try:
            os.unlink(path)
        except FileNotFoundError:
            return False
        fsync_dir(Path(path).parent)
        return True

    def delete_stale(self, path: Path, age_s: float) -> bool:
        """Delete ``path`` only if it is still unchanged for ``age_s`` seconds (checked again right now)."""
        try:
            if path.stat().st_mtime >= time.time() - age_s:
                return False
        except FileNotFoundError:
            return False
        return self.delete(path)

    def older_than(self, folder: Path, age_s: float) -> list[Path]:
        """Files in ``folder`` last modified more than ``age_s`` seconds ago."""
        cutoff = time.time() - age_s
        out = []
        for entry in folder.iterdir():
            with contextlib.suppress(FileNotFoundError):
                if entry.is_file() and entry.stat().st_mtime < cutoff:
                    out.append(entry)
        return out


def private_dir(folder: Path) -> None:
    """Create ``folder`` (and parents) if needed and make it 0700: patient data is the owner's alone."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)


def fsync_dir(folder: Path) -> None:
    """fsync a folder, so a rename or unlink in it is durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
