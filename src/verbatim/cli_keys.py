"""``verbatim keys``: the key ring that seals patient data at rest (init, list, rotate, export, import).

A lost key loses every session sealed with it: nothing here deletes a key, and ``export`` is the
backup an operator keeps off the machine (see README "Keys").
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from verbatim.config import Settings, get_settings
from verbatim.errors import KeyRingError
from verbatim.sealed.ring import KeyRing

keys_app = typer.Typer(help="The key ring that seals audio and recognizer jobs at rest.", no_args_is_help=True)
console = Console()


def stored_folders(settings: Settings) -> list[Path]:
    """Every folder where Verbatim keeps sealed files on this host."""
    return [settings.audio_dir, settings.incoming_dir, settings.tus_dir, settings.asr_dir]


def _ring(settings: Settings) -> KeyRing:
    """The ring the settings name; without any, the ring a local `up` or `demo` generated here, if there is one."""
    from verbatim.sealed.ring import development_ring_path, load_ring, read_ring_file

    if settings.encryption_keys is None and settings.key_file is None and not settings.development:
        made_here = development_ring_path(settings)
        if made_here.exists():
            return read_ring_file(made_here)
    return load_ring(settings)


def _ring_file(settings: Settings, file: Path | None) -> Path:
    from verbatim.sealed.ring import ring_file_of

    path = file or ring_file_of(settings)
    if path is None:
        raise KeyRingError("keys come from VERBATIM_ENCRYPTION_KEYS: add a key there (newest last), then run "
                           "`verbatim keys rotate`")
    return path


@keys_app.command("init")
def keys_init(file: Annotated[Path, typer.Option(help="Where to create the ring file")]) -> None:
    """Create a new ring file with one key (refuses to overwrite one)."""
    from verbatim.sealed.ring import create_ring_file, read_ring_file

    if file.exists():
        raise KeyRingError(f"{file} exists already: a ring is never overwritten")
    create_ring_file(file)
    ring = read_ring_file(file)
    console.print(f"created {file} with key {ring.current}; back it up with `verbatim keys export`")


@keys_app.command("list")
def keys_list() -> None:
    """The ring's keys, the current one, and how many stored files each still opens."""
    from verbatim.sealed.rotate import usage

    settings = get_settings()
    ring = _ring(settings)
    used = usage(stored_folders(settings))
    table = Table("key id", "current", "files sealed with it")
    for key_id in ring.keys:
        table.add_row(key_id, "yes" if key_id == ring.current else "", str(used.get(key_id, 0)))
    for key_id in sorted(set(used) - set(ring.keys)):
        table.add_row(f"[red]{key_id} (missing!)[/red]", "", str(used[key_id]))
    console.print(table)


@keys_app.command("rotate")
def keys_rotate(
    new_key: Annotated[bool, typer.Option(help="Add a fresh key to the ring file first")] = True,
) -> None:
    """Make a new key current (ring file) and re-seal every stored file under it. Old keys stay.

    Safe to interrupt and run again: every original stays readable until its copy is durable.
    Safe while Verbatim runs: its processes follow the ring file and take the new key at once.
    """
    from verbatim.crash import crash_point
    from verbatim.sealed.ring import add_key, ring_file_of
    from verbatim.sealed.rotate import rotate

    settings = get_settings()
    if new_key and ring_file_of(settings) is not None:
        _ring(settings)  # development: generate the first ring before adding to it
        key_id = add_key(_ring_file(settings, None))
        console.print(f"new current key {key_id}")
    ring = _ring(settings)
    done = rotate(stored_folders(settings), ring, after_each=lambda _: crash_point("mid_key_rotate"))
    console.print(f"re-sealed {len(done.resealed)} files under {ring.current}; {done.current} already were; "
                  f"{len(done.skipped)} busy or gone (run again later); {len(done.unreadable)} unreadable")
    for path, reason in done.unreadable:
        console.print(f"[red]unreadable[/red] {path}: {reason}")
    if done.unreadable:
        raise typer.Exit(1)


@keys_app.command("export")
def keys_export(out: Annotated[Path | None, typer.Option(help="Write here (0600) instead of stdout")] = None) -> None:
    """Print (or write) the ring file: the backup without which sealed data cannot be read."""
    import os

    from verbatim.sealed.ring import export_ring

    text = export_ring(_ring_file(get_settings(), None))
    if out is None:
        sys.stdout.write(text)
        return
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    console.print(f"wrote {out}")


@keys_app.command("import")
def keys_import(backup: Annotated[Path, typer.Argument(help="A file written by `verbatim keys export`")]) -> None:
    """Add a backup's keys to the ring file (never replaces a key; the current key is unchanged)."""
    from verbatim.sealed.ring import import_keys

    path = _ring_file(get_settings(), None)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    added = import_keys(path, backup.read_text())
    console.print(f"imported {len(added)} keys into {path}: {', '.join(added) or 'none new'}")
