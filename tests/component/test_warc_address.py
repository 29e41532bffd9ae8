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
from irlscrapy.scheduler.metakeys import ADDRESS_KEY
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


def test_the_schedulers_address_is_taken_without_a_dns_lookup() -> None:
    """A request the IRL scheduler handed out carries the address the workbench holds
    its host under: the recorder takes it, even where the DNS cache no longer knows it."""
    crawler = get_crawler(Spider, {"TWISTED_DNS_RESOLVER": RESOLVER})
    address_of = _address_finder(crawler)
    url = "http://evicted.example/page"
    request = Request(url, meta={ADDRESS_KEY: "192.0.2.9"})
    assert address_of(request, Response(url)) == "192.0.2.9"
    assert address_of(Request(url), Response(url)) is None
