"""The add-on's HttpCompressionMiddleware: Scrapy's results, without charset detection
over the compressed body."""

from __future__ import annotations

import gzip
from typing import Any

import pytest
from scrapy import Request
from scrapy.downloadermiddlewares.httpcompression import (
    HttpCompressionMiddleware as ScrapyMiddleware,
)
from scrapy.http import HtmlResponse, Response, TextResponse
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from irlscrapy import addon
from irlscrapy.middlewares.decompression import HttpCompressionMiddleware

PAGE = b"<html><head><title>caf\xc3\xa9</title></head><body><a href='/x'>x</a></body></html>"


def middlewares() -> tuple[HttpCompressionMiddleware, ScrapyMiddleware]:
    crawler = get_crawler()
    return HttpCompressionMiddleware.from_crawler(crawler), ScrapyMiddleware.from_crawler(crawler)


def html(body: bytes, **headers: Any) -> HtmlResponse:
    return HtmlResponse(
        "http://a.example/", body=body, headers={"Content-Type": "text/html", **headers}
    )


@pytest.mark.parametrize(
    ("body", "headers", "method"),
    [
        (gzip.compress(PAGE), {"Content-Encoding": "gzip"}, "GET"),
        (gzip.compress(PAGE), {"Content-Encoding": "gzip"}, "HEAD"),
        (PAGE, {}, "GET"),
        (PAGE, {"Content-Encoding": "identity"}, "GET"),
        (gzip.compress(PAGE), {"Content-Encoding": "gzip", "Content-Type": "image/png"}, "GET"),
    ],
)
def test_the_same_response_as_scrapys(body: bytes, headers: dict[str, str], method: str) -> None:
    ours, scrapys = middlewares()
    request = Request("http://a.example/", method=method)
    got = ours.process_response(request, html(body, **headers))
    want = scrapys.process_response(request, html(body, **headers))
    assert type(got) is type(want)
    assert got.body == want.body
    assert got.headers == want.headers
    if isinstance(want, TextResponse):
        assert isinstance(got, TextResponse)
        assert got.text == want.text
        assert got.encoding == want.encoding


def test_an_unchanged_response_is_the_one_given() -> None:
    ours, _ = middlewares()
    response = html(PAGE)
    assert ours.process_response(Request("http://a.example/"), response) is response


def test_no_charset_is_guessed_for_the_compressed_body(monkeypatch: pytest.MonkeyPatch) -> None:
    guessed: list[bytes] = []
    original = TextResponse._body_inferred_encoding

    def spy(self: TextResponse) -> str:
        guessed.append(self.body)
        return original(self)

    monkeypatch.setattr(TextResponse, "_body_inferred_encoding", spy)
    ours, scrapys = middlewares()
    compressed = gzip.compress(PAGE)
    scrapys.process_response(
        Request("http://a.example/"), html(compressed, **{"Content-Encoding": "gzip"})
    )
    assert compressed in guessed  # Scrapy's own middleware guesses (what this one avoids)
    guessed.clear()
    got = ours.process_response(
        Request("http://a.example/"), html(compressed, **{"Content-Encoding": "gzip"})
    )
    assert guessed == []
    assert isinstance(got, Response) and got.body == PAGE


def test_the_addon_replaces_scrapys_middleware_unless_the_project_set_it() -> None:
    settings = Settings()
    addon.Addon().update_settings(settings)
    chain = settings.getwithbase("DOWNLOADER_MIDDLEWARES")
    assert chain[addon.SCRAPY_DECOMPRESSION] is None
    assert chain[addon.DECOMPRESSION_MIDDLEWARE] == 590

    own = Settings({"DOWNLOADER_MIDDLEWARES": {addon.SCRAPY_DECOMPRESSION: 600}})
    addon.Addon().update_settings(own)
    chain = own.getwithbase("DOWNLOADER_MIDDLEWARES")
    assert chain[addon.SCRAPY_DECOMPRESSION] == 600
    assert addon.DECOMPRESSION_MIDDLEWARE not in chain
