"""The console's controls (irlscrapy.report.controls) and their POST endpoints
(irlscrapy.report.status): pause and resume reach the engine and are counted, a resume
restarts the IRL scheduler's give-up wait, stop closes as Ctrl-C does; without
IRL_STATUS_TOKEN the controls are off, and with it a POST without it is refused. And
what the console page shows of the settings and of sizes."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from scrapy import Spider
from scrapy.utils.test import get_crawler
from twisted.web.test.requesthelper import DummyRequest

from irlscrapy.report.console import _duration, _round_up, changed_settings, human_bytes
from irlscrapy.report.controls import CrawlControls
from irlscrapy.report.status import StatusServer, _StatusResource
from irlscrapy.scheduler.irl import IRLScheduler

from .test_recovery_stats import IRL


class FakeSlot:
    closing = None

    def __init__(self) -> None:
        self.asked = 0
        self.inprogress: set[Any] = set()

    @property
    def nextcall(self) -> FakeSlot:
        return self

    def schedule(self, delay: float = 0) -> None:
        self.asked += 1


class FakeEngine:
    def __init__(self, spider: Spider) -> None:
        self.spider = spider
        self.paused = False
        self.running = True
        self._slot = FakeSlot()
        self.closed: list[str] = []

    def pause(self) -> None:
        self.paused = True

    def unpause(self) -> None:
        self.paused = False

    async def close_spider_async(self, reason: str) -> None:
        self.closed.append(reason)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _controls(settings: dict[str, Any] | None = None) -> tuple[CrawlControls, FakeEngine, Clock]:
    crawler = get_crawler(Spider, settings)
    spider = Spider.from_crawler(crawler, "s")
    crawler.spider = spider
    engine = FakeEngine(spider)
    crawler.engine = engine  # type: ignore[assignment]
    clock = Clock()
    return CrawlControls(crawler, clock), engine, clock


def test_pause_and_resume_reach_the_engine_and_are_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    controls, engine, clock = _controls()
    stats = controls.crawler.stats
    assert stats is not None
    with caplog.at_level(logging.INFO):
        assert controls.act("pause", "127.0.0.1") == "paused"
        assert engine.paused and controls.paused
        assert controls.act("pause", "127.0.0.1") == "already paused"
        clock.now += 12.5
        assert controls.paused_seconds() == 12.5
        assert controls.act("resume", "127.0.0.1") == "resumed"
        assert controls.act("resume", "127.0.0.1") == "not paused"
    assert not engine.paused
    assert stats.get_value("irl/console/paused") == 1
    assert stats.get_value("irl/console/resumed") == 1
    assert stats.get_value("irl/console/paused_seconds") == 12.5
    assert "console: crawl paused by 127.0.0.1" in caplog.text
    assert "console: crawl resumed by 127.0.0.1 after 12.5 s paused" in caplog.text


def test_stop_resumes_a_paused_crawl_and_closes_it_as_ctrl_c() -> None:
    controls, engine, clock = _controls()
    controls.act("pause", "127.0.0.1")
    clock.now += 3
    assert controls.act("stop", "127.0.0.1") == "stopping"
    assert not engine.paused and engine.closed == ["shutdown"]
    assert controls.act("pause", "127.0.0.1") == "the crawl is not running"
    stats = controls.crawler.stats
    assert stats is not None and stats.get_value("irl/console/stopped") == 1
    assert stats.get_value("irl/console/paused_seconds") == 3


def test_a_pause_at_the_close_counts_up_to_it() -> None:
    controls, _, clock = _controls()
    controls.act("pause", "127.0.0.1")
    clock.now += 7
    controls.spider_closed()
    stats = controls.crawler.stats
    assert stats is not None and stats.get_value("irl/console/paused_seconds") == 7


def test_a_resume_restarts_the_give_up_wait_and_a_pause_is_not_idle(tmp_path: Path) -> None:
    """Time paused is no host's silence: a finite crawl blocked on back-off gives up
    IRL_CRAWL_GIVE_UP_AFTER past the last progress, and a resume is progress. And the
    no-idle watch does not sample a paused crawl (its work waits for the resume)."""
    crawler = get_crawler(Spider, {**IRL, "JOBDIR": str(tmp_path / "job")})
    spider = Spider.from_crawler(crawler, "s")
    crawler.spider = spider
    engine = FakeEngine(spider)
    crawler.engine = engine  # type: ignore[assignment]
    scheduler = IRLScheduler.from_crawler(crawler)
    scheduler.open(spider)
    try:
        controls = CrawlControls(crawler)
        assert scheduler.dispatcher is not None
        assert scheduler.idle_status() is not None  # running: sampled
        controls.act("pause", "127.0.0.1")
        assert scheduler.idle_status() is None  # paused: not sampled
        scheduler.dispatcher.progress_at = -1000.0  # long ago: a pause of 1000 s
        asked = engine._slot.asked
        controls.act("resume", "127.0.0.1")
        now = scheduler.waker.clock.seconds()
        assert now - 1 <= scheduler.dispatcher.progress_at <= now
        assert engine._slot.asked > asked  # the engine asks again at once
        assert scheduler.idle_status() is not None
    finally:
        scheduler.close("finished")


def _post(server: StatusServer, path: bytes, token: str | None) -> DummyRequest:
    request = DummyRequest([path.strip(b"/")])
    request.method = b"POST"
    request.path = path
    if token is not None:
        request.requestHeaders.addRawHeader(b"authorization", f"Bearer {token}".encode())
    body = _StatusResource(server).render_POST(request)
    request.written.append(body)
    return request


def _server(token: str) -> StatusServer:
    controls, _, _ = _controls()
    server = StatusServer(controls.crawler, "127.0.0.1", 1, token)
    server.controls = controls
    return server


def test_the_controls_are_off_without_a_token() -> None:
    request = _post(_server(""), b"/pause", None)
    assert request.responseCode == 403
    assert b"IRL_STATUS_TOKEN" in b"".join(request.written)


def test_a_control_without_the_token_is_refused() -> None:
    server = _server("s3cret")
    for token in (None, "wrong"):
        assert _post(server, b"/pause", token).responseCode == 401
    assert not server.controls.paused
    request = _post(server, b"/pause", "s3cret")
    assert request.responseCode is None  # DummyRequest's for the default, 200
    assert json.loads(b"".join(request.written)) == {
        "action": "pause",
        "result": "paused",
        "paused": True,
    }
    assert _post(server, b"/reboot", "s3cret").responseCode == 404


def test_the_settings_shown_are_those_unlike_the_defaults_with_secrets_masked() -> None:
    crawler = get_crawler(
        Spider,
        {"IRL_HOST_DELAY": 7.0, "IRL_STATUS_TOKEN": "s3cret", "DOWNLOAD_TIMEOUT": 180},
    )
    shown = dict(changed_settings(crawler.settings))
    assert shown["IRL_HOST_DELAY"] == "7.0"
    assert shown["IRL_STATUS_TOKEN"] == "***"
    assert "DOWNLOAD_TIMEOUT" not in shown  # Scrapy's default
    assert "s3cret" not in str(shown)


def test_sizes_and_durations_read_in_human_units() -> None:
    assert human_bytes(137_228_288) == "130.9 MiB"
    assert human_bytes(512) == "512 B"
    assert human_bytes(3 * 2**40) == "3,072.0 GiB"
    assert _duration(2.5) == "2.5 s"
    assert _duration(75) == "1 min 15 s"
    assert _duration(4000) == "1 h 6 min"
    assert [_round_up(v) for v in (0, 0.3, 1, 1.5, 3, 7, 49, 120)] == [1, 1, 1, 2, 5, 10, 50, 200]
