"""What a robots.txt answer means (RFC 9309 section 2.3.1), as rules a URL is checked by.

    2xx                 the rules of the first 500 KiB of the body (Protego)
    4xx                 allow all ("unavailable")
    5xx, no answer      disallow all ("unreachable"); the robots cache retries later
    3xx                 followed by Scrapy's RedirectMiddleware, at most REDIRECT_HOPS
                        times (RFC 9309 2.3.1.2: at least five); a redirect not followed
                        counts as 4xx

A robots.txt of more than :data:`MAX_WILDCARD_RULES` rules with a wildcard (``*`` or
``$``) is read as "disallow all" (:attr:`RobotsRules.costly`): Protego matches a URL
against its rules one by one, and a wildcard rule is a regular expression, so 30,000 of
them (a hostile robots.txt that bench/fuzz.py makes) cost 10 ms per URL checked, on the
reactor's thread, for each URL of the host. Disallowing all is the polite side of not
reading them; plain prefix rules are cheap (30,000 cost 0.25 ms) and not capped.

:class:`RobotsRules` is a ``scrapy.robotstxt.RobotParser``, so it can be sent with
Scrapy's ``robots_parsed`` signal to extensions written for RobotsTxtMiddleware.
Storing, sharing and expiring rules is :mod:`irlscrapy.scheduler.hosts.robotscache`'s work.
"""

from __future__ import annotations

import math
import re
from typing import Any

from protego import Protego
from scrapy.robotstxt import RobotParser

#: RFC 9309 section 2.5: crawlers must parse at least 500 KiB; we parse exactly that.
PARSE_LIMIT = 500 * 1024
#: Redirect hops followed for a robots.txt (RFC 9309 section 2.3.1.2 asks for 5).
REDIRECT_HOPS = 5
#: Wildcard rules past which a robots.txt is read as "disallow all" (module docstring):
#: 2,048 of them cost about 1 ms per URL checked.
MAX_WILDCARD_RULES = 2048
_WILDCARD_RULE = re.compile(r"^[ \t]*(?:dis)?allow[ \t]*:[^\n]*[*$]", re.IGNORECASE | re.MULTILINE)

PARSED, UNAVAILABLE, UNREACHABLE = "parsed", "unavailable", "unreachable"


class RobotsRules(RobotParser):
    """What one robots.txt allows."""

    def __init__(
        self,
        outcome: str,
        parser: Protego | None = None,
        verdict: bool = True,
        costly: bool = False,
    ):
        self.outcome = outcome  # PARSED, UNAVAILABLE or UNREACHABLE (for stats)
        self._parser = parser
        self._verdict = verdict  # the answer for every URL when there is no parser
        #: a parsed robots.txt of too many wildcard rules, read as "disallow all"
        self.costly = costly

    @classmethod
    def from_crawler(cls, crawler: Any, robotstxt_body: bytes) -> RobotsRules:
        """RobotParser's constructor: the rules of a 200 response with this body."""
        return parse(robotstxt_body)

    def allowed(self, url: str | bytes, user_agent: str | bytes) -> bool:
        if self._parser is None:
            return self._verdict
        return bool(self._parser.can_fetch(_text(url), _text(user_agent)))

    def crawl_delay(self, user_agent: str | bytes) -> float:
        """Seconds the rules ask between requests (``Crawl-delay``): finite and >= 0.

        0 when there is none or it is no number of seconds (``nan``, ``inf``, negative:
        Protego before 0.7 passes them through).
        """
        if self._parser is None:
            return 0.0
        delay = self._parser.crawl_delay(_text(user_agent))
        if delay is None or not math.isfinite(delay) or delay < 0:
            return 0.0
        return float(delay)


def _text(value: str | bytes) -> str:
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value


ALLOW_ALL = RobotsRules(UNAVAILABLE)
DISALLOW_ALL = RobotsRules(UNREACHABLE, verdict=False)


def outcome_of(status: int | None) -> str:
    """The outcome of a robots.txt answer with HTTP ``status`` (None: no answer)."""
    if status is None or status >= 500:
        return UNREACHABLE
    if 200 <= status < 300:
        return PARSED
    return UNAVAILABLE


def parse(body: bytes) -> RobotsRules:
    """The rules of a robots.txt body, of which the first PARSE_LIMIT bytes count."""
    text = body[:PARSE_LIMIT].decode("utf-8", errors="replace")
    for wildcards, _ in enumerate(_WILDCARD_RULE.finditer(text), start=1):
        if wildcards > MAX_WILDCARD_RULES:
            return RobotsRules(PARSED, verdict=False, costly=True)
    return RobotsRules(PARSED, Protego.parse(text))
