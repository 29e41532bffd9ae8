"""The files a crawl leaves for its report: where they are and what they hold.

:class:`irlscrapy.report.timeline.CrawlRecorder` writes them while the crawl runs;
:mod:`irlscrapy.report.reader` reads them for ``irlscrapy report``.

Files under ``<state dir>/report/`` (format version 1; DO NOT CHANGE a field's meaning,
add fields instead: a reader skips fields it does not know and does without fields an
older writer did not write, so ``v`` stays 1; raise :data:`FORMAT` only for a change an
older reader would misread, and keep reading every earlier version)::

    timeline.jsonl  line := JSON object "\\n", appended; one per event ("sample" lines
                    come closer together early in a run, at most IRL_REPORT_INTERVAL
                    apart: irlscrapy.report.timeline.sample_gap; a reader takes the
                    time between lines from ``t``, never from the setting):
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
                      content_types  {"<type>/<subtype>": responses} (robots.txt left out
                              since 2026-11-29; irlscrapy.report.timeline)
                      robots  {stat: value} of the irl/robots/* and robotstxt/* stats
                      settings  ("open" lines only) every IRL_* setting of the run but
                              secrets, and CLOSESPIDER_PAGECOUNT, CONCURRENT_REQUESTS,
                              ROBOTSTXT_OBEY: the report reopens STAR's store with them
                      pace    ("open" lines only; absent before 2026-11-29) where the
                              delays came from: {"source": "IRL_HOST_DELAY" (the user's),
                              "DOWNLOAD_DELAY" (the project's) or "default", "set": [the
                              delay settings of IRL_HOST_DELAY(_MIN), IRL_IP_DELAY(_MIN)
                              the user set; the others were derived]}
    stats.json      {"v": 1, "t": ..., "run": n, "stats": {Scrapy stat: value}},
                    rewritten (temporary file, then rename) when the crawl closes; values
                    made JSON-safe (:func:`jsonable`: numbers as numbers, datetimes as ISO 8601,
                    anything else as str)

Crash semantics: each line is one ``write`` flushed to the OS; a kill -9 loses at most
the figures of the current interval, and a torn last line is skipped by the reader
(:mod:`irlscrapy.report.reader`). ``stats.json`` is whole or absent: a run killed
before it closes leaves the previous run's (the report then says so).
"""

from __future__ import annotations

import datetime
import json
import numbers
from pathlib import Path
from typing import Any

FORMAT = 1
RECORDS_DIR = "report"
TIMELINE = "timeline.jsonl"
STATS = "stats.json"
#: How much of the timeline's end is read to find the last run's number.
_TAIL = 1 << 16


def cut_torn_line(timeline: Path) -> int:
    """Cut a last line a kill -9 left without its newline (the next run appends after
    it, and its first line would be lost with the fragment); return the bytes cut."""
    try:
        with open(timeline, "r+b") as f:
            size = f.seek(0, 2)
            end = size
            while end > 0:
                start = max(0, end - _TAIL)
                f.seek(start)
                chunk = f.read(end - start)
                newline = chunk.rfind(b"\n")
                if newline >= 0:
                    end = start + newline + 1
                    break
                end = start
            if end < size:
                f.truncate(end)
            return size - end
    except FileNotFoundError:
        return 0


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
