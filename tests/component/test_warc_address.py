"""WARC-IP-Address under the IRL resolver: the address of the response's host, read
with the crawl's own URL parsing (irlscrapy.domains), so an IPv6 literal or a URL with
user info keeps it (the recorder's own parsing gave ``:`` for ``http://[::1]/x``)."""

from __future__ import annotations

import pytest
from scrapy import Request, Spider
from scrapy.http import Response
from scrapy.utils.test import get_crawler

from irlscrapy.addon import RESOLVER
from irlscrapy.scheduler.hosts.dns import DNSCache, _Entry
from irlscrapy.warc.recorder import _address_finder


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("http://[::1]/x", "::1"),
        ("http://[::1]:8080/x?a=1", "::1"),
        ("http://user:secret@127.0.0.1:8081/", "127.0.0.1"),
        ("http://127.0.0.2/", "127.0.0.2"),
        ("http://Known.Example:8080/page", "192.0.2.7"),
        ("http://unknown.example/", None),
    ],
)
def test_the_address_is_the_hosts_own(url: str, address: str | None) -> None:
    crawler = get_crawler(Spider, {"TWISTED_DNS_RESOLVER": RESOLVER})
    cache = DNSCache.of(crawler)
    cache._put("known.example", _Entry("192.0.2.7", None, expiry=float("inf")))
    address_of = _address_finder(crawler)
    assert address_of(Request(url), Response(url)) == address
