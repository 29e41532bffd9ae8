"""The state directory of ``bench/drum.py --keys N``: a run that outlives a session.

Loading 10^9 keys takes longer than a session lasts, so the run keeps everything in a
directory of its own and continues from it when started again::

    LOCK           the run's lock (irlscrapy.storage.dirlock), held by the parent and its children
    progress.json  the run's parameters and how far it got (replaced whole, by rename)
    drum/          the DRUM being loaded: DRUM's own directory, which resumes itself
    span-start/    drum/ as the warm-up left it (closed): its runs and LevelDB tables
                   hard-linked (neither DRUM nor LevelDB changes one once written, they
                   only delete it), every other file copied; each measured span starts
                   from a fresh copy of it
    *.log          the operator's redirection of the run's output, if any

``progress.json`` holds ``phase``: ``warm-up``, then ``span`` once span-start/ is whole,
then ``done`` once a span's figures are recorded and the DRUM directories deleted.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from irlscrapy.storage.jsonfile import replace_json

#: The names of files never changed once written: DRUM's runs, LevelDB's tables.
WRITE_ONCE_SUFFIXES = (".run", ".ldb")


class Progress:
    """``progress.json``: a dict saved whole (a kill -9 leaves the old or the new one)."""

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data

    @classmethod
    def load(cls, path: Path) -> Progress:
        return cls(path, json.loads(path.read_text()))

    def __getitem__(self, name: str) -> Any:
        return self.data[name]

    def save(self, **changes: Any) -> None:
        self.data.update(changes)
        replace_json(self.path, self.data)


def snapshot(source: Path, target: Path) -> None:
    """Make ``target`` a copy of the closed DRUM directory ``source``: runs and table
    files hard-linked, the rest copied. Whatever ``target`` held goes; the copy is built under
    a temporary name and renamed, so ``target`` exists only whole."""
    building = target.with_name(target.name + ".tmp")
    shutil.rmtree(building, ignore_errors=True)
    shutil.copytree(source, building, copy_function=_link_write_once_or_copy)
    shutil.rmtree(target, ignore_errors=True)
    os.rename(building, target)


def _link_write_once_or_copy(source: str, target: str) -> None:
    if source.endswith(WRITE_ONCE_SUFFIXES):
        os.link(source, target)
    else:
        shutil.copy2(source, target)


class Ticker:
    """A progress line on stderr every ``every`` seconds, from a daemon thread.

    ``status()`` returns (units done, a note); the line gives done of ``total``, the
    rate over the last ``window`` seconds, the time left at that rate, the note and the
    load average. ``on_tick()`` is called after each line. Use as a context manager
    around the work.
    """

    def __init__(
        self,
        label: str,
        total: int,
        status: Callable[[], tuple[int, str]],
        every: float = 60.0,
        window: float = 600.0,
        on_tick: Callable[[], None] = lambda: None,
    ) -> None:
        self.label = label
        self.total = total
        self.status = status
        self.on_tick = on_tick
        self.every = every
        self.window = window
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Ticker:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        samples: deque[tuple[float, int]] = deque([(time.monotonic(), self.status()[0])])
        while not self._stop.wait(self.every):
            done, note = self.status()
            now = time.monotonic()
            while len(samples) > 1 and now - samples[1][0] >= self.window:
                samples.popleft()
            then, done_then = samples[0]
            samples.append((now, done))
            rate = (done - done_then) / (now - then)
            left = max(self.total - done, 0)
            eta = f"{left / rate / 60:,.0f} min" if rate > 0 else "unknown"
            print(
                f"{time.strftime('%H:%M:%S')} {self.label}: {done:,} of {self.total:,} "
                f"({100 * done / self.total:.1f}%), {rate:,.0f}/s over the last "
                f"{(now - then) / 60:.0f} min, ETA {eta}; {note}; "
                f"load {os.getloadavg()[0]:.2f}",
                file=sys.stderr,
                flush=True,
            )
            self.on_tick()
