"""robots.txt rules of the hosts in the frontier (minimal: RFC 9309's outcome table).

The first fetch of a new host is its robots.txt (the workbench issues it under the IP
delay only); until it is answered the host's URLs wait, and once the rules are known
its URLs are checked against them, at admission and once for those already admitted.

What an outcome means (RFC 9309 section 2.3.1):

    2xx                 the rules of the first 500 KiB of the body (Protego)
    4xx                 allow all ("unavailable")
    5xx, no answer      disallow all ("unreachable"); the issue on robots adds retries
    3xx                 followed by Scrapy's RedirectMiddleware (up to REDIRECT_MAX_TIMES);
                        a redirect not followed counts as 4xx

Rules live in RAM for now, one entry per host; bounding them with a disk cache and
expiry is the robots issue's work. Hosts whose robots.txt bodies are the same share one
parsed :class:`RobotsRules` (:data:`SHARED_BODIES` distinct bodies are remembered; many
sites serve a stock robots.txt): a parsed robots.txt is dozens of objects, each of which
the cyclic GC's full collections visit.
"""

from __future__ import annotations

import hashlib

from protego import Protego

#: RFC 9309 section 2.5: crawlers must parse at least 500 KiB; we parse exactly that.
PARSE_LIMIT = 500 * 1024
#: Distinct robots.txt bodies whose parsed rules are shared (emptied when full).
SHARED_BODIES = 4096
_PARSED: dict[bytes, RobotsRules] = {}


class RobotsRules:
    """What one host's robots.txt allows."""

    __slots__ = ("_parser", "_verdict", "outcome")

    def __init__(self, outcome: str, parser: Protego | None = None, verdict: bool = True):
        self.outcome = outcome  # "parsed", "unavailable" or "unreachable" (for stats)
        self._parser = parser
        self._verdict = verdict  # the answer for every URL when there is no parser

    def allowed(self, url: str, user_agent: str) -> bool:
        if self._parser is None:
            return self._verdict
        return bool(self._parser.can_fetch(url, user_agent))

    def crawl_delay(self, user_agent: str) -> float:
        if self._parser is None:
            return 0.0
        delay = self._parser.crawl_delay(user_agent)
        return float(delay) if delay else 0.0


ALLOW_ALL = RobotsRules("unavailable")
DISALLOW_ALL = RobotsRules("unreachable", verdict=False)


def rules_for(status: int, body: bytes) -> RobotsRules:
    """The rules a robots.txt response with this status and body stands for."""
    if 200 <= status < 300:
        body = body[:PARSE_LIMIT]
        digest = hashlib.blake2b(body, digest_size=16).digest()
        rules = _PARSED.get(digest)
        if rules is None:
            if len(_PARSED) >= SHARED_BODIES:
                _PARSED.clear()
            text = body.decode("utf-8", errors="replace")
            rules = _PARSED[digest] = RobotsRules("parsed", Protego.parse(text))
        return rules
    if status >= 500:
        return DISALLOW_ALL
    return ALLOW_ALL
