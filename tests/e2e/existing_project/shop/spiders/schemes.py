"""A spider whose start URLs are not all http: ``data:``, ``file:`` and a scheme no
download handler knows, and one no disk queue can store, beside pages of a web server;
it records what each callback and errback saw (tests/e2e/test_existing_project.py)."""

from urllib.parse import urlsplit

import scrapy


class SchemesSpider(scrapy.Spider):
    name = "schemes"

    def __init__(self, root: str = "", page_file: str = "", **kwargs):
        super().__init__(**kwargs)
        self.root = root
        self.page_file = page_file

    async def start(self):
        for url in (
            "data:,hello",
            "data:,hello",  # a duplicate: filtered, as by stock Scrapy
            "data:text/html,<title>inline</title>",
            f"file://{self.page_file}",
            "foo://bar/",
            self.root,
        ):
            yield scrapy.Request(url, callback=self.parse, errback=self.failed)
        # no disk queue can store a lambda in meta: kept in RAM, and counted so
        yield scrapy.Request("data:,kept-in-RAM", callback=self.parse, meta={"check": lambda: None})

    def parse(self, response):
        yield {
            "url": response.url,
            "body": response.text[:60],
            "download_slot": response.meta.get("download_slot"),
        }
        if urlsplit(response.url).scheme.startswith("http"):
            for href in response.css("a::attr(href)").getall()[:3]:
                yield response.follow(href, callback=self.parse, errback=self.failed)

    def failed(self, failure):
        yield {"url": failure.request.url, "error": type(failure.value).__name__}
