"""A robots.txt answer through RobotsFetches into a real frontier: a big body is parsed
on a worker thread, and its rules rule the host's URLs as a small body's do."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.http import Response
from scrapy.utils.test import get_crawler

from harness.frontierfixture import Stats, open_test_frontier
from harness.fulldisk import fill, small_tmpfs
from irlscrapy.scheduler import robotsfetch
from irlscrapy.scheduler.diskfull import CrawlStop
from irlscrapy.scheduler.frontier.workbench import VisitState
from irlscrapy.scheduler.frontieritems import RobotsFetch
from irlscrapy.scheduler.hosts.robots import MAX_WILDCARD_RULES, parse
from irlscrapy.scheduler.hosts.robotscache import BIG_BODY, RobotsCache
from irlscrapy.scheduler.metakeys import ROBOTS_KEY
from irlscrapy.scheduler.requestcodec import encode_link
from irlscrapy.scheduler.robotsfetch import RobotsFetches

HOST = "big.example"


class Signals:
    def send_catch_log(self, *args: Any, **kwargs: Any) -> None:
        pass


def crawl_stop(state_dir: Path) -> CrawlStop:
    """The stop of a crawler that is not crawling (closing it does nothing)."""
    return CrawlStop(get_crawler(), lambda: state_dir)


@pytest.mark.parametrize("rules", [4000, 3], ids=["big", "small"])
def test_a_robots_txt_is_parsed_off_the_reactor_thread_when_big(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rules: int
) -> None:
    body = b"User-agent: *\n" + b"".join(b"Disallow: /s/%d/\n" % n for n in range(rules))
    cache = RobotsCache(ttl=3600.0, retry_delay=1.0, retries=2, ram_hosts=10, ram_bodies=10)
    frontier = open_test_frontier(
        tmp_path, capacity=100, host_cap=10, clock=lambda: 0.0, robots=cache
    )
    threads: list[bool] = []

    def parse_where(body: bytes) -> Any:
        threads.append(threading.current_thread() is threading.main_thread())
        return parse(body)

    monkeypatch.setattr(robotsfetch, "parse", parse_where)
    frontier.push(encode_link(f"http://{HOST}/s/1/x", 1, None, None))
    frontier.push(encode_link(f"http://{HOST}/ok", 1, None, None))
    frontier.admission.admit()
    ended: list[int] = []
    fetches = RobotsFetches(frontier, Stats(), Signals(), ended.append, crawl_stop(tmp_path))
    request = Request(f"http://{HOST}/robots.txt", meta={ROBOTS_KEY: HOST, "irl_fetch": 7})
    response = Response(request.url, status=200, body=body, request=request)
    asyncio.run(fetches.answered(response))
    assert threads == ([False] if len(body) > BIG_BODY else [])
    rules_now, _ = cache.lookup(HOST)
    assert rules_now is not None and not rules_now.allowed(f"http://{HOST}/s/1/x", "test")
    assert frontier.stats.values["irl/robots/disallowed"] == 1  # /s/1/x dropped
    frontier.close()


def test_a_robots_txt_of_too_many_wildcards_disallows_the_host_counted_and_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    body = b"User-agent: *\n" + b"".join(
        b"Disallow: /*x*y%d\n" % n for n in range(MAX_WILDCARD_RULES + 1)
    )
    cache = RobotsCache(ttl=3600.0, retry_delay=1.0, retries=2, ram_hosts=10, ram_bodies=10)
    frontier = open_test_frontier(
        tmp_path, capacity=100, host_cap=10, clock=lambda: 0.0, robots=cache
    )
    for host in ("a.example", "b.example"):
        frontier.push(encode_link(f"http://{host}/page", 1, None, None))
    frontier.admission.admit()
    stats = Stats()
    fetches = RobotsFetches(frontier, stats, Signals(), lambda token: None, crawl_stop(tmp_path))
    with caplog.at_level(logging.INFO):
        for host in ("a.example", "b.example"):
            request = Request(f"http://{host}/robots.txt", meta={ROBOTS_KEY: host})
            asyncio.run(fetches.answered(Response(request.url, body=body, request=request)))
            rules, _ = cache.lookup(host)
            assert rules is not None and rules.costly
    assert stats.values["irl/robots/too_many_wildcards"] == 2
    assert frontier.stats.values["irl/robots/disallowed"] == 2  # both pages dropped
    assert len([r for r in caplog.records if "wildcard rules" in r.getMessage()]) == 1
    frontier.close()


def test_the_robots_txt_of_a_host_is_fetched_over_http_when_any_of_its_urls_is_http() -> None:
    """The rules are per host: a host serving no https refuses the tunnel, so an https
    URL first in the queue (an agent took the host over with a retry first) must not
    make robots.txt read as unreachable for the host's http pages."""
    state = VisitState(HOST, "127.0.0.1")
    fetches = RobotsFetches(None, Stats(), Signals(), lambda token: None, crawl_stop(Path()))  # type: ignore[arg-type]

    def url_of_request() -> str:
        return fetches.request(state, RobotsFetch(HOST)).url

    assert url_of_request() == f"http://{HOST}/robots.txt", "no URL yet: http"
    state.urls.append((1, 0, (encode_link(f"https://{HOST}/a", 1, None, None), 0)))
    assert url_of_request() == f"https://{HOST}/robots.txt", "only https URLs: https"
    state.urls.append((1, 1, (encode_link(f"http://{HOST}/b", 1, None, None), 1)))
    assert url_of_request() == f"http://{HOST}/robots.txt"


def test_a_robots_txt_that_finds_the_disk_full_stops_the_crawl_with_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The robots cache's write is the first to find the disk full: the crawl stops as
    when any of its stores does (irlscrapy.scheduler.diskfull), and the answer is lost
    (robots.txt is fetched again on resume); the callback does not fail."""
    body = b"User-agent: *\n" + b"".join(b"Disallow: /s/%d/\n" % n for n in range(1000))
    cache = RobotsCache(ttl=3600.0, retry_delay=1.0, retries=2, ram_hosts=10, ram_bodies=10)
    with small_tmpfs(tmp_path / "disk") as disk:
        cache.open(disk / "robots")
        frontier = open_test_frontier(
            tmp_path / "frontier", capacity=100, host_cap=10, clock=lambda: 0.0, robots=cache
        )
        frontier.push(encode_link(f"http://{HOST}/page", 1, None, None))
        frontier.admission.admit()
        stop = crawl_stop(disk)
        fetches = RobotsFetches(frontier, Stats(), Signals(), lambda token: None, stop)
        fill(disk / "filler")
        request = Request(f"http://{HOST}/robots.txt", meta={ROBOTS_KEY: HOST})
        with caplog.at_level(logging.INFO):
            asyncio.run(fetches.answered(Response(request.url, body=body, request=request)))
        assert stop.stopped
        assert cache.lookup(HOST) == (None, 0.0)  # not learned: fetched again on resume
        frontier.close()
        cache.close()
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and f"the disk holding {disk} is full" in errors[0], errors
