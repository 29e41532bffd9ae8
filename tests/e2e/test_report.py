"""The crawl report from real in-vitro crawls: a crawl with a JOBDIR, stopped and resumed,
then ``irlscrapy report JOBDIR``; and the demo's way, without JOBDIR, the report written
at close into IRL_REPORT_DIR. The report's numbers must equal the crawls' own stats.
And ``irlscrapy report`` over two agents' JOBDIRs (made by hand: no crawl)."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from irlscrapy.report.render import (
    PNG_DELAYS,
    PNG_PLDS,
    PNG_RATE,
    PNG_UNIQUENESS,
    SUMMARY_LABELS,
)
from irlscrapy.report.timeline import FIRST_GAP
from tests.reportdirs import TWO_AGENTS, write_two_agents

from .conftest import QUICK_IRL, ROOT, crawl_tiny, side_by_side

#: pages per run: short runs, so the resume starts with work left
PAGES = 400
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def dumped_stats(stderr: str) -> dict[str, Any]:
    """The stats Scrapy dumps to the log when the spider closes."""
    start = stderr.index("Dumping Scrapy stats:")
    text = stderr[stderr.index("{", start) : stderr.index("}\n", start) + 1]
    text = re.sub(r"datetime\.datetime\([^)]*\)", "None", text)
    stats: dict[str, Any] = ast.literal_eval(text)
    return stats


def statuses(stats: dict[str, Any]) -> dict[str, int]:
    prefix = "downloader/response_status_count/"
    return {k[len(prefix) :]: v for k, v in stats.items() if k.startswith(prefix)}


@side_by_side(seconds=19)
def resumed(root: Path) -> dict[str, Any]:
    """The two runs and the report (side by side with the other crawls:
    conftest.side_by_side)."""
    job = root / "job"
    settings = (
        *QUICK_IRL,
        f"JOBDIR={job}",
        f"CLOSESPIDER_PAGECOUNT={PAGES}",
        "IRL_REPORT_INTERVAL=0.5",
        "IRL_STAR_REFRESH=1",
    )
    runs = [crawl_tiny(root / f"requests-{i}.jsonl", *settings) for i in (1, 2)]
    for run in runs:
        assert run.returncode == 0, run.stderr[-3000:]
    out = root / "out"
    report = subprocess.run(
        [sys.executable, "-m", "irlscrapy", "report", str(job), "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.returncode == 0, report.stderr[-3000:]
    return {
        "job": job,
        "out": out,
        "printed": report.stdout.strip(),
        "stats": [dumped_stats(run.stderr) for run in runs],
        "data": json.loads((out / "report.json").read_text()),
        "html": (out / "report.html").read_text(),
    }


def test_report_renders_html_and_plots(resumed: dict[str, Any]) -> None:
    out = resumed["out"]
    assert resumed["printed"] == str(out / "report.html")
    for name in (PNG_RATE, PNG_UNIQUENESS, PNG_PLDS, PNG_DELAYS):
        png = (out / name).read_bytes()
        assert png.startswith(PNG_MAGIC) and len(png) > 5_000, name
        assert f"src='{name}'" in resumed["html"]


def test_summary_sums_both_runs_and_marks_the_restart(resumed: dict[str, Any]) -> None:
    first, second = resumed["stats"]
    summary = resumed["data"]["summary"]
    assert summary["runs"] == 2 and len(resumed["data"]["restarts"]) == 1
    # the stop is a gap in the rate's table, not a drop to 0 and a second listed twice
    assert "stopped; run 2 resumes" in resumed["html"]
    for figure, stat in (
        ("pages", "response_received_count"),
        ("unique_urls", "irl/urlseen/unique"),
        ("duplicates", "dupefilter/filtered"),
        ("requests", "downloader/request_count"),
        ("bytes", "downloader/response_bytes"),
    ):
        expected = first.get(stat, 0) + second.get(stat, 0)
        assert summary[figure] == expected, figure
    assert summary["pages"] >= 2 * PAGES
    assert summary["p"] == pytest.approx(
        summary["unique_urls"] / (summary["unique_urls"] + summary["duplicates"])
    )
    html = resumed["html"]
    label = SUMMARY_LABELS["pages"]
    assert f"<tr data-key='pages'><th>{label}</th><td>{summary['pages']:,}</td></tr>" in html
    parsed = summary["pages"] - summary["robots_responses"] - summary["ignored_responses"]
    assert summary["pages_parsed"] == parsed > 0
    assert summary["robots_responses"] > 0
    assert summary["finish_reason"] == "closespider_pagecount"
    # the in-vitro web's ground truth, counted by the spider in each run
    spam = first.get("invitro/spam_pages", 0) + second.get("invitro/spam_pages", 0)
    handled = first["invitro/pages"] + second["invitro/pages"]
    assert summary["spam_pages"] == spam
    assert summary["spam_share"] == pytest.approx(spam / handled)
    assert f"{spam / handled:.2%} of the pages the spider handled" in html


def test_status_codes_and_content_types_match_the_stats(resumed: dict[str, Any]) -> None:
    first, second = resumed["stats"]
    data = resumed["data"]
    expected = statuses(first)
    for code, count in statuses(second).items():
        expected[code] = expected.get(code, 0) + count
    assert data["status"] == expected
    for code, count in expected.items():
        assert f"<tr data-key='{code}'><th>{code}</th><td>{count:,}</td></tr>" in resumed["html"]
    # every response received but robots.txt has its content type counted once
    pages = data["summary"]["pages"]
    assert sum(data["content_types"].values()) + data["summary"]["robots_responses"] == pages
    assert data["content_types"].get("text/html", 0) > 0
    # the last run's stats.json is the second crawl's dump
    stats_json = json.loads((resumed["job"] / "report" / "stats.json").read_text())
    assert stats_json["run"] == 2
    assert statuses(stats_json["stats"]) == statuses(second)
    assert stats_json["stats"]["response_received_count"] == second["response_received_count"]


def test_top_plds_and_in_degree_bins_match_the_star_store(resumed: dict[str, Any]) -> None:
    data = resumed["data"]
    leaders = json.loads((resumed["job"] / "star" / "leaders.json").read_text())
    assert len(leaders) > 10
    expected = [
        [rank, row["pld"], row["in_degree"], row["budget"], row["pages"]]
        for rank, row in enumerate(leaders[: len(data["top_plds"])], 1)
    ]
    assert data["top_plds"] == expected
    assert expected[0][3] > 10  # rank 1 got a budget above the default
    for rank, pld, degree, budget, _ in data["top_plds"][:5]:
        row = f"<th>{rank}</th><td>{pld}</td><td>{degree:,}</td><td>{budget:,}</td>"
        assert row in resumed["html"]
    bins = data["in_degree_bins"]
    assert sum(b[2] for b in bins) == data["summary"]["plds"]
    # every ranked PLD sits in the bin of its in-degree, and the bins hold its pages
    for row in leaders:
        (b,) = [b for b in bins if b[0] <= row["in_degree"] <= b[1]]
        assert b[3] >= row["pages"]
    assert sum(data["host_delays"].values()) == data["summary"]["crawled_plds"]


@side_by_side(seconds=9)
def demo_crawl(work: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The demo's crawl (side by side with the others: conftest.side_by_side), and the
    directory of its report."""
    report_dir = work / "crawl-report"
    run = crawl_tiny(
        work / "requests.jsonl",
        *QUICK_IRL,
        "CLOSESPIDER_PAGECOUNT=200",
        f"IRL_REPORT_DIR={report_dir}",
    )
    return run, report_dir


def test_the_demo_writes_the_report_at_close_without_a_jobdir(
    demo_crawl: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    run, report_dir = demo_crawl
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"crawl report: {report_dir / 'report.html'}" in run.stderr
    # logged after the progress extension's summary
    assert run.stderr.index("summary (") < run.stderr.index("crawl report:")
    stats = dumped_stats(run.stderr)
    data = json.loads((report_dir / "report.json").read_text())
    assert data["summary"]["pages"] == stats["response_received_count"]
    assert data["summary"]["finish_reason"] == stats["finish_reason"] == "closespider_pagecount"
    assert data["status"] == statuses(stats)
    state_dir = Path(data["state_dir"])
    assert state_dir.name.startswith("irlscrapy-state-")
    assert not state_dir.exists()  # the temporary state directory is gone
    assert not data["state_dir_exists"]  # and the report does not send anyone there
    assert str(state_dir) not in (report_dir / "report.html").read_text()
    # a crawl of a few seconds has its points: a line each FIRST_GAP at first (this one
    # of 200 pages lasts about 5 s; the README's demo, 30 or more: firsthour/test_demo.py)
    crawling = data["summary"]["seconds_crawling"]
    assert len(data["download_rate"]) >= min(30, 0.5 * crawling / FIRST_GAP)  # (a busy reactor)
    assert (report_dir / PNG_PLDS).read_bytes().startswith(PNG_MAGIC)


def test_the_command_reports_several_agents_jobdirs_as_one_crawl(tmp_path: Path) -> None:
    """No crawl: two agents' records made by hand (tests/reportdirs.py)."""
    a, b = write_two_agents(tmp_path)
    command = [sys.executable, "-m", "irlscrapy", "report", str(a), str(b)]
    refused = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "give --out DIR" in refused.stderr
    out = tmp_path / "out"
    report = subprocess.run(
        [*command, "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert report.returncode == 0, report.stderr[-3000:]
    assert report.stdout.strip() == str(out / "report.html")
    data = json.loads((out / "report.json").read_text())
    assert data["summary"]["pages"] == TWO_AGENTS["pages"]
    assert data["download_rate"] == TWO_AGENTS["download_rate"]
    assert [agent["agent"] for agent in data["agents"]] == ["a", "b"]
    for name in (PNG_RATE, PNG_UNIQUENESS, PNG_PLDS, PNG_DELAYS):
        assert (out / name).read_bytes().startswith(PNG_MAGIC), name
