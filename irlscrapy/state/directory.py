"""``StateDirectory``: where a crawl keeps its state, resolved, locked and cleaned up
in one place, shared by every component that writes there.

The directory is ``IRL_STATE_DIR`` if set, else Scrapy's ``JOBDIR``, else a temporary
directory made when the first component opens it. :meth:`StateDirectory.of` gives the
crawler's one (:mod:`irlscrapy.runtime.crawlservices`). Each component that keeps files
there opens it when it starts and closes it when it is done with them; the first open
makes and locks the directory (one crawl at a time: ``LOCK``,
:class:`irlscrapy.storage.dirlock.DirectoryLock`), the last close unlocks it and removes
it if it is temporary. What lives in it::

    LOCK                 the lock of the crawl that holds it
    urlseen/             URLseen, the DRUM of URL keys (irlscrapy.dupefilters.urlseen)
    beast/               BEAST's queue files (irlscrapy.scheduler.frontier.beast)
    admitted-*.rec       the admitted journal (irlscrapy.scheduler.frontier.admitted)
    parked-*.rec         parked URLs, and parked.json, the files holding some
                         (irlscrapy.scheduler.frontier.parking)
    dns/                 the DNS cache's spill (irlscrapy.scheduler.hosts.dns)
    robots/              the robots.txt cache (irlscrapy.scheduler.hosts.robotscache)
    star/                STAR's PLD in-degree store (irlscrapy.star.indegree)
    contentseen/         content dedup's DRUM (irlscrapy.warc.recorder, IRL_CONTENTSEEN_ENABLED)
    report/              the crawl report's records (irlscrapy.report.timeline)
    agent/               a multi-agent crawl's agent (irlscrapy.distributed.agent)

``irlscrapy check``, ``repair`` (and ``report``) refuse a directory holding none of these
(:func:`not_a_state_directory`): it is no crawl's.

The IRL scheduler sends ``state_closed`` (:mod:`irlscrapy.scheduler.metakeys`) once it has
closed its files: the crawl report renders from the directory then.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from scrapy.utils.job import job_dir

from irlscrapy import defaults
from irlscrapy.runtime.crawlservices import shared
from irlscrapy.storage.dirlock import DirectoryLock

#: The directories a crawl makes in its state directory (the map above).
CRAWL_STORES = ("urlseen", "beast", "dns", "robots", "star", "contentseen", "report", "agent")


def not_a_state_directory(path: Path) -> str | None:
    """Why ``path`` is no crawl's state directory (missing, a file, or holding none of
    the directories a crawl makes: CRAWL_STORES), as a sentence saying what to give, or
    None."""
    if not path.exists():
        return f"{path} does not exist: give the JOBDIR (or IRL_STATE_DIR) of a crawl"
    if not path.is_dir():
        return f"{path} is not a directory: give the JOBDIR (or IRL_STATE_DIR) of a crawl"
    if not any((path / store).is_dir() for store in CRAWL_STORES):
        return (
            f"{path} is not a crawl's state directory (no urlseen/, beast/ or the others a "
            "crawl makes): give the JOBDIR (or IRL_STATE_DIR) the crawl ran with"
        )
    return None


class StateDirectory:
    def __init__(self, path: Path | None) -> None:
        self.temporary = path is None
        self.path: Path | None = path  # None: temporary, not made yet
        self._lock: DirectoryLock | None = None
        self._holders = 0

    @classmethod
    def of(cls, crawler: Any) -> StateDirectory:
        """The crawler's one state directory (:mod:`irlscrapy.runtime.crawlservices`)."""
        return shared(crawler, cls, lambda: cls.from_settings(crawler.settings))

    @classmethod
    def from_settings(cls, settings: Any) -> StateDirectory:
        base = defaults.get(settings, "IRL_STATE_DIR") or job_dir(settings)
        return cls(Path(base) if base else None)

    def open(self) -> Path:
        """One more component keeps files here: make and lock the directory if it is
        the first; return the directory."""
        if not self._holders:
            if self.path is None or (self.temporary and not self.path.exists()):
                self.path = Path(tempfile.mkdtemp(prefix="irlscrapy-state-"))
            self.path.mkdir(parents=True, exist_ok=True)
            self._lock = DirectoryLock(self.path, "irlscrapy state")
            self._lock.acquire()
        self._holders += 1
        return self.path  # type: ignore[return-value]

    @property
    def root(self) -> Path:
        assert self.path is not None and self._holders, "open() first"
        return self.path

    def __truediv__(self, name: str) -> Path:
        return self.root / name

    def close(self) -> None:
        """A component is done with its files; the last one unlocks the directory and
        removes it if it is temporary."""
        if not self._holders:
            return
        self._holders -= 1
        if self._holders:
            return
        if self._lock is not None:
            self._lock.release()
            self._lock = None
        if self.temporary and self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
