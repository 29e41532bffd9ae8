"""Every class path a user names in settings (the README's, the add-on's) loads, the
short aliases too, and importing a DRUM or frontier module does not import Scrapy."""

from __future__ import annotations

import subprocess
import sys

import pytest
from scrapy.utils.misc import load_object

from irlscrapy import addon

PATHS = [
    "irlscrapy.Addon",
    "irlscrapy.Links",
    "irlscrapy.scheduler.irl.IRLScheduler",
    "irlscrapy.scheduler.IRLScheduler",
    "irlscrapy.dupefilters.urlseen.DRUMDupeFilter",
    "irlscrapy.dupefilters.DRUMDupeFilter",
    "irlscrapy.storage.drum.DRUM",
    "irlscrapy.scheduler.dns.IRLResolver",
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


def test_the_old_resolver_path_is_the_resolver() -> None:
    assert load_object("irlscrapy.scheduler.dns.IRLResolver") is load_object(addon.RESOLVER)


def test_drum_and_the_frontier_import_no_scrapy() -> None:
    code = (
        "import sys\n"
        "import irlscrapy.storage.drum, irlscrapy.scheduler.frontier.beast\n"
        "print('scrapy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr[-2000:]
