"""An open IRL scheduler on a JOBDIR, under an engine that counts its wake-ups and
holds the requests a test puts in its slot (``_slot.inprogress``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from scrapy import Spider
from scrapy.utils.test import get_crawler

from irlscrapy.scheduler.irl import IRLScheduler

from .test_console_controls import FakeEngine
from .test_recovery_stats import IRL


@pytest.fixture
def irl_scheduler(tmp_path: Path) -> Iterator[IRLScheduler]:
    crawler = get_crawler(Spider, {**IRL, "JOBDIR": str(tmp_path / "job")})
    spider = Spider.from_crawler(crawler, "s")
    crawler.spider = spider
    crawler.engine = FakeEngine(spider)  # type: ignore[assignment]
    opened = IRLScheduler.from_crawler(crawler)
    opened.open(spider)
    try:
        yield opened
    finally:
        opened.close("finished")
