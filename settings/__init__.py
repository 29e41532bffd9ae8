"""The Scrapy project settings of this repository, in the layout of a user's project:
``settings.broad`` runs the ``broad`` spider (``scrapy crawl broad`` from the repository
root, where scrapy.cfg names it; and Scrapyd, where the deployed egg's ``scrapy`` entry
point names it).

It is a package of its own, not part of the ``irlscrapy`` library: ``pip install``
leaves it out (setup.py), since a project's settings belong to the project, and a
top-level package called ``settings`` in site-packages would collide with every other
project's. Only the Scrapyd egg carries it. For the same reason, Scrapyd must not find
another top-level ``settings`` ahead of the egg (in site-packages, or in the directory
Scrapyd runs in, which its jobs have first on ``sys.path``): that one would be loaded.

**The deployed code runs.** Scrapyd's runner puts the egg at the *end* of ``sys.path``
(pkg_resources' ``Distribution.activate``), behind site-packages. Scrapyd's environment
must hold irlscrapy's dependencies (an egg carries none), most simply by installing
irlscrapy itself, and that copy would then shadow the deployed one: a deploy would
change the settings and nothing else. Scrapy imports this package (it holds the settings
module the egg names) before anything imports ``irlscrapy``, so when it is imported from
an egg it moves the egg to the front of ``sys.path``; ``irlscrapy`` then comes from the
egg too, and so does the in-vitro web's child process
(:class:`irlscrapy.invitro.process.InVitroProcess` passes the path on). Imported from
a directory, as in a checkout, it changes nothing. The broad spider logs where
``irlscrapy`` came from ("irlscrapy 0.2.0 from ...").
"""

import sys
import zipimport


def _deployed_code_first() -> None:
    loader = __spec__.loader if __spec__ is not None else None
    if not isinstance(loader, zipimport.zipimporter) or "irlscrapy" in sys.modules:
        return
    egg = loader.archive
    sys.path[:] = [egg, *(entry for entry in sys.path if entry != egg)]


_deployed_code_first()
