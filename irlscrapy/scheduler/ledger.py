"""The fetch ledger: every request the scheduler handed out, from hand-out to done.

A fetch is named by a *token* (an int, carried in the request's meta under
:data:`irlscrapy.scheduler.metakeys.FETCH_KEY`). Its life::

    hand_out -> in flight --end--> released, page pending --page_done--> done
                                         (or finished: the engine is done with it,
                                          handled or not)
                                         (or cut: no page, not done)

``end`` is when the host and IP are released (the request left the downloader, or ended
before reaching it); ``page_done`` when a retry, redirect or trap stored in its place
makes the page moot, so its URL may be marked done in the admitted journal at once.
A page is *handled* when the spider has yielded all it makes of its response or failure
(:meth:`FetchLedger.handled`), and done once the engine has finished with its request
(:meth:`FetchLedger.finished`): the engine holds a request from the scheduler's hand-out
until its response or failure has been through the spider and what the callback
yielded has been passed on, while Scrapy's scraper may still hold up to
2 x CONCURRENT_ITEMS of that output when the callback's iterator ends (its asyncio
path). A page nothing reports handled (a failure raised by a downloader middleware's
``process_response``, such as a decompressed body over DOWNLOAD_MAXSIZE or too many
redirects, goes to the request's errback and no further) is found by the same test,
run over every page pending less often. The ledger holds the tokens, their items and
requests; the scheduler releases the workbench and the journal with what it returns.

Invariants:
*A token is in flight, or pending its page, or neither (done); never both; a handled
token is pending its page.*
*downloading = the tokens in flight that have not left the downloader.*
*end() of a token releases it at most once; page_done() and finished() return its item
at most once, and finished() only while the engine no longer holds its request.*
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

State = TypeVar("State")
Item = TypeVar("Item")


@dataclass
class Fetch(Generic[State, Item]):
    """A request handed out and not done yet."""

    state: State  # the host's visit state
    item: Item  # what the workbench handed out
    robots: bool  # a robots.txt fetch (it ends with its outcome, not at leaving)
    request: Any  # the request the engine was given
    ended: float | None = None  # when a robots.txt fetch left the downloader


class FetchLedger(Generic[State, Item]):
    def __init__(self) -> None:
        self._in_flight: dict[int, Fetch[State, Item]] = {}
        self._pages: dict[int, Fetch[State, Item]] = {}  # released, page not done yet
        self._handled: set[int] = set()  # of _pages: the spider has yielded all of it
        self._tokens = 0
        self._left = 0  # fetches in flight that left the downloader (see left())

    def __len__(self) -> int:
        """Fetches in flight."""
        return len(self._in_flight)

    @property
    def downloading(self) -> int:
        """Fetches in flight that have not left the downloader: a robots.txt fetch whose
        download ended stays in flight until its outcome is known, and holds no
        connection or core meanwhile (the load governor counts these)."""
        return len(self._in_flight) - self._left

    def left(self, token: int, when: float) -> None:
        """The robots.txt fetch ``token`` left the downloader at ``when``; it stays in
        flight until end()."""
        fetch = self._in_flight[token]
        assert fetch.ended is None, "left the downloader twice"
        fetch.ended = when
        self._left += 1

    @property
    def pages_pending(self) -> int:
        """Fetches released whose page is not done yet (its requests may still come)."""
        return len(self._pages)

    @property
    def pages_handled(self) -> int:
        """Pages pending that the spider has handled (done once the engine lets go)."""
        return len(self._handled)

    def replaceable(self, token: int) -> bool:
        """May a request carrying ``token`` be a retry or redirect of its fetch: is the
        fetch in flight, or its page pending and not handled by the spider? (A request
        an errback yields with its failed request's meta carries the token too.)"""
        return token in self._in_flight or (token in self._pages and token not in self._handled)

    def hand_out(self, state: State, item: Item, robots: bool, request: Any) -> int:
        """A new fetch of ``request`` in flight; its token."""
        self._tokens += 1
        self._in_flight[self._tokens] = Fetch(state, item, robots, request)
        return self._tokens

    def in_flight(self, token: int | None) -> Fetch[State, Item] | None:
        return self._in_flight.get(token) if token is not None else None

    def end(self, token: int) -> Fetch[State, Item] | None:
        """Release the fetch ``token``: its page is pending. The fetch, for the caller
        to release its host and IP; None when it was released already."""
        fetch = self._in_flight.pop(token, None)
        if fetch is not None:
            self._pages[token] = fetch
            if fetch.ended is not None:
                self._left -= 1
        return fetch

    def page_done(self, token: int) -> Item | None:
        """The page of a released fetch is done: its item (None: done already, or the
        fetch is still in flight)."""
        fetch = self._pages.pop(token, None)
        self._handled.discard(token)
        return None if fetch is None else fetch.item

    def handled(self, token: int) -> None:
        """The spider has yielded all it makes of the released fetch ``token``'s page;
        it is done once the engine lets go of its request (:meth:`finished`)."""
        if token in self._pages:
            self._handled.add(token)

    def cut(self, token: int) -> None:
        """The download of the released fetch ``token`` was cut (the spider was
        closing): no page comes, and its URL is not done (it stays admitted)."""
        self._pages.pop(token, None)
        self._handled.discard(token)

    def finished(self, running: Container[Any], *, handled: bool = False) -> list[Item]:
        """The items of pages pending (only the handled ones, if ``handled``) whose
        request is not in ``running`` (the requests the engine still holds), done now."""
        pages = self._pages
        tokens = self._handled if handled else pages.keys()
        over = [token for token in tokens if pages[token].request not in running]
        self._handled.difference_update(over)
        return [pages.pop(token).item for token in over]
