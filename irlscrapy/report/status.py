"""``StatusServer``: the crawl's figures over HTTP, on loopback, while it runs.

On when ``IRL_STATUS_PORT`` is set (0: off); the add-on enables the extension. It
listens on ``IRL_STATUS_HOST`` (127.0.0.1; any other loopback address may be given, a
non-loopback one is refused: the figures say what the crawl is fetching) and serves,
on the reactor, from :func:`irlscrapy.report.figures.crawl_figures`:

- ``/status.json``: every figure, plus the pages-per-second sparkline and, under
  ``console``, whether the controls are on and the crawl paused (seconds paused so
  far) or stopping;
- ``/metrics``: the same in Prometheus' text format (prometheus-client), each as
  ``irlscrapy_<figure>``, totals as counters;
- ``/``: the console, an HTML page that refreshes itself every few seconds
  (:mod:`irlscrapy.report.console`): progress and ETA, pages per second, the frontier,
  the busiest hosts and IPs, the last problems, the job directory and settings;
- ``POST /pause``, ``POST /resume``, ``POST /stop``: the controls
  (:mod:`irlscrapy.report.controls`), on only with ``IRL_STATUS_TOKEN`` set (403
  without: any web page can make a browser POST to loopback). Each answers JSON
  (``{"action": ..., "result": ..., "paused": ...}``), or, to a browser's plain form
  (``Accept: text/html``), a redirect back to the console.

With ``IRL_STATUS_TOKEN`` set, every request must carry it: ``Authorization: Bearer
<token>`` or ``?token=<token>``; without it the answer is 401. The console's links and
forms carry the token it was opened with, so a browser that opened ``/?token=...`` follows
them. Figures are computed on request, at most once a second (RAM reads only); one
timer a second adds a throughput sample. ``port`` holds the port actually bound
(useful with a port chosen by the system in tests).

A port that cannot be bound (another process listens on it) refuses the crawl: one
ERROR line naming ``IRL_STATUS_PORT``, exit status 1, before the crawl opens its state
or fetches anything. A user who asked for the endpoint wants to watch the crawl, and
another process on the port may well be another crawl's endpoint, whose figures a
dashboard would then show under this crawl's name. So the port is bound when the
extension is built, not at ``spider_opened``: Scrapy ends the process non-zero only
for an error raised while the crawler is built or the scheduler opens, and a
``spider_opened`` handler can only close the spider (``CloseSpider``, exit 0).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import time
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

import psutil
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import task
from twisted.internet.error import CannotListenError
from twisted.web.resource import Resource
from twisted.web.server import Request, Site

from irlscrapy import defaults
from irlscrapy.exceptions import ConfigurationError
from irlscrapy.report import console
from irlscrapy.report.controls import ACTIONS, CrawlControls
from irlscrapy.report.figures import AGENT_GAUGES, COUNTERS, GAUGES, Throughput, crawl_figures
from irlscrapy.runtime.openfailure import report_open_failure
from irlscrapy.runtime.workers import installed_reactor

logger = logging.getLogger(__name__)

SAMPLE_SECONDS = 1.0
#: Figures are computed at most this often; requests in between get the same ones.
FIGURES_MAX_AGE = 1.0
PREFIX = "irlscrapy_"


class StatusServer:
    def __init__(self, crawler: Crawler, host: str, port: int, token: str) -> None:
        self.crawler = crawler
        self.host = host
        self.requested_port = port
        self.token = token
        self.port: int | None = None  # bound while the spider runs
        self.throughput = Throughput()
        self._process = psutil.Process()
        self._listener: Any = None
        self._loop: task.LoopingCall | None = None
        self._figures: tuple[float, dict[str, float]] = (float("-inf"), {})
        self.controls = CrawlControls(crawler)
        self.problems = console.RecentProblems()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StatusServer:
        settings = crawler.settings
        port = defaults.get(settings, "IRL_STATUS_PORT")
        if not port:
            raise NotConfigured  # off by default: no args, so Scrapy logs no warning
        if not 0 < port < 65536:
            raise ConfigurationError(f"IRL_STATUS_PORT={port}: not a TCP port")
        host = defaults.get(settings, "IRL_STATUS_HOST")
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ConfigurationError(
                f"IRL_STATUS_HOST={host!r}: the status endpoint binds loopback addresses "
                "only (127.0.0.0/8 or ::1); reach it from elsewhere through an SSH tunnel "
                "or a reverse proxy"
            )
        server = cls(crawler, host, port, defaults.get(settings, "IRL_STATUS_TOKEN"))
        try:
            server.listen()  # here, not at spider_opened: see the module docstring
        except ConfigurationError as error:
            report_open_failure(error, None, crawler.stats)
            raise
        crawler.signals.connect(server.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(server.spider_closed, signal=signals.spider_closed)
        return server

    def listen(self) -> None:
        """Bind the port; one that cannot be bound is a ConfigurationError naming it."""
        try:
            self._listener = installed_reactor().listenTCP(
                self.requested_port, Site(_StatusResource(self)), interface=self.host
            )
        except CannotListenError as exc:
            reason = exc.socketError.strerror if exc.socketError else str(exc)
            raise ConfigurationError(
                f"IRL_STATUS_PORT={self.requested_port}: the status endpoint cannot listen "
                f"on {self.host}:{self.requested_port} ({reason}); choose a free port, or "
                "leave IRL_STATUS_PORT unset (0) to crawl without the endpoint"
            ) from exc
        self.port = self._listener.getHost().port

    # -- figures -------------------------------------------------------------------
    def figures(self) -> dict[str, float]:
        """The figures, computed at most every FIGURES_MAX_AGE seconds: any number of
        dashboards and scrapers cost the crawl one computation a second at most."""
        now = time.monotonic()
        computed, figures = self._figures
        if now - computed >= FIGURES_MAX_AGE:
            figures = {**crawl_figures(self.crawler, self._process), **self.throughput.figures()}
            self._figures = (now, figures)
        return figures

    def as_json(self) -> bytes:
        body = {
            "spider": self.crawler.spider.name if self.crawler.spider else None,
            "figures": self.figures(),
            "pages_per_second_history": self.throughput.sparkline(),
            "sample_seconds": SAMPLE_SECONDS,
            "console": {
                "controls": bool(self.token),
                "paused": self.controls.paused,
                "paused_seconds": round(self.controls.paused_seconds(), 3),
                "stopping": self.controls.stopping,
            },
        }
        return json.dumps(body).encode()

    def as_prometheus(self) -> bytes:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Collector(self.figures))
        return generate_latest(registry)

    def as_html(self, token: str = "") -> bytes:
        """The console; its links and forms carry ``token`` (the one it was asked with)."""
        return console.render(
            self.crawler,
            self.figures(),
            self.throughput.sparkline(),
            SAMPLE_SECONDS,
            self.controls,
            self.problems,
            token,
            controls_on=bool(self.token),
        )

    # -- signals -------------------------------------------------------------------
    def spider_opened(self, spider: Spider) -> None:
        self._loop = task.LoopingCall(self._sample)
        self._loop.start(SAMPLE_SECONDS, now=True)
        logging.getLogger().addHandler(self.problems)
        host = f"[{self.host}]" if ":" in self.host else self.host
        logger.info(
            "status endpoint: http://%s:%d/ (JSON /status.json, Prometheus /metrics)%s",
            host,
            self.port,
            ", token required" if self.token else "",
        )

    async def spider_closed(self, spider: Spider) -> None:
        logging.getLogger().removeHandler(self.problems)
        self.controls.spider_closed()
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        if self._listener is not None:
            listener, self._listener = self._listener, None
            await maybe_deferred_to_future(listener.stopListening())

    def _sample(self) -> None:
        stats = self.crawler.stats
        assert stats is not None
        self.throughput.add(stats.get_value(COUNTERS["pages"][0], 0) or 0)

    def authorized(self, request: Request) -> bool:
        if not self.token:
            return True
        expected = self.token.encode()
        given = request.getHeader(b"authorization") or b""
        if hmac.compare_digest(given, b"Bearer " + expected):
            return True
        return any(hmac.compare_digest(t, expected) for t in request.args.get(b"token", []))


class _StatusResource(Resource):
    isLeaf = True

    def __init__(self, server: StatusServer) -> None:
        super().__init__()
        self.status = server

    def render_GET(self, request: Request) -> bytes:
        if not self.status.authorized(request):
            request.setResponseCode(401)
            request.setHeader(b"www-authenticate", b'Bearer realm="irlscrapy"')
            return b"a token is required: Authorization: Bearer <token> or ?token=<token>\n"
        request.setHeader(b"cache-control", b"no-store")
        path = request.path.rstrip(b"/")
        if path == b"/status.json":
            request.setHeader(b"content-type", b"application/json")
            return self.status.as_json()
        if path == b"/metrics":
            request.setHeader(b"content-type", CONTENT_TYPE_LATEST.encode())
            return self.status.as_prometheus()
        if path == b"":
            request.setHeader(b"content-type", b"text/html; charset=utf-8")
            # a browser sends no header: the page's links carry the token of its query
            return self.status.as_html(self.status.token if b"token" in request.args else "")
        request.setResponseCode(404)
        return b"not found: try /, /status.json or /metrics\n"

    def render_POST(self, request: Request) -> bytes:
        action = request.path.strip(b"/").decode("ascii", "replace")
        if action not in ACTIONS:
            request.setResponseCode(404)
            return b"not found: POST /pause, /resume or /stop\n"
        if not self.status.token:
            request.setResponseCode(403)
            return b"the controls are off: set IRL_STATUS_TOKEN to use them\n"
        if not self.status.authorized(request):
            request.setResponseCode(401)
            request.setHeader(b"www-authenticate", b'Bearer realm="irlscrapy"')
            return b"a token is required: Authorization: Bearer <token> or ?token=<token>\n"
        client = request.getClientAddress()
        result = self.status.controls.act(action, getattr(client, "host", str(client)))
        request.setHeader(b"cache-control", b"no-store")
        if b"text/html" in (request.getHeader(b"accept") or b""):  # a plain form: back
            back = "./?" + urllib.parse.urlencode({"token": self.status.token})
            request.setResponseCode(303)  # See Other: the console, with GET
            request.setHeader(b"location", back.encode())
            return b""
        request.setHeader(b"content-type", b"application/json")
        paused = self.status.controls.paused
        return json.dumps({"action": action, "result": result, "paused": paused}).encode()


class _Collector:
    """A prometheus-client collector over a figures function, read at each scrape."""

    def __init__(self, figures: Callable[[], dict[str, float]]) -> None:
        self._figures = figures

    def collect(self) -> Iterator[Metric]:
        for name, value in self._figures().items():
            family = CounterMetricFamily if name in COUNTERS else GaugeMetricFamily
            yield family(PREFIX + name, _meaning(name), value=value)


def _meaning(name: str) -> str:
    return COUNTERS[name][1] if name in COUNTERS else {**GAUGES, **AGENT_GAUGES}.get(name, name)
