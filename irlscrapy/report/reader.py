"""Reading a finished crawl's records for its report, offline.

:func:`read_crawl` takes the crawl's state directory (``JOBDIR`` or ``IRL_STATE_DIR``)
and holds its ``LOCK`` while it reads, so a crawl still running is refused and none can
start meanwhile (the crawl that renders its own report at close skips that check). It
reads the timeline and ``stats.json`` written by
:class:`irlscrapy.report.timeline.CrawlRecorder` (their format:
:mod:`irlscrapy.report.layout`) and, when the crawl ran STAR, every PLD's in-degree
and pages from STAR's in-degree store (:mod:`irlscrapy.star.indegree`).

Reading STAR's store opens it as a resumed crawl would, with the settings the crawl
recorded: the edges and pages the crawl recorded after its last refresh are merged
first, so the in-degrees are complete, and ``star/leaders.json`` is rewritten from them.
Then the in-degree store is read once, one chunk in RAM at a time.

Every error is a :class:`irlscrapy.exceptions.ReportError` saying what to do.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scrapy.settings import Settings

from irlscrapy.dirlock import DirectoryLock
from irlscrapy.exceptions import DirectoryLocked, ReportError
from irlscrapy.report.analysis import InDegreeBins, Sample, host_delays
from irlscrapy.report.layout import FORMAT, RECORDS_DIR, STATS, TIMELINE
from irlscrapy.report.meter import ProgressMeter
from irlscrapy.scheduler.hosts.delays import Politeness
from irlscrapy.star.indegree import PAGES_MASK, PLDInDegree

logger = logging.getLogger(__name__)

#: Rows of the top-PLD table (the paper's Table VIII shows 10).
TOP_ROWS = 25

Meter = Callable[[str, float], ProgressMeter]


@dataclass
class StarRecords:
    plds: int  # PLDs in the in-degree store (linked to or crawled)
    crawled_plds: int  # of those, PLDs with a page crawled
    bins: InDegreeBins
    #: the top PLDs: (rank, name, in-degree, budget, pages)
    leaders: list[tuple[int, str, int, int, int]]
    #: crawled PLDs by the host delay their final budget implies
    host_delays: dict[float, int]


@dataclass
class CrawlRecords:
    state_dir: Path
    lines: list[dict[str, Any]]  # the timeline, torn lines left out
    samples: list[Sample]
    settings: dict[str, Any]  # the last run's, from its "open" line
    stats: dict[str, Any] | None  # stats.json's stats; None: no run closed
    stats_run: int  # the run stats.json belongs to (0: none)
    torn_lines: int = 0
    star: StarRecords | None = None
    notes: list[str] = field(default_factory=list)  # what the report must warn about

    @property
    def runs(self) -> int:
        return max((int(line["run"]) for line in self.lines), default=0)

    @property
    def restarts(self) -> list[float]:
        """Wall-clock times at which a resumed run opened."""
        return [line["t"] for line in self.lines if line["event"] == "open" and line["run"] > 1]


def read_crawl(
    state_dir: Path, meter: Meter | None = None, *, check_lock: bool = True
) -> CrawlRecords:
    """Everything the report needs from the crawl at ``state_dir`` (see the module
    docstring). ``meter(label, total)`` makes the progress meters of the long parts.
    ``check_lock``: refuse a state directory a running crawl holds (False: the crawl
    itself renders its report at close, its files closed, its lock maybe still held)."""
    meter = meter or (lambda label, total: ProgressMeter(label, total))
    if not state_dir.is_dir():
        raise ReportError(
            f"{state_dir} is not a directory: give the JOBDIR (or IRL_STATE_DIR) of a crawl"
        )
    records = state_dir / RECORDS_DIR
    if not (state_dir / "LOCK").exists() and not records.is_dir():
        raise ReportError(
            f"{state_dir} is not a crawl's state directory (no LOCK, no {RECORDS_DIR}/): "
            "give the JOBDIR (or IRL_STATE_DIR) the crawl ran with"
        )
    lock = DirectoryLock(state_dir, "irlscrapy state")
    try:
        if check_lock:
            lock.acquire()
    except DirectoryLocked as exc:
        raise ReportError(
            f"the crawl in {state_dir} is still running ({exc}); wait until it has "
            "finished, or stop it (Ctrl-C), then run the report again"
        ) from None
    try:
        crawl = _read_records(state_dir, meter)
        if (state_dir / "star").is_dir():  # the IRL scheduler ran (STAR's store)
            crawl.star = read_star(state_dir / "star", crawl.settings, meter)
        return crawl
    finally:
        lock.release()


def _read_records(state_dir: Path, meter: Meter) -> CrawlRecords:
    timeline = state_dir / RECORDS_DIR / TIMELINE
    if not timeline.exists():
        raise ReportError(
            f"{state_dir} has no report records ({RECORDS_DIR}/{TIMELINE}): the crawl ran "
            "without irlscrapy.report.timeline.CrawlRecorder (the add-on installs it; "
            "IRL_REPORT_INTERVAL must be > 0). Crawl with it to get a report"
        )
    lines: list[dict[str, Any]] = []
    torn = 0
    reading = meter("reading the timeline (bytes)", timeline.stat().st_size)
    done = 0
    with open(timeline, "rb") as f:
        for raw in f:
            done += len(raw)
            if len(lines) % 4096 == 0:
                reading.update(done)
            try:
                line = json.loads(raw)
            except ValueError:
                torn += 1  # a kill -9 in the middle of a write
                continue
            if not isinstance(line, dict) or line.get("v") != FORMAT:
                raise ReportError(
                    f"{timeline} holds a record of format {line.get('v')!r} (this irlscrapy "
                    f"reads {FORMAT}): use the irlscrapy version that ran the crawl"
                    if isinstance(line, dict)
                    else f"{timeline} is not a timeline: it holds {raw[:80]!r}"
                )
            lines.append(line)
    reading.update(done)
    reading.close()
    if not lines:
        raise ReportError(f"{timeline} is empty: the crawl recorded nothing; crawl again")
    opens = [line for line in lines if line["event"] == "open"]
    settings = opens[-1].get("settings", {}) if opens else {}
    samples = [
        Sample(
            t=line["t"],
            run=line["run"],
            pages=line.get("pages", 0),
            unique_urls=line.get("unique_urls", 0),
            duplicates=line.get("duplicates", 0),
            bytes=line.get("bytes", 0),
        )
        for line in lines
    ]
    stats, stats_run = None, 0
    notes = []
    stats_path = state_dir / RECORDS_DIR / STATS
    if stats_path.exists():
        document = json.loads(stats_path.read_text(encoding="utf-8"))
        stats, stats_run = document["stats"], document["run"]
    last_run = lines[-1]["run"]
    if stats_run != last_run:
        notes.append(
            f"run {last_run} did not close cleanly (killed?): its last figures are its "
            f"last timeline line; {STATS} is " + (f"run {stats_run}'s" if stats_run else "missing")
        )
    if torn:
        notes.append(f"{torn} torn timeline line(s) skipped (a crawl killed mid-write)")
    return CrawlRecords(state_dir, lines, samples, settings, stats, stats_run, torn, notes=notes)


def read_star(path: Path, recorded: dict[str, Any], meter: Meter) -> StarRecords:
    """Every PLD's in-degree and pages from STAR's store at ``path``, opened with the
    crawl's ``recorded`` settings."""
    settings = Settings({k: v for k, v in recorded.items() if v is not None})
    reputation = PLDInDegree.from_settings(settings, None, time.monotonic)
    opening = meter("merging STAR's store", 0)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        future = pool.submit(reputation.open, path)
        while True:
            try:
                future.result(timeout=0.25)
                break
            except concurrent.futures.TimeoutError:
                opening.update(0)
    opening.close()
    try:
        indegree = reputation.indegree
        assert indegree is not None
        ranked_budgets = {e.key: reputation.budget_of(e.key) for e in reputation.ranked}
        ranked_keys = np.fromiter(ranked_budgets, dtype=np.uint64, count=len(ranked_budgets))
        bins = InDegreeBins()
        crawled_ranked: list[int] = []
        crawled_others = plds = crawled = 0
        reading = meter("reading PLD in-degrees", indegree.stored_keys)
        for keys, values in indegree.items():
            assert values is not None
            in_degrees = values >> np.uint64(32)
            pages = values & np.uint64(PAGES_MASK)
            bins.add(in_degrees, pages)
            visited = pages > 0
            ranked = np.isin(keys, ranked_keys)
            crawled_ranked.extend(ranked_budgets[k] for k in keys[visited & ranked].tolist())
            crawled_others += int(np.count_nonzero(visited & ~ranked))
            plds += len(keys)
            crawled += int(np.count_nonzero(visited))
            reading.update(plds)
        reading.close()
        leaders = [
            (rank, name, degree, budget, pages)
            for rank, (name, degree, budget, pages) in enumerate(reputation.leaders(TOP_ROWS), 1)
        ]
    finally:
        reputation.close()
    politeness = Politeness(
        host_delay=float(recorded["IRL_HOST_DELAY"]),
        host_delay_min=float(recorded["IRL_HOST_DELAY_MIN"]),
        ip_delay=float(recorded["IRL_IP_DELAY"]),
        ip_delay_min=float(recorded["IRL_IP_DELAY_MIN"]),
        default_budget=int(recorded["IRL_BEAST_BUDGET"]),
    )
    delays = host_delays(politeness, crawled_ranked, crawled_others)
    return StarRecords(plds, crawled, bins, leaders, delays)
