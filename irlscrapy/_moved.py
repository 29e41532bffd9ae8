"""Old module paths, still importable for one release (0.2) with a deprecation warning.

A project may name a class by its module path in its settings (``EXTENSIONS``,
``TWISTED_DNS_RESOLVER``) or import one in its code. When a module moves, its old path
goes in :data:`MOVED`: importing it warns (``ScrapyDeprecationWarning``, which Scrapy
shows) and gives the module at its new path, the same object. :func:`install` puts the
finder on ``sys.meta_path``; ``import irlscrapy`` runs it.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType

#: old path -> new path (the layout of 0.2: storage/, runtime/, state/, defaults/).
MOVED = {
    "irlscrapy.scheduler.dns": "irlscrapy.scheduler.hosts.dns",
    "irlscrapy.dupefilters.drum": "irlscrapy.storage.drum",
    "irlscrapy.dupefilters.drumcache": "irlscrapy.storage.drumcache",
    "irlscrapy.dupefilters.drumfiles": "irlscrapy.storage.drumfiles",
    "irlscrapy.dupefilters.drummerge": "irlscrapy.storage.drummerge",
    "irlscrapy.dupefilters.drumupgrade": "irlscrapy.storage.drumupgrade",
    "irlscrapy.dupefilters.drumjournal": "irlscrapy.storage.drumjournal",
    "irlscrapy.dupefilters.sizing": "irlscrapy.storage.drumsizing",
    "irlscrapy.dupefilters.mergethread": "irlscrapy.runtime.mergethread",
    "irlscrapy.recordfile": "irlscrapy.storage.recordfile",
    "irlscrapy.cachedb": "irlscrapy.storage.cachedb",
    "irlscrapy.dirlock": "irlscrapy.storage.dirlock",
    "irlscrapy.jsonfile": "irlscrapy.storage.jsonfile",
    "irlscrapy.recovery": "irlscrapy.storage.recovery",
    "irlscrapy.tablepages": "irlscrapy.storage.tablepages",
    "irlscrapy.glibcheap": "irlscrapy.storage.glibcheap",
    "irlscrapy.faulthooks": "irlscrapy.storage.faulthooks",
    "irlscrapy.workers": "irlscrapy.runtime.workers",
    "irlscrapy.gctuning": "irlscrapy.runtime.gctuning",
    "irlscrapy.lagprobe": "irlscrapy.runtime.lagprobe",
    "irlscrapy.services": "irlscrapy.runtime.crawlservices",
    "irlscrapy.tally": "irlscrapy.runtime.troubles",
    "irlscrapy.closing": "irlscrapy.runtime.closing",
    "irlscrapy.openfailure": "irlscrapy.runtime.openfailure",
    "irlscrapy.internals": "irlscrapy.runtime.internals",
    "irlscrapy.mediatype": "irlscrapy.runtime.mediatype",
    "irlscrapy.statedir": "irlscrapy.state.directory",
    "irlscrapy.statecheck": "irlscrapy.state.check",
    "irlscrapy.spiderstate": "irlscrapy.state.spiderstate",
    "irlscrapy.settingspec": "irlscrapy.defaults.spec",
    "irlscrapy.distributed.settings": "irlscrapy.defaults.agents",
    "irlscrapy.distributed.status": "irlscrapy.distributed.crawlview",
    "irlscrapy.distributed.handoff": "irlscrapy.distributed.join",
    "irlscrapy.distributed.handover": "irlscrapy.distributed.leave",
    "irlscrapy.distributed.tickio": "irlscrapy.distributed.redisround",
    "irlscrapy.invitro.routing": "irlscrapy.invitro.replies",
    "irlscrapy.scheduler.keys": "irlscrapy.scheduler.metakeys",
    "irlscrapy.scheduler.items": "irlscrapy.scheduler.frontieritems",
    "irlscrapy.scheduler.pipeline": "irlscrapy.scheduler.stages",
}


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        # (imported here: importing irlscrapy's structures imports no Scrapy)
        from scrapy.exceptions import ScrapyDeprecationWarning

        new = MOVED[spec.name]
        warnings.warn(
            f"{spec.name} has moved to {new}: name the new path (the old one goes in "
            "irlscrapy 0.3)",
            ScrapyDeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        pass  # (the module at the new path ran when it was imported)


def install() -> None:
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
