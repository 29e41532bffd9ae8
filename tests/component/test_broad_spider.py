"""The broad spider and the Links degrade path, through Scrapy's own test crawler."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.http import HtmlResponse, Response, TextResponse
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from irlscrapy import Links
from irlscrapy.exceptions import ConfigurationError
from irlscrapy.middlewares.star import StarMiddleware
from irlscrapy.runtime.crawlservices import provide
from irlscrapy.scheduler.irl import IRLScheduler
from irlscrapy.scheduler.metakeys import ROBOTS_KEY
from irlscrapy.spiders.broad import BroadSpider, parse_seeds
from irlscrapy.spiders.extract import LINK_SLICE

PAGE = (
    b'<html><head><title>t</title></head><body><a href="/a">a</a>'
    b'<a href="http://other.com/b">b</a><a href="/doc.pdf">pdf</a>'
    b'<a href="mailto:x@y.z">m</a></body></html>'
)


def make_spider(**settings: object) -> BroadSpider:
    crawler = get_crawler(BroadSpider, settings_dict=settings or None)
    crawler._apply_settings()
    spider = BroadSpider.from_crawler(crawler, seeds="http://h.com/")
    crawler.spider = spider
    return spider


def parsed(output: AsyncIterator[Links]) -> list[Links]:
    """What the spider's (async) callback yields, run on an asyncio loop of its own."""

    async def drain() -> list[Links]:
        return [links async for links in output]

    return asyncio.run(drain())


def html(url: str, body: bytes, **headers: str) -> HtmlResponse:
    return HtmlResponse(
        url,
        body=body,
        headers={"Content-Type": "text/html", **headers},
        request=Request(url, meta={"depth": 2}),
    )


class TestParse:
    def test_one_links_object_per_page_with_followable_urls(self) -> None:
        spider = make_spider()
        out = parsed(spider.parse(html("http://h.com/x/y", PAGE)))
        assert out == [Links("http://h.com/x/y", ["http://h.com/a", "http://other.com/b"], 2)]
        assert spider.crawler.stats.get_value("irl/spider/links") == 2

    def test_a_page_of_many_links_yields_slices_a_reactor_turn_apart(self) -> None:
        """5,000 links (and each twice): three Links of at most LINK_SLICE URLs, in
        document order, none twice, and the event loop runs between two slices."""
        spider = make_spider()
        hrefs = b"".join(b'<a href="/p/%d">x</a>' % (n % 5000) for n in range(10_000))
        turns: list[int] = []

        async def drain() -> list[Links]:
            loop = asyncio.get_running_loop()
            out = []
            async for links in spider.parse(html("http://h.com/", hrefs)):
                assert turns == list(range(1, len(out) + 1)), "the loop ran between slices"
                out.append(links)
                loop.call_soon(turns.append, len(out))
            return out

        out = asyncio.run(drain())
        assert [len(links.urls) for links in out] == [LINK_SLICE, LINK_SLICE, 1000]
        assert [u for links in out for u in links.urls] == [
            f"http://h.com/p/{n}" for n in range(5000)
        ]
        assert spider.crawler.stats.get_value("irl/spider/links") == 5000
        assert spider.crawler.stats.get_value("irl/spider/pages") == 1

    @pytest.mark.parametrize(
        "response",
        [
            html(
                "http://h.com/",
                PAGE.replace(b"<title>", b'<meta name="robots" content="nofollow"><title>'),
            ),
            html("http://h.com/", PAGE, **{"X-Robots-Tag": "noindex, nofollow"}),
        ],
    )
    def test_nofollow_pages_yield_nothing(self, response: Response) -> None:
        spider = make_spider()
        assert parsed(spider.parse(response)) == []
        assert spider.crawler.stats.get_value("irl/spider/nofollow") == 1

    @pytest.mark.parametrize(
        "response",
        [
            Response(
                "http://h.com/f",
                body=b"%PDF-1.4 <a href='/x'>",
                headers={"Content-Type": "application/pdf"},
            ),
            TextResponse("http://h.com/t", body=PAGE, headers={"Content-Type": "text/plain"}),
        ],
    )
    def test_non_html_yields_nothing(self, response: Response) -> None:
        spider = make_spider()
        assert parsed(spider.parse(response)) == []
        assert spider.crawler.stats.get_value("irl/spider/not_html") == 1

    def test_page_size_limit_and_middleware_are_set_by_the_spider(self) -> None:
        spider = make_spider()
        settings = spider.crawler.settings
        assert settings.getint("DOWNLOAD_MAXSIZE") == 2 * 1024 * 1024
        assert (
            settings.getdict("SPIDER_MIDDLEWARES")["irlscrapy.middlewares.star.StarMiddleware"]
            == 950
        )

    @pytest.mark.parametrize(
        ("priority", "expected"),
        [
            ("project", 2 * 1024 * 1024),  # the spider's limit wins over project settings
            ("cmdline", 1234),  # -s DOWNLOAD_MAXSIZE=... wins over the spider
        ],
    )
    def test_command_line_size_limit_wins(self, priority: str, expected: int) -> None:
        settings = Settings()
        settings.set("DOWNLOAD_MAXSIZE", 1234, priority=priority)
        assert Crawler(BroadSpider, settings).settings.getint("DOWNLOAD_MAXSIZE") == expected


class TestSeeds:
    def test_comma_separated(self) -> None:
        assert parse_seeds("http://a.com/, https://b.com/x") == ["http://a.com/", "https://b.com/x"]

    def test_file_with_comments_and_blank_lines(self, tmp_path: Path) -> None:
        f = tmp_path / "seeds.txt"
        f.write_text("# seeds\nhttp://a.com/\n\n  https://b.com/  \n")
        assert parse_seeds(str(f)) == ["http://a.com/", "https://b.com/"]

    @pytest.mark.parametrize(
        ("arg", "message"),
        [
            ("a.com,b.com", "got 'a.com', 'b.com'"),
            ("seeds.txt", "seeds=seeds.txt: no such file, and not an http"),
            ("ftp://a.com/", "got 'ftp://a.com/'"),
            (",", "got nothing"),
        ],
    )
    def test_bad_seeds_are_explained(self, arg: str, message: str) -> None:
        with pytest.raises(ConfigurationError, match=message):
            parse_seeds(arg)

    def test_missing_seeds_argument_says_what_to_pass(self) -> None:
        crawler = get_crawler(BroadSpider)
        crawler._apply_settings()
        with pytest.raises(ConfigurationError, match="-a seeds=URL"):
            BroadSpider.from_crawler(crawler)

    def test_an_agent_of_a_multi_agent_crawl_may_start_without_seeds(self) -> None:
        crawler = get_crawler(BroadSpider, {"IRL_REDIS_URL": "redis://127.0.0.1:1/0"})
        crawler._apply_settings()
        assert BroadSpider.from_crawler(crawler).seed_urls == []

    def test_invitro_seed_must_be_an_integer(self) -> None:
        with pytest.raises(ConfigurationError, match="integer"):
            BroadSpider(seeds="invitro", seed="x")


class CallbackSpider(Spider):
    name = "cb"

    def other(self, response: Response) -> None:
        pass


class TestStarMiddleware:
    def middleware(self) -> tuple[StarMiddleware, Spider]:
        crawler = get_crawler(CallbackSpider)
        crawler._apply_settings()
        crawler.spider = CallbackSpider.from_crawler(crawler)
        return StarMiddleware.from_crawler(crawler), crawler.spider

    def test_links_become_requests_and_other_output_passes_through(self) -> None:
        mw, spider = self.middleware()
        item = {"k": 1}
        out = list(
            mw.process_spider_output(
                None, [Links("http://s/", ["http://a/", "http://b/"], 1, "other"), item]
            )
        )
        assert [r.url for r in out[:2]] == ["http://a/", "http://b/"]
        assert all(isinstance(r, Request) and r.callback == spider.other for r in out[:2])
        assert out[2] is item
        assert spider.crawler.stats.get_value("irl/links/degraded") == 2

    def test_default_callback_is_the_spiders_parse(self) -> None:
        mw, _ = self.middleware()
        (request,) = mw.process_spider_output(None, [Links("http://s/", ["http://a/"])])
        assert request.callback is None  # Scrapy then calls spider.parse

    def test_async_output(self) -> None:
        mw, _ = self.middleware()

        async def source():  # type: ignore[no-untyped-def]
            yield Links("http://s/", ["http://a/"])
            yield "item"

        async def collect() -> list[object]:
            return [o async for o in mw.process_spider_output_async(None, source())]

        out = asyncio.run(collect())
        assert isinstance(out[0], Request) and out[1] == "item"


class RecordingSink:
    """Stands in for the IRL scheduler behind ``IRLScheduler.of``."""

    def __init__(self, star: bool) -> None:
        self.indegree = object() if star else None
        self.pages: list[tuple[str, set[str]]] = []
        self.links: list[Links] = []

    def record_page(self, source: str, targets: set[str]) -> None:
        self.pages.append((source, targets))

    def enqueue_links(self, links: Links, response: Response | None) -> None:
        self.links.append(links)


class TestStarEdges:
    def make(self, star: bool = True) -> tuple[StarMiddleware, RecordingSink]:
        crawler = get_crawler(CallbackSpider)
        crawler._apply_settings()
        crawler.spider = CallbackSpider.from_crawler(crawler)
        sink = RecordingSink(star)
        provide(crawler, sink, IRLScheduler)  # type: ignore[arg-type]
        return StarMiddleware.from_crawler(crawler), sink

    def page(self, url: str, **meta: object) -> HtmlResponse:
        return HtmlResponse(url, body=b"<html></html>", request=Request(url, meta=meta))

    def test_links_and_requests_name_the_pages_plds(self) -> None:
        mw, sink = self.make()
        links = Links(
            "http://www.a.co.uk/x",
            [
                "http://www.a.co.uk/1",  # own host: no edge
                "http://shop.a.co.uk/2",  # same PLD: no edge
                "http://www.b.com/",
                "http://h1.b.com/y",
                "http://C.org/",
            ],
        )
        out = list(
            mw.process_spider_output(
                self.page("http://www.a.co.uk/x"),
                [links, Request("http://d.net/z"), {"item": 1}],
            )
        )
        assert len(out) == 2  # the Links went to the sink; the Request and item pass on
        assert sink.links == [links]
        assert sink.pages == [("a.co.uk", {"a.co.uk", "b.com", "c.org", "d.net"})]

    def test_a_page_without_links_is_still_a_page(self) -> None:
        mw, sink = self.make()
        list(mw.process_spider_output(self.page("http://a.com/doc.pdf"), []))
        assert sink.pages == [("a.com", set())]

    def test_robots_txt_is_not_a_page(self) -> None:
        mw, sink = self.make()
        robots = self.page("http://a.com/robots.txt", **{ROBOTS_KEY: "a.com"})
        list(mw.process_spider_output(robots, []))
        assert sink.pages == []

    def test_nothing_is_recorded_without_star(self) -> None:
        mw, sink = self.make(star=False)
        list(mw.process_spider_output(self.page("http://a.com/"), [Request("http://b.com/")]))
        assert sink.pages == []
