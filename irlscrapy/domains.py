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
:func:`use_private_suffixes` switches the private section on for the process
(``IRL_STAR_PRIVATE_SUFFIXES``): then ``alice.blogspot.com`` is a PLD of its own.
"""

from __future__ import annotations

import hashlib

import tldextract

#: Hosts whose PLD is remembered; a broad crawl meets each host many times in a row.
#: A plain dict of strings, emptied when full: unlike functools.lru_cache's linked
#: nodes it is invisible to the cyclic GC (whose full collections stall the reactor).
PLD_CACHE_HOSTS = 1 << 16
_PLDS: dict[str, str] = {}

# suffix_list_urls=(): the snapshot bundled with tldextract, never a network fetch
_ICANN_ONLY = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)
_WITH_PRIVATE = tldextract.TLDExtract(
    suffix_list_urls=(), cache_dir=None, include_psl_private_domains=True
)
_EXTRACT = _ICANN_ONLY


def use_private_suffixes(enabled: bool) -> None:
    """Count the Public Suffix List's private section (``blogspot.com``, ...) as
    suffixes from now on, in this process (or stop counting them)."""
    global _EXTRACT
    wanted = _WITH_PRIVATE if enabled else _ICANN_ONLY
    if wanted is not _EXTRACT:
        _EXTRACT = wanted
        _PLDS.clear()


#: The default port of each scheme, as written at the end of an authority.
_DEFAULT_PORTS = {"http": ":80", "https": ":443"}


def url_host(url: str) -> str:
    """The host of an absolute http(s) URL (see the module docstring); "" for a URL with
    no authority (``data:``, ``mailto:``)."""
    colon = url.find("://")
    if colon < 0:
        return ""
    start = colon + 3
    end = len(url)
    for sep in "/?#":
        cut = url.find(sep, start)
        if 0 <= cut < end:
            end = cut
    host = url[start:end].rpartition("@")[2].lower()
    if ":" in host:  # (the common case, no port and no trailing dot, does no more)
        default = _DEFAULT_PORTS.get(url[:colon].lower())
        if default is not None and host.endswith(default):
            host = host[: -len(default)]
    if host.endswith(".") or ".:" in host:
        name, sep, port = host.partition(":")
        host = name.rstrip(".") + sep + port
    return host


def url_origin(url: str) -> str:
    """The origin of an absolute http(s) URL: ``scheme://host``, host as in url_host."""
    return f"{url[: url.find(':')].lower()}://{url_host(url)}"


def host_name(host: str) -> str:
    """The name part of a host (``[::1]:80`` -> ``::1``, ``a.com:8080`` -> ``a.com``)."""
    if host.startswith("["):
        return host[1 : host.find("]")]
    return host.partition(":")[0]


def pld(host: str) -> str:
    """The pay-level domain of a host (see the module docstring)."""
    found = _PLDS.get(host)
    if found is None:
        if len(_PLDS) >= PLD_CACHE_HOSTS:
            _PLDS.clear()
        name = host_name(host)
        found = _PLDS[host] = _EXTRACT(name).top_domain_under_public_suffix or name
    return found


def domain_key(domain: str) -> int:
    """The stable 64-bit key of a PLD."""
    return int.from_bytes(hashlib.blake2b(domain.encode(), digest_size=8).digest(), "big")
