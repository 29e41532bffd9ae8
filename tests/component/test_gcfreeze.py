"""FreezeStartupObjects: what exists when the spider opens leaves the cyclic GC."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from scrapy import Spider
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

from irlscrapy.addon import GC_FREEZE_EXTENSION
from irlscrapy.gcfreeze import FreezeStartupObjects


class Nothing(Spider):
    name = "nothing"


@pytest.fixture
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_objects_alive_at_spider_open_are_frozen_and_later_ones_are_not(unfrozen: None) -> None:
    crawler = get_crawler(Nothing, {"ADDONS": {"irlscrapy.Addon": 0}})
    assert crawler.settings.getdict("EXTENSIONS")[GC_FREEZE_EXTENSION] == 0
    extension = FreezeStartupObjects.from_crawler(crawler)
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
    assert extension.stats is crawler.stats


def test_the_setting_turns_it_off() -> None:
    crawler = get_crawler(Nothing, {"IRL_GC_FREEZE": False})
    with pytest.raises(NotConfigured):
        FreezeStartupObjects.from_crawler(crawler)
