"""Every class path a user names in settings (the manual's, the add-on's) loads, the
short aliases too, and importing a DRUM or frontier module does not import Scrapy."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest
from scrapy.exceptions import ScrapyDeprecationWarning
from scrapy.utils.misc import load_object

from irlscrapy import addon
from irlscrapy._moved import MOVED

PACKAGE = Path(addon.__file__).parent

PATHS = [
    "irlscrapy.Addon",
    "irlscrapy.Links",
    "irlscrapy.scheduler.irl.IRLScheduler",
    "irlscrapy.scheduler.IRLScheduler",
    "irlscrapy.dupefilters.urlseen.DRUMDupeFilter",
    "irlscrapy.dupefilters.DRUMDupeFilter",
    "irlscrapy.storage.drum.DRUM",
    "irlscrapy.middlewares.star.StarMiddleware",
    "irlscrapy.report.reactorlag.ReactorLag",
    "irlscrapy.report.progress.CrawlProgress",
    "irlscrapy.report.logflood.FetchErrorLogLimit",
    "irlscrapy.report.timeline.CrawlRecorder",
    "irlscrapy.report.status.StatusServer",
    "irlscrapy.runtime.gctuning.GCTuning",
    addon.SCHEDULER,
    addon.DUPEFILTER,
    addon.RESOLVER,
    addon.HTTP_HANDLER,
]


@pytest.mark.parametrize("path", PATHS)
def test_the_path_loads_the_class_it_names(path: str) -> None:
    assert load_object(path).__name__ == path.rsplit(".", 1)[1]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("irlscrapy.scheduler.dns.IRLResolver", addon.RESOLVER),
        ("irlscrapy.gctuning.GCTuning", "irlscrapy.runtime.gctuning.GCTuning"),
        ("irlscrapy.dupefilters.drum.DRUM", "irlscrapy.storage.drum.DRUM"),
        ("irlscrapy.internals.DownloadCut", "irlscrapy.runtime.internals.DownloadCut"),
    ],
)
def test_an_old_path_a_project_names_loads_the_class_and_says_where_it_went(
    old: str, new: str
) -> None:
    """A project's settings of 0.1 still load for one release, with a warning naming
    the new path (irlscrapy._moved)."""
    module = old.rsplit(".", 1)[0]
    sys.modules.pop(module, None)
    with pytest.warns(ScrapyDeprecationWarning, match=f"{module} has moved to"):
        assert load_object(old) is load_object(new)


def test_every_old_path_is_the_module_at_its_new_path() -> None:
    for old, new in MOVED.items():
        sys.modules.pop(old, None)
        with pytest.warns(ScrapyDeprecationWarning, match=new):
            assert importlib.import_module(old) is importlib.import_module(new)
        assert not (PACKAGE / (old.removeprefix("irlscrapy.").replace(".", "/") + ".py")).exists()


def test_drum_and_the_frontier_import_no_scrapy() -> None:
    code = (
        "import sys\n"
        "import irlscrapy.storage.drum, irlscrapy.scheduler.frontier.beast\n"
        "print('scrapy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr[-2000:]
