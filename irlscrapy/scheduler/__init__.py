"""The IRL scheduler. ``irlscrapy.scheduler.IRLScheduler`` is the short path of
``irlscrapy.scheduler.irl.IRLScheduler``; it is imported when first named, so the
frontier's structures (irlscrapy.scheduler.frontier) stay free of Scrapy."""

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "IRLScheduler":
        from irlscrapy.scheduler.irl import IRLScheduler

        return IRLScheduler
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
