"""The manual's settings snippets, pasted into a project's settings as written, are
settings a crawl starts with: every class path loads and the start checks accept them.

The snippets are read from the manual at test time (tests/e2e/firsthour/readme.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy.settings import Settings
from scrapy.utils.misc import load_object

from irlscrapy.exceptions import ConfigurationError
from irlscrapy.startcheck import check_settings
from tests.e2e.firsthour.readme import code_blocks

URLSEEN = "URLseen: a dupefilter with bounded RAM"


def pasted(block: str) -> Settings:
    """A settings module holding ``block``: its upper-case names, as Scrapy reads them."""
    namespace: dict[str, object] = {}
    exec(compile(block, "<the manual's snippet>", "exec"), namespace)
    settings = Settings()
    settings.setdict({k: v for k, v in namespace.items() if k.isupper()}, priority="project")
    return settings


def test_the_urlseen_snippet_names_a_dupefilter_that_loads_and_passes_the_start_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # its JOBDIR is relative: a project directory's
    (block,) = code_blocks(URLSEEN, "python")
    settings = pasted(block)
    assert load_object(settings["DUPEFILTER_CLASS"]).__name__ == "DRUMDupeFilter"
    assert settings.getint("IRL_URLSEEN_MEMORY") == 64 * 2**20
    check_settings(settings)


def test_the_start_checks_refuse_the_urlseen_snippet_with_a_misspelt_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check above can fail: the same snippet with a typo in a name is refused."""
    monkeypatch.chdir(tmp_path)
    (block,) = code_blocks(URLSEEN, "python")
    settings = pasted(block.replace("IRL_URLSEEN_MEMORY", "IRL_URLSEEN_MEMROY"))
    with pytest.raises(ConfigurationError, match="IRL_URLSEEN_MEMROY"):
        check_settings(settings)
