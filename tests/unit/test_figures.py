"""Throughput (rate, sparkline) and the progress bar of the progress line and the status
endpoint."""

from __future__ import annotations

import pytest
from scrapy import Spider
from scrapy.utils.test import get_crawler

from irlscrapy.report.console import _rate_chart
from irlscrapy.report.figures import Throughput, crawl_figures
from irlscrapy.report.progress import progress_bar, responses_part


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_rate_is_over_the_samples_kept_and_zero_before_two() -> None:
    clock = FakeClock()
    throughput = Throughput(clock, history=3)
    assert throughput.rate() == 0.0 and throughput.sparkline() == []
    for pages in (0, 10, 40, 100):  # one sample a second
        throughput.add(pages)
        clock.now += 1.0
    # the oldest of the four is gone: (100 - 10) pages over 2 s
    assert throughput.rate() == pytest.approx(45.0)
    assert throughput.sparkline() == pytest.approx([30.0, 60.0])
    assert throughput.figures()["uptime_seconds"] == pytest.approx(4.0)


def test_samples_at_one_instant_give_no_division_by_zero() -> None:
    clock = FakeClock()
    throughput = Throughput(clock)
    throughput.add(5)
    throughput.add(9)
    assert throughput.rate() == 0.0
    assert throughput.sparkline() == [0.0]


def test_the_rate_chart_scales_to_a_round_top_and_labels_its_axes() -> None:
    assert "<svg" not in _rate_chart([3.0], 1.0)
    svg = _rate_chart([0.0, 50.0, 80.0], 1.0, width=158, height=138)  # a 100 x 100 plot
    points = svg.split('points="')[1].split('"')[0].split()
    assert points == ["48.0,110.0", "98.0,60.0", "148.0,30.0"]  # 80 of a top of 100
    labels = [t.split(">")[1] for t in svg.split("<text")[1:]]
    assert labels[:6] == [
        "0</text",
        "50</text",
        "100</text",
        "-2.0 s</text",
        "-1.0 s</text",
        "now</text",
    ]
    assert "pages/s</text" in labels[-1] and "peak 80.0" in svg


def test_progress_bar_towards_the_page_budget() -> None:
    assert progress_bar(10, 0, 5.0) == ""  # no budget, no bar
    assert (
        progress_bar(500, 1000, 50.0, width=10) == "[#####-----] 50% of 1,000 responses, ETA 10 s; "
    )
    assert progress_bar(0, 1000, 0.0, width=4) == "[----] 0% of 1,000 responses; "
    assert progress_bar(1200, 1000, 9.0, width=4) == "[####] 100% of 1,000 responses; "


def test_responses_are_split_into_pages_parsed_robots_txt_and_ignored() -> None:
    figures = {"pages": 3012.0, "robots_responses": 1185.0, "ignored_responses": 2.0}
    assert responses_part(figures, 96.25) == (
        "3012 responses (96.2/s): 1825 pages parsed, 1185 robots.txt, 2 HTTP errors not parsed"
    )


def test_before_the_crawl_starts_the_figures_are_the_counters_and_rss() -> None:
    crawler = get_crawler(Spider)  # no engine until the crawl starts
    assert crawler.stats is not None
    crawler.stats.set_value("response_received_count", 7)
    crawler.stats.set_value("robotstxt/response_count", 2)
    figures = crawl_figures(crawler)
    assert figures["pages"] == 7 and figures["robots_responses"] == 2
    assert figures["ignored_responses"] == 0
    assert figures["rss_bytes"] > 0
    assert "downloader_active" not in figures
