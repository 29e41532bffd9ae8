"""The add-on's middleware orders: the constants it keeps (to stay light to import)
equal the modules', and on the response path HostHealthMiddleware runs before
DuplicateContentMiddleware's wait."""

from __future__ import annotations

from scrapy.settings import Settings
from scrapy.utils.conf import build_component_list

from irlscrapy import addon
from irlscrapy.middlewares import decompression, duplicates, fetchend, star


def test_the_addons_orders_are_the_modules() -> None:
    assert addon.FETCH_END_ORDER == fetchend.FETCH_END_ORDER
    assert addon.PAGE_DONE_ORDER == fetchend.PAGE_DONE_ORDER
    assert addon.HOST_HEALTH_ORDER == fetchend.HOST_HEALTH_ORDER
    assert addon.DUPLICATE_ORDER == duplicates.ORDER
    assert addon.STAR_ORDER == star.ORDER
    assert addon.DECOMPRESSION_ORDER == decompression.ORDER
    assert addon.SCRAPY_DECOMPRESSION == decompression.SCRAPY_PATH


def test_host_health_hears_an_answer_before_the_duplicate_flag_wait() -> None:
    """process_response runs from the highest order down. A 429 that waited for its
    verdict before reaching HostHealthMiddleware let its host, released when the fetch
    ended, be fetched again before its Retry-After."""
    settings = Settings()
    addon.Addon().update_settings(settings)
    chain = build_component_list(settings.getwithbase("DOWNLOADER_MIDDLEWARES"))
    response_path = list(reversed(chain))
    names = [path.rsplit(".", 1)[1] for path in response_path]
    assert names.index("HostHealthMiddleware") < names.index("DuplicateContentMiddleware")
    # every stock middleware but the HTTP cache sees the flag
    for stock in ("DownloaderStats", "RetryMiddleware", "HttpCompressionMiddleware"):
        assert names.index("DuplicateContentMiddleware") < names.index(stock)
