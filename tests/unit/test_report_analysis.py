"""The report's arithmetic: timelines stitched over restarts, download rates, the
probability of uniqueness p, in-degree bins, host delays; and the progress meter."""

from __future__ import annotations

import io
import itertools
import statistics

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from irlscrapy.report.analysis import (
    InDegreeBins,
    Sample,
    bin_of,
    download_rates,
    host_delays,
    overall_uniqueness,
    stitch,
    thin,
    uniqueness,
)
from irlscrapy.report.meter import ProgressMeter, bar
from irlscrapy.report.progress import progress_bar
from irlscrapy.scheduler.hosts.delays import Politeness


def run_samples(run: int, t0: float, counts: list[tuple[int, int, int]]) -> list[Sample]:
    """A run's lines, one a second: cumulative (pages, unique, duplicates) counters."""
    return [
        Sample(t0 + i, run, pages=p, unique_urls=u, duplicates=d, bytes=1000 * p)
        for i, (p, u, d) in enumerate(counts)
    ]


#: a run: increments of (pages, unique, duplicates) per line, cumulated
increments = st.lists(
    st.tuples(st.integers(0, 50), st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=8
)


def cumulate(steps: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    out, total = [], (0, 0, 0)
    for step in steps:
        total = (total[0] + step[0], total[1] + step[1], total[2] + step[2])
        out.append(total)
    return out


@given(st.lists(increments, min_size=1, max_size=4))
def test_stitched_counters_continue_over_restarts_and_end_at_the_runs_sum(
    runs: list[list[tuple[int, int, int]]],
) -> None:
    samples: list[Sample] = []
    for i, steps in enumerate(runs, 1):
        samples += run_samples(i, 100.0 * i, cumulate(steps))
    stitched = stitch(samples)
    assert stitched[-1].pages == sum(cumulate(steps)[-1][0] for steps in runs)
    assert stitched[-1].unique_urls == sum(cumulate(steps)[-1][1] for steps in runs)
    pages = [s.pages for s in stitched]
    assert pages == sorted(pages)  # never drops at a restart
    # intervals never span a restart: the rates' pages add up to each run's own growth
    rates = download_rates(stitched)
    grown = sum(r.pages_per_second for r in rates)  # one-second intervals
    assert grown == sum(cumulate(s)[-1][0] - cumulate(s)[0][0] for s in runs)


def test_download_rate_is_pages_and_bits_per_second_between_lines() -> None:
    samples = [Sample(10.0, 1, pages=0, bytes=0), Sample(12.0, 1, pages=50, bytes=1000)]
    assert download_rates(samples) == [(12.0, 25.0, 4000.0)]


def test_p_is_the_share_of_new_urls_among_those_checked_in_each_interval() -> None:
    samples = run_samples(1, 0.0, [(0, 0, 0), (10, 30, 10), (20, 30, 10), (30, 40, 50)])
    # the middle interval checked no URL: no point
    assert uniqueness(samples) == [(10, 0.75, 40), (30, 0.2, 50)]
    assert overall_uniqueness(40, 60) == 0.4
    assert overall_uniqueness(0, 0) is None


@given(st.lists(increments, min_size=1, max_size=4))
def test_p_stays_in_0_1_and_its_intervals_count_every_url_checked(
    runs: list[list[tuple[int, int, int]]],
) -> None:
    samples: list[Sample] = []
    for i, steps in enumerate(runs, 1):
        samples += run_samples(i, 100.0 * i, cumulate([(0, 0, 0), *steps]))
    points = uniqueness(stitch(samples))
    assert all(0 <= p.p <= 1 for p in points)
    checked = sum(sum(u + d for _, u, d in steps) for steps in runs)
    new = sum(sum(u for _, u, _ in steps) for steps in runs)
    assert sum(p.checked for p in points) == checked
    assert sum(p.p * p.checked for p in points) == pytest.approx(new)


def test_bins_are_powers_of_two_with_zero_alone() -> None:
    assert [bin_of(d) for d in (0, 1, 2, 3, 4, 7, 8, 2**32 - 1, 2**32)] == [
        0,
        1,
        2,
        2,
        3,
        3,
        4,
        32,
        33,
    ]
    bins = InDegreeBins()
    bins.add(np.array([0, 1, 2, 3, 3]), np.array([5, 1, 2, 10, 3]))
    assert [(b.low, b.high, b.plds, b.pages, b.mean, b.median) for b in bins.bins()] == [
        (0, 0, 1, 5, 5.0, 5.0),
        (1, 1, 1, 1, 1.0, 1.0),
        (2, 3, 3, 15, 5.0, 3.0),
    ]


plds = st.lists(st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**31)), max_size=60)


@given(plds, st.integers(1, 7))
def test_bins_equal_a_brute_force_count_however_the_plds_are_chunked(
    entries: list[tuple[int, int]], chunk: int
) -> None:
    bins = InDegreeBins()
    for i in range(0, len(entries), chunk):
        part = entries[i : i + chunk]
        bins.add(
            np.array([d for d, _ in part], dtype=np.uint64),
            np.array([p for _, p in part], dtype=np.uint64),
        )
    by_bin: dict[int, list[int]] = {}
    for degree, pages in entries:
        by_bin.setdefault(degree.bit_length(), []).append(pages)
    expected = [
        (
            0 if b == 0 else 2 ** (b - 1),
            0 if b == 0 else 2**b - 1,
            len(pages),
            sum(pages),
            pytest.approx(statistics.mean(pages)),
            statistics.median(pages),
        )
        for b, pages in sorted(by_bin.items())
    ]
    assert [tuple(b) for b in bins.bins()] == expected


def test_host_delays_count_plds_by_the_delay_their_budget_implies() -> None:
    politeness = Politeness(
        host_delay=40.0, host_delay_min=2.0, ip_delay=1.0, ip_delay_min=0.1, default_budget=10
    )
    # budget 20 halves tau_h; 10,000 hits the floor; the default keeps 40 s
    assert host_delays(politeness, {20: 1, 10_000: 2, 10: 5}) == {2.0: 2, 20.0: 1, 40.0: 5}


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_meter_is_silent_for_quick_work_and_draws_after_its_delay() -> None:
    clock, stream = FakeClock(), io.StringIO()
    quick = ProgressMeter("reading", 100, stream=stream, clock=clock, delay=1.0)
    quick.update(100)
    quick.close()
    assert stream.getvalue() == ""
    slow = ProgressMeter("reading", 1000, stream=stream, clock=clock, delay=1.0, every=0.5)
    for done in range(0, 1001, 100):
        clock.now += 0.25
        slow.update(done)
    slow.close()
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith(f"reading {bar(0.3)} 30% (300 of 1,000)")
    assert lines[-1] == f"reading {bar(1.0)} 100% (1,000 of 1,000) 3 s"
    assert len(lines) == 5  # at 1, 1.5, 2 and 2.5 s, and the last state at close


def test_the_progress_line_and_the_meter_draw_the_same_bar() -> None:
    assert progress_bar(500, 1000, 0.0).startswith(bar(0.5) + " 50% of 1,000")
    assert bar(0.5, 10) == "[#####-----]"
    assert bar(2.0, 4) == "[####]" and bar(-1.0, 4) == "[----]"


@given(st.lists(st.integers(1, 40), min_size=1, max_size=5), st.integers(1, 30))
def test_thinning_keeps_each_runs_ends_and_about_limit_lines(
    run_lengths: list[int], limit: int
) -> None:
    samples = [
        Sample(float(i), run, pages=i)
        for run, length in enumerate(run_lengths, 1)
        for i in range(length)
    ]
    kept = thin(samples, limit)
    assert stitch(kept) == thin(stitch(samples), limit)  # the report thins first: cheaper
    assert len(kept) <= limit + 2 * len(run_lengths)
    for run in range(1, len(run_lengths) + 1):
        own = [s for s in samples if s.run == run]
        mine = [s for s in kept if s.run == run]
        assert mine[0] == own[0] and mine[-1] == own[-1]
    # the kept lines' windows tile each run: the rates times their windows add up
    rates = download_rates(kept)
    starts = [a.t for a, b in itertools.pairwise(kept) if a.run == b.run]
    assert len(starts) == len(rates)
    grown = sum(r.pages_per_second * (r.t - t0) for r, t0 in zip(rates, starts, strict=True))
    assert grown == pytest.approx(sum(length - 1 for length in run_lengths))
