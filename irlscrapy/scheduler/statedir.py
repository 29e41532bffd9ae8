"""``StateDirectory``: where a crawl keeps its frontier, resolved, locked and cleaned up
in one place.

The directory is ``IRL_STATE_DIR`` if set, else Scrapy's ``JOBDIR``, else a temporary
directory made at open and removed at close. One crawl holds it at a time (``LOCK``,
:class:`irlscrapy.dirlock.DirectoryLock`). What lives in it::

    LOCK                 the lock of the crawl that holds it
    urlseen/             URLseen, the DRUM of URL keys (irlscrapy.dupefilters.urlseen)
    beast/               BEAST's queue files (irlscrapy.scheduler.frontier.beast)
    admitted-*.rec       the admitted journal (irlscrapy.scheduler.frontier.admitted)
    parked-*.rec         parked URLs (irlscrapy.scheduler.frontier.parking)
    dns/                 the DNS cache's spill (irlscrapy.scheduler.hosts.dns)
    robots/              the robots.txt cache (irlscrapy.scheduler.hosts.robotscache)
    star/                STAR's PLD in-degree store (irlscrapy.star.indegree)
    contentseen/         content dedup's DRUM (irlscrapy.warc.recorder, IRL_CONTENT_DEDUP)
    report/              the crawl report's records (irlscrapy.report.timeline)

A temporary directory is removed only after the ``state_closed`` signal
(:mod:`irlscrapy.scheduler.keys`), the last moment the report can read it.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from scrapy.utils.job import job_dir

from irlscrapy import defaults
from irlscrapy.dirlock import DirectoryLock


class StateDirectory:
    def __init__(self, path: Path | None) -> None:
        self.configured = path  # None: a temporary directory
        self.temporary = path is None
        self.path: Path | None = path
        self._lock: DirectoryLock | None = None

    @classmethod
    def from_settings(cls, settings: Any) -> StateDirectory:
        base = defaults.get(settings, "IRL_STATE_DIR") or job_dir(settings)
        return cls(Path(base) if base else None)

    def open(self) -> Path:
        """Make the directory (a temporary one if none is configured) and lock it."""
        if self.path is None:
            self.path = Path(tempfile.mkdtemp(prefix="irlscrapy-state-"))
        self.path.mkdir(parents=True, exist_ok=True)
        self._lock = DirectoryLock(self.path, "irlscrapy state")
        self._lock.acquire()
        return self.path

    @property
    def root(self) -> Path:
        assert self.path is not None, "open() first"
        return self.path

    def __truediv__(self, name: str) -> Path:
        return self.root / name

    def unlock(self) -> None:
        if self._lock is not None:
            self._lock.release()

    def discard(self) -> None:
        """Remove the directory if it is a temporary one (after unlock())."""
        if self.temporary and self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
