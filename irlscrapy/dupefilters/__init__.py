"""Dupefilters. ``irlscrapy.dupefilters.DRUMDupeFilter`` is the short path of
``irlscrapy.dupefilters.urlseen.DRUMDupeFilter`` (as Scrapy has
``scrapy.dupefilters.RFPDupeFilter``); it is imported when first named, so the DRUM
modules of this package stay free of Scrapy."""

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "DRUMDupeFilter":
        from irlscrapy.dupefilters.urlseen import DRUMDupeFilter

        return DRUMDupeFilter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
