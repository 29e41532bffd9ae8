"""Ground truth: what a crawler with a given policy would request from an in-vitro web.

:func:`crawl_order` walks the web breadth-first from its seeds without any network,
applying a :class:`CrawlPolicy`:

- robots exclusion: ``"rfc9309"`` (RFC 9309: 4xx = allow all; 5xx or unreachable =
  disallow all; only the first 500 KiB are parsed) or ``"scrapy"`` (what Scrapy's
  RobotsTxtMiddleware with Protego does: the body of any status is parsed, so a 5xx
  error page allows all; a fetch error allows all; the whole file is parsed);
- hosts whose DNS fails are never reached;
- the broad spider's link filters (:mod:`irlscrapy.spiders.extract`), meta robots and
  X-Robots-Tag ``nofollow``, the content-type and size limits;
- redirects followed;
- crawler-trap limits (:class:`irlscrapy.scheduler.traps.TrapLimits`; none by default,
  as in stock Scrapy).

The result is the set of URLs requested (robots.txt fetches excluded). For a finite
profile :func:`reachable` enumerates it completely.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from irlscrapy.exceptions import ConfigurationError
from irlscrapy.invitro.content import Reply
from irlscrapy.invitro.web import Host, InVitroWeb
from irlscrapy.scheduler.traps import NO_LIMITS, TrapLimits
from irlscrapy.spiders.extract import absolute_url, crawlable

ROBOTS_POLICIES = ("rfc9309", "scrapy")
#: The broad spider's default DOWNLOAD_MAXSIZE.
DEFAULT_MAX_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True)
class CrawlPolicy:
    robots: str = "rfc9309"
    max_bytes: int = DEFAULT_MAX_BYTES
    traps: TrapLimits = NO_LIMITS

    def __post_init__(self) -> None:
        if self.robots not in ROBOTS_POLICIES:
            raise ConfigurationError(
                f"unknown robots policy {self.robots!r}; choose one of {ROBOTS_POLICIES}"
            )


def disallowed_prefixes(host: Host, policy: CrawlPolicy) -> tuple[str, ...]:
    """The path prefixes a crawler with this policy must not fetch on a host."""
    variant = host.robots
    if variant in ("allow", "missing"):
        return ()
    if variant in ("error", "unreachable"):
        return ("/",) if policy.robots == "rfc9309" else ()
    if variant == "oversized":  # "Disallow: /" stands after the 500 KiB parse limit
        return ("/private/",) if policy.robots == "rfc9309" else ("/",)
    return ("/private/",)  # disallow, crawl-delay, slow, malformed, redirect


def crawl_order(
    web: InVitroWeb, policy: CrawlPolicy = CrawlPolicy(), seeds: list[str] | None = None
) -> Iterator[tuple[str, Reply]]:
    """Yield ``(url, reply)`` for every URL the policy requests, breadth-first."""
    queue = deque(seeds if seeds is not None else web.seeds())
    seen = set(queue)
    while queue:
        url = queue.popleft()
        host_name, path = split_url(url)
        host = web.host(host_name)
        if host is None or host.dns in ("nxdomain", "servfail", "timeout"):
            continue
        if policy.traps.trap(url) is not None:
            continue
        if any(path.startswith(prefix) for prefix in disallowed_prefixes(host, policy)):
            continue
        reply = web.respond(host_name, path)
        yield url, reply
        for nxt in followed_links(url, reply, policy):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)


def followed_links(url: str, reply: Reply, policy: CrawlPolicy) -> list[str]:
    """The URLs a crawler with ``policy`` follows from the reply to ``url``: a
    redirect's target, or an HTML page's crawlable links."""
    if reply.status in (301, 302) and reply.location:
        target = absolute_url(url, reply.location)
        return [target] if target and crawlable(target) else []
    content_type = dict(reply.headers).get("Content-Type", "")
    if (
        reply.status != 200
        or "html" not in content_type
        or reply.nofollow
        or len(reply.body) > policy.max_bytes
    ):
        return []
    out = []
    for href in reply.links:
        target = absolute_url(url, href)
        if target is not None and crawlable(target):
            out.append(target)
    return out


def reachable(
    web: InVitroWeb, policy: CrawlPolicy = CrawlPolicy(), seeds: list[str] | None = None
) -> set[str]:
    """Every URL the policy requests. Only for finite profiles."""
    if not web.profile.finite:
        raise ConfigurationError(
            f"profile {web.profile.name!r} is unbounded; use crawl_order() with a limit"
        )
    return {url for url, _ in crawl_order(web, policy, seeds)}


def split_url(url: str) -> tuple[str, str]:
    """(host, path-with-query) of an http URL, host lower-cased, port dropped."""
    rest = url.split("://", 1)[1]
    slash = rest.find("/")
    query = rest.find("?")
    cut = min(x for x in (slash, query, len(rest)) if x >= 0)
    path = rest[cut:] or "/"
    if path.startswith("?"):
        path = "/" + path
    return rest[:cut].split(":", 1)[0].lower(), path
