"""Host health: back-off after 429, 503, timeouts and connection errors; retirement.

Theory of operation
-------------------
A fetch *fails* when the answer is 429 or 503, or when the download ends in one of
``RETRY_EXCEPTIONS`` (Scrapy's list of network failures: timeouts, refused, lost or
reset connections, TLS errors). A 429 or 503 is the server asking the *host* to slow
down: it counts against the host, the unit of politeness. A connection-level failure
counts against the *origin* it happened on (``scheme://host[:port]``,
:func:`irlscrapy.domains.url_origin`): a host that answers on http while nothing
listens on its https port is a healthy host with one dead origin, and its http URLs
go on being fetched. After a failure the next request of the host (or origin) waits,
counted from the failure,

    Retry-After (delay-seconds or HTTP-date), when a 429/503 carries one, else
    backoff_base * 2**(failures - 1),

both cut to ``backoff_max``; ``failures`` counts the failures in a row (a host's on its
visit state, an origin's on the frontier's bench) and any answer resets both. A host's
back-off is its ``VisitState.backoff``, one input of the one delay function
(:mod:`irlscrapy.scheduler.hosts.delays`), and, because a failure may be learned after the
host was released, a postponement of its next fetch (``Workbench.postpone``). An
origin's back-off holds its URLs out of the host (``HealthHolds.hold_origin``) until it
ends; the host's politeness delay is untouched.

After ``max_failures`` failures in a row the host or origin is *retired*: its stored
URLs are parked (``Frontier.retire``, :mod:`irlscrapy.scheduler.frontier.parking`: on disk,
back to BEAST when the retirement ends, never lost) and it rests ``retire_delay``
seconds; its count starts again. Retirements are counted (``irl/hosts/retired``,
``irl/origins/retired``); the first of each is logged (:mod:`irlscrapy.runtime.troubles`).

A host that answers slowly on purpose (a delay attack) holds one downloader slot at
most: the workbench lets one request per host (and per IP) be in flight, and
``DOWNLOAD_TIMEOUT`` ends it; the timeout is a failure, so such a host is backed off and
then retired, while the rest of the crawl goes on.

``irlscrapy.middlewares.fetchend.HostHealthMiddleware`` (a downloader middleware inside
RetryMiddleware, so it sees each answer and failure before a retry is made of it)
reports them to the IRL scheduler. robots.txt fetches are left to the robots cache, which
retries an unreachable robots.txt on its own schedule.

Stats: ``irl/hosts/backoffs``, ``irl/hosts/retry_after_capped``, ``irl/hosts/retired``,
``irl/hosts/parked_urls``, and for origins ``irl/origins/backoffs``,
``irl/origins/retired``.
"""

from __future__ import annotations

import email.utils
import logging
import time
from dataclasses import dataclass
from typing import Any

from irlscrapy import defaults
from irlscrapy.exceptions import ConfigurationError
from irlscrapy.runtime.troubles import tally
from irlscrapy.scheduler.frontier.workbench import VisitState
from irlscrapy.scheduler.stages import Frontier

logger = logging.getLogger(__name__)

#: Statuses that are failures of the host.
FAILURE_STATUSES = frozenset((429, 503))


@dataclass(frozen=True)
class HostHealth:
    backoff_base: float
    backoff_max: float
    max_failures: int  # 0: never retire
    retire_delay: float

    def __post_init__(self) -> None:
        if self.backoff_base < 0 or self.backoff_max < self.backoff_base:
            raise ConfigurationError(
                f"host health: need 0 <= IRL_HEALTH_BACKOFF_BASE ({self.backoff_base}) <= "
                f"IRL_HEALTH_BACKOFF_MAX ({self.backoff_max})"
            )
        if self.max_failures < 0 or self.retire_delay < 0:
            raise ConfigurationError(
                "host health: IRL_HEALTH_MAX_FAILURES and IRL_HEALTH_RETIRE_DELAY must be >= 0"
            )

    @classmethod
    def from_settings(cls, settings: Any) -> HostHealth:
        return cls(
            backoff_base=defaults.get(settings, "IRL_HEALTH_BACKOFF_BASE"),
            backoff_max=defaults.get(settings, "IRL_HEALTH_BACKOFF_MAX"),
            max_failures=defaults.get(settings, "IRL_HEALTH_MAX_FAILURES"),
            retire_delay=defaults.get(settings, "IRL_HEALTH_RETIRE_DELAY"),
        )

    def answered(self, state: VisitState, origin: str, frontier: Frontier) -> None:
        """``origin`` of ``state``'s host answered (anything but 429 or 503): both are
        healthy again."""
        state.failures = 0
        state.backoff = 0.0
        frontier.holds.bench.origin_failures.pop(origin, None)

    def origin_failed(
        self, state: VisitState, origin: str, frontier: Frontier, now: float, stats: Any
    ) -> None:
        """A connection to ``origin`` (of ``state``'s host) failed at ``now``: hold the
        origin's URLs for its back-off, or retire it."""
        failures = frontier.holds.bench.origin_failures.get(origin, 0) + 1
        if self.retires(failures):
            frontier.holds.bench.origin_failures.pop(origin, None)
            self._retire(origin, state, frontier, now, stats, "irl/origins/retired")
            return
        frontier.holds.bench.origin_failures[origin] = failures
        backoff, _ = self.backoff(failures, None)
        frontier.holds.hold_origin(state, origin, now + backoff)
        stats.inc_value("irl/origins/backoffs")

    def _retire(
        self, key: str, state: VisitState, frontier: Frontier, now: float, stats: Any, stat: str
    ) -> None:
        parked = frontier.holds.retire(key, state, now + self.retire_delay)
        stats.inc_value("irl/hosts/parked_urls", parked)
        tally(
            logger,
            stats,
            stat,
            "host health: %s failed %d times in a row; retired for %.0f s, %d URLs "
            "parked until then",
            key,
            self.max_failures,
            self.retire_delay,
            parked,
        )

    def failed(
        self,
        state: VisitState,
        frontier: Frontier,
        now: float,
        retry_after: float | None,
        stats: Any,
    ) -> None:
        """``state``'s host answered 429 or 503 at ``now`` (asking to wait
        ``retry_after`` seconds, if it said): back it off, or retire it."""
        state.failures += 1
        if self.retires(state.failures):
            state.failures = 0
            state.backoff = 0.0
            self._retire(state.host, state, frontier, now, stats, "irl/hosts/retired")
            return
        state.backoff, capped = self.backoff(state.failures, retry_after)
        frontier.workbench.postpone(state, now + state.backoff)
        stats.inc_value("irl/hosts/backoffs")
        if capped:
            stats.inc_value("irl/hosts/retry_after_capped")

    def backoff(self, failures: int, retry_after: float | None) -> tuple[float, bool]:
        """The back-off after the ``failures``-th failure in a row, and whether a
        Retry-After was cut to ``backoff_max``."""
        if retry_after is not None:
            return min(retry_after, self.backoff_max), retry_after > self.backoff_max
        return min(self.backoff_base * 2 ** min(failures - 1, 62), self.backoff_max), False

    def retires(self, failures: int) -> bool:
        return self.max_failures > 0 and failures >= self.max_failures


def retry_after_seconds(value: bytes | str | None, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` header value asks to wait (RFC 9110 section 10.2.3:
    delay-seconds or an HTTP-date); None when absent or unreadable."""
    if value is None:
        return None
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    text = text.strip()
    if text.isascii() and text.isdigit():  # ("²" is a digit to str.isdigit)
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
        if when.tzinfo is None:
            return None
        return max(0.0, when.timestamp() - (time.time() if now is None else now))
    except (TypeError, ValueError, IndexError, OverflowError):  # (a zone of +99999999)
        return None
