"""Probing an upload in a confined child process: FFmpeg parses hostile bytes, not the API.

An uploaded file is the most hostile input the API takes, and FFmpeg's demuxers and decoders are
large C code. `probe_confined` runs `verbatim.audio.probe` in a child forked from a small
forkserver (started once per API process, with PyAV already imported, so each probe forks in
milliseconds) under three limits from the settings: address space (``probe_memory_mib`` above
what the child starts with, RLIMIT_AS), CPU time (``probe_cpu_s``, RLIMIT_CPU) and wall clock
(``probe_timeout_s``, enforced by the parent, which kills the child). A child that dies or hits its
CPU or memory limit while reading the file is a refusal (AudioUnreadable), never a crash or a hung
request in the API. A child that dies before it read a byte (it could not start: no memory for the
fork, an import that failed) is ours, not the recording's: the child says "reading" once its limits
are set, and a death before that is ``Overloaded`` (503, nothing stored), never 422 for a good file.

Known cost: multiprocessing prepares every child by running the parent's main script again as
``__mp_main__`` (a ``python -m`` main is skipped; preloading ``"__main__"`` in the forkserver does
not help on CPython 3.11, whose forkserver looks for a ``main_path`` key that the preparation data
never has). A main script should import the application inside its ``main()``.

Probes are bounded per process (``probe_concurrency`` slots, default one per CPU core): 30 uploads
at once must not run 30 probes at once, or each gets a thirtieth of the machine and runs out of
wall clock. An upload waits up to ``probe_wait_s`` for a slot; the wall clock starts once it has
one. No slot in time, or a probe past its wall clock (the CPU limit, which a hostile file hits,
is lower), is our overload, not the file's fault: ``Overloaded`` (503 with Retry-After, nothing
stored) — a phone told "unreadable" may discard the only copy.

Why not a process pool: a pool cannot kill one runaway task without tearing itself down, and a
pool process reused after parsing a hostile file is not a clean process.
"""

from __future__ import annotations

import math
import multiprocessing
import multiprocessing.connection
import os
import resource
import threading
import time
from dataclasses import asdict
from typing import Any

import psutil
import structlog

from verbatim.audio import AudioInfo, probe
from verbatim.config import Settings
from verbatim.errors import AudioTooLong, AudioUnreadable, Overloaded, SealedDataError
from verbatim.sealed import KeyRing

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["verbatim.audio"])
log = structlog.get_logger("verbatim.confined")


_slots_lock = threading.Lock()
_slots: dict[int, threading.BoundedSemaphore] = {}


def probe_slots(settings: Settings) -> threading.BoundedSemaphore:
    """This process's probe slots (``probe_concurrency``, 0 → one per CPU core)."""
    size = settings.probe_concurrency or os.cpu_count() or 1
    with _slots_lock:
        slots = _slots.get(size)
        if slots is None:
            slots = _slots[size] = threading.BoundedSemaphore(size)
        return slots


def probe_confined(path: str | os.PathLike[str], ring: KeyRing | None, settings: Settings,
                   max_duration_s: float | None = None) -> AudioInfo:
    """`verbatim.audio.probe` in a confined child, once a probe slot is free; same result and errors.

    Raises AudioUnreadable (as probe does, and also when the child runs out of CPU or memory, or
    dies), AudioTooLong, and Overloaded (503) when no slot freed within ``probe_wait_s`` or the
    probe ran past its wall clock.
    """
    slots = probe_slots(settings)
    if not slots.acquire(timeout=settings.probe_wait_s):
        raise Overloaded(f"every upload check stayed busy for {settings.probe_wait_s:.0f} s; "
                         "nothing was stored — send the recording again shortly",
                         retry_after_s=_retry_after(settings))
    try:
        return _probe(path, ring, settings, max_duration_s)
    finally:
        slots.release()


def _retry_after(settings: Settings) -> float:
    # About one probe's worth of waiting: long enough for a slot to free, short for a phone.
    return float(min(30, max(1, math.ceil(settings.probe_timeout_s / 6))))


def _probe(path: str | os.PathLike[str], ring: KeyRing | None, settings: Settings,
           max_duration_s: float | None) -> AudioInfo:
    receive, send = _CONTEXT.Pipe(duplex=False)
    child = _CONTEXT.Process(
        target=_child_main, name="verbatim-probe", daemon=True,
        args=(send, os.fspath(path), ring, max_duration_s, settings.probe_cpu_s, settings.probe_memory_mib),
    )
    child.start()
    send.close()
    reading = False
    deadline = time.monotonic() + settings.probe_timeout_s
    try:
        if receive.poll(settings.probe_timeout_s):
            reading = receive.recv() == ("reading", None)
        if not reading or not receive.poll(max(0.0, deadline - time.monotonic())):
            # The CPU limit (below the wall clock) ends a hostile file's decode; running out of
            # wall clock first means the machine is loaded — ours to fix, not the recording's.
            raise Overloaded(f"checking the recording took longer than {settings.probe_timeout_s:.0f} s on a busy "
                             "server; nothing was stored — send it again shortly",
                             retry_after_s=_retry_after(settings))
        answer: tuple[str, Any] = receive.recv()
    except EOFError:
        child.join(settings.probe_timeout_s)
        log.warning("probe_child_died", reading=reading, exitcode=child.exitcode)
        if not reading:
            raise Overloaded("the upload check could not start on a busy server; nothing was stored — "
                             "send the recording again shortly", retry_after_s=_retry_after(settings)) from None
        raise AudioUnreadable("reading the file needed more CPU or memory than any recording does; "
                              "it is not a recording Verbatim can take") from None
    finally:
        receive.close()
        if child.is_alive():
            child.kill()
        child.join()
    kind, value = answer
    if kind == "ok":
        return AudioInfo(**value)
    if kind == "too_long":
        raise AudioTooLong(*value)
    raise AudioUnreadable(value)


def _child_main(send: multiprocessing.connection.Connection, path: str, ring: KeyRing | None,
                max_duration_s: float | None, cpu_s: int, memory_mib: int) -> None:
    # Limits first, before a byte of the file is read.
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
    base = psutil.Process().memory_info().vms
    cap = base + memory_mib * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    send.send(("reading", None))
    try:
        answer: tuple[str, Any] = ("ok", asdict(probe(path, max_duration_s=max_duration_s, ring=ring)))
    except AudioTooLong as exc:
        answer = ("too_long", (exc.duration_s, exc.limit_s))
    except AudioUnreadable as exc:
        answer = ("unreadable", str(exc))
    except SealedDataError as exc:
        answer = ("unreadable", f"the stored upload failed its integrity check ({exc}); upload it again")
    except MemoryError:
        answer = ("unreadable", "reading the file needed more memory than any recording does")
    send.send(answer)
    send.close()
