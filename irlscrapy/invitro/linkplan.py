"""Which links an in-vitro page carries: the link structure of the simulated web.

Every choice is drawn from the page's own generator (``web.rng("links", host, n)``), so a
page's links are a function of (seed, host, page number). Legitimate pages link mostly
inside their host (forward, so every page is reachable), to other hosts of their PLD,
and to their PLD's out-set (:meth:`InVitroWeb.out_plds`); home pages link to all of the
out-set and to the next ten hosts of the PLD. Spam pages branch without end across
their farm and link to the farm's target. Special links (redirects, files, mailto and
the like) and trap entries are sprinkled with the profile's probabilities.

How a link is written is part of the web (issue 16): same-host links are root-relative
(``/blog/9.html``), absolute on the host's canonical scheme, or, with
``relative_link_share``, relative to the page's directory or ``<base href>``
(:func:`relative_ref`: ``../blog/9.html``, ``?id=9``); a page may carry one absolute
``https://`` link to its own host (``https_link_prob``); an index host's home page links
thousands of times to the host's pages. A link to another host is protocol-relative
(``//h2.w7.com/``) only where it resolves to a scheme the target serves, so no host is
first met on a scheme it refuses (which would make a crawler's robots.txt depend on the
order it met the host's URLs). Every new draw is made only when its parameter is not 0,
so a profile that leaves them at 0 keeps its pages byte for byte.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Protocol

from irlscrapy.invitro.host import Host
from irlscrapy.invitro.paths import page_path, special_path
from irlscrapy.invitro.profiles import Profile


class InVitroWeb(Protocol):
    """What the link plan reads of the web (irlscrapy.invitro.web.InVitroWeb), named
    here so that the plan does not import the web that imports it."""

    profile: Profile

    def rng(self, *parts: object) -> random.Random: ...
    def host(self, name: str) -> Host | None: ...
    def host_name(self, pld_id: int, index: int) -> str: ...
    def hosts_in_pld(self, pld_id: int) -> int | None: ...
    def out_plds(self, pld_id: int) -> tuple[int, ...]: ...


TRAP_KINDS = ("calendar", "session", "repeat")
TRAP_PREFIXES = {"calendar": "/calendar", "session": "/cart/", "repeat": "/lib/"}
CALENDAR_EPOCH_YEAR = 2020
#: special links written as they are (the rest are paths the server routes)
_LINK_TEMPLATES = {
    "loop": "/loop/{num}/a",
    "mailto": "mailto:info@{pld}",
    "javascript": "javascript:void(0)",
    "tel": "tel:+1555{num:04d}",
    "ftp": "ftp://ftp.{pld}/pub/{num}.tar.gz",
    "fragment": "#top",
}


def legit_links(web: InVitroWeb, host: Host, n: int) -> list[str]:
    p = web.profile
    rng = web.rng("links", host.name, n)
    pages = host.pages or 1
    hosts = web.hosts_in_pld(host.pld_id) or 1
    outs = web.out_plds(host.pld_id)
    # the path relative links are written against: the <base href>'s, else the page's own
    base = page_base(web, host, n)
    base_path = base.removeprefix(host.origin) if base else page_path(host, n)
    links: list[str] = []
    if n == 0:
        for step in range(1, min(hosts, 11)):  # host k links home to k+1..k+10
            links.append(f"http://{web.host_name(host.pld_id, (host.number + step) % hosts)}/")
        if host.number == 0:
            links.extend(f"http://{web.host_name(t, 0)}/" for t in outs)
    if n + 1 < pages:
        links.append(_local(web, base_path, page_path(host, n + 1), rng))
    for _ in range(int(p.links_per_page * (0.5 + rng.random()))):
        r = rng.random()
        if r < p.external_link_share and outs:
            links.append(_url_into(web, outs[int(rng.random() * len(outs))], rng))
        elif r < p.external_link_share + p.same_pld_link_share:
            other = web.host(web.host_name(host.pld_id, int(rng.random() * hosts)))
            assert other is not None
            m = 0 if rng.random() < 0.5 else int(rng.random() * (other.pages or 1))
            url = f"//{other.name}{page_path(other, m)}"
            # protocol-relative only where the page's scheme is one the target serves
            relative = rng.random() < 0.2 and other.serves(host.canonical_scheme)
            links.append(url if relative else "http:" + url)
        else:
            m = n + 1 + int(rng.random() * 5) if rng.random() < 0.5 else int(rng.random() * pages)
            path = page_path(host, m % pages)
            if rng.random() < 0.7:
                links.append(_local(web, base_path, path, rng))
            else:
                links.append(f"{host.origin}{path}")
    for what, prob in p.special_links:
        if rng.random() < prob:
            links.append(_special_link(web, host, what, rng, outs))
    if host.trap and (n == 0 or rng.random() < 0.1):
        links.append(
            {
                "calendar": f"/calendar?y={CALENDAR_EPOCH_YEAR}&m=1",
                "session": "/cart/0?sid=0",
                "repeat": "/lib/",
            }[host.trap]
        )
    if p.https_link_prob and rng.random() < p.https_link_prob:
        links.append(f"https://{host.name}{page_path(host, int(rng.random() * pages))}")
    if n == 0 and host.has_index:
        links.extend(_index_links(web, host, base_path, rng))
    return links


def page_base(web: InVitroWeb, host: Host, n: int) -> str:
    """The ``<base href>`` of page n of a legitimate host, as written; "" for none.

    A page of the host (its relative links then resolve against that page's directory)
    or, now and then, that page's directory; path-absolute or on the host's canonical
    origin. Drawn from a generator of its own, so the page's links stay as they were."""
    p = web.profile
    if not p.base_href_prob:
        return ""
    rng = web.rng("base", host.name, n)
    if rng.random() >= p.base_href_prob:
        return ""
    path = page_path(host, int(rng.random() * (host.pages or 1)))
    if rng.random() < 0.3:
        path = path[: path.rfind("/", 0, len(path.split("?", 1)[0])) + 1]
    return f"{host.origin}{path}" if rng.random() < 0.5 else path


def relative_ref(base: str, target: str, extra_ups: int = 0) -> str:
    """A relative reference that resolves against path ``base`` to path ``target``.

    Both are path-absolute, with an optional query, and free of dot segments. The
    reference climbs with ``../`` to the directory the two share and is ``?query`` alone
    where only the query differs. With ``extra_ups`` it climbs to the root and that
    many ``../`` beyond, which resolution drops (RFC 3986 section 5.2.4), as browsers
    do."""
    base_path = base.split("?", 1)[0]
    path, sep, query = target.partition("?")
    if sep and path == base_path and not extra_ups:
        return f"?{query}"
    base_dirs = base_path.split("/")[1:-1]
    segments = path.split("/")[1:]
    common = 0
    while (
        not extra_ups
        and common < len(base_dirs)
        and common < len(segments) - 1
        and base_dirs[common] == segments[common]
    ):
        common += 1
    rest = "/".join(segments[common:])
    ref = "../" * (len(base_dirs) - common + extra_ups) + rest
    if not ref or ":" in ref.split("/", 1)[0]:
        ref = "./" + ref  # "" is the page itself; "a:b" would read as a scheme
    return ref + sep + query


def _local(web: InVitroWeb, base_path: str, path: str, rng: random.Random) -> str:
    """A link to ``path`` on the page's own host: root-relative, or relative to
    ``base_path`` with the profile's ``relative_link_share``."""
    share = web.profile.relative_link_share
    if share and rng.random() < share:
        return relative_ref(base_path, path, 1 if rng.random() < 0.1 else 0)
    return path


def _index_links(web: InVitroWeb, host: Host, base_path: str, rng: random.Random) -> list[str]:
    """The anchors of an index host's home page: thousands of links to the host's pages,
    most with a fragment, written root-relative, relative (with one ``../`` too many at
    times) or absolute."""
    p = web.profile
    pages = host.pages or 1
    links = []
    for i in range(int(p.index_links * (0.6 + 0.8 * rng.random()))):
        path = page_path(host, int(rng.random() * pages))
        fragment = f"#i{i}" if rng.random() < 0.9 else ""
        r = rng.random()
        if r < 0.5:
            href = path
        elif r < 0.9:
            href = relative_ref(base_path, path, 1 if r >= 0.8 else 0)
        else:
            href = f"{host.origin}{path}"
        links.append(href + fragment)
    return links


def _special_link(
    web: InVitroWeb, host: Host, what: str, rng: random.Random, outs: Sequence[int]
) -> str:
    num = int(rng.random() * 1000)
    if what == "away":
        legit = [t for t in outs if t < web.profile.legit_plds] or [0]
        return f"/away/{legit[int(rng.random() * len(legit))]}"
    if what in _LINK_TEMPLATES:
        return _LINK_TEMPLATES[what].format(num=num, pld=host.pld)
    if what == "go":
        num %= host.pages or 1
    elif what == "file":
        what = ("files", "img", "dl")[num % 3]
    path = special_path(what, num, "")
    assert path is not None
    return path


def _url_into(web: InVitroWeb, pld_id: int, rng: random.Random) -> str:
    """An absolute link to a page of another PLD."""
    hosts = web.hosts_in_pld(pld_id)
    index = 0 if rng.random() < 0.7 else int(rng.random() * (hosts or 8))
    target = web.host(web.host_name(pld_id, index))
    assert target is not None
    m = 0 if rng.random() < 0.5 else int(rng.random() * (target.pages or 8))
    return f"http://{target.name}{page_path(target, m)}"


def spam_links(web: InVitroWeb, host: Host, n: int) -> list[str]:
    p = web.profile
    rng = web.rng("links", host.name, n)
    first = p.legit_plds + host.farm * p.spam_plds_per_farm
    outs = web.out_plds(host.pld_id)
    links: list[str] = []
    if n == 0 and host.number == 0:
        links.extend(f"http://{web.host_name(t, 0)}/" for t in outs)
    host_limit, page_limit = p.spam_hosts_per_pld, p.spam_pages_per_host
    per_page = p.links_per_page if p.spam_links_per_page is None else p.spam_links_per_page
    spread = p.spam_link_range or 0
    for _ in range(int(per_page * (0.5 + rng.random()))):
        r = rng.random()
        if r < 0.6:  # branch without end across the farm's hosts and PLDs
            member = first + int(rng.random() * p.spam_plds_per_farm)
            k = int(rng.random() * (spread or 2 * host.number + 5))
            m = int(rng.random() * (spread or 2 * n + 5))
            if host_limit is not None:
                k %= host_limit
            if page_limit is not None:
                m %= page_limit
            links.append(f"http://{web.host_name(member, k)}/{'p' + str(m) if m else ''}")
        elif r < 0.85:
            m = int(rng.random() * (spread or 2 * n + 5))
            if page_limit is not None:
                m %= page_limit
            links.append(f"/p{m}" if m else "/")
        elif r < 0.95:
            links.append(f"http://{web.host_name(first, 0)}/")  # the farm's target
        else:
            legit = [t for t in outs if t < p.legit_plds]
            if legit:
                links.append(_url_into(web, legit[int(rng.random() * len(legit))], rng))
    return links
