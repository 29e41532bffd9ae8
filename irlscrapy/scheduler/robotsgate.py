"""``RobotsGate``: robots.txt between a host's URLs and their fetches (RFC 9309).

The robots cache (:mod:`irlscrapy.scheduler.hosts.robotscache`) keeps each host's
outcome; the gate applies it to the frontier's hosts (:mod:`irlscrapy.scheduler.stages`):

- a URL that reaches its host is dropped when the host's rules, known, disallow it
  (:meth:`RobotsGate.allows`; ``irl/robots/disallowed``), and so are the host's URLs in
  RAM when its rules become known;
- when the workbench hands out a URL of a host whose rules are unknown or expired, the
  URL goes back to the front of its host and the host's robots.txt is handed out
  instead (:meth:`RobotsGate.fetch_or_wait`, a :class:`RobotsFetch`, released under the
  IP delay only): the first fetch of every host, again when its TTL has passed or an
  unreachable one is due for a retry. One fetch per host is out at a time; meanwhile
  the host is postponed, until the retry if there is one;
- an answer (:meth:`RobotsGate.known`, from :mod:`irlscrapy.scheduler.robotsfetch`) is
  stored, and sets the host's Crawl-delay, up to ``max_crawl_delay``
  (``irl/robots/crawl_delay_capped`` counts hosts asking more).

Invariant (robots.txt obeyed): *no URL of a host is handed out before its robots.txt has
been answered, nor after its rules have expired.*
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from irlscrapy.scheduler.frontier.workbench import VisitState, Workbench
from irlscrapy.scheduler.frontieritems import Item, MemoryItem, RobotsFetch, item_url
from irlscrapy.scheduler.hosts.robots import RobotsRules
from irlscrapy.scheduler.hosts.robotscache import RobotsCache

#: Seconds a host waits, when its turn comes while its robots.txt is still out, before
#: it is looked at again.
ROBOTS_PENDING_WAIT = 1.0


class RobotsGate:
    def __init__(
        self,
        cache: RobotsCache | None,
        workbench: Workbench,
        stats: Any,
        *,
        user_agent: str,
        max_crawl_delay: float,
        clock: Callable[[], float],
        refuse: Callable[[Item | MemoryItem | RobotsFetch, str], None],
    ) -> None:
        self.cache = cache  # None: robots.txt is not obeyed
        self.workbench = workbench
        self.stats = stats
        self.user_agent = user_agent
        self.max_crawl_delay = max_crawl_delay
        self.clock = clock
        self.refuse = refuse  # drops a URL its host's rules disallow (the frontier's)
        self._out: set[str] = set()  # hosts whose robots.txt fetch is out

    def allows(self, host: str, item: Item | MemoryItem | RobotsFetch) -> bool:
        """May ``item`` join ``host``'s URLs? Not when the host's rules, known,
        disallow it (counted in ``irl/robots/disallowed``)."""
        if self.cache is None or isinstance(item, RobotsFetch):
            return True
        rules = self.cache.lookup(host)[0]
        if rules is None or rules.allowed(item_url(item), self.user_agent):
            return True
        self.stats.inc_value("irl/robots/disallowed")
        return False

    def clear(self, state: VisitState, now: float) -> bool:
        """May ``state``'s host be fetched as to robots.txt (not obeyed, or its rules
        known and in force)? Its Crawl-delay is set from the rules."""
        if self.cache is None:
            return True
        rules, refetch_at = self.cache.lookup(state.host)
        if rules is not None and refetch_at > now and state.crawl_delay < 0:
            state.crawl_delay = self._crawl_delay(rules, count=False)
        return rules is not None and refetch_at > now

    def fetch_or_wait(
        self, state: VisitState, item: Item | MemoryItem, now: float
    ) -> RobotsFetch | None:
        """``item`` was taken from ``state``'s host, whose rules are unknown or expired
        (:meth:`clear` said no): the URL goes back to the front of its host, and the
        host's robots.txt is to be fetched now (returned), or the host waits for the
        fetch that is out, or for an unreachable robots.txt's retry."""
        assert self.cache is not None, "robots.txt is not obeyed"
        refetch_at = self.cache.lookup(state.host)[1]
        self.workbench.add(state.host, state.ip, item, front=True)
        if state.host not in self._out and refetch_at <= now:
            self._out.add(state.host)
            return RobotsFetch(state.host)
        self.workbench.release(state, now, ip_only=True)
        self.workbench.postpone(state, max(refetch_at, now + ROBOTS_PENDING_WAIT))
        return None

    def known(
        self, host: str, status: int | None, body: bytes, parsed: RobotsRules | None = None
    ) -> RobotsRules | None:
        """The robots.txt of ``host`` answered ``status`` (None: no answer) with
        ``body`` (``parsed``: its rules, if parsed already): store the outcome; drop
        what it disallows; set the host's Crawl-delay; postpone the host until a retry
        when the outcome is "try again later". Return the rules now in force (None: to
        be fetched again)."""
        self._out.discard(host)
        assert self.cache is not None, "robots.txt is not obeyed"
        rules, refetch_at = self.cache.learn(host, status, body, self.clock(), parsed)
        state = self.workbench.hosts.get(host)
        if rules is None:
            self.stats.inc_value("irl/robots/retries")
            if state is not None:
                self.workbench.postpone(state, refetch_at)
            return None
        self.stats.inc_value(f"irl/robots/{rules.outcome}")
        if state is None:
            return rules
        state.crawl_delay = self._crawl_delay(rules, count=True)
        dropped = self.workbench.remove_urls(
            state,
            lambda item: (
                not isinstance(item, RobotsFetch)
                and not rules.allowed(item_url(item), self.user_agent)
            ),
        )
        for _, item in dropped:
            self.refuse(item, "robots.txt")
        if dropped:
            self.stats.inc_value("irl/robots/disallowed", len(dropped))
        return rules

    def waits(self, state: VisitState, now: float) -> bool:
        """Does ``state``'s host wait for its robots.txt (unknown, or due again)?"""
        if self.cache is None:
            return False
        rules, refetch_at = self.cache.lookup(state.host)
        return rules is None or refetch_at <= now

    def forget(self, host: str) -> None:
        """``host``'s robots.txt fetch was dropped, not answered (the crawl gave up on
        it, or the host went to another agent)."""
        self._out.discard(host)

    def _crawl_delay(self, rules: RobotsRules, *, count: bool) -> float:
        asked = rules.crawl_delay(self.user_agent)
        if asked > self.max_crawl_delay:
            if count:
                self.stats.inc_value("irl/robots/crawl_delay_capped")
            return self.max_crawl_delay
        return asked
