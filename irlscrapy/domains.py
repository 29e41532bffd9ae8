"""Hosts, pay-level domains and their 64-bit keys: one definition for every part.

The *host* of a URL is its authority lower-cased, without userinfo, without a trailing dot
on the name and without the scheme's default port (``WWW.Example.com.:80`` in an http URL
is ``www.example.com``; ``www.example.com:8080`` keeps its port): the unit of host
politeness, shared by the URL's schemes. Its *origin* (``url_origin``) is the scheme and
the host (``https://www.example.com``): the unit of host health, since a connection that
fails on one scheme or port says nothing of the others. Its *PLD*
(pay-level domain) is the registered domain under the Public Suffix List, from
tldextract's bundled snapshot (never fetched at run time): ``example.co.uk`` for
``www.example.co.uk``. A host with no registrable domain (an IP literal, ``localhost``)
is its own PLD. BEAST budgets and STAR in-degrees are per PLD, keyed by
:func:`domain_key`, a stable 64-bit hash (never the builtin ``hash()``).

Only the list's ICANN section counts by default: ``alice.blogspot.com`` belongs to PLD
``blogspot.com``, as in the paper (one budget for a hosting service and all its users).
A crawl with ``IRL_STAR_PRIVATE_SUFFIXES`` counts the private section too
(:func:`irlscrapy.runtime.crawlservices.crawl_plds` gives each crawl its own): then
``alice.blogspot.com`` is a PLD of its own. :func:`pld` is the default's.
"""

from __future__ import annotations

import hashlib
import re

import tldextract

#: Hosts whose PLD is remembered; a broad crawl meets each host many times in a row.
#: A plain dict of strings, emptied when full: unlike functools.lru_cache's linked
#: nodes it is invisible to the cyclic GC (whose full collections stall the reactor).
PLD_CACHE_HOSTS = 1 << 16

# suffix_list_urls=(): the snapshot bundled with tldextract, never a network fetch
_ICANN_ONLY = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)
_WITH_PRIVATE = tldextract.TLDExtract(
    suffix_list_urls=(), cache_dir=None, include_psl_private_domains=True
)


class PayLevelDomains:
    """``plds(host)``: the host's PLD, under the list's ICANN section, or with its
    private section too (``private``)."""

    def __init__(self, private: bool = False) -> None:
        self.private = private
        self._extract = _WITH_PRIVATE if private else _ICANN_ONLY
        self._cache: dict[str, str] = {}

    def __call__(self, host: str) -> str:
        found = self._cache.get(host)
        if found is None:
            if len(self._cache) >= PLD_CACHE_HOSTS:
                self._cache.clear()
            name = host_name(host)
            found = self._cache[host] = self._extract(name).top_domain_under_public_suffix or name
        return found


#: The default port of each scheme, as written at the end of an authority.
_DEFAULT_PORTS = {"http": ":80", "https": ":443"}


def _authority(url: str) -> tuple[int, int] | None:
    """Where the authority of an absolute URL starts and ends (after ``://``, up to the
    first ``/``, ``?`` or ``#``); None for a URL with no authority."""
    colon = url.find("://")
    if colon < 0:
        return None
    start = colon + 3
    end = len(url)
    for sep in "/?#":
        cut = url.find(sep, start)
        if 0 <= cut < end:
            end = cut
    return start, end


def url_host(url: str) -> str:
    """The host of an absolute http(s) URL (see the module docstring); "" for a URL with
    no authority (``data:``, ``mailto:``)."""
    bounds = _authority(url)
    if bounds is None:
        return ""
    start, end = bounds
    colon = start - 3
    host = url[start:end].rpartition("@")[2].lower()
    if ":" in host:  # (the common case, no port and no trailing dot, does no more)
        name, _, port = host.rpartition(":")
        if port == "" or (port.isascii() and port.isdigit()):  # not an IPv6 literal's colon
            # the port as Request writes it: "" and the scheme's own are none, "08" is 8
            port = str(int(port)) if port else ""
            default = _DEFAULT_PORTS.get(url[:colon].lower())
            host = name if not port or default == ":" + port else f"{name}:{port}"
    if host.endswith(".") or ".:" in host:
        name, sep, port = host.partition(":")
        host = name.rstrip(".") + sep + port
    return host


#: An http(s) URL whose authority is a lower-case name or IPv4 address, with neither
#: port, userinfo nor trailing dot: canonical_authority's common case, decided by one match.
_PLAIN_AUTHORITY = re.compile(r"https?://[a-z0-9_-]+(?:\.[a-z0-9_-]+)*(?=[/?#]|\Z)")


def canonical_authority(url: str) -> str:
    """``url`` with its host spelt as :func:`url_host` gives it (lower case, no trailing
    dot, no default port), its userinfo and everything after the authority as they
    were: ``http://WWW.Lua.ORG.:80/A?b`` -> ``http://www.lua.org/A?b``. The one spelling
    of a URL's host that the IRL scheduler fetches and keys (``IRLScheduler``'s
    docstring says where); a URL already so spelt (the common case) is returned as is."""
    if _PLAIN_AUTHORITY.match(url):
        return url
    bounds = _authority(url)
    if bounds is None:
        return url
    start, end = bounds
    at = url.rfind("@", start, end) + 1 or start
    host = url_host(url)
    if url[at:end] == host:
        return url
    return url[:at] + host + url[end:]


def url_origin(url: str) -> str:
    """The origin of an absolute http(s) URL: ``scheme://host``, host as in url_host."""
    return f"{url[: url.find(':')].lower()}://{url_host(url)}"


def host_name(host: str) -> str:
    """The name part of a host (``[::1]:80`` -> ``::1``, ``a.com:8080`` -> ``a.com``)."""
    if host.startswith("["):
        return host[1 : host.find("]")]
    return host.partition(":")[0]


#: The paper's PLDs: the ICANN section only.
ICANN = PayLevelDomains()


def pld(host: str) -> str:
    """The pay-level domain of a host under the ICANN section (see the module docstring)."""
    return ICANN(host)


def domain_key(domain: str) -> int:
    """The stable 64-bit key of a PLD."""
    return int.from_bytes(hashlib.blake2b(domain.encode(), digest_size=8).digest(), "big")
