"""The recorder's worker process: hashes bodies, checks them against ContentSeen, writes
WARC records. Runs in a child process of the crawler (:class:`WorkerProcess`).

Why a process and not a thread: the work is mostly Python (warcio builds every record
in Python), and a thread doing it competes with the reactor thread for the GIL. Each
time the reactor thread lets the GIL go (every wait for I/O), the worker takes it and
keeps it for up to the interpreter's switch interval (5 ms), so the reactor's timers
fire late in every turn and the load governor, seeing that lag, cuts the fetches in
flight. Measured on the broad web with a thread: 0.66-0.80 of the pages/s without
recording, while the recording itself took only about a fifth of the CPU. A process has
its own GIL; the kernel shares the core between the two without convoys.

The child is started with the ``spawn`` method (the parent runs a reactor and threads,
which ``fork`` does not copy safely) and imports nothing from Scrapy. One child, one
batch at a time, in order (a ProcessPoolExecutor of one worker); its state is the
module globals below, opened by :func:`open_stores` and closed by :func:`close_stores`.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import multiprocessing
import os
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from irlscrapy.dupefilters.contentseen import ContentSeen, Verdict
from irlscrapy.warc.files import Capture, WarcFiles

#: This process's stores (in the child only).
_files: WarcFiles | None = None
_seen: ContentSeen | None = None

#: What a batch returns: its verdicts, then records, revisits and bytes written, and the
#: WARC files finished so far.
BatchResult = tuple[list[Verdict], int, int, int, int]


def _lowest_priority() -> None:
    """Run the child only when the crawler's core has nothing else to run (Linux's
    SCHED_IDLE; elsewhere the lowest nice value): the reactor thread preempts it at
    once when it wakes, so the worker adds no lag to the reactor's timers. The worker's
    backlog is bounded by IRL_WARC_QUEUE_BYTES, past which downloads wait for it."""
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        return
    with contextlib.suppress(OSError):  # a sandbox forbids it: the crawler's priority
        os.nice(19)


def open_stores(files: WarcFiles | None, seen: ContentSeen | None) -> None:
    """In the child: lower its CPU priority, open the (pickled, unopened) stores."""
    global _files, _seen
    _lowest_priority()
    _files, _seen = files, seen
    if files is not None:
        files.open()
    if seen is not None:
        seen.open()


def close_stores() -> int:
    """In the child: close the stores; the WARC files finished."""
    if _seen is not None:
        _seen.close()
    if _files is None:
        return 0
    _files.close()
    return _files.files_written


def work(captures: list[Capture]) -> BatchResult:
    """In the child: hash, check and write one batch (see irlscrapy.warc.recorder)."""
    sha1s = [hashlib.sha1(c.payload).digest() for c in captures]
    for capture, sha1 in zip(captures, sha1s, strict=True):
        capture.payload_digest = "sha1:" + base64.b32encode(sha1).decode("ascii")
    verdicts = [Verdict(False, c.date) for c in captures]
    if _seen is not None:
        verdicts = _seen.check(sha1s, [c.date for c in captures])
    if _files is None:
        return verdicts, 0, 0, 0, 0
    size = revisits = 0
    for capture, verdict in zip(captures, verdicts, strict=True):
        if verdict.duplicate:
            capture.duplicate_of = verdict.first
            revisits += 1
        size += _files.write(capture)
    _files.flush()
    return verdicts, len(captures), revisits, size, _files.files_written


class WorkerProcess:
    """The parent's handle on the child: :meth:`submit` a function of this module,
    get a Future; :meth:`stop` waits for what was submitted, then ends the child."""

    def __init__(self) -> None:
        self._executor = ProcessPoolExecutor(
            max_workers=1, mp_context=multiprocessing.get_context("spawn")
        )

    def submit(self, f: Any, *args: Any) -> Future[Any]:
        return self._executor.submit(f, *args)

    def stop(self) -> None:
        self._executor.shutdown(wait=True)
