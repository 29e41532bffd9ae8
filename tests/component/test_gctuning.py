"""GCTuning: what exists when the spider opens leaves the cyclic GC; full collections
are spaced out."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from scrapy import Spider
from scrapy.exceptions import NotConfigured
from scrapy.utils.reactor import install_reactor, is_reactor_installed
from scrapy.utils.test import get_crawler

from irlscrapy.addon import GC_TUNING_EXTENSION
from irlscrapy.exceptions import ConfigurationError
from irlscrapy.runtime.gctuning import GCTuning


class Nothing(Spider):
    name = "nothing"


@pytest.fixture
def restored_gc() -> Iterator[None]:
    threshold = gc.get_threshold()
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def test_objects_alive_at_open_are_frozen_later_ones_are_not(restored_gc: None) -> None:
    if not is_reactor_installed():  # get_crawler() would choose reactorless mode, refused
        install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
    crawler = get_crawler(Nothing, {"ADDONS": {"irlscrapy.Addon": 0}})
    assert crawler.settings.getdict("EXTENSIONS")[GC_TUNING_EXTENSION] == 0
    extension = GCTuning.from_crawler(crawler)
    crawler.stats.open_spider()
    before = [object()]  # a container alive at open: frozen
    extension.spider_opened(Nothing())
    after = [object()]  # built later: the GC still sees it
    frozen = gc.get_freeze_count()
    assert frozen > 10_000  # modules, classes, functions of Scrapy and Twisted at least
    assert crawler.stats.get_value("irl/gc/frozen_objects") >= frozen  # some freed since
    tracked = {id(o) for o in gc.get_objects()}
    assert id(before) not in tracked
    assert id(after) in tracked
    assert gc.get_threshold()[2] == 1000


def test_settings(restored_gc: None) -> None:
    crawler = get_crawler(Nothing, {"IRL_GC_FREEZE": False, "IRL_GC_FULL_EVERY": 50})
    GCTuning.from_crawler(crawler).spider_opened(Nothing())
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold()[2] == 50
    with pytest.raises(NotConfigured):
        GCTuning.from_crawler(
            get_crawler(Nothing, {"IRL_GC_FREEZE": False, "IRL_GC_FULL_EVERY": 0})
        )
    with pytest.raises(ConfigurationError, match="IRL_GC_FULL_EVERY must be >= 0"):
        GCTuning.from_crawler(get_crawler(Nothing, {"IRL_GC_FULL_EVERY": -1}))
