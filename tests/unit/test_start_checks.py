"""What a crawl checks before it starts (irlscrapy.startcheck), what ``irlscrapy check``
refuses (irlscrapy.state.directory.not_a_state_directory), and the verdict on a crawl whose
every URL was refused (irlscrapy.scheduler.emptycrawl)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy import Request
from scrapy.exceptions import CloseSpider
from scrapy.settings import Settings
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from irlscrapy.exceptions import ConfigurationError
from irlscrapy.scheduler.emptycrawl import ALL_REFUSED_REASON, EmptyCrawlCheck
from irlscrapy.scheduler.hosts.addressguard import AddressGuard
from irlscrapy.scheduler.metakeys import ROBOTS_KEY
from irlscrapy.startcheck import check_directories, unwritable
from irlscrapy.state.check import check_state
from irlscrapy.state.directory import not_a_state_directory


def test_a_directory_setting_that_names_a_file_is_refused_as_written(tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("")
    assert unwritable(file) == "it is a file, not a directory"
    assert unwritable(file / "job") == f"{file} is a file, not a directory"
    with pytest.raises(ConfigurationError, match=f"IRL_WARC_DIR={file}/warc: {file} is a file"):
        check_directories(Settings({"IRL_WARC_DIR": str(file / "warc")}))


def test_a_missing_directory_under_a_writable_one_is_taken_and_not_made(tmp_path: Path) -> None:
    assert unwritable(tmp_path / "a" / "b") is None
    check_directories(Settings({"IRL_REPORT_DIR": str(tmp_path / "a" / "b")}))
    assert not (tmp_path / "a").exists()


def test_a_directory_without_a_crawls_stores_is_no_state_directory(tmp_path: Path) -> None:
    assert "is not a crawl's state directory" in (not_a_state_directory(tmp_path) or "")
    assert "does not exist" in (not_a_state_directory(tmp_path / "nope") or "")
    (tmp_path / "urlseen").mkdir()
    assert not_a_state_directory(tmp_path) is None


def test_check_refuses_a_directory_that_is_no_crawls_and_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="not a crawl's state directory"):
        check_state(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_check_leaves_no_lock_file_where_it_found_none(tmp_path: Path) -> None:
    (tmp_path / "urlseen").mkdir()
    check_state(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["urlseen"]


def test_check_leaves_the_lock_file_as_it_found_it(tmp_path: Path) -> None:
    (tmp_path / "urlseen").mkdir()
    (tmp_path / "LOCK").write_text("4242\n")
    check_state(tmp_path)
    assert (tmp_path / "LOCK").read_text() == "4242\n"


@pytest.mark.parametrize(
    ("ip", "network"),
    [
        ("127.0.0.1", "127.0.0.0/8"),
        ("10.1.2.3", "10.0.0.0/8"),
        ("192.168.1.9", "192.168.0.0/16"),
        ("::1", "::1/128"),
        ("::ffff:127.0.0.1", "127.0.0.0/8"),
        ("192.0.2.7", "192.0.2.7/32"),
    ],
)
def test_the_network_suggested_for_a_refused_address(ip: str, network: str) -> None:
    assert AddressGuard.network_of(ip) == network


def _check(stats: dict[str, int], guard: AddressGuard | None = None) -> EmptyCrawlCheck:
    collector = MemoryStatsCollector(get_crawler())
    for key, value in stats.items():
        collector.set_value(key, value)
    return EmptyCrawlCheck(collector, guard or AddressGuard())


def test_a_crawl_whose_seeds_the_guard_refused_says_what_to_set() -> None:
    guard = AddressGuard()
    assert guard.refusal("127.0.0.1", "127.0.0.1", MemoryStatsCollector(get_crawler()))
    check = _check({"irl/guard/refused_urls": 1}, guard)
    verdict = check.verdict() or ""
    assert "127.0.0.1 resolves to 127.0.0.1, a loopback address" in verdict
    assert 'set IRL_ALLOW_PRIVATE_ADDRESSES = "127.0.0.0/8"' in verdict
    with pytest.raises(CloseSpider) as closed:
        check.spider_idle()
    assert closed.value.reason == ALL_REFUSED_REASON
    assert check.stats.get_value("irl/given_up/all_refused") == 1


def test_robots_txt_and_dns_refusals_are_named_with_what_to_check() -> None:
    verdict = _check({"irl/robots/disallowed": 3, "irl/dns/dropped_urls": 2}).verdict() or ""
    assert "3 by their host's robots.txt (ROBOTSTXT_OBEY" in verdict
    assert "2 whose host does not resolve" in verdict


def test_a_crawl_that_fetched_a_page_or_refused_nothing_finishes_as_usual() -> None:
    check = _check({"irl/guard/refused_urls": 5})
    check.request_reached_downloader(_request({ROBOTS_KEY: "a.example"}))
    assert check.verdict() is not None  # a robots.txt fetch is no page
    check.request_reached_downloader(_request({}))
    assert check.verdict() is None
    assert _check({}).verdict() is None
    _check({}).spider_idle()  # no CloseSpider


def _request(meta: dict[str, str]) -> Request:
    return Request("http://a.example/", meta=meta)
