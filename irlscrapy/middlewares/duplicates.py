"""DuplicateContentMiddleware: a duplicate body's response carries
``meta["irl_duplicate_of"]`` before the spider and every stock downloader middleware but
HttpCacheMiddleware see it.

The verdict comes from ContentSeen's batch in the recorder's worker
(:mod:`irlscrapy.warc.recorder`); this middleware (:data:`ORDER`) waits for it after
the fetch has ended, so the wait holds no host, IP or load-governor slot. Robots.txt
responses are not held (nor flagged): the IRL scheduler keeps a robots.txt fetch in
flight until its outcome is known (:func:`irlscrapy.warc.recorder.is_flagged`). Off
(NotConfigured) unless ``IRL_CONTENTSEEN_ENABLED``; enabled by the add-on.
"""

from __future__ import annotations

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Request, Response

from irlscrapy import defaults
from irlscrapy.warc.files import warc_date
from irlscrapy.warc.recorder import DUPLICATE_KEY, ExchangeRecorder

#: Inside every stock downloader middleware but HttpCacheMiddleware (900), so its
#: process_response runs before theirs; and below HostHealthMiddleware (880,
#: irlscrapy.middlewares.fetchend), whose process_response must run in the call that ended
#: the fetch: a 429 or 503 that waited here first let the host, released when the
#: fetch ended, be fetched again before its Retry-After (the e2e politeness test caught
#: a request 0.21 s after a 429 that asked for 1 s).
ORDER = 870


class DuplicateContentMiddleware:
    def __init__(self, recorder: ExchangeRecorder) -> None:
        self.recorder = recorder

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DuplicateContentMiddleware:
        if not defaults.get(crawler.settings, "IRL_CONTENTSEEN_ENABLED"):
            raise NotConfigured
        recorder = ExchangeRecorder.of(crawler)
        assert recorder is not None
        return cls(recorder)

    async def process_response(self, request: Request, response: Response) -> Response:
        verdict = await self.recorder.verdict(request)
        if verdict is not None and verdict.duplicate:
            request.meta[DUPLICATE_KEY] = warc_date(verdict.first)
        return response
