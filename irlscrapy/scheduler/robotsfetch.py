"""The robots.txt fetch: the Request the scheduler hands out for a host whose rules are
unknown or expired, and what its outcome tells the frontier.

The frontier's robots gate decides *when* (:mod:`irlscrapy.scheduler.robotsgate` hands
out a :class:`RobotsFetch` before any other URL of such a host); this module builds the
Request (``/robots.txt`` on the scheme of the host's URLs, meta ``ROBOTS_KEY`` naming
the host, redirects followed up to ``REDIRECT_HOPS`` as RFC 9309 asks) and turns its
answer into the gate's :meth:`~irlscrapy.scheduler.robotsgate.RobotsGate.known`.
The fetch holds its host until the outcome is known (its rules, or its retry or
redirect queued), so no URL of the host slips out in between; then ``end(token)``
releases it. Its retries are the robots cache's alone (``IRL_ROBOTS_RETRIES``, after
``IRL_ROBOTS_RETRY_DELAY``): the Request carries ``dont_retry``, so Scrapy's
RetryMiddleware does not retry it on top.

For dashboards and extensions written for Scrapy's RobotsTxtMiddleware (which the
add-on turns off) it counts the same stats, ``robotstxt/request_count``,
``robotstxt/response_count``, ``robotstxt/response_status_count/<status>``, and sends
Scrapy's ``robots_parsed`` signal.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.utils.asyncio import run_in_thread
from twisted.python.failure import Failure

from irlscrapy.runtime.internals import DownloadCut
from irlscrapy.runtime.troubles import tally
from irlscrapy.scheduler.diskfull import CrawlStop, stops_when_disk_is_full
from irlscrapy.scheduler.frontier.workbench import VisitState
from irlscrapy.scheduler.frontieritems import RobotsFetch, item_url
from irlscrapy.scheduler.hosts.robots import (
    MAX_WILDCARD_RULES,
    PARSE_LIMIT,
    REDIRECT_HOPS,
    RobotsRules,
    parse,
)
from irlscrapy.scheduler.hosts.robotscache import BIG_BODY
from irlscrapy.scheduler.metakeys import FETCH_KEY, ROBOTS_KEY
from irlscrapy.scheduler.stages import Frontier

logger = logging.getLogger(__name__)

#: Statuses a robots.txt callback sees: all but redirects (RedirectMiddleware follows
#: those, as RFC 9309 asks) and 2xx (which reach it anyway).
ROBOTS_STATUSES = [*range(100, 200), *range(400, 600)]


class RobotsFetches:
    def __init__(
        self,
        frontier: Frontier,
        stats: Any,
        signals: Any,
        end: Callable[[int], None],
        stop: CrawlStop,
    ) -> None:
        self.frontier = frontier
        self.stats = stats
        self.signals = signals  # the crawler's, for robots_parsed
        self.end = end  # releases the host of a fetch (by its token)
        self.stop = stop  # the crawl's: the robots cache's write may find the disk full

    def request(self, state: VisitState, fetch: RobotsFetch) -> Request:
        """The Request of ``fetch``: its retry or redirect, or a first fetch."""
        if fetch.request is not None:
            return fetch.request
        self.stats.inc_value("robotstxt/request_count")
        return Request(
            f"{scheme_of(state)}://{state.host}/robots.txt",
            callback=self.answered,
            errback=self.failed,
            meta={
                ROBOTS_KEY: fetch.host,
                "handle_httpstatus_list": ROBOTS_STATUSES,
                "redirect_ttl": REDIRECT_HOPS,
                # the robots cache retries it (IRL_ROBOTS_RETRIES), RetryMiddleware never
                "dont_retry": True,
            },
            dont_filter=True,
        )

    async def answered(self, response: Response) -> None:
        self.stats.inc_value("robotstxt/response_count")
        self.stats.inc_value(f"robotstxt/response_status_count/{response.status}")
        parsed = None
        body = response.body[:PARSE_LIMIT]
        if 200 <= response.status < 300 and len(body) > BIG_BODY:
            # 50 to 250 ms of parsing: on a worker thread (the host stays held)
            parsed = await run_in_thread(parse, body)
            if self.frontier.closed:
                return  # the crawl closed meanwhile: robots.txt is fetched next run
        rules = self._outcome(response.request, response.status, body, parsed)
        if rules is not None and 200 <= response.status < 300:
            self.signals.send_catch_log(
                signals.robots_parsed, robotparser=rules, request=response.request
            )

    def failed(self, failure: Failure) -> None:
        response = getattr(failure.value, "response", None)
        request = failure.request  # type: ignore[attr-defined]
        if failure.check(DownloadCut):
            return  # the crawl is closing: robots.txt is fetched next run
        if response is not None:
            self._outcome(request, response.status, response.body)
        elif failure.check(IgnoreRequest) and request.meta.get("redirect_times"):
            # Redirected more than REDIRECT_HOPS times: RFC 9309 2.3.1.2 counts a
            # redirect not followed as "unavailable" (4xx).
            self._outcome(request, 400, b"")
        else:
            self._outcome(request, None, b"")

    @stops_when_disk_is_full(default=None)
    def _outcome(
        self,
        request: Request | None,
        status: int | None,
        body: bytes,
        parsed: RobotsRules | None = None,
    ) -> RobotsRules | None:
        assert request is not None
        host = request.meta[ROBOTS_KEY]
        rules = self.frontier.robots.known(host, status, body, parsed)
        if rules is not None and rules.costly:
            tally(
                logger,
                self.stats,
                "irl/robots/too_many_wildcards",
                "the robots.txt of %s has over %d wildcard rules, too many to check URLs "
                "against: the host is read as disallowing all",
                host,
                MAX_WILDCARD_RULES,
            )
        token = request.meta.get(FETCH_KEY)
        if token is not None:
            self.end(token)
        return rules


def scheme_of(state: VisitState) -> str:
    """The scheme of a host's robots.txt fetch: http if any URL of the host it holds is
    http, else that of its first URL. The rules are kept per host, so one origin must
    answer for both: a host that serves https answers http with a redirect to it (which
    the fetch follows), while one that serves no https refuses the tunnel, and its
    robots.txt would read as unreachable, disallowing its http URLs too. (An https URL
    could come first where host health has not seen its origin fail: an agent that
    takes over a host with a retry among its URLs did, and refused the host's pages.)
    An origin whose connections failed has its URLs held out of the host
    (irlscrapy.scheduler.frontier.parking), so the first URL's is one that has not."""
    first = ""
    for _, _, item in state.urls:
        if isinstance(item, tuple):
            scheme = item_url(item).partition(":")[0]
            if scheme == "http":
                return scheme
            first = first or scheme
    return first or "http"
