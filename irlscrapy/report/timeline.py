"""``CrawlRecorder``: the records a crawl leaves for its report (``irlscrapy report``).

The extension appends one line of figures to the timeline at a pace that gives a crawl of
any length enough points for its report's figures (:func:`sample_gap`): every
:data:`FIRST_GAP` seconds at first, then every ``uptime / SPAN_SAMPLES`` seconds, and
from ``IRL_REPORT_INTERVAL * SPAN_SAMPLES`` seconds on every ``IRL_REPORT_INTERVAL``
seconds; so a crawl of 6 seconds has 30 lines, one of a minute about 100. When the
crawl closes it writes a last line and the final Scrapy stats, and, with
``IRL_REPORT_DIR`` set, renders the report there (:mod:`irlscrapy.report.render`). It
records only where the crawl has a state directory: the IRL scheduler's
(``IRL_STATE_DIR``, else ``JOBDIR``, else its temporary directory), or ``IRL_STATE_DIR``
/ ``JOBDIR`` under another scheduler.

The files it writes under ``<state dir>/report/``, their format and crash semantics:
:mod:`irlscrapy.report.layout`.

Cost on the reactor: one line per :func:`sample_gap` (the figures are RAM reads: five lines
a second for the first 6 seconds, then fewer), and per response one header lookup for
``irl/content_type/<type>/<subtype>`` (the media type without parameters, lowercased;
at most :data:`CONTENT_TYPES` distinct ones, later ones counted as
``irl/content_type/other``, none as ``.../none``; robots.txt responses are not counted:
they are not pages, and the robots.txt stats count them).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from twisted.internet.base import DelayedCall

from irlscrapy import defaults
from irlscrapy.exceptions import disk_full
from irlscrapy.report.figures import crawl_figures
from irlscrapy.report.layout import (
    FORMAT,
    RECORDS_DIR,
    STATS,
    TIMELINE,
    cut_torn_line,
    jsonable,
    last_run,
    write_stats,
)
from irlscrapy.runtime.closing import spider_closing
from irlscrapy.runtime.mediatype import media_type
from irlscrapy.scheduler.hosts.pace import is_set, pace_of
from irlscrapy.scheduler.metakeys import ROBOTS_KEY, state_closed
from irlscrapy.state.directory import StateDirectory
from irlscrapy.storage.recovery import Recoveries, recovered

logger = logging.getLogger(__name__)

#: Distinct content types counted; the rest go to ``irl/content_type/other``.
CONTENT_TYPES = 32
#: Scrapy settings the timeline's "open" line keeps beside the IRL_* ones.
SCRAPY_SETTINGS = ("CLOSESPIDER_PAGECOUNT", "CONCURRENT_REQUESTS", "ROBOTSTXT_OBEY")
STATUS_PREFIX = "downloader/response_status_count/"
CONTENT_TYPE_PREFIX = "irl/content_type/"
ROBOTS_PREFIXES = ("irl/robots/", "robotstxt/")
#: The first lines' gap (seconds), and how many lines :func:`sample_gap` gives each span
#: ``[t, e * t]`` of uptime until the gap reaches IRL_REPORT_INTERVAL (DO NOT CHANGE
#: lightly: the report's figures of a short crawl need about 30 points).
FIRST_GAP = 0.2
SPAN_SAMPLES = 30
#: The delay settings whose origin the "open" line's ``pace`` records.
DELAYS = ("IRL_HOST_DELAY", "IRL_HOST_DELAY_MIN", "IRL_IP_DELAY", "IRL_IP_DELAY_MIN")
#: Request meta marking a robots.txt fetch: the IRL scheduler's (ROBOTS_KEY), Scrapy's
#: RobotsTxtMiddleware's.
ROBOTS_META = (ROBOTS_KEY, "dont_obey_robotstxt")
#: Counts the broad spider keeps on the in-vitro web (its ground truth): timeline name ->
#: stat; recorded only when the crawl has them.
INVITRO_COUNTS = {"invitro_pages": "invitro/pages", "spam_pages": "invitro/spam_pages"}


class CrawlRecorder:
    """See the module docstring."""

    def __init__(
        self,
        crawler: Crawler,
        interval: float,
        report_dir: Path | None,
        state: StateDirectory,
        settings: dict[str, Any],
        clock: Callable[[], float] = time.time,
        pace: dict[str, Any] | None = None,
    ) -> None:
        self.crawler = crawler
        self.interval = interval
        self.report_dir = report_dir  # render the report here at close; None: don't
        self.state = state  # the crawl's (irlscrapy.state.directory)
        self.settings = settings
        self.pace = pace or {}  # where the delays came from (layout: "open" lines' pace)
        self.clock = clock
        self.records: Path | None = None  # <state dir>/report while recording
        self.run = 0
        self.opened = 0.0
        self.finished = False
        self.report: Path | None = None  # the report rendered at close
        self._file: BinaryIO | None = None  # unbuffered: a line is written whole, or cut
        self._next: DelayedCall | None = None  # the next sample's call
        self.temporary = False  # the state directory is removed at close
        self._content_types: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlRecorder:
        settings = crawler.settings
        interval = defaults.get(settings, "IRL_REPORT_INTERVAL")
        if interval <= 0:
            raise NotConfigured("IRL_REPORT_INTERVAL is 0")
        report_dir = defaults.get(settings, "IRL_REPORT_DIR")
        snapshot = {
            s.name: defaults.get(settings, s.name) for s in defaults.SETTINGS if s.unit != "secret"
        }
        for name in SCRAPY_SETTINGS:
            snapshot[name] = settings.get(name)
        pace = pace_of(settings)  # the delays in force, derived where the user set none
        snapshot["IRL_HOST_DELAY"] = pace.host_delay
        snapshot["IRL_HOST_DELAY_MIN"] = pace.host_delay_min
        snapshot["IRL_IP_DELAY"] = pace.ip_delay
        snapshot["IRL_IP_DELAY_MIN"] = pace.ip_delay_min
        ext = cls(
            crawler,
            interval,
            Path(report_dir) if report_dir else None,
            StateDirectory.of(crawler),
            snapshot,
            pace={"source": pace.source, "set": [n for n in DELAYS if is_set(settings, n)]},
        )
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(ext.response_received, signal=signals.response_received)
        crawler.signals.connect(ext.state_closed, signal=state_closed)
        if ext.report_dir is not None:
            crawler.signals.connect(ext.spider_closing, signal=spider_closing)
        return ext

    def spider_closing(self) -> None:
        """The close began: import the renderer (matplotlib: a second or more) on a
        thread while the engine waits for its last downloads, rather than after."""
        threading.Thread(target=_load_renderer, name="report-import", daemon=True).start()

    # -- recording -----------------------------------------------------------------------
    def spider_opened(self, spider: Spider) -> None:
        state_dir = self.state.path  # the scheduler's, opened; or IRL_STATE_DIR, JOBDIR
        if state_dir is None:
            logger.info("no state directory (JOBDIR, IRL_STATE_DIR): no report records")
            return
        self.records = state_dir / RECORDS_DIR
        self.records.mkdir(parents=True, exist_ok=True)
        timeline = self.records / TIMELINE
        recoveries = Recoveries()
        with recoveries.collect():
            torn = cut_torn_line(timeline)
            if torn:
                recovered("torn_tail", timeline, detail=f"{torn} bytes")
        recoveries.publish(self.crawler.stats, state_dir)  # irl/recovered/torn_tail/report
        self.run = last_run(timeline) + 1
        self._file = open(timeline, "ab", buffering=0)  # noqa: SIM115 -- held until close
        self.opened = self.clock()
        self._write("open", settings=self.settings, pace=self.pace)
        self._schedule()

    def sample(self) -> None:
        self._write("sample")
        if not self.finished:
            self._schedule()

    def _schedule(self) -> None:
        from twisted.internet import reactor  # the crawl's, installed by then

        installed: Any = reactor
        gap = sample_gap(self.clock() - self.opened, self.interval)
        self._next = installed.callLater(gap, self.sample)

    def _write(self, event: str, **extra: Any) -> None:
        if self._file is None:
            return
        now = self.clock()
        stats = self.crawler.stats
        assert stats is not None
        line: dict[str, Any] = {
            "v": FORMAT,
            "event": event,
            "t": now,
            "run": self.run,
            "uptime": now - self.opened,
        }
        line.update(crawl_figures(self.crawler))
        line["bytes"] = stats.get_value("downloader/response_bytes", 0)
        for name, stat in INVITRO_COUNTS.items():
            if (count := stats.get_value(stat)) is not None:
                line[name] = count
        status: dict[str, Any] = {}
        content_types: dict[str, Any] = {}
        robots: dict[str, Any] = {}
        for key, value in stats.get_stats().items():
            if key.startswith(STATUS_PREFIX):
                status[key[len(STATUS_PREFIX) :]] = value
            elif key.startswith(CONTENT_TYPE_PREFIX):
                content_types[key[len(CONTENT_TYPE_PREFIX) :]] = value
            elif key.startswith(ROBOTS_PREFIXES):
                robots[key] = value
        line.update(status=status, content_types=content_types, robots=robots)
        line.update(extra)
        data = (json.dumps(line, default=jsonable) + "\n").encode()
        try:
            if self._file.write(data) != len(data):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        except OSError as exc:
            if not disk_full(exc):
                raise
            if event != "close":  # (at close, _finish says so once, if stats fail too)
                logger.warning(
                    "the crawl's report records stop here: the disk holding %s is full (%s)",
                    self.records,
                    exc,
                )
            self._file.close()  # its torn last line is cut at the next open
            self._file = None

    def response_received(self, response: Response, request: Any, spider: Spider) -> None:
        if any(request.meta.get(key) for key in ROBOTS_META):
            return  # robots.txt: not a page (the robots.txt stats count it)
        kind = media_type(response.headers) or "none"
        if kind != "none" and kind not in self._content_types:
            if len(self._content_types) < CONTENT_TYPES:
                self._content_types.add(kind)
            else:
                kind = "other"
        stats = self.crawler.stats
        assert stats is not None
        stats.inc_value(CONTENT_TYPE_PREFIX + kind)

    # -- closing -------------------------------------------------------------------------
    def state_closed(self, state_dir: Path, temporary: bool, reason: str) -> None:
        """The IRL scheduler closed its state directory: a temporary one is removed next,
        so finish (and render) now, with the close reason Scrapy's CoreStats records only
        later; otherwise wait for the final stats at spider_closed."""
        self.temporary = temporary
        if temporary:
            stats = self.crawler.stats
            assert stats is not None
            stats.set_value("finish_reason", reason)
            self._finish(reason)

    def spider_closed(self, spider: Spider, reason: str) -> None:
        if not self.finished:
            self._finish(reason)
        if self.report is not None:
            logger.info("crawl report: %s", self.report)

    def _finish(self, reason: str | None = None) -> None:
        self.finished = True
        if self._next is not None and self._next.active():
            self._next.cancel()
        if self.records is None:
            return  # never recorded: no state directory, or the spider never opened
        self._write("close", reason=reason)
        if self._file is not None:  # (closed already if the disk filled)
            self._file.close()
            self._file = None
        stats = self.crawler.stats
        assert stats is not None
        try:
            write_stats(self.records / STATS, stats.get_stats(), self.run, self.clock())
        except OSError as exc:
            if not disk_full(exc):
                raise
            logger.warning(
                "the crawl's final stats were not recorded and no report is rendered: the "
                "disk holding %s is full (%s); the resumed crawl renders it",
                self.records,
                exc,
            )
            return
        if self.report_dir is not None:
            self._render(self.records.parent, self.report_dir)

    def _render(self, state_dir: Path, out: Path) -> None:
        from irlscrapy.report.render import write_report  # matplotlib: see spider_closing

        try:
            # the crawl's own files are closed; this process may still hold the lock
            self.report = write_report(
                state_dir, out, check_lock=False, state_dir_removed=self.temporary
            )
        except Exception:  # the crawl is done; its report must not fail it
            logger.exception("the crawl report could not be written to %s", out)


def sample_gap(uptime: float, interval: float) -> float:
    """Seconds from a line written at ``uptime`` to the next: :data:`FIRST_GAP`, growing
    with the uptime (:data:`SPAN_SAMPLES` lines from t to e * t), at most ``interval``."""
    return min(interval, max(FIRST_GAP, uptime / SPAN_SAMPLES))


def _load_renderer() -> None:
    from irlscrapy.report.plots import load_plotting

    load_plotting()
