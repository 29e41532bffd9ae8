"""The URLseen key of a Request, for both paths into the frontier.

With Scrapy's default request fingerprinter, a GET without a body is keyed by its URL
alone (:func:`irlscrapy.dupefilters.urlkey.url_key`), exactly as a ``Links`` URL is, so
a page reached both ways has one key. Any other request (another method, a body) is
keyed by the first 8 bytes of ``crawler.request_fingerprinter.fingerprint(request)``.
With a custom ``REQUEST_FINGERPRINTER_CLASS`` every request is, and the ``Links`` fast
path is not allowed (:attr:`RequestIdentity.url_only`): URLs must become Requests first.
"""

from __future__ import annotations

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.utils.request import RequestFingerprinter, RequestFingerprinterProtocol

from irlscrapy.dupefilters.urlkey import url_key


class RequestIdentity:
    def __init__(self, fingerprinter: RequestFingerprinterProtocol) -> None:
        self.fingerprinter = fingerprinter
        #: True when a GET's key depends on its URL only (Scrapy's default fingerprinter)
        self.url_only = type(fingerprinter) is RequestFingerprinter

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RequestIdentity:
        return cls(crawler.request_fingerprinter)

    def request_key(self, request: Request) -> int:
        if self.url_only and request.method == "GET" and not request.body:
            return url_key(request.url)
        return int.from_bytes(self.fingerprinter.fingerprint(request)[:8], "little")
