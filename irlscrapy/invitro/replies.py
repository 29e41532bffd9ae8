"""What the in-vitro web answers: the reply each request gets from an origin server.

:func:`respond` (:meth:`irlscrapy.invitro.web.InVitroWeb.respond`) routes a path
(:mod:`irlscrapy.invitro.paths`) to its reply: a page whose links
:mod:`irlscrapy.invitro.linkplan` chooses and whose bytes :mod:`irlscrapy.invitro.content`
renders, a trap page, a special URL (redirect, file, error) or robots.txt in the host's
variant; then, robots.txt aside, the host's server misbehaves as its kind says (slow,
flaky, resetting, hanging), and the reply is gzipped or chunked where the host does so.
Like everything in the web, a reply is a pure function of ``(seed, host, path)`` and the
request's scheme and Accept-Encoding.

Schemes. Each host has a scheme kind (:data:`~irlscrapy.invitro.profiles.SCHEME_KINDS`)
and so one *canonical* scheme, the one that serves its pages: ``http`` for kinds
"http" and "downgrade", ``https`` for "upgrade". A request on the other scheme of an
"upgrade" or "downgrade" host gets a 301 to the same path on the canonical one (robots.txt
included: both origins of the host obey the same rules). An ``https`` request to a host
of kind "http" is refused: nothing listens on its port 443 (:data:`REFUSED`). Redirects a
host makes to itself (``/go/``, ``/loop/``, robots.txt) name its canonical scheme.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Sequence
from typing import Protocol

from irlscrapy.invitro.content import CORPUS, Reply, binary, html_page, huge_html, plain, redirect
from irlscrapy.invitro.host import Host
from irlscrapy.invitro.linkplan import (
    CALENDAR_EPOCH_YEAR,
    TRAP_PREFIXES,
    legit_links,
    page_base,
    spam_links,
)
from irlscrapy.invitro.linkplan import InVitroWeb as LinkedWeb
from irlscrapy.invitro.paths import page_number, page_path, special_of

#: The robots.txt parse limit of RFC 9309 section 2.5.
ROBOTS_PARSE_LIMIT = 500 * 1024

#: What an https request to a host that serves no https gets: no answer at all (the
#: proxy refuses the CONNECT tunnel with 502, as a proxy does when the origin refuses).
REFUSED = Reply(0, (), b"", "refused", action="refuse")


class InVitroWeb(LinkedWeb, Protocol):
    """What routing reads of the web (irlscrapy.invitro.web.InVitroWeb) beyond what the
    link plan reads, named here so that routing does not import the web that imports it."""

    def h64(self, *parts: object) -> int: ...
    def unit(self, *parts: object) -> float: ...
    def crawl_delay(self, host: Host) -> float | None: ...


def respond(
    web: InVitroWeb, host_name: str, path: str, accept_gzip: bool = False, scheme: str = "http"
) -> Reply:
    """The reply an origin server (reached through the proxy) gives to GET
    scheme://host+path; :data:`REFUSED` when nothing listens on that scheme's port."""
    host = web.host(host_name)
    if host is None or host.dns in ("nxdomain", "servfail", "timeout"):
        return plain(502, "dns-error", f"cannot resolve {host_name}\n")
    if scheme != "http" and not host.serves(scheme):
        return REFUSED
    if scheme != host.canonical_scheme:
        reply = redirect(301, f"{host.origin}{path}")
        if path not in ("/robots.txt", "/robots-real.txt"):
            reply = _misbehave(web, host, path, reply)
    elif path in ("/robots.txt", "/robots-real.txt"):
        reply = _robots(web, host, path)
    else:
        reply = _route(web, host, path)
        reply = _misbehave(web, host, path, reply)
    if accept_gzip and host.gzip and reply.status == 200 and reply.body:
        body = gzip.compress(reply.body, compresslevel=1, mtime=0)
        headers = (*reply.headers, ("Content-Encoding", "gzip"))
        reply = reply._replace(body=body, headers=headers)
    return reply._replace(chunked=host.chunked)


def _misbehave(web: InVitroWeb, host: Host, path: str, reply: Reply) -> Reply:
    p = web.profile
    if host.server == "slow":
        return reply._replace(delay=p.slow_delay)
    u = web.unit("misbehave", host.name, path)
    if host.server == "flaky" and u < 0.2:
        if u < 0.1:
            return plain(500, "error", "server error\n")
        busy = plain(503 if u < 0.15 else 429, "error", "busy, come back later\n")
        return busy._replace(headers=(*busy.headers, ("Retry-After", str(p.retry_after))))
    if host.server == "resetting" and u < 0.2:
        return Reply(0, (), b"", "reset", action="reset")
    if host.server == "hanging" and u < 0.1:
        return Reply(0, (), b"", "timeout", action="hang", delay=p.hang_seconds)
    return reply


def robots_txt(web: InVitroWeb, host: Host) -> str:
    """The robots.txt text of a host whose variant serves rules."""
    if host.robots == "allow":
        return "User-agent: *\nDisallow:\n"
    if host.robots == "crawl-delay":
        delay = int(web.crawl_delay(host) or 0)
        return f"User-agent: *\nCrawl-delay: {delay}\nDisallow: /private/\n"
    if host.robots == "oversized":
        pad = "# " + CORPUS[:1000] + "\n"
        body = "User-agent: *\nDisallow: /private/\n"
        body += pad * (ROBOTS_PARSE_LIMIT // len(pad) + 100)
        return body + "Disallow: /\n"
    if host.robots == "malformed":
        return (
            "<html><body>not robots</body></html>\nthis line is no rule\n"
            "User-agent: *\nDisallow: /private/\n:::\nCrawl-delay: soon\n\x00junk\n"
        )
    return "User-agent: BadBot\nDisallow: /\n\nUser-agent: *\nDisallow: /private/\n"


def _robots(web: InVitroWeb, host: Host, path: str) -> Reply:
    v = host.robots
    if path == "/robots-real.txt":
        if v != "redirect":
            return _misbehave(web, host, path, plain(404, "error", "not found\n"))
        return plain(200, "robots", robots_txt(web, host), "text/plain")
    if v == "missing":
        return plain(404, "robots", "not found\n")
    if v == "error":
        return plain(
            503 if web.h64("robots5xx", host.name) % 2 else 500, "robots", "server error\n"
        )
    if v == "unreachable":
        return Reply(0, (), b"", "reset", action="reset")
    if v == "redirect":
        return Reply(301, (("Location", f"{host.origin}/robots-real.txt"),), b"", "robots")
    reply = plain(200, "robots", robots_txt(web, host), "text/plain")
    if v == "slow":
        reply = reply._replace(delay=web.profile.robots_slow_delay)
    return reply


def _route(web: InVitroWeb, host: Host, path: str) -> Reply:
    n = page_number(host, path)
    if n is not None:
        return page_reply(web, host, n)
    if host.trap and path.startswith(TRAP_PREFIXES[host.trap]):
        trap = _trap_page(web, host, path)
        if trap is not None:
            return trap
    if host.spam:
        return plain(404, "error", "not found\n")
    special = special_of(path)
    if special is None:
        return plain(404, "error", "not found\n")
    what, num = special
    return _special_reply(web, host, what, num, path)


def _special_reply(web: InVitroWeb, host: Host, what: str, num: int, path: str) -> Reply:
    if what == "private":
        return _html_reply(web, host, path, f"private {num}", ("/",), 0.1)
    if what == "go":
        target = page_path(host, num % (host.pages or 1))
        return redirect(301, f"{host.origin}{target}")
    if what == "away":
        if num >= web.profile.legit_plds:
            return plain(404, "error", "not found\n")
        return redirect(302, f"http://{web.host_name(num, 0)}/")
    if what == "loop":
        other = "b" if path.endswith("/a") else "a"
        return redirect(302, f"{host.origin}/loop/{num}/{other}")
    if what in ("doc", "files"):
        return binary(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n", b"\n%%EOF\n", num, "application/pdf")
    if what == "img":
        return binary(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00", b"\xff\xd9", num, "image/jpeg")
    if what == "dl":
        return binary(b"PK\x03\x04", b"PK\x05\x06", num, "application/zip")
    if what == "big":
        body = huge_html(num, web.profile.huge_page_bytes)
        headers = (("Content-Type", "text/html; charset=utf-8"),)
        return Reply(200, headers, body, "page", ("/",))
    if what == "missing":
        return plain(404, "error", "not found\n")
    return plain(500, "error", "server error\n")


def page_reply(web: InVitroWeb, host: Host, n: int) -> Reply:
    """Page ``n`` of ``host`` as its server would send it, before any misbehaviour."""
    if host.spam:
        links, base = spam_links(web, host, n), ""
    else:
        links, base = legit_links(web, host, n), page_base(web, host, n)
    path = page_path(host, n)
    return _html_reply(web, host, path, f"{host.name} page {n}", links, 1.0, base)


def _html_reply(
    web: InVitroWeb,
    host: Host,
    path: str,
    title: str,
    links: Sequence[str],
    size_factor: float,
    base: str = "",
) -> Reply:
    p = web.profile
    u = web.unit("nofollow", host.name, path)
    meta_nofollow = u < p.nofollow_meta_share
    header_nofollow = p.nofollow_meta_share <= u < p.nofollow_meta_share + p.nofollow_header_share
    rng = web.rng("text", host.name, path)
    size = int(p.page_bytes * size_factor * (0.5 + rng.random()))
    body = html_page(title, links, size, rng, meta_nofollow, base)
    headers: tuple[tuple[str, str], ...] = (("Content-Type", "text/html; charset=utf-8"),)
    if header_nofollow:
        headers += (("X-Robots-Tag", "nofollow"),)
    return Reply(
        200,
        headers,
        body,
        "page",
        tuple(links),
        nofollow=meta_nofollow or header_nofollow,
        base=base,
    )


def _trap_page(web: InVitroWeb, host: Host, path: str) -> Reply | None:
    extent = web.profile.trap_extent
    links: list[str] = ["/"]
    if host.trap == "calendar":
        m = re.fullmatch(r"/calendar\?y=(\d{4,6})&m=([1-9]|1[0-2])", path)
        if not m:
            return None
        month = (int(m.group(1)) - CALENDAR_EPOCH_YEAR) * 12 + int(m.group(2)) - 1
        if month < 0 or (extent is not None and month >= extent):
            return None
        for nxt in (month - 1, month + 1):
            if nxt >= 0 and (extent is None or nxt < extent):
                y, mo = divmod(nxt, 12)
                links.append(f"/calendar?y={CALENDAR_EPOCH_YEAR + y}&m={mo + 1}")
    elif host.trap == "session":
        m = re.fullmatch(r"/cart/(\d+)\?sid=([0-9a-f]+)", path)
        if not m:
            return None
        item, sid = int(m.group(1)), m.group(2)
        if extent is not None and (item >= extent or int(sid, 16) >= extent):
            return None
        rng = web.rng("session", host.name, path)
        for _ in range(4):
            nxt_item = int(rng.random() * (extent or 1000))
            token = (
                f"{int(rng.random() * extent):x}"
                if extent is not None
                else f"{web.h64('sid', host.name, path, nxt_item):016x}"
            )
            links.append(f"/cart/{nxt_item}?sid={token}")
    else:
        m = re.fullmatch(r"/lib/((?:more/)*)", path)
        if not m:
            return None
        depth = len(m.group(1)) // 5
        if extent is not None and depth >= extent:
            return None
        if extent is None or depth + 1 < extent:
            links.append("more/")
    return _html_reply(web, host, path, f"{host.name} {host.trap}", links, 0.3)
