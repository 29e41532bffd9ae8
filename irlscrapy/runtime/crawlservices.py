"""The crawl's shared services: one object per crawler, for components Scrapy builds
apart.

Scrapy builds the scheduler, the dupefilter, the download handler, the DNS resolver,
the middlewares and the extensions each on its own from the crawler. Some of them must
share one object per crawl: the DNS cache (the scheduler resolves, the downloader
connects, the WARC writer records the address), the exchange recorder (the download
handler captures, DuplicateContentMiddleware waits for its verdicts), the state
directory (the scheduler, URLseen, content dedup and the crawl report keep their files
in it), and the IRL scheduler itself (the middlewares hand it Links, fetch ends and
host health). This module is the one place they meet:

- :func:`shared` returns the crawler's one object of a kind, built on first use;
- :func:`provide` registers one a component built itself (the scheduler, which Scrapy
  builds), and :func:`provided` finds it (None: not in this crawl, e.g. Scrapy's stock
  scheduler runs);
- :func:`crawl_plds` is the crawl's PLD function (BEAST's key, STAR's and the agents'
  partitions must agree on every host's PLD).

Objects are kept per crawler, weakly: a crawler that goes away takes its services.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar
from weakref import WeakKeyDictionary

from irlscrapy import defaults
from irlscrapy.domains import ICANN, PayLevelDomains

T = TypeVar("T")
R = TypeVar("R")

_SERVICES: WeakKeyDictionary[Any, dict[type, Any]] = WeakKeyDictionary()


def shared(crawler: Any, kind: type[T], build: Callable[[], R]) -> R:
    """The crawler's one service of ``kind``; ``build()`` makes it on first use (it may
    make None: the service is off, and stays off)."""
    services = _SERVICES.setdefault(crawler, {})
    if kind not in services:
        services[kind] = build()
    return services[kind]


def provide(crawler: Any, service: T, kind: type[T] | None = None) -> None:
    """Register ``service`` as the crawler's one of ``kind`` (default: its class)."""
    _SERVICES.setdefault(crawler, {})[kind or type(service)] = service


def provided(crawler: Any, kind: type[T]) -> T | None:
    """The crawler's service of ``kind``, if one was provided or built; else None."""
    return _SERVICES.get(crawler, {}).get(kind)


def crawl_plds(crawler: Any) -> PayLevelDomains:
    """The crawl's PLDs, per ``IRL_STAR_PRIVATE_SUFFIXES``: one object per crawler."""
    private = defaults.get(crawler.settings, "IRL_STAR_PRIVATE_SUFFIXES")
    return shared(
        crawler, PayLevelDomains, lambda: ICANN if not private else PayLevelDomains(private=True)
    )
