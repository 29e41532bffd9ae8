"""Where hostile input meets irlscrapy, and what must hold when it does.

``Surfaces(directory).feed(surface, value)`` hands one generated input
(:mod:`harness.fuzz.hostile`) to the code a crawl runs on it:

- ``urls``: a link on a page: resolution (``absolute_url``, ``crawlable``), URL identity
  (``url_keys``, Scrapy's ``Request`` and fingerprint), hosts and PLDs, robots rules,
  the link rules and the request codec, then the scheduler (a real frontier: BEAST
  files, the admitted journal, the workbench), which admits and hands it out;
- ``html``: a page through the broad spider's ``parse`` (the response class chosen by
  Content-Type, as the downloader does), each URL it yields then as ``urls``;
- ``robots``: a robots.txt answer learned by the frontier's robots cache for a host with
  URLs waiting, its rules asked for every URL and its Crawl-delay;
- ``headers``: an HTTP answer's headers: Retry-After into a host's back-off, the
  response class and text, media type, X-Robots-Tag, and Scrapy's RedirectMiddleware
  for a Location, whose request then goes where the scheduler sends it;
- ``dns``: a DNS datagram, parsed as twisted.names does, answered through the crawl's
  resolver boundary (``HostResolver._first_a`` and ``_translate``) into the DNS cache,
  and the address through the address guard.

Invariants (a break raises :class:`Violation`; any other exception is a crash):

- no input raises out of an entry point, except the refusals listed per surface
  (``IgnoreRequest`` from RedirectMiddleware at its hop limit);
- every URL the spider yields, or ``crawlable`` accepts, has a URL key, makes a Scrapy
  ``Request``, has a host and a PLD, is checked by robots rules and survives the
  request codec;
- a Crawl-delay is finite and >= 0; a back-off is finite and within ``backoff_max``;
- a DNS question ends in an address or a :class:`DNSLookupFailed`, never an error, and
  the guard refuses every non-global address it is given;
- the host a URL is scheduled under (``url_host``) is the host Scrapy's Request
  fetches (for ASCII hosts; an IDN's Request host is its punycode).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from scrapy import Request
from scrapy.downloadermiddlewares.redirect import RedirectMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Headers, TextResponse
from scrapy.responsetypes import responsetypes
from scrapy.utils.request import RequestFingerprinter
from scrapy.utils.test import get_crawler
from twisted.internet import defer, task
from twisted.names import client, dns
from twisted.python.failure import Failure

from harness.frontierfixture import Stats, open_test_frontier
from harness.fuzz.hostile import Answer, Page
from irlscrapy.domains import ICANN, url_host
from irlscrapy.dupefilters.identity import RequestIdentity
from irlscrapy.dupefilters.urlkey import url_keys
from irlscrapy.links import Links
from irlscrapy.runtime.mediatype import media_type
from irlscrapy.scheduler.frontieritems import RobotsFetch
from irlscrapy.scheduler.hosts.addressguard import AddressGuard
from irlscrapy.scheduler.hosts.dns import DNSCache
from irlscrapy.scheduler.hosts.hosthealth import HostHealth, retry_after_seconds
from irlscrapy.scheduler.hosts.resolver import DNSLookupFailed, HostResolver
from irlscrapy.scheduler.hosts.robots import PARSE_LIMIT, RobotsRules, parse
from irlscrapy.scheduler.hosts.robotscache import BIG_BODY, RobotsCache
from irlscrapy.scheduler.linkrules import LinkRules
from irlscrapy.scheduler.requestcodec import decode_request, encode_link, payload_url
from irlscrapy.spiders.broad import BroadSpider
from irlscrapy.spiders.extract import absolute_url, crawlable, header_nofollow

USER_AGENT = "irlscrapy"
PAGE_URL = "http://site.example/dir/page.html"
RULES = parse(b"User-agent: *\nDisallow: /private\nAllow: /*.html$\nCrawl-delay: 1\n")
#: Hosts resolve to a global address, but one in seven to a private one (refused by
#: the guard) and one in eleven to no address at all.
GLOBAL_IP, PRIVATE_IP = "93.184.216.34", "10.0.0.1"
FRONTIER_LINKS = 100


def parsed_off_the_reactor(status: int, body: bytes) -> RobotsRules | None:
    """The rules a robots.txt fetch parses on a worker thread (a 2xx body over BIG_BODY:
    irlscrapy.scheduler.robotsfetch), else None (parsed in the reactor's turn)."""
    if 200 <= status < 300 and len(body[:PARSE_LIMIT]) > BIG_BODY:
        return parse(body)
    return None


class Violation(AssertionError):
    """An invariant of the module docstring broke."""


def check(holds: bool, what: str) -> None:
    if not holds:
        raise Violation(what)


class Surfaces:
    """The entry points of every surface, with the state they need (a frontier on disk
    under ``directory``, a robots cache, a DNS cache on a fake clock); ``feed`` one
    input at a time. Close it when done."""

    def __init__(self, directory: Path, decode_text: bool = True) -> None:
        #: whether the HTML surface decodes each page's text as a user's spider would
        #: (Scrapy's encoding detection; irlscrapy's own code never does)
        self.decode_text = decode_text
        self.now = 1_000.0
        self.robots = RobotsCache(
            ttl=3600.0,
            retry_delay=60.0,
            retries=2,
            ram_hosts=200,
            ram_bodies=128,
            ram_bytes=1 << 20,
        )
        self.frontier = open_test_frontier(
            directory,
            capacity=2000,
            host_cap=64,
            clock=lambda: self.now,
            resolve=self._resolve,
            robots=self.robots,
        )
        crawler = get_crawler(BroadSpider, settings_dict={"LOG_ENABLED": False})
        crawler._apply_settings()
        self.spider = BroadSpider.from_crawler(crawler, seeds="http://site.example/")
        crawler.spider = self.spider
        self.identity = RequestIdentity(RequestFingerprinter())
        self.rules = LinkRules(
            depth_limit=0, depth_priority=0, url_length_limit=2083, referer=None, stats=Stats()
        )
        self.redirects = RedirectMiddleware.from_crawler(crawler)
        self.health = HostHealth.from_settings(crawler.settings)
        self.clock = task.Clock()
        self.dns = DNSCache(WireResolver(), clock=self.clock, ram_entries=500)
        self.guard = AddressGuard()
        self.answers: dict[str, tuple[int, bytes]] = {}  # host -> its robots.txt answer
        self.fed = 0
        # the broad spider awaits scrapy.utils.asyncio.sleep(0) between slices of links
        self.loop = asyncio.new_event_loop()

    def close(self) -> None:
        self.frontier.close()
        self.loop.close()

    def feed(self, surface: str, value: Any) -> float:
        """Feed one input; return its longest turn: the longest stretch of crawler
        code it ran without a break, as a reactor would run it (the invariant checks
        are not counted)."""
        self.fed += 1
        self.turns: list[float] = []
        self.pushed = 0  # URLs of this input pushed to the frontier
        FEEDERS[surface](self, value)
        return max(self.turns, default=0.0)

    def turn(self, started: float) -> None:
        """A turn that began at ``started`` (perf_counter) ends now."""
        self.turns.append(time.perf_counter() - started)

    def sizes(self) -> dict[str, int]:
        """The sizes of the bounded caches the surfaces fill (for the bench's report)."""
        return {
            "frontier_urls": len(self.frontier),
            "workbench_hosts": len(self.frontier.workbench.hosts),
            "robots_ram": len(self.robots),
            "dns_ram": len(self.dns),
            "pld_cache": len(ICANN._cache),
        }

    # -- urls ----------------------------------------------------------------------------
    def url(self, value: str) -> None:
        started = time.perf_counter()
        link = absolute_url(PAGE_URL, value)
        links = [link] if link is not None and crawlable(link) else []
        self.intake(links)
        self.turn(started)
        self.check_links(links)
        self.crawl()

    def intake(self, urls: list[str]) -> None:
        """What the scheduler does with a page's links in the turn it gets them
        (Intake.enqueue_links: the link rules, URL keys, the codec, the frontier).

        The frontier gets the first FRONTIER_LINKS of an input's links: a page of
        100,000 links to its own host would leave BEAST a one-PLD backlog whose
        re-splits (BEAST's cost, not the page's) would be charged to later inputs."""
        kept = self.rules.keep(urls)
        url_keys(kept)
        payloads = [encode_link(link, 1, None, PAGE_URL) for link in kept]
        room = max(0, FRONTIER_LINKS - self.pushed)
        for payload in payloads[:room]:
            self.frontier.push(payload)
        self.pushed += min(room, len(payloads))

    def check_links(self, urls: list[str]) -> None:
        """Every URL a page yields can be fetched and identified."""
        for link in urls:
            check(crawlable(link), f"not crawlable: {link!r}")
            request = Request(link)
            self.identity.request_key(request)
            host = url_host(link)
            check(bool(host), f"no host: {link!r}")
            if host.isascii():
                fetched = url_host(request.url)
                check(fetched == host, f"scheduled as {host!r}, fetched from {fetched!r}")
            ICANN(host)
            RULES.allowed(link, USER_AGENT)
            self.rules.trapped(link)
            payload = encode_link(link, 1, None, PAGE_URL)
            check(payload_url(payload) == link, f"codec changed {link!r}")
            check(decode_request(payload, None).url == request.url, f"codec: {link!r}")

    def crawl(self, steps: int = 64) -> None:
        """One second passes; the frontier admits and hands out what is due, and each
        fetch ends at once (a robots.txt with the answer its host was given)."""
        started = time.perf_counter()
        self.now += 1.0
        frontier = self.frontier
        frontier.admission.admit(hungry=True)
        for _ in range(steps):
            got = frontier.take(self.now)
            if got is None:
                break
            state, item = got
            if isinstance(item, RobotsFetch):
                status, body = self.answers.pop(item.host, (404, b""))
                paused = time.perf_counter()
                parsed = parsed_off_the_reactor(status, body)
                started += time.perf_counter() - paused  # (a worker thread's time)
                rules = frontier.robots.known(item.host, status, body, parsed)
                if rules is not None:
                    delay = rules.crawl_delay(USER_AGENT)
                    check(math.isfinite(delay) and delay >= 0, f"Crawl-delay {delay!r}")
            frontier.workbench.release(state, self.now)
            frontier.finished(item)
        self.turn(started)

    def _resolve(self, host: str) -> defer.Deferred[str]:
        n = sum(map(ord, host))
        if n % 11 == 0:
            return defer.fail(DNSLookupFailed("nxdomain", host))
        return defer.succeed(PRIVATE_IP if n % 7 == 0 else GLOBAL_IP)

    # -- html ----------------------------------------------------------------------------
    def html(self, page: Page) -> None:
        started = time.perf_counter()
        response = responsetypes.from_args(
            headers=Headers(page.headers), url=page.url, body=page.body
        )(page.url, headers=page.headers, body=page.body, request=Request(PAGE_URL))
        output = self.spider.parse(response)
        while True:  # one slice of links a turn, as the scraper runs the callback
            try:
                links = self.loop.run_until_complete(anext(output))
            except StopAsyncIteration:
                break
            self.intake(list(links.urls))
            self.turn(started)
            check(isinstance(links, Links) and links.source == page.url, f"yielded {links!r}")
            self.check_links(list(links.urls))
            started = time.perf_counter()
        self.turn(started)
        if self.decode_text and isinstance(response, TextResponse):
            response.text  # noqa: B018 (decoding the body must not raise)
        self.crawl()

    # -- robots --------------------------------------------------------------------------
    def robots_answer(self, answer: tuple[int, bytes]) -> None:
        status, body = answer
        host = f"r{self.fed % 500}.example"
        self.answers[host] = (status, body)
        urls = [f"http://{host}/{path}" for path in ("", "private/x", "a.html", "%zz", "é")]
        parsed = parsed_off_the_reactor(status, body)
        started = time.perf_counter()
        self.robots.learn(f"learned.{host}", status or None, body, self.now, parsed)
        self.turn(started)
        rules = parse(body)
        for url in urls:
            rules.allowed(url, USER_AGENT)
        for link in urls:
            self.frontier.push(encode_link(link, 1, None, None))
        self.crawl()  # the host's robots.txt is fetched, answered, and rules its URLs
        self.robots.lookup(host)

    # -- headers -------------------------------------------------------------------------
    def headers(self, answer: Answer) -> None:
        started = time.perf_counter()
        headers = Headers()
        for name, value in answer.headers:
            headers.appendlist(name, value)
        for value in headers.getlist(b"Retry-After"):
            seconds = retry_after_seconds(value, self.now)
            check(seconds is None or seconds >= 0, f"Retry-After {value!r}: {seconds}")
            backoff, _ = self.health.backoff(3, seconds)
            check(0 <= backoff <= self.health.backoff_max, f"back-off {backoff}")
        media_type(headers)
        header_nofollow(headers.getlist(b"X-Robots-Tag"))
        body = b"<html><a href='/x'>x</a></html>"
        cls = responsetypes.from_args(headers=headers, url=PAGE_URL, body=body)
        response = cls(PAGE_URL, status=answer.status, headers=headers, body=body)
        if isinstance(response, TextResponse):
            response.text  # noqa: B018
        request = Request(PAGE_URL, meta={"redirect_ttl": 1 + self.fed % 3})
        try:
            result = self.redirects.process_response(request, response)
        except IgnoreRequest:
            return  # past the hop limit: a final failure, the page is done
        except ValueError:
            # Scrapy's Request refuses the Location (no scheme such as "mailto:x", a
            # port out of range, a bad IPv6 literal) before the middleware checks its
            # scheme: the page fails as a download error, which Scrapy logs
            return
        finally:
            self.turn(started)
        # the scheduler sends http(s) redirects to URLseen, the rest straight on
        if isinstance(result, Request) and result is not request and crawlable(result.url):
            self.intake([result.url])
            self.check_links([result.url])
            self.crawl()

    # -- dns -----------------------------------------------------------------------------
    def dns_answer(self, value: tuple[str, bytes]) -> None:
        name, wire = value
        resolver = self.dns.resolver
        assert isinstance(resolver, WireResolver)
        resolver.wire = wire
        host = f"{self.fed}.{name}"
        outcome: list[Any] = []
        started = time.perf_counter()
        self.dns.resolve(host).addBoth(outcome.append)
        self.turn(started)
        while not outcome and self.clock.getDelayedCalls():  # retries, each a turn
            started = time.perf_counter()
            self.clock.advance(
                min(c.getTime() for c in self.clock.getDelayedCalls()) - self.clock.seconds()
            )
            self.turn(started)
        check(len(outcome) == 1, f"no outcome for {wire.hex()}")
        (result,) = outcome
        if isinstance(result, Failure):
            check(result.check(DNSLookupFailed) is not None, f"{result.value!r}")
            return
        check(isinstance(result, str), f"address {result!r}")
        self.guard.refuses(result)


class WireResolver(HostResolver):
    """A resolver whose every answer is ``wire``, a datagram parsed as twisted.names'
    DNSDatagramProtocol and client.Resolver do, then handed to HostResolver's own
    boundary (``_first_a``, ``_translate``). A datagram twisted cannot parse is dropped
    there, so the query times out."""

    def __init__(self) -> None:
        super().__init__()
        self.wire = b""

    def query(self, host: str) -> defer.Deferred[Any]:
        d = defer.maybeDeferred(_answer_of, self.wire)
        return d.addCallbacks(
            self._first_a, self._translate, callbackArgs=(host,), errbackArgs=(host,)
        )


def _answer_of(wire: bytes) -> Any:
    message = dns.Message()
    try:
        message.fromStr(wire)
    except Exception as exc:  # DNSDatagramProtocol logs and drops such a datagram
        raise defer.TimeoutError(f"undecodable answer: {exc!r}") from exc
    if message.trunc:
        raise defer.TimeoutError("truncated: TCP is not modelled")  # client retries on TCP
    result = client.Resolver(servers=[("127.0.0.1", 53)]).filterAnswers(message)
    if isinstance(result, Failure):
        result.raiseException()
    return result


async def _all(output: AsyncIterator[Any]) -> list[Any]:
    return [item async for item in output]


FEEDERS: dict[str, Callable[[Surfaces, Any], None]] = {
    "urls": Surfaces.url,
    "html": Surfaces.html,
    "robots": Surfaces.robots_answer,
    "headers": Surfaces.headers,
    "dns": Surfaces.dns_answer,
}
