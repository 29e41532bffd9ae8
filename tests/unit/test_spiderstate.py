"""spider.state is written whole or not at all, and a cut-short one does not stop a
spider from opening."""

from __future__ import annotations

import logging
import pickle
from pathlib import Path

import pytest
from scrapy import Spider
from scrapy.settings import Settings
from scrapy.utils.conf import build_component_list
from scrapy.utils.test import get_crawler

from irlscrapy.addon import SCRAPY_SPIDER_STATE, SPIDER_STATE_EXTENSION, Addon
from irlscrapy.state.spiderstate import SpiderState


def _spider() -> Spider:
    return Spider("state")


def test_a_state_that_fails_to_pickle_leaves_the_last_whole_one(tmp_path: Path) -> None:
    extension = SpiderState(str(tmp_path))
    spider = _spider()
    spider.state = {"pages": 7}  # type: ignore[attr-defined]
    extension.spider_closed(spider)
    spider.state = {"pages": 8, "broken": lambda: 0}  # type: ignore[attr-defined]
    with pytest.raises((pickle.PicklingError, AttributeError)):
        extension.spider_closed(spider)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spider.state"]
    again = _spider()
    extension.spider_opened(again)
    assert again.state == {"pages": 7}  # type: ignore[attr-defined]


def test_an_empty_state_file_opens_with_an_empty_state_and_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "spider.state").write_bytes(b"")  # Scrapy's extension on a full disk
    spider = _spider()
    with caplog.at_level(logging.WARNING):
        SpiderState(str(tmp_path)).spider_opened(spider)
    assert spider.state == {}  # type: ignore[attr-defined]
    assert "cannot be read" in caplog.text


def test_a_state_that_cannot_be_read_is_counted(tmp_path: Path) -> None:
    (tmp_path / "spider.state").write_bytes(b"\x80")  # a pickle cut short
    crawler = get_crawler(Spider, {"JOBDIR": str(tmp_path)})
    extension = SpiderState.from_crawler(crawler)
    extension.spider_opened(_spider())
    assert crawler.stats is not None
    assert crawler.stats.get_value("irl/recovered/spider_state") == 1


@pytest.mark.parametrize(
    "damage",
    [b"cnot_a_module\nX\n.", b"cbuiltins\nno_such_name\n.", b"Inot_a_number\n."],
    ids=["missing-module", "missing-class", "bad-int"],
)
def test_any_damage_opens_with_an_empty_state(tmp_path: Path, damage: bytes) -> None:
    """Not only EOFError and UnpicklingError: a damaged pickle, or one naming a class the
    code no longer has, raises about anything (it escaped the signal handler, and the
    spider ran without spider.state)."""
    (tmp_path / "spider.state").write_bytes(damage)
    crawler = get_crawler(Spider, {"JOBDIR": str(tmp_path)})
    spider = _spider()
    SpiderState.from_crawler(crawler).spider_opened(spider)
    assert spider.state == {}  # type: ignore[attr-defined]
    assert crawler.stats is not None
    assert crawler.stats.get_value("irl/recovered/spider_state") == 1


def test_the_addon_puts_it_in_the_place_of_scrapys() -> None:
    settings = Settings()
    Addon().update_settings(settings)
    extensions = build_component_list(settings.getwithbase("EXTENSIONS"))
    assert SPIDER_STATE_EXTENSION in extensions
    assert SCRAPY_SPIDER_STATE not in extensions


def test_a_project_that_lists_scrapys_keeps_it() -> None:
    settings = Settings({"EXTENSIONS": {SCRAPY_SPIDER_STATE: 10}})
    Addon().update_settings(settings)
    extensions = build_component_list(settings.getwithbase("EXTENSIONS"))
    assert SCRAPY_SPIDER_STATE in extensions
    assert SPIDER_STATE_EXTENSION not in extensions
