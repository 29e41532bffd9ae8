"""``RecordingDownloadHandler``: the add-on's HTTP and HTTPS download handler.

It is :class:`irlscrapy.runtime.internals.PoliteHTTPDownloadHandler` (Scrapy's HTTP/1.1 handler
without Twisted's silent re-send). With ``IRL_WARC_DIR`` or ``IRL_CONTENTSEEN_ENABLED`` set,
it also passes every response through the crawl's
:class:`~irlscrapy.warc.recorder.ExchangeRecorder` as received, before any downloader
middleware: the body still compressed, the head as it came off the wire
(:func:`irlscrapy.runtime.internals.capture_heads`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urldefrag

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.http import Request, Response

from irlscrapy.runtime.internals import (
    PoliteHTTPDownloadHandler,
    ReceivedHead,
    capture_heads,
    take_received_head,
)
from irlscrapy.warc.recorder import ExchangeRecorder


class RecordingDownloadHandler(PoliteHTTPDownloadHandler):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.recorder: ExchangeRecorder | None = ExchangeRecorder.of(crawler)
        #: heads matched to their Scrapy request by the headers_received signal
        self._heads: dict[Request, ReceivedHead] = {}
        #: the requests this handler is downloading: the add-on installs one handler
        #: per scheme, every one hears every headers_received, and only the request's
        #: own handler may take its head (else https heads went to the http handler,
        #: which never released them, and the https handler rebuilt them)
        self._downloading: set[Request] = set()
        if self.recorder is not None:
            capture_heads(self.private_pool())
            crawler.signals.connect(self._headers_received, signal=signals.headers_received)

    def _headers_received(self, request: Request, **_: Any) -> None:
        if request not in self._downloading:
            return  # another scheme's handler downloads it
        head = take_received_head()
        if head is not None and head.request.absoluteURI == _wire_url(request):
            self._heads[request] = head

    async def download_request(self, request: Request) -> Response:
        if self.recorder is None:
            return await super().download_request(request)
        self._downloading.add(request)
        try:
            response = await super().download_request(request)
        finally:
            self._downloading.discard(request)
            head = self._heads.pop(request, None)
        return await self.recorder.record(request, response, head)

    async def close(self) -> None:
        await super().close()
        if self.recorder is not None:
            await self.recorder.close()


def _wire_url(request: Request) -> bytes:
    """The URL as Scrapy's handler sends it: ``urldefrag``, as ASCII (Request made the
    URL safe, so ASCII, when it was set)."""
    return urldefrag(request.url)[0].encode("ascii")
