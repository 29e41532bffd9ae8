"""A spider of the kind any Scrapy project has: Requests with meta, cb_kwargs, an
errback and priorities, over a small tree of pages (tests/e2e/contract_spiders.EchoWeb).
"""

from urllib.parse import urlsplit

import scrapy


class CatalogSpider(scrapy.Spider):
    name = "catalog"

    def __init__(self, root: str = "", **kwargs):
        super().__init__(**kwargs)
        self.root = root
        self.allowed_domains = [urlsplit(root).hostname]

    async def start(self):
        yield scrapy.Request(self.root, callback=self.parse_page, cb_kwargs={"parent": None})
        base = self.root.split("/t/")[0]
        yield scrapy.Request(
            f"{base}/status/404",
            callback=self.parse_page,
            errback=self.failed,
            cb_kwargs={"parent": "start"},
            meta={"section": "missing"},
        )

    def parse_page(self, response, parent):
        path = urlsplit(response.url).path
        yield {
            "path": path,
            "parent": parent,
            "depth": response.meta.get("depth", 0),
            "section": response.meta.get("section", "tree"),
        }
        for href in response.css("a::attr(href)").getall():
            url = response.urljoin(href)
            kind = urlsplit(url).path.split("/")[1]
            yield scrapy.Request(
                url,
                callback=self.parse_page,
                errback=self.failed,
                cb_kwargs={"parent": path},
                meta={"section": kind},
                priority=1 if kind == "t" else 0,
            )

    def failed(self, failure):
        request = failure.request
        yield {
            "path": urlsplit(request.url).path,
            "parent": request.cb_kwargs.get("parent"),
            "error": type(failure.value).__name__,
            "section": request.meta.get("section"),
        }
