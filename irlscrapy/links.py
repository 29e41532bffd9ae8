"""``Links``: the links of one page, handed on as plain strings (the fast path)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Links:
    """The followable links found on one page.

    A spider yields ``Links`` (one per page, or a few for a page of many links) instead
    of one ``Request`` per link. With the
    IRL scheduler the URLs go to the frontier as strings and a ``Request`` is built only
    when a URL is about to be downloaded; without it,
    :class:`irlscrapy.middlewares.star.StarMiddleware` turns them into ordinary
    Requests, so the same spider runs on stock Scrapy.

    ``urls`` are absolute; ``depth`` is the depth of the *source* page (its links get
    ``depth + 1``); ``callback`` names the spider method that parses the new pages
    (None: the spider's ``parse``).
    """

    source: str
    urls: Sequence[str]
    depth: int = 0
    callback: str | None = None
