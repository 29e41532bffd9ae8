"""The numbers of a crawl's report (``report.json``, and every table and plot of
``report.html``), from one crawl's records (:func:`report_data`); several agents' are
combined in :mod:`irlscrapy.report.merge`, with the helpers here.

Whole-crawl figures sum the last timeline line of every run (Scrapy's counters restart
with each run). The download rate and ``p`` come from the timeline, thinned to about
:data:`POINTS` lines spread evenly in time; the per-PLD tables from STAR's store
(:mod:`irlscrapy.report.plds`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from irlscrapy.report import analysis
from irlscrapy.report.plds import StarRecords
from irlscrapy.report.reader import CrawlRecords

#: Timeline lines kept for the rate and ``p``, at least 1/POINTS of the crawl's time
#: apart (analysis.thin: longer crawls average over longer windows).
POINTS = 200
#: Settings shown under "Politeness in force".
POLITENESS_SETTINGS = (
    "IRL_HOST_DELAY",
    "IRL_HOST_DELAY_MIN",
    "IRL_IP_DELAY",
    "IRL_IP_DELAY_MIN",
    "IRL_BUDGET_DEFAULT",
    "IRL_BUDGET_MAX",
    "IRL_ROBOTS_MAX_CRAWL_DELAY",
    "CONCURRENT_REQUESTS",
    "ROBOTSTXT_OBEY",
)
#: Timeline counters the summary sums over runs (and agents); ``p`` follows the third.
#: ``pages`` counts responses, robots.txt included (what CLOSESPIDER_PAGECOUNT counts);
#: ``pages_parsed`` is what is left of them without robots.txt and HTTP errors.
TOTALS = (
    "pages",
    "unique_urls",
    "duplicates",
    "links",
    "requests",
    "download_errors",
    "bytes",
    "robots_responses",
    "ignored_responses",
)
#: Timeline dicts of counts the report sums over runs (and agents).
COUNTS = ("status", "content_types", "robots")


def _last_lines(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    last: dict[int, dict[str, Any]] = {}
    for line in lines:
        last[line["run"]] = line
    return list(last.values())


def run_total(lines: list[dict[str, Any]], name: str) -> float:
    """Figure ``name`` summed over the last line of every run."""
    return sum(line.get(name, 0) for line in _last_lines(lines))


def run_counts(timelines: Sequence[list[dict[str, Any]]], name: str) -> dict[str, float]:
    """The counts of dict ``name`` summed over the last line of every run of every
    timeline."""
    total: dict[str, float] = {}
    for lines in timelines:
        for line in _last_lines(lines):
            for key, count in line.get(name, {}).items():
                total[key] = total.get(key, 0) + count
    return dict(sorted(total.items()))


def run_spans(lines: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """(opened, last line) of every run, wall-clock."""
    return [
        (line["t"] - line.get("uptime", 0), line["t"]) for line in _last_lines(lines) if "t" in line
    ]


def finish_reason(crawl: CrawlRecords) -> str | None:
    """Why the crawl's last run closed (None if it did not close: no stats.json of it)."""
    return (crawl.stats or {}).get("finish_reason") if crawl.stats_run == crawl.runs else None


def totals(timelines: Sequence[list[dict[str, Any]]]) -> dict[str, Any]:
    """The summary's counters and ``p``, summed over runs and timelines."""

    def total(name: str) -> float:
        return sum(run_total(lines, name) for lines in timelines)

    summary: dict[str, Any] = {name: total(name) for name in TOTALS[:3]}
    summary["p"] = analysis.overall_uniqueness(summary["unique_urls"], summary["duplicates"])
    summary.update((name, total(name)) for name in TOTALS[3:])
    summary["pages_parsed"] = max(
        summary["pages"] - summary["robots_responses"] - summary["ignored_responses"], 0
    )
    return summary


def add_spam(summary: dict[str, Any], timelines: Sequence[list[dict[str, Any]]]) -> None:
    """On the in-vitro web, its ground truth: the pages of spam farms, and their share."""
    invitro_pages = sum(run_total(lines, "invitro_pages") for lines in timelines)
    if invitro_pages:
        summary["spam_pages"] = sum(run_total(lines, "spam_pages") for lines in timelines)
        summary["spam_share"] = summary["spam_pages"] / invitro_pages


def star_data(data: dict[str, Any], star: StarRecords | None) -> None:
    """The per-PLD tables into ``data`` (empty without STAR)."""
    data["star"] = star is not None
    data["in_degree_bins"], data["top_plds"], data["host_delays"] = [], [], {}
    if star is not None:
        data["summary"]["plds"] = star.plds
        data["summary"]["crawled_plds"] = star.crawled_plds
        data["in_degree_bins"] = [list(b) for b in star.bins.bins()]
        data["top_plds"] = [list(row) for row in star.leaders]
        data["host_delays"] = {str(k): v for k, v in star.host_delays.items()}


def least(summary: dict[str, Any]) -> float:
    """The URLs checked a point of ``p`` stands for at least: 1/(2 POINTS) of the crawl's."""
    return (summary["unique_urls"] + summary["duplicates"]) / (2 * POINTS)


def report_data(crawl: CrawlRecords, state_dir_removed: bool = False) -> dict[str, Any]:
    """The numbers of every table and plot of one crawl's report (``report.json``);
    ``state_dir_removed``: the crawl's temporary state directory is removed at its close."""
    lines = crawl.lines
    samples = analysis.stitch(analysis.thin(crawl.samples, POINTS))  # thin keeps run ends
    summary = totals([lines])
    summary["seconds_crawling"] = run_total(lines, "uptime")
    summary["runs"] = crawl.runs
    summary["finish_reason"] = finish_reason(crawl)
    add_spam(summary, [lines])
    data: dict[str, Any] = {
        "state_dir": str(crawl.state_dir),
        "state_dir_exists": not state_dir_removed and crawl.state_dir.is_dir(),
        "summary": summary,
        "notes": crawl.notes,
        "restarts": crawl.restarts,
        "run_spans": [list(span) for span in run_spans(lines)],
        **{name: run_counts([lines], name) for name in COUNTS},
        "download_rate": [list(r) for r in analysis.download_rates(samples)],
        "uniqueness": [list(u) for u in analysis.uniqueness(samples, least(summary))],
        "start": samples[0].t,
        "politeness": {k: crawl.settings.get(k) for k in POLITENESS_SETTINGS},
        "pace": crawl.pace,
    }
    star_data(data, crawl.star)
    return data
