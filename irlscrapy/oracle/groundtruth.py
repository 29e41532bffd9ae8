"""Ground truth: what a crawler with a given policy would request from an in-vitro web.

:func:`crawl_order` walks the web breadth-first from its seeds without any network
(:func:`crawl_levels` with each URL's depth), applying a :class:`CrawlPolicy`:

- robots exclusion: ``"rfc9309"`` (RFC 9309: 4xx = allow all; 5xx or unreachable =
  disallow all; only the first 500 KiB are parsed) or ``"scrapy"`` (what Scrapy's
  RobotsTxtMiddleware with Protego does: the body of any status is parsed, so a 5xx
  error page allows all; a fetch error allows all; the whole file is parsed);
- hosts whose DNS fails are never reached;
- the broad spider's link filters (:mod:`irlscrapy.spiders.extract`), meta robots and
  X-Robots-Tag ``nofollow``, the content-type and size limits;
- redirects followed, across schemes too;
- relative links resolved against the page's URL or its ``<base href>``, as the spider
  resolves them (:func:`irlscrapy.spiders.extract.resolve_links`);
- crawler-trap limits (:class:`irlscrapy.scheduler.frontier.traps.TrapLimits`; none by default,
  as in stock Scrapy).

The result is the set of URLs requested (robots.txt fetches excluded). For a finite
profile :func:`reachable` enumerates it completely.

Schemes. A URL is requested on its own scheme; the web answers a host's other scheme
with a 301 to its canonical one (:mod:`irlscrapy.invitro.replies`), and the target is
followed like any redirect's. Both origins of a host that serves https obey one
robots.txt (the one on the other origin redirects to it), so robots rules stay per
host. An ``https`` URL of a host that serves no https, and that the host's robots.txt
allows, is *refused*: yielded with the :data:`~irlscrapy.invitro.replies.REFUSED` reply,
never a page, with no links. Whether a
crawler tries it (robots.txt keyed by host name, as Scrapy's middleware does) or gives
up at the origin's unreachable robots.txt (RFC 9309 keys robots.txt by origin), the
server never learns its path: the CONNECT tunnel is refused before a request is sent.
So :func:`reachable` leaves refused URLs out and :func:`refused` lists them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from irlscrapy.exceptions import ConfigurationError
from irlscrapy.invitro.content import Reply
from irlscrapy.invitro.host import Host
from irlscrapy.invitro.replies import REFUSED
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.scheduler.frontier.traps import NO_LIMITS, TrapLimits
from irlscrapy.spiders.extract import absolute_url, crawlable, resolve_base, resolve_links

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
    for _, url, reply in crawl_levels(web, policy, seeds):
        yield url, reply


def crawl_levels(
    web: InVitroWeb, policy: CrawlPolicy = CrawlPolicy(), seeds: list[str] | None = None
) -> Iterator[tuple[int, str, Reply]]:
    """Yield ``(depth, url, reply)`` for every URL the policy requests, breadth-first:
    depth 0 for the seeds, and one more than the page it was first found on."""
    queue = deque((0, url) for url in (seeds if seeds is not None else web.seeds()))
    seen = {url for _, url in queue}
    while queue:
        depth, url = queue.popleft()
        host_name, path = split_url(url)
        host = web.host(host_name)
        if host is None or host.dns in ("nxdomain", "servfail", "timeout"):
            continue
        if policy.traps.trap(url) is not None:
            continue
        if any(path.startswith(prefix) for prefix in disallowed_prefixes(host, policy)):
            continue
        scheme = url_scheme(url)
        if not host.serves(scheme):
            yield depth, url, REFUSED
            continue
        reply = web.respond(host_name, path, scheme=scheme)
        yield depth, url, reply
        for nxt in followed_links(url, reply, policy):
            if nxt not in seen:
                seen.add(nxt)
                queue.append((depth + 1, nxt))


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
    return resolve_links(url, resolve_base(url, reply.base), reply.links)


def reachable(
    web: InVitroWeb, policy: CrawlPolicy = CrawlPolicy(), seeds: list[str] | None = None
) -> set[str]:
    """Every URL the policy requests from a server that answers: refused ones are left
    out (see the module docstring). Only for finite profiles."""
    return {url for url, reply in _all(web, policy, seeds) if reply is not REFUSED}


def refused(
    web: InVitroWeb, policy: CrawlPolicy = CrawlPolicy(), seeds: list[str] | None = None
) -> set[str]:
    """The ``https`` URLs the policy meets on hosts that serve no https: links a crawler
    cannot follow, whose attempts the server logs as refused CONNECTs (no path). Only
    for finite profiles."""
    return {url for url, reply in _all(web, policy, seeds) if reply is REFUSED}


def _all(
    web: InVitroWeb, policy: CrawlPolicy, seeds: list[str] | None
) -> Iterator[tuple[str, Reply]]:
    if not web.profile.finite:
        raise ConfigurationError(
            f"profile {web.profile.name!r} is unbounded; use crawl_order() with a limit"
        )
    return crawl_order(web, policy, seeds)


def url_scheme(url: str) -> str:
    """The scheme of an absolute URL, lower-cased."""
    return url[: url.index(":")].lower()


def split_url(url: str) -> tuple[str, str]:
    """(host, path-with-query) of an http(s) URL, host lower-cased, port and scheme
    dropped (:func:`url_scheme` has the scheme)."""
    rest = url.split("://", 1)[1]
    slash = rest.find("/")
    query = rest.find("?")
    cut = min(x for x in (slash, query, len(rest)) if x >= 0)
    path = rest[cut:] or "/"
    if path.startswith("?"):
        path = "/" + path
    return rest[:cut].split(":", 1)[0].lower(), path
