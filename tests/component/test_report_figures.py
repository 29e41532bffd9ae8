"""The report's figures and words from synthetic records (tests/reportdirs.py): a demo's
few seconds give Fig. 6 enough points, pages/s and Mbit/s each on an axis of its own, a
resumed crawl shows its stop as a gap, a figure and its table share one time unit, the
summary speaks plainly first, and the stats agree with the text."""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from scrapy import Spider
from scrapy.http import Request, Response
from scrapy.utils.test import get_crawler

from irlscrapy.report import words
from irlscrapy.report.analysis import Sample, uniqueness
from irlscrapy.report.data import POINTS
from irlscrapy.report.layout import write_stats
from irlscrapy.report.plots import load_plotting, rate_figure, uniqueness_figure
from irlscrapy.report.render import write_report
from irlscrapy.report.timeline import FIRST_GAP, CrawlRecorder, sample_gap
from irlscrapy.scheduler.metakeys import ROBOTS_KEY
from tests.reportdirs import SETTINGS, Run, write_star, write_state_dir

#: pages per second of the synthetic crawls
RATE = 300


def paced_run(opened: float, seconds: float, pages_before: int = 0) -> Run:
    """A run of ``seconds`` sampled as the recorder samples (sample_gap), at RATE pages/s."""
    later = []
    uptime = 0.0
    while uptime < seconds:
        uptime = min(seconds, uptime + sample_gap(uptime, SETTINGS["IRL_REPORT_INTERVAL"]))
        pages = int(RATE * uptime)
        later.append((opened + uptime, pages, 2 * pages, pages))
    return opened, later, {"200": later[-1][1]}


def report(tmp_path: Path, runs: list[Run], **kwargs: Any) -> tuple[dict[str, Any], str]:
    job = tmp_path / "job"
    write_state_dir(job, runs, SETTINGS, **kwargs)
    page = write_report(job, tmp_path / "out")
    return json.loads((tmp_path / "out" / "report.json").read_text()), page.read_text()


def table(html: str, table_id: str) -> list[list[str]]:
    """The rows of table ``table_id`` (its header row left out), cell texts."""
    found = re.search(f"<table id='{table_id}'>(.*?)</table>", html)
    assert found is not None, table_id
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", found[1])[1:]
    return [re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row) for row in rows]


@pytest.mark.parametrize("seconds", [6.0, 7.0, 60.0, 3600.0])
def test_a_crawl_of_any_length_is_sampled_at_least_30_times(seconds: float) -> None:
    run = paced_run(0.0, seconds)
    assert len(run[1]) >= 30
    gaps = [b[0] - a[0] for a, b in zip(run[1], run[1][1:], strict=False)]
    interval = SETTINGS["IRL_REPORT_INTERVAL"]
    assert min(gaps[:-1]) >= FIRST_GAP - 1e-9 and max(gaps) <= interval + 1e-9


def test_the_demos_rate_has_30_points_and_pages_per_second_on_its_own_axis(
    tmp_path: Path,
) -> None:
    """The issue's demo: 3 points over 27 s, pages/s hidden behind Mbit/s on one scale."""
    data, html = report(tmp_path, [paced_run(1000.0, 7.0)], finish_reason="closespider_pagecount")
    assert len(data["download_rate"]) >= 30
    assert len(table(html, "download_rate")) == len(data["download_rate"])
    fig = rate_figure(load_plotting(), data)
    pages, mbits = fig.axes
    assert (pages.get_ylabel(), mbits.get_ylabel()) == ("pages/s", "Mbit/s")
    assert not pages.get_shared_y_axes().joined(pages, mbits)
    (line,) = pages.get_lines()
    assert max(line.get_ydata()) == pytest.approx(RATE, rel=0.05)
    assert pages.get_ylim()[1] >= RATE and mbits.get_ylim()[1] < RATE  # each its own scale
    assert mbits.get_xlabel() == "seconds since the crawl began"
    # stacked, not drawn over each other (a twin axis hid pages/s behind Mbit/s)
    assert pages.get_position().y0 > mbits.get_position().y1
    assert table(html, "download_rate")[0][0] and "<th>seconds since start</th>" in html


def test_p_is_drawn_from_0_pages_in_steps_not_as_a_dot_on_a_narrow_axis(tmp_path: Path) -> None:
    """The issue's demo: one dot on a 2,900-3,150 axis."""
    data, _ = report(tmp_path, [paced_run(1000.0, 7.0)])
    assert len(data["uniqueness"]) >= 30
    ax = uniqueness_figure(load_plotting(), data).axes[0]
    steps = ax.get_lines()[0]
    assert steps.get_drawstyle() == "steps-pre" and steps.get_xdata()[0] == 0
    assert ax.get_xlim()[0] == 0 and ax.get_ylim() == (0, 1)


def test_a_resumed_crawl_shows_its_stop_as_a_gap_with_the_restart_marked(
    tmp_path: Path,
) -> None:
    first = paced_run(1000.0, 8.0)
    second = paced_run(1030.0, 8.0)
    data, html = report(tmp_path, [first, second])
    fig = rate_figure(load_plotting(), data)
    pages = fig.axes[0]
    xs, ys = (list(v) for v in pages.get_lines()[0].get_data())
    breaks = [x for x, y in zip(xs, ys, strict=True) if math.isnan(y)]
    assert breaks == [pytest.approx(30.0)]  # the line breaks at the restart, no drop to 0
    assert 0.0 not in [y for x, y in zip(xs, ys, strict=True) if 7 < x < 31]
    shaded = [p.get_x() for p in pages.patches]
    assert shaded == [pytest.approx(8.0)]  # stopped at 8 s, shaded to the restart
    assert any("restart (run 2)" in t.get_text() for t in pages.texts)
    rows = table(html, "download_rate")
    assert ["8.0-30.0", "stopped; run 2 resumes", ""] in rows
    times = [row[0] for row in rows]
    assert len(times) == len(set(times))  # no second listed twice


def test_a_long_crawl_has_one_time_unit_in_its_figure_and_table(tmp_path: Path) -> None:
    data, html = report(tmp_path, [paced_run(0.0, 3 * 3600.0)])
    rates = data["download_rate"]
    assert 30 <= len(rates) <= POINTS + 2
    # the first seconds' close lines are averaged over a window of their own share
    windows = [b[0] - a[0] for a, b in itertools.pairwise(rates)]
    assert min(windows[:-1]) >= 3 * 3600 / POINTS * 0.99
    fig = rate_figure(load_plotting(), data)
    assert fig.axes[1].get_xlabel() == "hours since the crawl began"
    assert "<th>hours since start</th>" in html
    assert table(html, "download_rate")[-1][0] == "3.00"


def test_the_summary_speaks_plainly_first_and_names_no_removed_directory(
    tmp_path: Path,
) -> None:
    job = tmp_path / "job"
    run = paced_run(1000.0, 7.0)
    write_state_dir(job, [run], SETTINGS, finish_reason="closespider_pagecount")
    html = write_report(job, tmp_path / "out", state_dir_removed=True).read_text()
    plain = html[: html.index("<h2>Summary</h2>")]
    pages = run[1][-1][1]
    assert f"The crawl received {pages:,} responses in 7.0 s of crawling in one run" in plain
    for said in ("pages parsed by the spider", "robots.txt files", "other responses",
                 "failed", f"It found {2 * pages:,} unique URLs",
                 "It finished because it reached CLOSESPIDER_PAGECOUNT."):  # fmt: skip
        assert said in plain, said
    assert str(job) not in html and "temporary and is removed" in plain
    assert "<th>time crawling</th><td>7.0 s</td>" in html  # not "seconds_crawling 7.0000"
    html = write_report(job, tmp_path / "again").read_text()
    assert f"state directory (resume it with JOBDIR): {job}" in html


def test_stats_agree_with_the_text_where_star_counted_after_its_last_refresh(
    tmp_path: Path,
) -> None:
    job = tmp_path / "job"
    write_state_dir(job, [paced_run(1000.0, 7.0)], SETTINGS)
    write_star(job, SETTINGS, [("a.com", ["b.com", "c.com"]), ("b.com", ["c.com"])], [])
    stats = {"finish_reason": "finished", "irl/star/plds": 0}  # no refresh during the crawl
    write_stats(job / "report" / "stats.json", stats, 1, 1007.0)
    html = write_report(job, tmp_path / "out").read_text()
    assert "3 PLDs known to STAR" in html
    (row,) = [r for r in table(html, "stats") if r[0] == "irl/star/plds"]
    assert row[1].startswith("0 (at STAR") and row[1].endswith("counts 3)")


def test_the_host_delay_figure_says_why_the_delays_are_what_they_are() -> None:
    politeness = {"IRL_HOST_DELAY": 1.0, "IRL_HOST_DELAY_MIN": 1.0, "IRL_BUDGET_DEFAULT": 10,
                  "IRL_ROBOTS_MAX_CRAWL_DELAY": 30.0}  # fmt: skip
    project = {"politeness": politeness, "host_delays": {"1.0": 928},
               "pace": {"source": "DOWNLOAD_DELAY", "set": []}}  # fmt: skip
    said = words.delays_caption(project)
    assert "the project's DOWNLOAD_DELAY" in said and "no budget shortens it" in said
    assert "Crawl-delay (up to IRL_ROBOTS_MAX_CRAWL_DELAY = 30 s)" in said
    broad = {"politeness": {**politeness, "IRL_HOST_DELAY": 4.0, "IRL_HOST_DELAY_MIN": 2.0},
             "host_delays": {"2.0": 5},
             "pace": {"source": "IRL_HOST_DELAY", "set": []}}  # fmt: skip
    said = words.delays_caption(broad)
    assert "not set, so derived" in said and "reached at a budget of 20" in said
    assert "Every crawled PLD is at the floor here." in said


def test_the_recorder_samples_every_first_gap_at_first_then_further_apart(
    tmp_path: Path,
) -> None:
    from twisted.internet import reactor

    installed: Any = reactor
    crawler = get_crawler(Spider, {"JOBDIR": str(tmp_path)})
    crawler.engine = SimpleNamespace(downloader=SimpleNamespace(active=[]), scheduler=None)  # type: ignore[assignment]
    ext = CrawlRecorder.from_crawler(crawler)
    now = [1000.0]
    ext.clock = lambda: now[0]
    ext.spider_opened(Spider("s"))
    try:
        assert ext._next is not None
        assert ext._next.getTime() - installed.seconds() == pytest.approx(FIRST_GAP, abs=0.05)
        ext._next.cancel()
        now[0] += 30
        ext.sample()  # 30 s into the run: a line every second
        assert ext._next.getTime() - installed.seconds() == pytest.approx(1.0, abs=0.05)
    finally:
        ext.spider_closed(Spider("s"), "finished")
    assert not ext._next.active()


def test_robots_txt_is_not_counted_among_the_content_types(tmp_path: Path) -> None:
    crawler = get_crawler(Spider, {"JOBDIR": str(tmp_path)})
    ext = CrawlRecorder.from_crawler(crawler)
    headers = {b"Content-Type": b"text/plain"}
    for meta in ({ROBOTS_KEY: "a.com"}, {"dont_obey_robotstxt": True}, {}):
        request = Request("http://a.com/robots.txt", meta=meta)
        ext.response_received(Response(request.url, headers=headers), request, Spider("s"))
    assert crawler.stats is not None
    assert crawler.stats.get_value("irl/content_type/text/plain") == 1  # only the last


def test_a_few_urls_rechecked_at_a_restart_do_not_plot_as_a_fall_of_p_to_0() -> None:
    samples = [
        Sample(0.0, 2, pages=0),
        Sample(1.0, 2, pages=10, duplicates=1),  # 1 URL re-checked: p 0 on its own
        Sample(2.0, 2, pages=20, unique_urls=60, duplicates=41),
        Sample(3.0, 2, pages=30, unique_urls=61, duplicates=41),  # the run's last: kept
    ]
    assert [p for _, p, _ in uniqueness(samples)] == [0.0, 60 / 100, 1.0]
    joined = uniqueness(samples, least=50)
    assert joined == [(20, 60 / 101, 101), (30, 1.0, 1)]
