"""irlscrapy: IRLbot's scaling techniques as drop-in Scrapy components.

Public API: :class:`Links` (the links of one page, the broad-crawl fast path).
"""

from irlscrapy.links import Links

__all__ = ["Links", "__version__"]
__version__ = "0.1.0"
