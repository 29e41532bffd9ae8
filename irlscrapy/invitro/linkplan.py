"""Which links an in-vitro page carries: the link structure of the simulated web.

Every choice is drawn from the page's own generator (``web.rng("links", host, n)``), so a
page's links are a function of (seed, host, page number). Legitimate pages link mostly
inside their host (forward, so every page is reachable), to other hosts of their PLD,
and to their PLD's out-set (:meth:`InVitroWeb.out_plds`); home pages link to all of the
out-set and to the next ten hosts of the PLD. Spam pages branch without end across
their farm and link to the farm's target. Special links (redirects, files, mailto and
the like) and trap entries are sprinkled with the profile's probabilities.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from irlscrapy.invitro.web import Host, InVitroWeb

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
    links: list[str] = []
    if n == 0:
        for step in range(1, min(hosts, 11)):  # host k links home to k+1..k+10
            links.append(f"http://{web.host_name(host.pld_id, (host.number + step) % hosts)}/")
        if host.number == 0:
            links.extend(f"http://{web.host_name(t, 0)}/" for t in outs)
    if n + 1 < pages:
        links.append(web.page_path(host, n + 1))
    for _ in range(int(p.links_per_page * (0.5 + rng.random()))):
        r = rng.random()
        if r < p.external_link_share and outs:
            links.append(_url_into(web, outs[int(rng.random() * len(outs))], rng))
        elif r < p.external_link_share + p.same_pld_link_share:
            other = web.host(web.host_name(host.pld_id, int(rng.random() * hosts)))
            assert other is not None
            m = 0 if rng.random() < 0.5 else int(rng.random() * (other.pages or 1))
            url = f"//{other.name}{web.page_path(other, m)}"
            links.append(url if rng.random() < 0.2 else "http:" + url)
        else:
            m = n + 1 + int(rng.random() * 5) if rng.random() < 0.5 else int(rng.random() * pages)
            path = web.page_path(host, m % pages)
            links.append(path if rng.random() < 0.7 else f"http://{host.name}{path}")
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
    path = web.special_path(what, num, "")
    assert path is not None
    return path


def _url_into(web: InVitroWeb, pld_id: int, rng: random.Random) -> str:
    """An absolute link to a page of another PLD."""
    hosts = web.hosts_in_pld(pld_id)
    index = 0 if rng.random() < 0.7 else int(rng.random() * (hosts or 8))
    target = web.host(web.host_name(pld_id, index))
    assert target is not None
    m = 0 if rng.random() < 0.5 else int(rng.random() * (target.pages or 8))
    return f"http://{target.name}{web.page_path(target, m)}"


def spam_links(web: InVitroWeb, host: Host, n: int) -> list[str]:
    p = web.profile
    rng = web.rng("links", host.name, n)
    first = p.legit_plds + host.farm * p.spam_plds_per_farm
    outs = web.out_plds(host.pld_id)
    links: list[str] = []
    if n == 0 and host.number == 0:
        links.extend(f"http://{web.host_name(t, 0)}/" for t in outs)
    host_limit, page_limit = p.spam_hosts_per_pld, p.spam_pages_per_host
    for _ in range(int(p.links_per_page * (0.5 + rng.random()))):
        r = rng.random()
        if r < 0.6:  # branch without end across the farm's hosts and PLDs
            member = first + int(rng.random() * p.spam_plds_per_farm)
            k = int(rng.random() * (2 * host.number + 5))
            m = int(rng.random() * (2 * n + 5))
            if host_limit is not None:
                k %= host_limit
            if page_limit is not None:
                m %= page_limit
            links.append(f"http://{web.host_name(member, k)}/{'p' + str(m) if m else ''}")
        elif r < 0.85:
            m = int(rng.random() * (2 * n + 5))
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
