"""Decompression bombs stop at the size limit: gzip, deflate and brotli, alone and stacked.

A few KiB on the wire that unpack to 64 MiB must cost the crawler no more than the limit
(``DOWNLOAD_MAXSIZE``, or a request's ``download_maxsize``) plus one output chunk per
encoding layer, in time and in memory, and end as ``IgnoreRequest``: the page is a final
failure, which the scheduler marks done (tests/e2e/test_failed_pages.py serves a gzip bomb
to a crawl). The middleware is the add-on's, which delegates the limits to Scrapy's.
"""

from __future__ import annotations

import gzip
import time
import tracemalloc
import zlib
from collections.abc import Callable

import brotli
import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from irlscrapy.middlewares.decompression import HttpCompressionMiddleware
from irlscrapy.spiders.broad import BroadSpider

UNPACKED = 64 * 1024 * 1024  # what every bomb unpacks to
LIMIT = 1024 * 1024
CHUNK = 64 * 1024  # Scrapy decompresses in chunks of this size


def _deflated(data: Callable[[], bytes], wbits: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    return b"".join(packer.compress(data()) for _ in range(UNPACKED // LIMIT)) + packer.flush()


def _mebibyte() -> bytes:
    return bytes(LIMIT)


def _brotli(body: bytes) -> bytes:
    packer = brotli.Compressor(quality=5)
    return packer.process(body) + packer.finish()


def _bomb_brotli() -> bytes:
    packer = brotli.Compressor(quality=5)
    out = [packer.process(_mebibyte()) for _ in range(UNPACKED // LIMIT)]
    return b"".join(out) + packer.finish()


GZIP = _deflated(_mebibyte, 16 + zlib.MAX_WBITS)
BOMBS: dict[str, tuple[str, Callable[[], bytes]]] = {
    "gzip": ("gzip", lambda: GZIP),
    "x-gzip": ("x-gzip", lambda: GZIP),
    "deflate (zlib)": ("deflate", lambda: _deflated(_mebibyte, zlib.MAX_WBITS)),
    "deflate (raw)": ("deflate", lambda: _deflated(_mebibyte, -zlib.MAX_WBITS)),
    "br": ("br", _bomb_brotli),
    # Stacked: each layer is small, the last one unpacks past the limit.
    "gzip, gzip": ("gzip, gzip", lambda: gzip.compress(GZIP)),
    "gzip, br": ("gzip, br", lambda: _brotli(GZIP)),
    "br, gzip": ("br, gzip", lambda: gzip.compress(_bomb_brotli())),
}


def _middleware(**settings: object) -> HttpCompressionMiddleware:
    return HttpCompressionMiddleware.from_crawler(get_crawler(settings_dict=settings))


def _response(body: bytes, encoding: str) -> HtmlResponse:
    headers = {"Content-Type": "text/html", "Content-Encoding": encoding}
    return HtmlResponse("http://bomb.example/", body=body, headers=headers)


@pytest.mark.parametrize("name", list(BOMBS))
def test_a_bomb_is_ignored_at_the_limit_within_its_memory_and_time(name: str) -> None:
    encoding, make = BOMBS[name]
    body = make()
    assert len(body) < 300 * 1024, "a bomb is small on the wire"
    middleware = _middleware(DOWNLOAD_MAXSIZE=LIMIT)
    layers = encoding.count(",") + 1
    tracemalloc.start()
    started = time.thread_time()
    try:
        with pytest.raises(IgnoreRequest, match="DOWNLOAD_MAXSIZE"):
            middleware.process_response(Request("http://bomb.example/"), _response(body, encoding))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    spent = time.thread_time() - started
    # Each layer may hold its output up to the limit and one chunk past it, plus the
    # copies joining chunks makes; unpacking all 64 MiB would take 64 times the limit.
    assert peak < 3 * layers * (LIMIT + CHUNK), f"{peak} bytes at peak"
    # Unpacking 64 MiB takes about 0.2 s (gzip) to 0.5 s (brotli) of CPU here; the
    # limit's 1 MiB takes a 64th of that. The bound leaves room for a slow machine.
    assert spent < 0.5, f"{spent:.3f} s of CPU"


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br"])
def test_a_body_just_under_the_limit_is_unpacked_whole(encoding: str) -> None:
    page = b"<html><body>" + b"x" * (LIMIT - 100) + b"</body></html>"
    body = {"gzip": gzip.compress, "deflate": zlib.compress, "br": _brotli}[encoding](page)
    middleware = _middleware(DOWNLOAD_MAXSIZE=LIMIT)
    got = middleware.process_response(Request("http://a.example/"), _response(body, encoding))
    assert got.body == page


def test_a_requests_download_maxsize_wins_over_the_setting() -> None:
    middleware = _middleware(DOWNLOAD_MAXSIZE=0)  # 0: no limit from the setting
    request = Request("http://bomb.example/", meta={"download_maxsize": LIMIT})
    with pytest.raises(IgnoreRequest, match="DOWNLOAD_MAXSIZE"):
        middleware.process_response(request, _response(GZIP, "gzip"))


def test_the_broad_spider_limits_a_page_to_2_mib() -> None:
    crawler = get_crawler(BroadSpider)
    assert crawler.settings.getint("DOWNLOAD_MAXSIZE") == 2 * 1024 * 1024
    with pytest.raises(IgnoreRequest, match="DOWNLOAD_MAXSIZE"):
        HttpCompressionMiddleware.from_crawler(crawler).process_response(
            Request("http://bomb.example/"), _response(GZIP, "gzip")
        )
