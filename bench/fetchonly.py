"""The fetch-only floor of the crawl benchmark: Scrapy downloads a fixed list of pages
and its callback does nothing.

    http_proxy=http://127.0.0.1:PORT python bench/fetchonly.py URLFILE [-s NAME=VALUE ...]

URLFILE holds one URL a line (``irlscrapy invitro urls``). Run as a script, not through
``scrapy runspider``: from inside the repository that would load the project's
settings/broad.py, and the floor must run on Scrapy's defaults. The only settings that
differ from Scrapy's defaults are :data:`SETTINGS` (each matches what the broad crawl
runs with, so the two compare fairly) and whatever ``-s`` adds.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from scrapy import Request, Spider
from scrapy.crawler import CrawlerProcess
from scrapy.http import Response
from scrapy.settings import Settings

SETTINGS: dict[str, Any] = {
    "CONCURRENT_REQUESTS": 64,  # settings/broad.py
    "DOWNLOAD_TIMEOUT": 20,  # settings/broad.py
    "LOG_LEVEL": "INFO",  # settings/broad.py; DEBUG would log a line per request
    "DOWNLOAD_MAXSIZE": 2 * 1024 * 1024,  # what the broad spider sets
}


class FetchOnlySpider(Spider):
    name = "fetchonly"

    def __init__(self, urls_file: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.urls_file = urls_file

    async def start(self) -> AsyncIterator[Any]:
        with open(self.urls_file, encoding="utf-8") as f:
            for line in f:
                url = line.strip()
                if url:
                    yield Request(url, callback=self.parse)

    def parse(self, response: Response, **kwargs: Any) -> None:
        return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("urls_file", type=Path)
    parser.add_argument(
        "-s",
        dest="settings",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a Scrapy setting (repeatable)",
    )
    args = parser.parse_args()
    settings = Settings()
    settings.setdict(SETTINGS, priority="project")
    for item in args.settings:
        name, sep, value = item.partition("=")
        if not sep:
            parser.error(f"-s {item!r}: expected NAME=VALUE")
        settings.set(name, value, priority="cmdline")
    process = CrawlerProcess(settings)
    process.crawl(FetchOnlySpider, urls_file=str(args.urls_file))
    process.start()
    return 0


if __name__ == "__main__":
    sys.exit(main())
