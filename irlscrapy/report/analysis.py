"""The arithmetic behind the report's figures (seeds/003 section VIII), on plain data.

- :func:`stitch` makes a timeline continuous over restarts. Scrapy's counters start at 0
  in every run; a resumed crawl's counts are added to the last counts its earlier runs
  recorded, so the curves neither drop nor double count. What a run did after its last
  recorded line (a kill -9) is missing from the timeline, not from the later counts.
- :func:`download_rates` (Fig. 6): pages/s and bits/s between consecutive lines of one
  run (the paper plots 10-minute averages; ours average over the time between two
  lines, at least 1/:data:`irlscrapy.report.data.POINTS` of the crawl as :func:`thin`
  keeps them).
- :func:`uniqueness` (Fig. 7(a)): the probability of uniqueness ``p``, the share of the
  URLs checked against URLseen between two lines that were new, plotted against the
  pages crawled by the end of the interval. Intervals without checks have no ``p``; the
  report joins an interval of few checks to the next (``least``).
- :func:`on_grid` sums several timelines (a multi-agent crawl's agents, sampled at
  different instants) on one time grid: each counter's growth between two lines of one
  run is spread evenly over the time between them, and added to the grid's bins in
  proportion to their overlap. A bin's rate (:func:`grid_rates`) is its growth over the
  seconds of it during which some timeline ran, so it is the sum of the timelines' rates
  averaged over the bin; a timeline that did not run in part of a bin adds nothing
  there, and a bin no timeline covers is left out. :func:`grid_uniqueness` is ``p`` per
  bin, over the URLs every timeline checked in it, against the pages all of them had
  crawled by its end.
- :class:`InDegreeBins` (Fig. 7(b)): PLDs grouped by in-degree in powers of two
  (``[1, 1]``, ``[2, 3]``, ``[4, 7]``, ...; in-degree 0 on its own), with the count, the
  mean and the median of pages crawled per PLD of each bin. Every PLD STAR counted is
  included, crawled or only linked to (0 pages), as in the paper. RAM: one counter of
  distinct page counts per bin, never one entry per PLD.
- :func:`host_delays`: the host delay ``tau_h`` each PLD's budget implies
  (:class:`irlscrapy.scheduler.hosts.delays.Politeness`), counted by value.

No Scrapy import; tested in tests/unit/test_report_analysis.py.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from irlscrapy.scheduler.hosts.delays import Politeness

#: The counters :func:`stitch` carries over restarts.
COUNTERS = ("pages", "unique_urls", "duplicates", "bytes")


@dataclass(frozen=True)
class Sample:
    """One timeline line: wall-clock time, run number, counters since the run began."""

    t: float
    run: int
    pages: float = 0
    unique_urls: float = 0
    duplicates: float = 0
    bytes: float = 0


def stitch(samples: Sequence[Sample]) -> list[Sample]:
    """``samples`` (in file order) with each run's counters added to the last ones of the
    runs before it."""
    out: list[Sample] = []
    offset = dict.fromkeys(COUNTERS, 0.0)
    last: Sample | None = None
    for sample in samples:
        if last is not None and sample.run != last.run:
            offset = {name: getattr(out[-1], name) for name in COUNTERS}
        out.append(replace(sample, **{n: getattr(sample, n) + offset[n] for n in COUNTERS}))
        last = sample
    return out


def thin(samples: Sequence[Sample], limit: int) -> list[Sample]:
    """At most about ``limit`` of ``samples``: each run's first and last line, and
    between them a line whenever ``span / limit`` seconds passed since the last one kept
    (``span``: the runs' seconds added), so rates and ``p`` over the lines kept are
    averages over windows of at least that length (the paper's Fig. 6 plots 10-minute
    averages; the recorder's lines come closer together early in a run, which would
    make the start of a long crawl a scribble) and nothing is lost from the totals."""
    assert limit >= 1
    ends: dict[int, tuple[float, float]] = {}
    for sample in samples:
        first, _ = ends.get(sample.run, (sample.t, sample.t))
        ends[sample.run] = (first, sample.t)
    window = sum(last - first for first, last in ends.values()) / limit
    kept: list[Sample] = []
    for i, sample in enumerate(samples):
        first = i == 0 or samples[i - 1].run != sample.run
        last = i == len(samples) - 1 or samples[i + 1].run != sample.run
        if first or last or sample.t - kept[-1].t >= window:
            kept.append(sample)
    return kept


class Rate(NamedTuple):
    t: float  # end of the interval
    pages_per_second: float
    bits_per_second: float


def download_rates(samples: Sequence[Sample]) -> list[Rate]:
    """Pages/s and bits/s over each interval between two lines of the same run."""
    rates = []
    for a, b in itertools.pairwise(samples):
        dt = b.t - a.t
        if a.run == b.run and dt > 0:
            rates.append(Rate(b.t, (b.pages - a.pages) / dt, 8 * (b.bytes - a.bytes) / dt))
    return rates


class Uniqueness(NamedTuple):
    pages: float  # pages crawled by the end of the interval
    p: float  # new URLs / URLs checked in the interval
    checked: float


def uniqueness(samples: Sequence[Sample], least: float = 0) -> list[Uniqueness]:
    """``p`` over each interval between two lines of the same run that checked URLs;
    an interval that checked fewer than ``least`` is joined to the next ones of its run
    until they have (a run's last interval stands as it is): URLseen checks in batches,
    and a handful of URLs re-checked at a restart would plot as a fall to 0."""
    points = []
    start: Sample | None = None
    for i, b in enumerate(samples):
        if start is None or start.run != b.run:
            start = b
            continue
        new = b.unique_urls - start.unique_urls
        checked = new + b.duplicates - start.duplicates
        last = i == len(samples) - 1 or samples[i + 1].run != b.run
        if checked > 0 and (checked >= least or last):
            points.append(Uniqueness(b.pages, new / checked, checked))
            start = b
        elif checked <= 0:
            start = b
    return points


def overall_uniqueness(unique_urls: float, duplicates: float) -> float | None:
    """``p`` over the whole crawl; None if no URL was checked."""
    checked = unique_urls + duplicates
    return unique_urls / checked if checked > 0 else None


class GridBin(NamedTuple):
    end: float  # the bin's end (the last line's time, if that is earlier)
    seconds: float  # of the bin, the time during which some timeline ran
    pages: float  # growth within the bin, summed over the timelines
    unique_urls: float
    duplicates: float
    bytes: float


def on_grid(timelines: Sequence[Sequence[Sample]], width: float) -> list[GridBin]:
    """Several timelines (each in file order) summed on bins of ``width`` seconds from
    the earliest line (see the module docstring); bins no timeline covers left out."""
    assert width > 0
    intervals = [
        (a, b)
        for samples in timelines
        for a, b in itertools.pairwise(samples)
        if a.run == b.run and b.t > a.t
    ]
    if not intervals:
        return []
    origin = min(a.t for a, _ in intervals)
    last = max(b.t for _, b in intervals)
    grown: dict[int, list[float]] = {}  # bin -> [seconds, *COUNTERS]
    for a, b in intervals:
        growth = [getattr(b, name) - getattr(a, name) for name in COUNTERS]
        for i, overlap in _overlaps(a.t - origin, b.t - origin, width):
            row = grown.setdefault(i, [0.0] * (1 + len(COUNTERS)))
            for j, g in enumerate(growth, 1):
                row[j] += g * overlap / (b.t - a.t)
    for start, stop in _union([(a.t, b.t) for a, b in intervals]):
        for i, overlap in _overlaps(start - origin, stop - origin, width):
            grown.setdefault(i, [0.0] * (1 + len(COUNTERS)))[0] += overlap
    return [GridBin(min(origin + (i + 1) * width, last), *grown[i]) for i in sorted(grown)]


def _overlaps(start: float, stop: float, width: float) -> list[tuple[int, float]]:
    """(bin, seconds) of ``[start, stop)`` in each bin ``[i * width, (i + 1) * width)``."""
    out = []
    i = int(start // width)
    while i * width < stop:
        overlap = min(stop, (i + 1) * width) - max(start, i * width)
        if overlap > 0:
            out.append((i, overlap))
        i += 1
    return out


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The union of ``intervals`` as disjoint intervals, in order."""
    out: list[tuple[float, float]] = []
    for start, stop in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], stop))
        else:
            out.append((start, stop))
    return out


def covered_seconds(intervals: list[tuple[float, float]]) -> float:
    """Seconds during which at least one of ``intervals`` runs."""
    return sum(stop - start for start, stop in _union(intervals))


def grid_rates(bins: Sequence[GridBin]) -> list[Rate]:
    """Pages/s and bits/s of each bin: the sum of the timelines' rates (Fig. 6)."""
    return [Rate(b.end, b.pages / b.seconds, 8 * b.bytes / b.seconds) for b in bins if b.seconds]


def grid_uniqueness(bins: Sequence[GridBin]) -> list[Uniqueness]:
    """``p`` of each bin that checked URLs, against the pages crawled by its end."""
    points = []
    pages = 0.0
    for b in bins:
        pages += b.pages
        checked = b.unique_urls + b.duplicates
        if checked > 0:
            points.append(Uniqueness(pages, b.unique_urls / checked, checked))
    return points


class Bin(NamedTuple):
    low: int  # in-degrees low..high (inclusive)
    high: int
    plds: int
    pages: int  # pages crawled from the bin's PLDs
    mean: float
    median: float


def bin_of(in_degree: int) -> int:
    """0 for in-degree 0, else 1 + floor(log2(in_degree))."""
    return int(in_degree).bit_length()


class InDegreeBins:
    """Pages per PLD by in-degree bin; fed in chunks (numpy arrays) of any size."""

    def __init__(self) -> None:
        self._pages: dict[int, Counter[int]] = {}  # bin -> page count -> PLDs

    def add(self, in_degrees: np.ndarray, pages: np.ndarray) -> None:
        in_degrees = np.asarray(in_degrees, dtype=np.uint64)
        pages = np.asarray(pages, dtype=np.uint64)
        assert in_degrees.shape == pages.shape
        if not len(in_degrees):
            return
        # bit_length, vectorised: floor(log2(d)) + 1 for d >= 1 (exact below 2**32, the
        # largest in-degree the store holds)
        bins = np.zeros(len(in_degrees), dtype=np.int64)
        positive = in_degrees > 0
        bins[positive] = np.floor(np.log2(in_degrees[positive].astype(np.float64))) + 1
        pairs, counts = np.unique(
            np.stack([bins, pages.astype(np.int64)]), axis=1, return_counts=True
        )
        for (b, p), n in zip(pairs.T.tolist(), counts.tolist(), strict=True):
            self._pages.setdefault(b, Counter())[p] += n

    def bins(self) -> list[Bin]:
        out = []
        for b in sorted(self._pages):
            counter = self._pages[b]
            plds = sum(counter.values())
            pages = sum(p * n for p, n in counter.items())
            low, high = (0, 0) if b == 0 else (1 << (b - 1), (1 << b) - 1)
            out.append(Bin(low, high, plds, pages, pages / plds, _median(counter, plds)))
        return out


def _median(counter: Counter[int], n: int) -> float:
    """The median of ``n`` values given as value -> occurrences (the mean of the two
    middle values when ``n`` is even)."""
    wanted = [(n - 1) // 2, n // 2]
    found: list[int] = []
    seen = 0
    for value in sorted(counter):
        seen += counter[value]
        while wanted and wanted[0] < seen:
            found.append(value)
            wanted.pop(0)
    return (found[0] + found[1]) / 2


def host_delays(politeness: Politeness, budgets: Mapping[int, int]) -> dict[float, int]:
    """PLDs by the host delay their budget implies, from ``budgets``: budget -> PLDs."""
    counts: Counter[float] = Counter()
    for budget, plds in budgets.items():
        counts[politeness.host(budget)] += plds
    return dict(sorted(counts.items()))
