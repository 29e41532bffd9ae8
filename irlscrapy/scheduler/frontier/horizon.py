"""The workbench's horizon: admit from BEAST what the crawler can fetch soon, no more.

Theory of operation
-------------------
BEAST's queue order is where budgets act (seeds/003 section VII.B): a PLD gets ``B_x``
URLs per queue, and the queues are read in turn. That order decides what is crawled
only if URLs leave BEAST about when they can be fetched. Admission that fills the
workbench up to its RAM cap puts the whole frontier of a small crawl in RAM, where the
crawler serves the due IPs about round robin and BEAST's order (the budgets) decides
nothing. So admission keeps the workbench at what the crawler can fetch within a
*horizon* of ``H`` seconds (``IRL_WORKBENCH_HORIZON``):

- per host, ``ceil(H / tau_h)`` URLs, ``tau_h`` the host's delay now (its budget,
  Crawl-delay and back-off), and per IP ``ceil(H / tau_s)``: more cannot be fetched
  within ``H`` (:meth:`Horizon.share`);
- overall, ``rate x H`` URLs, ``rate`` the crawl's recent fetch rate (fetches handed
  out per second, an exponentially weighted mean with time constant ``H``), and never
  fewer than :data:`MIN_URLS` (a crawl that starts has no rate yet).

The overall target is not a bound: while no workbench host is due and the crawler has
room for another fetch, admission goes on past it (the crawler must never idle with
work in BEAST; :mod:`irlscrapy.scheduler.dispatch` asks for that). Then the shares
alone hold the workbench to what can be fetched within ``H``: a crawl held back by
politeness rather than by its CPU fetches ``sum 1 / tau_h`` pages a second, and holds at
most ``H`` times that. The RAM caps (``IRL_WORKBENCH_URLS``,
``IRL_WORKBENCH_HOST_URLS``) stay the hard bounds.

Why 30 s by default: a URL admitted for a host not seen yet waits for the host's DNS
answer and its robots.txt (one IP delay and one download: seconds on the real web,
more for a slow server) before its first fetch, so the horizon must cover that
pipeline with room to spare, or new hosts would come due too late to keep the crawler
busy; and it must be short against the time to crawl a BEAST queue (``E[B_x] V / S``:
minutes to hours), so that the workbench holds a small slice of the frontier and
BEAST's order, not the workbench's round robin, says what comes next. 30 s is about
ten robots.txt round trips on a slow host, and at 300 pages/s a workbench of about
9,000 URLs against a frontier of millions.
"""

from __future__ import annotations

import math
from collections.abc import Callable

#: The overall target never goes below this many URLs (a crawl starting has no rate).
MIN_URLS = 1_000
#: The fetch rate is folded into its mean at most this often (seconds).
RATE_STEP = 1.0


class Horizon:
    """The workbench's targets for a horizon of ``seconds``."""

    def __init__(
        self, seconds: float, clock: Callable[[], float], *, min_urls: int = MIN_URLS
    ) -> None:
        if seconds <= 0:
            raise ValueError(f"a horizon must be > 0 seconds (got {seconds})")
        self.seconds = seconds
        self.clock = clock
        self.min_urls = min_urls
        self._rate = -1.0  # fetches per second; < 0: not measured yet
        self._count = 0  # fetches since _since
        self._since = clock()

    def fetched(self) -> None:
        """A fetch was handed out."""
        self._count += 1

    def rate(self) -> float:
        """Fetches handed out per second, the recent mean (0 until measured)."""
        now = self.clock()
        elapsed = now - self._since
        if elapsed >= RATE_STEP:
            measured = self._count / elapsed
            if self._rate < 0:
                self._rate = measured
            else:
                self._rate += (1.0 - math.exp(-elapsed / self.seconds)) * (measured - self._rate)
            self._count, self._since = 0, now
        return max(self._rate, 0.0)

    def urls(self) -> int:
        """The overall target: URLs the crawler fetches within the horizon."""
        return max(self.min_urls, math.ceil(self.rate() * self.seconds))

    def share(self, delay: float) -> float:
        """The URLs one host or IP whose delay is ``delay`` gets: ``ceil(H / delay)``,
        at least 1 (infinite without a delay)."""
        if delay <= 0:
            return math.inf
        return max(1, math.ceil(self.seconds / delay))
