"""``CrawlRecorder``: the records a crawl leaves for its report (``irlscrapy report``).

Every ``IRL_REPORT_INTERVAL`` seconds the extension appends one line of figures to the
timeline; when the crawl closes it writes a last line and the final Scrapy stats, and,
with ``IRL_REPORT_DIR`` set, renders the report there (:mod:`irlscrapy.report.render`).
It records only where the crawl has a state directory: the IRL scheduler's (``IRL_STATE_DIR``,
else ``JOBDIR``, else its temporary directory), or ``IRL_STATE_DIR`` / ``JOBDIR`` under
another scheduler.

Files under ``<state dir>/report/`` (format version 1; DO NOT CHANGE a field's meaning,
add fields instead)::

    timeline.jsonl  line := JSON object "\\n", appended; one per event:
                      v       1 (the format version)
                      event   "open" (the spider opened: a run begins), "sample", or
                              "close" (the crawl is closing)
                      t       wall-clock time, Unix seconds
                      run     1 for the first run in this state directory, +1 per resume
                      uptime  seconds since this run's spider opened
                      <figure> every figure of irlscrapy.report.figures.crawl_figures
                              (pages, unique_urls, duplicates, links, requests, ...;
                              counters start at 0 in every run), plus
                      bytes   downloader/response_bytes
                      status  {"<HTTP status>": responses}
                      content_types  {"<type>/<subtype>": responses} (see below)
                      robots  {stat: value} of the irl/robots/* and robotstxt/* stats
                      settings  ("open" lines only) every IRL_* setting of the run but
                              secrets, and CLOSESPIDER_PAGECOUNT, CONCURRENT_REQUESTS,
                              ROBOTSTXT_OBEY: the report reopens STAR's store with them
    stats.json      {"v": 1, "t": ..., "run": n, "stats": {Scrapy stat: value}},
                    rewritten (temporary file, then rename) when the crawl closes; values
                    made JSON-safe (:func:`jsonable`: numbers as numbers, datetimes as ISO 8601,
                    anything else as str)

Crash semantics: each line is one ``write`` flushed to the OS; a kill -9 loses at most
the figures of the current interval, and a torn last line is skipped by the reader
(:mod:`irlscrapy.report.records`). ``stats.json`` is whole or absent: a run killed
before it closes leaves the previous run's (the report then says so).

Cost on the reactor: one line every ``IRL_REPORT_INTERVAL`` seconds (the figures are RAM
reads), and per response one header lookup for ``irl/content_type/<type>/<subtype>``
(the media type without parameters, lowercased; at most :data:`CONTENT_TYPES` distinct
ones, later ones counted as ``irl/content_type/other``, none as ``.../none``).
"""

from __future__ import annotations

import datetime
import json
import logging
import numbers
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.utils.job import job_dir
from twisted.internet import task

from irlscrapy import defaults
from irlscrapy.internals import crawl_engine
from irlscrapy.report.figures import crawl_figures
from irlscrapy.scheduler.irl import state_closed

logger = logging.getLogger(__name__)

FORMAT = 1
RECORDS_DIR = "report"
TIMELINE = "timeline.jsonl"
STATS = "stats.json"
#: Distinct content types counted; the rest go to ``irl/content_type/other``.
CONTENT_TYPES = 32
#: Scrapy settings the timeline's "open" line keeps beside the IRL_* ones.
SCRAPY_SETTINGS = ("CLOSESPIDER_PAGECOUNT", "CONCURRENT_REQUESTS", "ROBOTSTXT_OBEY")
STATUS_PREFIX = "downloader/response_status_count/"
CONTENT_TYPE_PREFIX = "irl/content_type/"
ROBOTS_PREFIXES = ("irl/robots/", "robotstxt/")
#: How much of the timeline's end is read to find the last run's number.
_TAIL = 1 << 16


class CrawlRecorder:
    """See the module docstring."""

    def __init__(
        self,
        crawler: Crawler,
        interval: float,
        report_dir: Path | None,
        configured_dir: Path | None,
        settings: dict[str, Any],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.crawler = crawler
        self.interval = interval
        self.report_dir = report_dir  # render the report here at close; None: don't
        self.configured_dir = configured_dir  # IRL_STATE_DIR or JOBDIR, if any
        self.settings = settings
        self.clock = clock
        self.records: Path | None = None  # <state dir>/report while recording
        self.run = 0
        self.opened = 0.0
        self.finished = False
        self.report: Path | None = None  # the report rendered at close
        self._file: IO[str] | None = None
        self._loop: task.LoopingCall | None = None
        self._content_types: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlRecorder:
        settings = crawler.settings
        interval = defaults.get(settings, "IRL_REPORT_INTERVAL")
        if interval <= 0:
            raise NotConfigured("IRL_REPORT_INTERVAL is 0")
        report_dir = defaults.get(settings, "IRL_REPORT_DIR")
        configured = defaults.get(settings, "IRL_STATE_DIR") or job_dir(settings)
        snapshot = {
            s.name: defaults.get(settings, s.name) for s in defaults.SETTINGS if s.unit != "secret"
        }
        for name in SCRAPY_SETTINGS:
            snapshot[name] = settings.get(name)
        ext = cls(
            crawler,
            interval,
            Path(report_dir) if report_dir else None,
            Path(configured) if configured else None,
            snapshot,
        )
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(ext.response_received, signal=signals.response_received)
        crawler.signals.connect(ext.state_closed, signal=state_closed)
        return ext

    # -- recording -----------------------------------------------------------------------
    def spider_opened(self, spider: Spider) -> None:
        state_dir = self._state_dir()
        if state_dir is None:
            logger.info("no state directory (JOBDIR, IRL_STATE_DIR): no report records")
            return
        self.records = state_dir / RECORDS_DIR
        self.records.mkdir(parents=True, exist_ok=True)
        timeline = self.records / TIMELINE
        self.run = last_run(timeline) + 1
        self._file = open(timeline, "a", encoding="utf-8")  # noqa: SIM115 -- held until close
        self.opened = self.clock()
        self._write("open", settings=self.settings)
        self._loop = task.LoopingCall(self.sample)
        self._loop.start(self.interval, now=False)

    def _state_dir(self) -> Path | None:
        scheduler = getattr(crawl_engine(self.crawler), "scheduler", None)
        found = getattr(scheduler, "state_dir", None)  # the IRL scheduler's, temporary too
        return Path(found) if found is not None else self.configured_dir

    def sample(self) -> None:
        self._write("sample")

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
        self._file.write(json.dumps(line, default=jsonable) + "\n")
        self._file.flush()

    def response_received(self, response: Response, request: Any, spider: Spider) -> None:
        raw = response.headers.get(b"Content-Type")
        kind = "none"
        if raw:
            kind = raw.split(b";", 1)[0].strip().lower().decode("latin-1") or "none"
            if kind not in self._content_types:
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
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        if self._file is None or self.records is None:
            return
        self._write("close", reason=reason)
        self._file.close()
        self._file = None
        stats = self.crawler.stats
        assert stats is not None
        write_stats(self.records / STATS, stats.get_stats(), self.run, self.clock())
        if self.report_dir is not None:
            self._render(self.records.parent, self.report_dir)

    def _render(self, state_dir: Path, out: Path) -> None:
        from irlscrapy.report.render import write_report

        try:
            self.report = write_report(state_dir, out)
        except Exception:  # the crawl is done; its report must not fail it
            logger.exception("the crawl report could not be written to %s", out)


def last_run(timeline: Path) -> int:
    """The run number of the timeline's last complete line (0 without one)."""
    try:
        with open(timeline, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - _TAIL))
            tail = f.read()
    except FileNotFoundError:
        return 0
    for raw in reversed(tail.split(b"\n")):
        try:
            return int(json.loads(raw)["run"])
        except (ValueError, KeyError, TypeError):
            continue  # a torn line, or the cut start of the tail
    return 0


def write_stats(path: Path, stats: dict[str, Any], run: int, now: float) -> None:
    """``stats.json`` (see the module docstring), atomically."""
    document = {"v": FORMAT, "t": now, "run": run, "stats": json_safe(stats)}
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(document, indent=0, sort_keys=True), encoding="utf-8")
    temporary.replace(path)


def json_safe(stats: dict[str, Any]) -> dict[str, Any]:
    return {
        str(k): v if isinstance(v, int | float | str | bool | type(None)) else jsonable(v)
        for k, v in stats.items()
    }


def jsonable(value: Any) -> Any:
    """A JSON value for what json cannot write: numpy and other numbers as numbers,
    datetimes as ISO 8601, anything else as its str."""
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    return str(value)
