"""The fetch ledger: every request the scheduler handed out, from hand-out to done.

A fetch is named by a *token* (an int, carried in the request's meta under
:data:`irlscrapy.scheduler.keys.FETCH_KEY`). Its life::

    hand_out -> in flight --end--> released, page pending --page_done--> done
                                         (or swept PAGE_DONE_AFTER seconds after its end)

``end`` is when the host and IP are released (the request left the downloader, or ended
before reaching it); ``page_done`` when the spider has handled the page, its links
submitted, so its URL may be marked done in the admitted journal. The ledger holds the
tokens and their items; the scheduler releases the workbench and the journal with what
it returns.

Invariants:
*A token is in flight, or pending its page, or neither (done); never both.*
*end() of a token releases it at most once; page_done() returns its item at most once.*
*Pages pending are swept in the order their fetches ended.*
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

#: Seconds after its fetch ended that a page no middleware reported done is done anyway
#: (a response no callback saw, a download error).
PAGE_DONE_AFTER = 60.0

State = TypeVar("State")
Item = TypeVar("Item")


@dataclass
class Fetch(Generic[State, Item]):
    """A request handed out and not released yet."""

    state: State  # the host's visit state
    item: Item  # what the workbench handed out
    robots: bool  # a robots.txt fetch (it ends with its outcome, not at leaving)
    ended: float | None = None  # when a robots.txt fetch left the downloader


class FetchLedger(Generic[State, Item]):
    def __init__(self) -> None:
        self._in_flight: dict[int, Fetch[State, Item]] = {}
        #: fetches released whose page is not done yet: token -> (released at, item),
        #: in release order
        self._pages: dict[int, tuple[float, Item]] = {}
        self._tokens = 0

    def __len__(self) -> int:
        """Fetches in flight."""
        return len(self._in_flight)

    @property
    def pages_pending(self) -> int:
        """Fetches released whose page is not done yet (its requests may still come)."""
        return len(self._pages)

    def hand_out(self, state: State, item: Item, robots: bool) -> int:
        """A new fetch in flight; its token."""
        self._tokens += 1
        self._in_flight[self._tokens] = Fetch(state, item, robots)
        return self._tokens

    def in_flight(self, token: int | None) -> Fetch[State, Item] | None:
        return self._in_flight.get(token) if token is not None else None

    def end(self, token: int, now: float) -> Fetch[State, Item] | None:
        """Release the fetch ``token``: its page is pending from ``now``. The fetch, for
        the caller to release its host and IP; None when it was released already."""
        fetch = self._in_flight.pop(token, None)
        if fetch is not None:
            self._pages[token] = (now, fetch.item)
        return fetch

    def page_done(self, token: int) -> Item | None:
        """The page of a released fetch is done: its item (None: done already, or the
        fetch is still in flight)."""
        entry = self._pages.pop(token, None)
        return None if entry is None else entry[1]

    def sweep(self, now: float) -> Iterator[Item]:
        """The items of pages pending for PAGE_DONE_AFTER seconds, done now."""
        pages = self._pages
        while pages:
            token, (released, _) = next(iter(pages.items()))  # the oldest: release order
            if released > now - PAGE_DONE_AFTER:
                return
            item = self.page_done(token)
            assert item is not None
            yield item
