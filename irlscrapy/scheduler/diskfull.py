"""Out of disk space, or a store that failed: how the IRL scheduler stops the crawl.

Every store the scheduler writes appends whole records, so a write that fails for want
of space leaves the state directory whole: :meth:`CrawlStop.disk_full` stops taking
work, closes the spider (reason ``DISK_FULL_REASON``) and says how to go on; the same
JOBDIR resumes once there is room. An entry point wrapped in
:func:`stops_when_disk_is_full` stops so when it hits a full disk, and once stopped does
nothing (what it would have stored is fetched again on resume: the page that found it
is not done). A store that meets damage while it runs (:meth:`CrawlStop.failed`: a
damaged LevelDB block read in a URLseen merge, say) closes the spider with reason
``irlscrapy_damaged_state`` and one line that points to ``irlscrapy check`` and
``irlscrapy repair``, as damage met on open does (:mod:`irlscrapy.runtime.openfailure`); any
other failure, with reason ``irlscrapy_error`` and its traceback.

Each stop is a give-up, counted in the stat ``irl/given_up/<reason>`` (the close reason
without its ``irlscrapy_``: ``disk_full``, ``damaged_state``, ``error``,
``agent_stopped``); a stop logs one line, once.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

import plyvel
from scrapy.crawler import Crawler
from scrapy.utils.log import failure_to_exc_info
from twisted.python.failure import Failure

from irlscrapy.exceptions import DamagedState, disk_full
from irlscrapy.runtime.closing import close_spider

logger = logging.getLogger(__name__)

#: The close reason of a crawl stopped by a full disk.
DISK_FULL_REASON = "irlscrapy_disk_full"


class CrawlStop:
    def __init__(self, crawler: Crawler, where: Callable[[], Path | None]) -> None:
        self.crawler = crawler
        self.where = where  # the state directory, for the message
        self.stopped = False  # the disk is full: take no more work

    def disk_full(self, exc: BaseException | None) -> None:
        """Out of disk space: stop taking work, close the spider, say how to go on."""
        if self.stopped:
            return
        self.stopped = True
        logger.error(
            "irlscrapy: the disk holding %s is full (%s); the crawl stops. Free some space, "
            "then run the crawl again with the same JOBDIR (or IRL_STATE_DIR) to resume.",
            self.where(),
            exc,
        )
        self._close(DISK_FULL_REASON)

    def give_up(self, message: str, reason: str) -> None:
        """Something the crawl cannot go on without is gone for good: say what, and
        close the spider with ``reason`` (the state stays resumable)."""
        if self.stopped:
            return
        self.stopped = True
        logger.error("irlscrapy: %s", message)
        self._close(reason)

    def failed(self, failure: Failure, what: str) -> None:
        """A store running off the entry points (a URLseen merge, STAR's refresh) failed."""
        if disk_full(failure.value):
            self.disk_full(failure.value)
            return
        if isinstance(failure.value, DamagedState | plyvel.CorruptionError):
            where = self.where()
            self.give_up(
                f"{what} met damaged state ({failure.value}); the crawl stops. Run "
                f"`irlscrapy check {where}` to list what is damaged, and `irlscrapy repair "
                f"{where}` to recover what can be recovered, then run the crawl again",
                "irlscrapy_damaged_state",
            )
            return
        logger.error(
            "irlscrapy: %s failed; closing the spider", what, exc_info=failure_to_exc_info(failure)
        )
        self._close("irlscrapy_error")

    def _close(self, reason: str) -> None:
        """Count the give-up (``irl/given_up/<reason>``) and close the spider."""
        stats = self.crawler.stats
        if stats is not None:
            stats.inc_value(f"irl/given_up/{reason.removeprefix('irlscrapy_')}")
        close_spider(self.crawler, reason)


class _Guarded(Protocol):
    stop: CrawlStop


_Method = TypeVar("_Method", bound=Callable[..., Any])


def stops_when_disk_is_full(default: Any) -> Callable[[_Method], _Method]:
    """An entry point (of an object whose ``stop`` is the crawl's CrawlStop) that stops
    the crawl cleanly when the disk is full, and once it has stopped does nothing and
    returns ``default``."""

    def decorate(method: _Method) -> _Method:
        @functools.wraps(method)
        def guarded(self: _Guarded, *args: Any, **kwargs: Any) -> Any:
            if self.stop.stopped:
                return default
            try:
                return method(self, *args, **kwargs)
            except Exception as exc:
                if not disk_full(exc):
                    raise
                self.stop.disk_full(exc)
                return default

        return cast(_Method, guarded)

    return decorate
