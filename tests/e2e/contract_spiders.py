"""Ordinary spiders, a tiny echoing web server and a crawl runner for the spider-contract
tests (tests/e2e/test_irl_spider_contract.py).

The server (:class:`EchoWeb`) runs in the test process on ``127.0.0.1:0`` and answers
for two hosts, ``localhost:PORT`` (the start host, *A*) and ``127.0.0.1:PORT`` (*B*),
told apart by the Host header. It logs every request that arrives (method, host, path,
headers, body) in arrival order. Its pages:

- ``/robots.txt``: ``Disallow: /private``;
- ``/t/<p>`` (``p`` a string of 0s and 1s, at most ``TREE_DEPTH`` long): a tree page
  linking to its children ``/t/<p>0`` and ``/t/<p>1``, to ``/long/<p>?pad=...`` (a URL
  whose length grows with ``len(p)``), to ``/private/<p>``, and back to the start page
  ``A/t/``; on host A also to ``B/x/<p>``, and the root also to ``B/t/``. Every page
  has exactly one parent (back-links go to the start page only), so the depth and the
  Referer of each page do not depend on the order of the crawl;
- ``/x/<p>``, ``/long/<p>``, ``/private/<p>``: leaves, linking back to the start page;
- ``/edge/``: links to ``/policy/origin``, ``/policy/no-referrer`` (pages answered with
  that ``Referrer-Policy`` header, linking to a ``/leaf/`` on their own host and one on
  the other) and ``/spaces/`` (links to ``/leaf/<name>`` for each of SPACED_NAMES);
  ``/leaf/...`` pages have no links;
- ``/status/<code>``: that status; ``/flaky/<name>``: 503 on the first request, then 200;
  ``/redirect?to=<url>``: a 302; anything else: 200 with the request echoed as JSON.

Run a crawl with ``python contract_spiders.py CONFIG_JSON``: CONFIG holds ``spider``,
``kwargs``, ``settings`` and ``out``; the runner writes ``out`` as JSON with the crawl's
stats and what the spider's callbacks and errbacks saw. The spiders: ``contract``
(an ordinary spider using the Request API widely), ``tree`` (follows every link, as
``Links`` or as Requests) and ``edges`` (requests stock Scrapy ends in an errback
without an answer, and a callback that is no spider method). Only the given settings apply
(no project settings), so without ``ADDONS`` this is Scrapy as shipped.
"""

from __future__ import annotations

import datetime
import html
import json
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

TREE_DEPTH = 3
#: ``/long/<p>?pad=`` + PAD_STEP * len(p) characters: a limit between two of these drops
#: the longer ones.
PAD_STEP = 20
ROBOTS_TXT = b"User-agent: *\nDisallow: /private\n"
PAGE_KINDS = ("t", "x", "long", "private", "edge", "policy", "spaces", "leaf")
#: Last path segments of the links of ``/spaces/``: all SPACED_ROOM characters long but
#: the second (one more). With ``URLLENGTH_LIMIT = len("http://HOST/leaf/") + SPACED_ROOM``
#: only the first fits once Request() has percent-escaped the space and the "é".
SPACED_ROOM = 20
SPACED_NAMES = (
    "s" * SPACED_ROOM,
    "s" * (SPACED_ROOM + 1),
    "with spaces".ljust(SPACED_ROOM, "s"),
    "é".ljust(SPACED_ROOM, "e"),
)
#: A host name that never resolves (RFC 2606 reserves .invalid).
UNRESOLVABLE = "no-such-host.invalid"
STAR_MIDDLEWARE = "irlscrapy.middlewares.star.StarMiddleware"


# -- the server ---------------------------------------------------------------------------
class EchoWeb:
    """A threaded HTTP server on 127.0.0.1:0; ``log`` holds every request, in order."""

    def __init__(self) -> None:
        self.log: list[dict[str, Any]] = []
        self.hits: dict[str, int] = {}
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.server.web = self  # type: ignore[attr-defined]
        self.port: int = self.server.server_address[1]
        self.a = f"localhost:{self.port}"
        self.b = f"127.0.0.1:{self.port}"
        self.start_url = f"http://{self.a}/t/"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> EchoWeb:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)

    def clear(self) -> None:
        with self.lock:
            self.log.clear()
            self.hits.clear()

    def record(self, entry: dict[str, Any]) -> int:
        """Log a request; return how many times its host and path came before."""
        with self.lock:
            entry["seq"] = len(self.log)
            self.log.append(entry)
            key = entry["host"] + entry["path"]
            seen = self.hits.get(key, 0)
            self.hits[key] = seen + 1
            return seen

    def page(self, host: str, path: str) -> list[str]:
        """The links (absolute URLs) of a tree or leaf page."""
        scheme_host = f"http://{host}"
        kind, _, rest = path.lstrip("/").partition("/")
        p = rest.partition("?")[0]
        if kind == "edge":
            return [
                f"{scheme_host}/policy/origin",
                f"{scheme_host}/policy/no-referrer",
                f"{scheme_host}/spaces/",
            ]
        if kind == "policy":
            other = self.b if host == self.a else self.a
            return [f"{scheme_host}/leaf/{p}-same", f"http://{other}/leaf/{p}-cross"]
        if kind == "spaces":
            return [f"{scheme_host}/leaf/{name}" for name in SPACED_NAMES]
        if kind == "leaf":
            return []
        links = [self.start_url]
        if kind != "t":
            return links
        if len(p) < TREE_DEPTH:
            links += [f"{scheme_host}/t/{p}0", f"{scheme_host}/t/{p}1"]
        links.append(f"{scheme_host}/long/{p}?pad={'x' * PAD_STEP * len(p)}")
        links.append(f"{scheme_host}/private/{p}")
        if host == self.a:
            links.append(f"http://{self.b}/x/{p}")
            if not p:
                links.append(f"http://{self.b}/t/")
        return links

    def long_url_length(self, host: str, p_len: int) -> int:
        return len(f"http://{host}/long/{'0' * p_len}?pad={'x' * PAD_STEP * p_len}")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.answer()

    def do_POST(self) -> None:
        self.answer()

    def do_PUT(self) -> None:
        self.answer()

    def answer(self) -> None:
        web: EchoWeb = self.server.web  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        host = (self.headers.get("Host") or "").lower()
        entry = {
            "method": self.command,
            "host": host,
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body.decode("latin-1"),
        }
        before = web.record(entry)
        parts = urlsplit(self.path)
        route = parts.path
        if route == "/robots.txt":
            self.send(200, ROBOTS_TXT, "text/plain")
        elif route.startswith("/status/"):
            self.send(int(route.rsplit("/", 1)[1]), b"status page", "text/plain")
        elif route.startswith("/flaky/") and before == 0:
            self.send(503, b"try again", "text/plain")
        elif route == "/redirect":
            target = parse_qs(parts.query)["to"][0]
            self.send(302, b"", "text/plain", {"Location": target})
        elif route.split("/")[1] in PAGE_KINDS:
            headers = {}
            if route.startswith("/policy/"):
                headers["Referrer-Policy"] = route.rsplit("/", 1)[1]
            anchors = "".join(
                f'<a href="{html.escape(u)}">{i}</a>\n'
                for i, u in enumerate(web.page(host, self.path))
            )
            page = f"<html><body>{anchors}</body></html>".encode()
            self.send(200, page, "text/html; charset=utf-8", headers)
        else:
            self.send(200, json.dumps(entry).encode(), "application/json")

    def send(
        self, status: int, body: bytes, ctype: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


# -- the spiders (Scrapy is imported by the runner only, not by the tests) ----------------
def _spiders() -> dict[str, Any]:
    from scrapy import FormRequest, Request, Spider, signals
    from scrapy.exceptions import CannotResolveHostError, IgnoreRequest
    from scrapy.http import JsonRequest, Response
    from scrapy.spidermiddlewares.httperror import HttpError
    from twisted.internet.error import DNSLookupError
    from twisted.python.failure import Failure

    from irlscrapy import Links

    #: meta keys a callback's view is compared on (Scrapy's own and the spider's)
    meta_keys = ("tag", "payload", "depth", "redirect_urls", "retry_times", "flag")

    class ContractSpider(Spider):
        """An ordinary spider: Requests with meta, cb_kwargs, callbacks, errbacks,
        priorities, a form POST, a JSON PUT, redirects and a retry."""

        name = "contract"

        def __init__(self, base: str, other: str, refused: str, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.base, self.other, self.refused = base, other, refused
            self.seen: list[dict[str, Any]] = []

        async def start(self) -> AsyncIterator[Any]:
            yield Request(
                f"{self.base}/echo/root",
                callback=self.parse_root,
                meta={"tag": "root"},
                cb_kwargs={"k": 1},
            )

        def view(self, where: str, request: Any, **extra: Any) -> None:
            meta = {k: request.meta[k] for k in meta_keys if k in request.meta}
            self.seen.append(
                {
                    "url": request.url,
                    "callback": where,
                    "meta": repr(sorted(meta.items())),
                    "cb_kwargs": repr(sorted(request.cb_kwargs.items())),
                    **extra,
                }
            )

        def parse_root(self, response: Response, k: int) -> Iterator[Any]:
            self.view("parse_root", response.request, k=k, status=response.status)
            base = self.base
            # lowest priority first, so that arrival order cannot explain the fetch order
            for n in (1, 7, 3, 9, 5):
                yield Request(
                    f"{base}/echo/prio/{n}",
                    callback=self.parse_leaf,
                    priority=n,
                    meta={"tag": f"prio{n}"},
                    cb_kwargs={"n": n},
                )
            yield Request(f"{base}/echo/prio/7", callback=self.parse_leaf)  # a duplicate
            yield Request(
                f"{base}/echo/root",
                callback=self.parse_again,
                dont_filter=True,
                meta={"tag": "again"},
            )
            yield Request(
                f"{base}/echo/meta",
                callback=self.parse_leaf,
                meta={
                    "tag": "meta",
                    "payload": {
                        "tuple": (1, "two"),
                        "bytes": b"\x00\xffraw",
                        "set": {3},
                        "int_keys": {1: "one"},
                        "none": None,
                        "float": 1.5,
                        "nested": [{"a": [1, 2]}, "s"],
                    },
                },
                cb_kwargs={"when": datetime.date(2024, 1, 2), "items": [1, 2]},
                flags=["flagged"],
            )
            yield Request(f"{base}/echo/plain")  # the default callback, parse
            yield Request(
                f"{base}/status/500",
                callback=self.parse_leaf,
                errback=self.on_error,
                meta={"tag": "500"},
                cb_kwargs={"n": 500},
            )
            yield Request(
                f"{self.refused}/refused",
                callback=self.parse_leaf,
                errback=self.on_error,
                meta={"tag": "refused"},
                cb_kwargs={"n": 0},
            )
            yield FormRequest(
                f"{base}/echo/form",
                formdata={"name": "Zoë", "q": "a b&c"},
                headers={"X-Contract": "form"},
                callback=self.parse_form,
                meta={"tag": "form"},
                cb_kwargs={"kind": "form"},
            )
            yield JsonRequest(
                f"{base}/echo/json",
                method="PUT",
                data={"x": [1, 2], "y": "z"},
                headers={"X-Contract": "json"},
                callback=self.parse_form,
                cb_kwargs={"kind": "json"},
            )
            yield Request(
                f"{base}/redirect?to={base}/echo/landed",
                callback=self.parse_leaf,
                meta={"tag": "redirect"},
                cb_kwargs={"n": 302},
            )
            yield Request(
                f"{base}/redirect?to={self.other}/echo/elsewhere",
                callback=self.parse_leaf,
                meta={"tag": "redirect-other-host"},
                cb_kwargs={"n": 303},
            )
            yield Request(
                f"{base}/flaky/once",
                callback=self.parse_leaf,
                meta={"tag": "flaky", "max_retry_times": 1},
                cb_kwargs={"n": 503},
            )

        def parse(self, response: Response) -> None:
            self.view("parse", response.request, status=response.status)

        def parse_again(self, response: Response) -> None:
            self.view("parse_again", response.request, status=response.status)

        def parse_leaf(self, response: Response, n: int = -1, **kw: Any) -> None:
            self.view(
                "parse_leaf",
                response.request,
                status=response.status,
                flags=response.request.flags,
                url_seen=response.url,
            )

        def parse_form(self, response: Response, kind: str) -> None:
            self.view("parse_form", response.request, status=response.status, echo=response.json())

        def on_error(self, failure: Failure) -> None:
            response = getattr(failure.value, "response", None)
            self.view(
                "on_error",
                failure.request,  # type: ignore[attr-defined]
                error=type(failure.value).__name__,
                http_error=isinstance(failure.value, HttpError),
                status=None if response is None else response.status,
            )

    class TreeSpider(Spider):
        """Follows every link of the tree, as one ``Links`` per page (mode=links) or one
        Request per link (mode=requests)."""

        name = "tree"
        custom_settings = {"SPIDER_MIDDLEWARES": {STAR_MIDDLEWARE: 950}}  # noqa: RUF012

        def __init__(self, start_url: str, mode: str, allowed: str = "", **kwargs: Any) -> None:
            super().__init__(**kwargs)
            assert mode in ("links", "requests"), mode
            self.start_url, self.mode = start_url, mode
            if allowed:
                self.allowed_domains = allowed.split(",")
            self.seen: list[dict[str, Any]] = []

        async def start(self) -> AsyncIterator[Any]:
            # dont_filter=False (unlike start_urls): a rerun on the same JOBDIR may skip it
            yield Request(self.start_url, callback=self.parse)

        def parse(self, response: Response) -> Iterator[Any]:
            depth = response.meta.get("depth", 0)
            self.seen.append({"url": response.url, "depth": depth})
            urls = [response.urljoin(h) for h in response.css("a::attr(href)").getall()]
            if self.mode == "links":
                yield Links(response.url, urls, depth)
            else:
                for url in urls:
                    yield Request(url, callback=self.parse)

    class EdgeSpider(Spider):
        """Requests whose end stock Scrapy reports to the spider although they are never
        answered: disallowed by robots.txt, to a host that does not resolve; and one whose
        callback is not a spider method."""

        name = "edges"

        def __init__(self, base: str, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.base = base
            self.seen: list[dict[str, Any]] = []

        @classmethod
        def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
            spider = super().from_crawler(crawler, *args, **kwargs)
            crawler.signals.connect(spider.robots_parsed, signal=signals.robots_parsed)
            return spider

        def robots_parsed(self, robotparser: Any, request: Any) -> None:
            ua = "irlscrapy-contract"
            self.note(
                "robots_parsed",
                request,
                private=robotparser.allowed(f"{self.base}/private/x", ua),
                public=robotparser.allowed(f"{self.base}/echo/x", ua),
            )

        async def start(self) -> AsyncIterator[Any]:
            yield Request(f"{self.base}/echo/root", callback=self.parse_root)

        def parse_root(self, response: Response) -> Iterator[Any]:
            yield Request(
                f"{self.base}/private/disallowed",
                callback=self.parse_leaf,
                errback=self.on_error,
            )
            yield Request(
                f"http://{UNRESOLVABLE}/", callback=self.parse_leaf, errback=self.on_error
            )
            yield Request(
                f"{self.base}/echo/lambda",
                callback=lambda response: self.note("lambda", response.request),
            )

        def note(self, where: str, request: Any, **extra: Any) -> None:
            self.seen.append({"url": request.url, "callback": where, **extra})

        def parse_leaf(self, response: Response) -> None:
            self.note("parse_leaf", response.request)

        def on_error(self, failure: Failure) -> None:
            self.note(
                "on_error",
                failure.request,  # type: ignore[attr-defined]
                error=type(failure.value).__name__,
                ignored=failure.check(IgnoreRequest) is not None,
                dns=failure.check(DNSLookupError, CannotResolveHostError) is not None,
            )

    return {"contract": ContractSpider, "tree": TreeSpider, "edges": EdgeSpider}


def run(config: dict[str, Any]) -> None:
    from scrapy.crawler import CrawlerProcess
    from scrapy.settings import Settings

    spider_cls = _spiders()[config["spider"]]
    process = CrawlerProcess(Settings(config["settings"]), install_root_handler=True)
    crawler = process.create_crawler(spider_cls)
    process.crawl(crawler, **config.get("kwargs", {}))
    process.start()
    assert crawler.stats is not None
    spider = crawler.spider
    result = {
        "stats": crawler.stats.get_stats(),
        "seen": getattr(spider, "seen", None),
    }
    with open(config["out"], "w") as f:
        json.dump(result, f, default=str, indent=1)


if __name__ == "__main__":
    run(json.loads(sys.argv[1]))
