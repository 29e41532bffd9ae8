"""Reading a finished crawl's records for its report, offline: one crawl's, or those
of the agents of one multi-agent crawl.

:func:`read_crawl` takes the crawl's state directory (``JOBDIR`` or ``IRL_STATE_DIR``)
and holds its ``LOCK`` while it reads, so a crawl still running is refused and none can
start meanwhile (the crawl that renders its own report at close skips that check). It
reads the timeline and ``stats.json`` written by
:class:`irlscrapy.report.timeline.CrawlRecorder` (their format:
:mod:`irlscrapy.report.layout`) and, when the crawl ran STAR, every PLD's in-degree
and pages from STAR's in-degree store (:mod:`irlscrapy.star.indegree`).

:func:`read_crawls` does the same for several state directories at once, the JOBDIRs of
a multi-agent crawl's agents (:mod:`irlscrapy.distributed.agent`), holding every lock
until all are read: each agent's timeline and stats stay its own
(:mod:`irlscrapy.report.merge` combines them), and their STAR stores are read together
into one set of per-PLD tables, over the union of the agents' PLDs (each agent owns
disjoint PLDs; a PLD in several stores, after a membership change, is counted once:
:mod:`irlscrapy.report.plds`). A directory given twice is refused, and so is every
directory that is not a finished crawl's, all named in one error.

Reading STAR's store opens it as a resumed crawl would, with the settings the crawl
recorded: the edges and pages the crawl recorded after its last refresh are merged
first, so the in-degrees are complete, and ``star/leaders.json`` is rewritten from them.
Then the in-degree store is read once, one chunk in RAM at a time (one chunk of each
store, for several).

Every error is a :class:`irlscrapy.exceptions.ReportError` saying what to do.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scrapy.settings import Settings

from irlscrapy.exceptions import DirectoryLocked, ReportError
from irlscrapy.report.analysis import Sample
from irlscrapy.report.layout import FORMAT, RECORDS_DIR, STATS, TIMELINE
from irlscrapy.report.meter import ProgressMeter
from irlscrapy.report.plds import Chunk, PLDTables, Ranking, StarRecords, merged_chunks
from irlscrapy.scheduler.hosts.delays import Politeness
from irlscrapy.star.indegree import PAGES_MASK, PLDInDegree
from irlscrapy.storage.dirlock import DirectoryLock

logger = logging.getLogger(__name__)

#: Rows of the top-PLD table (the paper's Table VIII shows 10).
TOP_ROWS = 25

Meter = Callable[[str, float], ProgressMeter]


@dataclass
class CrawlRecords:
    state_dir: Path
    lines: list[dict[str, Any]]  # the timeline, torn lines left out
    samples: list[Sample]
    settings: dict[str, Any]  # the last run's, from its "open" line
    pace: dict[str, Any]  # the last run's, from its "open" line ({} before it was recorded)
    stats: dict[str, Any] | None  # stats.json's stats; None: no run closed
    stats_run: int  # the run stats.json belongs to (0: none)
    torn_lines: int = 0
    star: StarRecords | None = None  # read_crawl's; read_crawls reads all stores together
    ran_star: bool = False  # it has STAR's store (the IRL scheduler ran)
    notes: list[str] = field(default_factory=list)  # what the report must warn about

    @property
    def runs(self) -> int:
        return max((int(line["run"]) for line in self.lines), default=0)

    @property
    def restarts(self) -> list[float]:
        """Wall-clock times at which a resumed run opened."""
        return [line["t"] for line in self.lines if line["event"] == "open" and line["run"] > 1]

    @property
    def agent_id(self) -> str:
        """IRL_AGENT_ID of the last run ("" for a crawl of one process)."""
        return str(self.settings.get("IRL_AGENT_ID") or "")


def read_crawl(
    state_dir: Path, meter: Meter | None = None, *, check_lock: bool = True
) -> CrawlRecords:
    """Everything the report needs from the crawl at ``state_dir`` (see the module
    docstring). ``meter(label, total)`` makes the progress meters of the long parts.
    ``check_lock``: refuse a state directory a running crawl holds (False: the crawl
    itself renders its report at close, its files closed, its lock maybe still held)."""
    (crawl,), star = read_crawls([state_dir], meter, check_lock=check_lock)
    crawl.star = star
    return crawl


def read_crawls(
    state_dirs: Sequence[Path], meter: Meter | None = None, *, check_lock: bool = True
) -> tuple[list[CrawlRecords], StarRecords | None]:
    """Every crawl's records at ``state_dirs`` (each crawl's ``star`` left None), and the
    per-PLD tables of all their STAR stores together (None if none ran STAR); see the
    module docstring. ``meter`` and ``check_lock``: see :func:`read_crawl`."""
    meter = meter or (lambda label, total: ProgressMeter(label, total))
    _refuse(_directory_errors(state_dirs))
    with contextlib.ExitStack() as held:
        errors = []
        for state_dir in state_dirs:
            lock = DirectoryLock(state_dir, "irlscrapy state")
            try:
                if check_lock:
                    lock.acquire()
                    held.callback(lock.release)
            except DirectoryLocked as exc:
                errors.append(
                    f"the crawl in {state_dir} is still running ({exc}); wait until it has "
                    "finished, or stop it (Ctrl-C), then run the report again"
                )
        _refuse(errors)
        crawls = []
        for state_dir in state_dirs:
            try:
                crawls.append(_read_records(state_dir, meter))
            except ReportError as exc:
                errors.append(str(exc))
        _refuse(errors)
        for crawl in crawls:
            crawl.ran_star = (crawl.state_dir / "star").is_dir()
        stores = [(c.state_dir / "star", c.settings) for c in crawls if c.ran_star]
        star = read_stars(stores, meter) if stores else None
        return crawls, star


def _directory_errors(state_dirs: Sequence[Path]) -> list[str]:
    """What makes ``state_dirs`` unreadable as crawls: missing, not a state directory,
    one directory given twice."""
    errors = []
    seen: dict[tuple[int, int], Path] = {}
    for state_dir in state_dirs:
        if not state_dir.is_dir():
            errors.append(
                f"{state_dir} is not a directory: give the JOBDIR (or IRL_STATE_DIR) of a crawl"
            )
        elif not (state_dir / "LOCK").exists() and not (state_dir / RECORDS_DIR).is_dir():
            errors.append(
                f"{state_dir} is not a crawl's state directory (no LOCK, no {RECORDS_DIR}/): "
                "give the JOBDIR (or IRL_STATE_DIR) the crawl ran with"
            )
        else:
            status = os.stat(state_dir)
            first = seen.get((status.st_dev, status.st_ino))
            if first is None:
                seen[(status.st_dev, status.st_ino)] = state_dir
            else:
                again = "given twice" if first == state_dir else f"the same directory as {first}"
                errors.append(f"{state_dir} is {again}: give each agent's JOBDIR once")
    return errors


def _refuse(errors: list[str]) -> None:
    if len(errors) == 1:
        raise ReportError(errors[0])
    if errors:
        raise ReportError(
            f"{len(errors)} problems with the state directories given:\n"
            + "\n".join(f"- {error}" for error in errors)
        )


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
    pace = opens[-1].get("pace", {}) if opens else {}
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
        try:
            document = json.loads(stats_path.read_text(encoding="utf-8"))
            stats, stats_run = dict(document["stats"]), int(document["run"])
        except (ValueError, KeyError, TypeError) as exc:  # (UnicodeDecodeError: ValueError)
            notes.append(
                f"{stats_path} is damaged ({exc!r}): the report leaves out the last closed "
                f"run's stats (irlscrapy repair {state_dir} deletes it; the next close "
                "writes it again)"
            )
    last_run = lines[-1]["run"]
    if stats_run != last_run:
        notes.append(
            f"run {last_run} did not close cleanly (killed?): its last figures are its "
            f"last timeline line; {STATS} is " + (f"run {stats_run}'s" if stats_run else "missing")
        )
    if torn:
        notes.append(f"{torn} torn timeline line(s) skipped (a crawl killed mid-write)")
    return CrawlRecords(
        state_dir, lines, samples, settings, pace, stats, stats_run, torn, notes=notes
    )


def read_stars(stores: Sequence[tuple[Path, dict[str, Any]]], meter: Meter) -> StarRecords:
    """Every PLD's in-degree and pages from STAR's stores (path, the settings its crawl
    recorded), each opened with its crawl's settings, all read together; host delays
    with the first crawl's politeness."""
    with contextlib.ExitStack() as opened:
        reputations = []
        for i, (path, recorded) in enumerate(stores, 1):
            label = "merging STAR's store" + (f" {i} of {len(stores)}" if len(stores) > 1 else "")
            reputation = _open_star(path, recorded, meter(label, 0))
            opened.callback(reputation.close)
            reputations.append(reputation)
        tables = PLDTables([_ranking(r) for r in reputations], TOP_ROWS)
        stored = 0
        for reputation in reputations:
            assert reputation.indegree is not None
            stored += reputation.indegree.stored_keys
        reading = meter("reading PLD in-degrees", stored)
        for block in merged_chunks([_chunks(r) for r in reputations]):
            tables.add(block)
            reading.update(tables.records_read)
        reading.close()
    recorded = stores[0][1]
    politeness = Politeness(
        host_delay=float(recorded["IRL_HOST_DELAY"]),
        host_delay_min=float(recorded["IRL_HOST_DELAY_MIN"]),
        ip_delay=float(recorded["IRL_IP_DELAY"]),
        ip_delay_min=float(recorded["IRL_IP_DELAY_MIN"]),
        default_budget=int(recorded["IRL_BUDGET_DEFAULT"]),
    )
    return tables.records(politeness)


def _open_star(path: Path, recorded: dict[str, Any], opening: ProgressMeter) -> PLDInDegree:
    """STAR's store at ``path``, opened (merged) with the crawl's ``recorded`` settings."""
    settings = Settings({k: v for k, v in recorded.items() if v is not None})
    reputation = PLDInDegree.from_settings(settings, None, time.monotonic)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        future = pool.submit(reputation.open, path)
        while True:
            try:
                future.result(timeout=0.25)
                break
            except concurrent.futures.TimeoutError:
                opening.update(0)
    opening.close()
    return reputation


def _ranking(reputation: PLDInDegree) -> Ranking:
    ranked = reputation.ranked
    return Ranking(
        keys=[e.key for e in ranked],
        names=[e.name for e in ranked],
        budgets=[reputation.budget_of(e.key) for e in ranked],
        default=reputation.scale.default,
    )


def _chunks(reputation: PLDInDegree) -> Iterator[Chunk]:
    """The store's (keys, in-degrees, pages), one chunk at a time, in key order."""
    assert reputation.indegree is not None
    for keys, values in reputation.indegree.items():
        assert values is not None
        yield keys, values >> np.uint64(32), values & np.uint64(PAGES_MASK)
