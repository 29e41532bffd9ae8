"""What Scrapy's spider middlewares do to Requests, done to a page's ``Links`` in bulk.

On the Request path, Scrapy's DepthMiddleware, UrlLengthMiddleware, the offsite check
(``allowed_domains``) and RefererMiddleware act on each Request. On the Links path there
are no Requests until a URL leaves the frontier, so :class:`LinkRules` applies the same
rules to the URL strings of one page, with the same settings and the same stats:

- ``DEPTH_LIMIT``: links of a page at depth d have depth d + 1 and are all dropped past
  the limit; ``DEPTH_PRIORITY`` lowers their priority by ``depth * DEPTH_PRIORITY``;
  stat ``request_depth_max``;
- ``URLLENGTH_LIMIT``: measured on the URL as Scrapy's Request stores it (escaped by
  ``safe_url_string``); stat ``urllength/request_ignored_count``;
- ``allowed_domains`` of the spider: a host must be one of them or a subdomain; stat
  ``offsite/filtered``;
- crawler traps (irlscrapy's own, :mod:`irlscrapy.scheduler.frontier.traps`): path depth and
  repeated segments (``IRL_TRAPS_MAX_PATH_DEPTH``, ``IRL_TRAPS_MAX_REPEATED_SEGMENTS``); stats
  ``irl/traps/path_depth``, ``irl/traps/repeated_segments``. The scheduler applies
  them to Requests too (:meth:`LinkRules.trapped`);
- Referer: the policy of ``REFERRER_POLICY``, or the one the page's own
  ``Referrer-Policy`` header names, applied per target origin (a referrer policy looks
  at origins only); nothing when ``REFERER_ENABLED`` is off. Scrapy's own policies
  look at less: whether the target's origin is the page's, and the target's scheme. So
  with one of them the policy is asked once per *class* of target (the page's origin;
  another host, by scheme), where a page's links reach some twenty origins; a target on
  the page's host but spelled otherwise (another port, upper case) is asked on its own.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.settings import Settings
from scrapy.spidermiddlewares.referer import DefaultReferrerPolicy, RefererMiddleware
from w3lib.url import safe_url_string

from irlscrapy import defaults
from irlscrapy.domains import host_name, url_host
from irlscrapy.scheduler.frontier.traps import NO_LIMITS, TrapLimits

logger = logging.getLogger(__name__)

#: safe_url_string turns one character into at most 12 (4 UTF-8 bytes, "%XX" each):
#: a URL this many times shorter than the limit cannot exceed it once escaped.
MAX_ESCAPE_GROWTH = 12
_DROPPABLE = re.compile(r"[\x00-\x20\x7f]+")
_NO_META = Request("http://example.invalid/")  # policy() reads a request's meta only
#: Scrapy's referrer policies: what they give depends on the target only through
#: whether its origin is the page's and its scheme (see the module docstring)
SCRAPY_POLICIES = frozenset(
    {*RefererMiddleware(Settings()).policies.values(), DefaultReferrerPolicy}
)


class LinkRules:
    def __init__(
        self,
        *,
        depth_limit: int,
        depth_priority: int,
        url_length_limit: int,
        referer: RefererMiddleware | None,
        stats: Any,
        traps: TrapLimits = NO_LIMITS,
    ) -> None:
        self.depth_limit = depth_limit
        self.depth_priority = depth_priority
        self.url_length_limit = url_length_limit
        self.referer = referer
        self.default_policy = referer.default_policy() if referer is not None else None
        self.stats = stats
        self.traps = traps
        self.allowed: re.Pattern[str] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LinkRules:
        settings = crawler.settings
        referer = RefererMiddleware(settings) if settings.getbool("REFERER_ENABLED") else None
        return cls(
            depth_limit=settings.getint("DEPTH_LIMIT"),
            depth_priority=settings.getint("DEPTH_PRIORITY"),
            url_length_limit=settings.getint("URLLENGTH_LIMIT"),
            referer=referer,
            stats=crawler.stats,
            traps=TrapLimits(
                max_depth=defaults.get(settings, "IRL_TRAPS_MAX_PATH_DEPTH"),
                max_repeats=defaults.get(settings, "IRL_TRAPS_MAX_REPEATED_SEGMENTS"),
            ),
        )

    def set_allowed_domains(self, domains: Sequence[str] | None) -> None:
        names = [d.lower() for d in domains or () if d]
        if names:
            alternatives = "|".join(re.escape(d) for d in names)
            self.allowed = re.compile(rf"^(.*\.)?({alternatives})$")

    def depth(self, source_depth: int) -> int | None:
        """The depth of a page's links, or None when DEPTH_LIMIT drops them all."""
        depth = source_depth + 1
        if self.depth_limit and depth > self.depth_limit:
            return None
        self.stats.max_value("request_depth_max", depth)
        return depth

    def priority(self, depth: int) -> int:
        return -depth * self.depth_priority

    def trapped(self, url: str) -> bool:
        """Does ``url`` break a trap limit? (Counted in the stats when it does.)"""
        kind = self.traps.trap(url)
        if kind is not None:
            self.stats.inc_value(f"irl/traps/{kind}")
        return kind is not None

    def keep(self, urls: Sequence[str]) -> list[str]:
        """The URLs that pass the length limit, allowed_domains and the trap limits."""
        kept = list(urls)
        limit = self.url_length_limit
        if limit:
            short = limit // MAX_ESCAPE_GROWTH
            fits = [
                u
                for u in kept
                if len(u) <= short or (not _over(u, limit) and len(safe_url_string(u)) <= limit)
            ]
            if len(fits) != len(kept):
                self.stats.inc_value("urllength/request_ignored_count", len(kept) - len(fits))
            kept = fits
        if self.allowed is not None:
            allowed = self.allowed
            onsite = [u for u in kept if allowed.match(host_name(url_host(u)))]
            if len(onsite) != len(kept):
                self.stats.inc_value("offsite/filtered", len(kept) - len(onsite))
            kept = onsite
        if self.traps.max_depth or self.traps.max_repeats:
            kept = [u for u in kept if not self.trapped(u)]
        return kept

    def referers(
        self, source: str, urls: Sequence[str], response: Response | None
    ) -> list[str | None]:
        """The Referer of each URL, in order: the policy asked once per target origin
        (see :func:`origin`), and under Scrapy's own policies once per class of target."""
        if self.referer is None:
            return [None] * len(urls)
        policy = self.default_policy
        if response is not None and b"Referrer-Policy" in response.headers:
            policy = self.referer.policy(response, _NO_META)
        assert policy is not None
        by_origin: dict[str, str | None] = {}
        out: list[str | None] = []
        if type(policy) not in SCRAPY_POLICIES:  # a project's own: asked per origin
            for url in urls:
                target = origin(url)
                if target not in by_origin:
                    by_origin[target] = policy.referrer(source, target + "/")
                out.append(by_origin[target])
            return out
        page, page_host = origin(source), _host(origin(source))
        by_class: dict[str, str | None] = {}
        for url in urls:
            target = origin(url)
            if target not in by_origin:
                if target == page:
                    kind = ""  # the page's origin
                elif _host(target) != page_host:
                    kind = target[: target.find(":")]  # another origin, for sure: its scheme
                else:
                    kind = target  # the page's host, spelled otherwise: asked on its own
                if kind not in by_class:
                    by_class[kind] = policy.referrer(source, target + "/")
                by_origin[target] = by_class[kind]
            out.append(by_origin[target])
        return out


def _over(url: str, limit: int) -> bool:
    """Is ``url`` over ``limit`` characters whatever escaping does? Escaping lengthens a
    URL, save for the spaces and control characters it may drop (and the characters
    IDNA maps to nothing, which only a URL already over the limit can be short of: such
    a URL is dropped here, where Scrapy would keep it). Escaping a 1 MB URL to learn it
    is long took 60 ms of the reactor."""
    return len(url) > limit and len(_DROPPABLE.sub("", url)) > limit


def _host(origin: str) -> str:
    """The host of ``scheme://authority``, lower case, as ``urlparse().hostname`` reads it
    (no userinfo, no port; an IPv6 literal in its brackets)."""
    authority = origin[origin.find("://") + 3 :].rpartition("@")[2]
    if authority.startswith("["):
        return authority[: authority.find("]") + 1].lower()
    return authority.partition(":")[0].lower()


def origin(url: str) -> str:
    """``scheme://authority`` of an absolute URL."""
    cut = url.find("/", url.find("://") + 3)
    return url if cut < 0 else url[:cut]
