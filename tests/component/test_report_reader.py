"""The report's records: CrawlRecorder writing them through a Scrapy crawler, and
``irlscrapy report`` reading them, refusing what is not a finished crawl's records."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from scrapy import Spider
from scrapy.exceptions import NotConfigured
from scrapy.http import Request, Response
from scrapy.utils.test import get_crawler

from irlscrapy.cli import main
from irlscrapy.exceptions import ReportError
from irlscrapy.report.layout import cut_torn_line, last_run, write_stats
from irlscrapy.report.reader import read_crawl
from irlscrapy.report.render import PNG_PLDS, PNG_RATE, write_report
from irlscrapy.report.timeline import CONTENT_TYPES, CrawlRecorder
from irlscrapy.storage.dirlock import DirectoryLock


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def recorder(tmp_path: Path, **settings: Any) -> tuple[CrawlRecorder, Clock]:
    crawler = get_crawler(Spider, {"JOBDIR": str(tmp_path), **settings})
    # what crawl_figures reads of a running engine (building a real one installs a reactor)
    crawler.engine = SimpleNamespace(downloader=SimpleNamespace(active=[]), scheduler=None)  # type: ignore[assignment]
    ext = CrawlRecorder.from_crawler(crawler)
    clock = Clock()
    ext.clock = clock
    return ext, clock


def respond(ext: CrawlRecorder, content_type: bytes | None) -> None:
    headers = {b"Content-Type": content_type} if content_type is not None else {}
    response = Response("http://a.com/", headers=headers)
    ext.response_received(response, Request("http://a.com/"), Spider("s"))


def test_recorder_is_off_at_interval_zero(tmp_path: Path) -> None:
    with pytest.raises(NotConfigured):
        recorder(tmp_path, IRL_REPORT_INTERVAL=0)


def test_content_types_are_counted_without_parameters_and_bounded(tmp_path: Path) -> None:
    ext, _ = recorder(tmp_path)
    respond(ext, b"Text/HTML; charset=utf-8")
    respond(ext, b"text/html")
    respond(ext, None)
    for i in range(CONTENT_TYPES + 3):
        respond(ext, f"application/x-{i}".encode())
    stats = ext.crawler.stats
    assert stats is not None
    counted = {k: v for k, v in stats.get_stats().items() if k.startswith("irl/content_type/")}
    assert counted["irl/content_type/text/html"] == 2
    assert counted["irl/content_type/none"] == 1
    # 32 kinds kept: text/html and 31 of the others; the last 4 are "other"
    assert counted["irl/content_type/other"] == 4
    assert len(counted) == CONTENT_TYPES + 2  # and "none", and "other"


def test_a_run_appends_lines_and_a_resumed_run_counts_on(tmp_path: Path) -> None:
    for run in (1, 2):
        ext, clock = recorder(tmp_path, IRL_STATUS_TOKEN="s3cret")
        ext.spider_opened(Spider("s"))
        stats = ext.crawler.stats
        assert stats is not None
        stats.set_value("response_received_count", 7 * run)
        stats.set_value("downloader/response_status_count/200", 5)
        stats.set_value("start_time", datetime.datetime(2026, 1, 1))
        stats.set_value("irl/star/plds", np.uint64(3))  # numbers stay numbers
        clock.now += 10
        ext.sample()
        ext.spider_closed(Spider("s"), "finished")
        assert ext.run == run
    lines = [
        json.loads(x) for x in (tmp_path / "report" / "timeline.jsonl").read_text().splitlines()
    ]
    assert [(x["run"], x["event"]) for x in lines] == [
        (1, "open"),
        (1, "sample"),
        (1, "close"),
        (2, "open"),
        (2, "sample"),
        (2, "close"),
    ]
    assert lines[4]["pages"] == 14 and lines[4]["status"] == {"200": 5}
    assert "IRL_STATUS_TOKEN" not in lines[3]["settings"]  # secrets stay out
    assert lines[3]["settings"]["IRL_BUDGET_DEFAULT"] == 10
    stats_json = json.loads((tmp_path / "report" / "stats.json").read_text())
    assert stats_json["run"] == 2
    assert stats_json["stats"]["start_time"] == "2026-01-01T00:00:00"
    assert stats_json["stats"]["irl/star/plds"] == 3


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    timeline = tmp_path / "timeline.jsonl"
    timeline.write_text('{"v": 1, "run": 3, "event": "open", "t": 1}\n{"v": 1, "run": 4, "ev')
    assert last_run(timeline) == 3
    assert last_run(tmp_path / "absent.jsonl") == 0


def test_a_run_after_a_torn_last_line_cuts_it_and_keeps_its_own_open_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A kill -9 mid-write leaves a line without its newline; the next run's "open"
    line used to be appended onto it, and lost to the report with the fragment."""
    timeline = tmp_path / "report" / "timeline.jsonl"
    timeline.parent.mkdir()
    whole = '{"v": 1, "run": 1, "event": "open", "t": 1}\n'
    timeline.write_text(whole + '{"v": 1, "run": 1, "ev' + "x" * 70_000)  # past a tail read
    ext, _ = recorder(tmp_path)
    with caplog.at_level("WARNING"):
        ext.spider_opened(Spider("s"))
    ext.spider_closed(Spider("s"), "finished")
    lines = [json.loads(x) for x in timeline.read_text().splitlines()]
    assert [(x["run"], x["event"]) for x in lines] == [(1, "open"), (2, "open"), (2, "close")]
    assert any("torn last record" in r.getMessage() for r in caplog.records)
    assert ext.crawler.stats.get_value("irl/recovered/torn_tail/report") == 1
    assert cut_torn_line(timeline) == 0  # a whole file is left alone
    assert cut_torn_line(tmp_path / "absent.jsonl") == 0


def write_records(state_dir: Path) -> None:
    """A finished one-run crawl's records, with no STAR store (another scheduler)."""
    records = state_dir / "report"
    records.mkdir(parents=True)
    settings = {"IRL_HOST_DELAY": 40.0}
    lines = [
        {"v": 1, "event": "open", "t": 0.0, "run": 1, "pages": 0, "settings": settings},
        {"v": 1, "event": "sample", "t": 10.0, "run": 1, "pages": 50, "unique_urls": 60,
         "duplicates": 40, "bytes": 10_000, "status": {"200": 45, "404": 5}},
        {"v": 1, "event": "close", "t": 12.0, "run": 1, "pages": 60, "unique_urls": 70,
         "duplicates": 50, "bytes": 12_000, "status": {"200": 54, "404": 6}},
    ]  # fmt: skip
    (records / "timeline.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    write_stats(records / "stats.json", {"finish_reason": "finished"}, 1, 12.0)
    (state_dir / "LOCK").write_text("")


def test_a_report_without_star_says_so_and_sums_the_timeline(tmp_path: Path) -> None:
    write_records(tmp_path / "job")
    page = write_report(tmp_path / "job", tmp_path / "out")
    html = page.read_text()
    assert "STAR did not run in this crawl" in html
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert data["summary"]["pages"] == 60 and data["summary"]["p"] == 70 / 120
    assert data["status"] == {"200": 54, "404": 6}
    assert data["download_rate"] == [[10.0, 5.0, 8000.0], [12.0, 5.0, 8000.0]]
    assert (tmp_path / "out" / PNG_RATE).exists() and not (tmp_path / "out" / PNG_PLDS).exists()


@pytest.mark.parametrize("damage", [b'{"run": 1, "sta', b"\xff\xfe", b"[]", b'{"run": 1}'])
def test_a_damaged_stats_file_is_left_out_with_a_note(tmp_path: Path, damage: bytes) -> None:
    """stats.json is rewritten at every close; damaged, the report is made without it
    and says so (it raised out of ``irlscrapy report`` with a traceback)."""
    write_records(tmp_path / "job")
    (tmp_path / "job" / "report" / "stats.json").write_bytes(damage)
    records = read_crawl(tmp_path / "job")
    assert records.stats is None
    assert any(
        "stats.json is damaged" in note and "irlscrapy repair" in note for note in records.notes
    )
    assert write_report(tmp_path / "job", tmp_path / "out").exists()


def test_errors_say_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="is not a directory: give the JOBDIR"):
        read_crawl(tmp_path / "absent")
    (tmp_path / "other").mkdir()
    with pytest.raises(ReportError, match="is not a crawl's state directory"):
        read_crawl(tmp_path / "other")
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "LOCK").write_text("")
    with pytest.raises(ReportError, match=r"has no report records.*Crawl with it"):
        read_crawl(tmp_path / "bare")
    write_records(tmp_path / "job")
    lock = DirectoryLock(tmp_path / "job", "irlscrapy state")
    lock.acquire()  # a crawl still running
    try:
        with pytest.raises(ReportError, match=r"still running.*wait until it has finished"):
            read_crawl(tmp_path / "job")
    finally:
        lock.release()


def test_cli_exits_2_with_the_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path)]) == 2
    assert "is not a crawl's state directory" in capsys.readouterr().err
    write_records(tmp_path / "job")
    assert main(["report", str(tmp_path / "job")]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "job" / "report" / "report.html")
