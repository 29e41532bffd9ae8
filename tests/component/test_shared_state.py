"""One state directory per crawl: the IRL scheduler, URLseen and content dedup keep
their files in the same one, a temporary one included (content dedup had a temporary
directory of its own without a JOBDIR)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy import Spider
from scrapy.utils.test import get_crawler

from irlscrapy.scheduler.irl import IRLScheduler
from irlscrapy.state.directory import StateDirectory
from irlscrapy.warc.recorder import ExchangeRecorder

SETTINGS = {
    "SCHEDULER": "irlscrapy.scheduler.irl.IRLScheduler",
    "DUPEFILTER_CLASS": "irlscrapy.dupefilters.urlseen.DRUMDupeFilter",
    "IRL_CONTENTSEEN_ENABLED": True,
}


@pytest.mark.parametrize("jobdir", [False, True])
def test_the_scheduler_urlseen_and_content_dedup_share_one_state_directory(
    tmp_path: Path, jobdir: bool
) -> None:
    settings = {**SETTINGS, **({"JOBDIR": str(tmp_path / "job")} if jobdir else {})}
    crawler = get_crawler(Spider, settings)
    scheduler = IRLScheduler.from_crawler(crawler)
    recorder = ExchangeRecorder.of(crawler)
    assert recorder is not None
    state = StateDirectory.of(crawler)
    assert scheduler.state is state and scheduler.urlseen.state is state and recorder.state is state
    assert IRLScheduler.of(crawler) is scheduler
    root = state.open()  # as the scheduler opens it
    try:
        assert recorder.state.open() / "contentseen" == root / "contentseen"
        recorder.state.close()
        assert root.is_dir()  # the scheduler still holds it
    finally:
        state.close()
    assert root.is_dir() == jobdir  # a temporary one goes with its last holder
