"""One service of a kind per crawler, built once; provided ones found, others not."""

from __future__ import annotations

from irlscrapy.runtime.crawlservices import provide, provided, shared


class _Crawler:
    """Any object a weak reference can point to stands for a crawler."""


class _Cache:
    built = 0

    def __init__(self) -> None:
        _Cache.built += 1


def test_a_shared_service_is_built_once_per_crawler() -> None:
    first, second = _Crawler(), _Crawler()
    before = _Cache.built
    cache = shared(first, _Cache, _Cache)
    assert shared(first, _Cache, _Cache) is cache
    assert shared(second, _Cache, _Cache) is not cache
    assert _Cache.built == before + 2


def test_a_service_that_is_off_stays_off() -> None:
    crawler = _Crawler()
    assert shared(crawler, _Cache, lambda: None) is None
    assert shared(crawler, _Cache, _Cache) is None  # not built a second time


def test_provided_finds_what_was_provided_or_built_and_nothing_else() -> None:
    crawler = _Crawler()
    assert provided(crawler, _Cache) is None
    cache = _Cache()
    provide(crawler, cache)
    assert provided(crawler, _Cache) is cache
    assert provided(_Crawler(), _Cache) is None
