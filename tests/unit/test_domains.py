"""PLD extraction (irlscrapy.domains): the Public Suffix List snapshot, never the network.

The table runs in a fresh interpreter whose sockets are blocked before irlscrapy is
imported, so the suffix list is loaded there for the first time, from tldextract's
bundled snapshot: a fetch would raise.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from scrapy import Spider
from scrapy.utils.test import get_crawler

from irlscrapy.domains import pld
from irlscrapy.runtime.crawlservices import crawl_plds

#: host -> PLD with the ICANN section only (the default), and with private suffixes.
TABLE = {
    "www.example.com": ("example.com", "example.com"),
    "a.b.c.example.com": ("example.com", "example.com"),
    "www.bbc.co.uk": ("bbc.co.uk", "bbc.co.uk"),
    "det.wa.edu.au": ("det.wa.edu.au", "det.wa.edu.au"),
    "shop.example.com.au": ("example.com.au", "example.com.au"),
    "motors.ebay.co.uk:8080": ("ebay.co.uk", "ebay.co.uk"),
    "alice.blogspot.com": ("blogspot.com", "alice.blogspot.com"),
    "foo.github.io": ("github.io", "foo.github.io"),
    "xn--bcher-kva.de": ("xn--bcher-kva.de", "xn--bcher-kva.de"),  # bücher.de, as URLs carry it
    "www.xn--bcher-kva.de": ("xn--bcher-kva.de", "xn--bcher-kva.de"),
    "例え.jp": ("例え.jp", "例え.jp"),
    "www.例え.jp": ("例え.jp", "例え.jp"),
    "127.0.0.1": ("127.0.0.1", "127.0.0.1"),
    "127.0.0.1:8080": ("127.0.0.1", "127.0.0.1"),
    "[::1]:80": ("::1", "::1"),
    "localhost": ("localhost", "localhost"),
    "localhost:6800": ("localhost", "localhost"),
    "intranet": ("intranet", "intranet"),
    "co.uk": ("co.uk", "co.uk"),  # a bare suffix is its own PLD
    "www.w12.com": ("w12.com", "w12.com"),  # in-vitro names
    "h3.s1x7.co.uk": ("s1x7.co.uk", "s1x7.co.uk"),
}

_SCRIPT = """
import json, socket, sys

def refuse(*args, **kwargs):
    raise OSError("network access in a test that forbids it")

socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse

from irlscrapy import domains

hosts = json.loads(sys.argv[1])
icann = [domains.pld(h) for h in hosts]
private_plds = domains.PayLevelDomains(private=True)
private = [private_plds(h) for h in hosts]
again = [domains.pld(h) for h in hosts]
print(json.dumps([icann, private, again]))
"""


def test_pld_table_with_sockets_blocked() -> None:
    hosts = list(TABLE)
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_SCRIPT), json.dumps(hosts)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    icann, private, again = json.loads(out)
    assert dict(zip(hosts, zip(icann, private, strict=True), strict=True)) == TABLE
    assert again == icann  # a crawl counting private suffixes leaves the default as it was


def test_the_blocked_socket_really_blocks() -> None:
    """The control: the same guard makes a connection attempt fail."""
    script = _SCRIPT.split("from irlscrapy")[0] + "socket.create_connection(('127.0.0.1', 9))"
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True)
    assert result.returncode != 0
    assert b"forbids it" in result.stderr


def test_domain_keys_are_stable_64_bit() -> None:
    from irlscrapy.domains import domain_key

    assert domain_key("example.com") == domain_key("example.com")
    assert domain_key("example.com") != domain_key("example.org")
    assert 0 <= domain_key("example.com") < 2**64
    # a fixed value: keys are stored on disk (BEAST, STAR), so they must never change
    assert domain_key("example.com") == 1424565772579972710


def test_each_crawl_counts_private_suffixes_by_its_own_settings() -> None:
    """Two crawlers in one process: one crawl's IRL_STAR_PRIVATE_SUFFIXES changes no
    other crawl's PLDs (it used to switch a process-wide mode)."""
    private = crawl_plds(get_crawler(Spider, {"IRL_STAR_PRIVATE_SUFFIXES": True}))
    default = crawl_plds(get_crawler(Spider))
    assert private("alice.blogspot.com") == "alice.blogspot.com"
    assert default("alice.blogspot.com") == "blogspot.com"
    assert pld("alice.blogspot.com") == "blogspot.com"
