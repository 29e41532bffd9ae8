"""The reactor-lag extension: a timer's lateness, a constant-size histogram, percentiles."""

from __future__ import annotations

import logging

import pytest
from scrapy import Spider
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler
from twisted.internet.task import Clock

from irlscrapy.report import reactorlag
from irlscrapy.report.reactorlag import (
    BUCKETS,
    TICK_SECONDS,
    ReactorLag,
    bucket_of,
    new_histogram,
    percentile,
)

#: Half a log-spaced bucket: how far a percentile may be from the true lag (plus float
#: rounding for a lag that falls exactly on a bucket edge).
TOLERANCE = 10 ** (1 / (2 * reactorlag.BUCKETS_PER_DECADE)) * (1 + 1e-9)


def run_ticks(ext: ReactorLag, clock: Clock, lags: list[float]) -> None:
    """Fire one tick per entry, each ``lag`` seconds after it was due."""
    for lag in lags:
        clock.advance(TICK_SECONDS + lag)


def started() -> tuple[ReactorLag, Clock, Spider]:
    crawler = get_crawler(Spider)
    clock = Clock()
    spider = Spider("lag")
    ext = ReactorLag(crawler.stats, clock)
    ext.spider_opened(spider)
    return ext, clock, spider


def test_is_off_unless_enabled() -> None:
    with pytest.raises(NotConfigured):
        ReactorLag.from_crawler(get_crawler(Spider))
    with pytest.raises(NotConfigured):
        ReactorLag.from_crawler(get_crawler(Spider, {"IRL_REACTOR_LAG_STATS": False}))


def test_from_crawler_builds_on_the_real_reactor_when_enabled() -> None:
    from twisted.internet import reactor

    ext = ReactorLag.from_crawler(get_crawler(Spider, {"IRL_REACTOR_LAG_STATS": True}))
    assert ext.clock is reactor
    assert ext.ticks == 0 and not ext.probe.running  # nothing runs before spider_opened


def test_one_late_tick_in_a_thousand_is_the_p999_and_not_the_p99() -> None:
    ext, clock, _ = started()
    run_ticks(ext, clock, [0.0] * 999 + [0.200])
    assert ext.ticks == 1000
    assert ext.hist[0] == 999
    assert ext.hist[bucket_of(0.200)] == 1
    assert sum(ext.hist) == 1000
    assert percentile(ext.hist, 50) == 0.0
    assert percentile(ext.hist, 99) == 0.0
    assert 0.200 / TOLERANCE <= percentile(ext.hist, 99.9) <= 0.200 * TOLERANCE
    assert ext.max_lag == pytest.approx(0.200)


def test_closing_sets_the_stats_logs_one_line_and_stops_the_timer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ext, clock, spider = started()
    run_ticks(ext, clock, [0.0] * 989 + [0.030] * 10 + [0.200])
    with caplog.at_level(logging.INFO, logger="irlscrapy.report.reactorlag"):
        ext.spider_closed(spider)
    stats = ext.stats
    assert stats.get_value("irl/reactor/ticks") == 1000
    assert stats.get_value("irl/reactor/lag_p50_ms") == 0.0
    assert 30 / TOLERANCE <= stats.get_value("irl/reactor/lag_p99_ms") <= 30 * TOLERANCE
    assert 200 / TOLERANCE <= stats.get_value("irl/reactor/lag_p999_ms") <= 200 * TOLERANCE
    assert stats.get_value("irl/reactor/lag_max_ms") == pytest.approx(200.0)
    lines = [r for r in caplog.records if r.name == "irlscrapy.report.reactorlag"]
    assert len(lines) == 1 and lines[0].levelno == logging.INFO
    assert "1000 ticks" in lines[0].getMessage()
    assert clock.getDelayedCalls() == []
    clock.advance(1.0)
    assert ext.ticks == 1000


def test_a_long_stall_is_one_sample_not_many_missed_ticks() -> None:
    ext, clock, _ = started()
    run_ticks(ext, clock, [3.0, 0.0])
    assert ext.ticks == 2
    assert percentile(ext.hist, 100) == pytest.approx(3.0, rel=TOLERANCE - 1)


def test_the_histogram_has_a_fixed_size_and_catches_every_range() -> None:
    ext, clock, _ = started()
    run_ticks(ext, clock, [0.0, 0.00005, 0.0002, 0.05, 9.9, 12.0, 60.0] * 300)
    assert len(ext.hist) == BUCKETS
    assert sum(ext.hist) == ext.ticks == 2100
    assert ext.hist[0] == 600 and ext.hist[-1] == 600
    assert percentile(ext.hist, 100) == reactorlag.LAG_HIGH  # a lower bound past 10 s
    assert ext.max_lag == pytest.approx(60.0)


def test_log_spaced_buckets_cover_0_1_ms_to_10_s_in_order() -> None:
    lags = [10 ** (e / 100) for e in range(-400, 100)]  # 0.1 ms .. 9.8 s
    indices = [bucket_of(x) for x in lags]
    assert indices == sorted(indices)
    assert indices[0] == 1 and indices[-1] == BUCKETS - 2
    for lag in lags:
        hist = new_histogram()
        hist[bucket_of(lag)] += 1
        assert lag / TOLERANCE <= percentile(hist, 50) <= lag * TOLERANCE


def test_percentile_of_nothing_is_zero_and_q_is_checked() -> None:
    assert percentile(new_histogram(), 99) == 0.0
    with pytest.raises(ValueError, match="within"):
        percentile(new_histogram(), 101)
