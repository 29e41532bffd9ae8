"""irlscrapy: IRLbot's scaling techniques as drop-in Scrapy components.

Public API: :class:`Links` (the links of one page, the broad-crawl fast path) and
:class:`Addon` (``ADDONS = {"irlscrapy.Addon": 0}`` switches every component on).
"""

from irlscrapy import _moved
from irlscrapy.addon import Addon
from irlscrapy.links import Links
from irlscrapy.version import __version__

_moved.install()  # old module paths, for one release

__all__ = ["Addon", "Links", "__version__"]
