"""Peers: what one crawl process exchanges with the other agents of its crawl.

The scheduler knows the other agents of a multi-agent crawl only through :class:`Peers`:

- *routing*: of the URLs and PLD edges a page yields, the ones whose PLDs this agent
  owns stay here (:meth:`Peers.route_urls`, :meth:`Peers.route_edges`); the others go
  to their owners;
- *receiving*: the implementation delivers what other agents send to the intake
  (``Intake.receive``, ``Intake.receive_keys``) and to STAR once it has joined;
- *handing over*: a URL handed over under this agent's own salt is one it holds still
  (:attr:`Peers.kept_salt`);
- *idleness*: the crawl goes on until every agent is idle (:attr:`Peers.crawl_done`),
  and a blocked crawl gives up only when no other agent could unblock it
  (:meth:`Peers.may_give_up`);
- *leaving*: an agent asked to leave hands out no more fetches (:attr:`Peers.leaving`)
  and closes with :data:`LEFT_REASON`.

:class:`NoPeers` is a crawl of one process. The multi-agent mode
(:class:`irlscrapy.distributed.peering.AgentPeers`, with ``IRL_REDIS_URL``) is chosen by
:func:`peers_from_crawler` by its dotted path, as Scrapy loads components, so the
scheduler imports nothing of :mod:`irlscrapy.distributed`: the agent plugs in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from scrapy.utils.misc import load_object
from twisted.internet import defer

from irlscrapy import defaults
from irlscrapy.scheduler.intake import Routing

if TYPE_CHECKING:
    from irlscrapy.scheduler.dispatch import Dispatcher
    from irlscrapy.scheduler.intake import Intake
    from irlscrapy.scheduler.stages import Frontier
    from irlscrapy.star.indegree import PLDInDegree

#: The spider's close reason once its agent has left the crawl (its URLs went to others).
LEFT_REASON = "agent_left"
#: The multi-agent mode's implementation, loaded when IRL_REDIS_URL is set.
AGENT_PEERS = "irlscrapy.distributed.peering.AgentPeers"


@dataclass(frozen=True)
class LocalCrawl:
    """What the peers reach of this process's crawl once its state is open."""

    crawler: Any
    intake: Intake
    frontier: Frontier
    dispatcher: Dispatcher
    indegree: PLDInDegree | None  # None: STAR does not run
    clock: Any  # the reactor's clock (seconds(), callLater)
    wake: Callable[[], None]  # wakes the engine
    directory: Path  # the agent's own files (the state directory's agent/)
    give_up: Callable[[str, str], None]  # stops the crawl: (message, close reason)


class Peers(Routing, Protocol):
    """The intake's :class:`~irlscrapy.scheduler.intake.Routing` (``shared``: does the
    crawl span other processes, ``route_urls``, ``kept_salt``), and the rest the
    scheduler asks."""

    def join(self, crawl: LocalCrawl) -> None:
        """Join the crawl once this process's state is open (may raise
        ConfigurationError: the crawl cannot run so)."""

    def route_edges(self, source: str, targets: set[str]) -> Iterable[str]:
        """The PLD edges from ``source`` that stay here; the others go to their owners."""

    @property
    def crawl_done(self) -> bool:
        """Is every agent of the crawl idle?"""

    def may_give_up(self) -> bool:
        """May a blocked crawl give up on what it holds? (Not while another agent works:
        it may unblock it.)"""

    @property
    def leaving(self) -> bool:
        """Has this agent begun to leave the crawl? It hands out no fetch then."""

    def stop(self) -> defer.Deferred[None]:
        """The spider closes: send what is still to be sent, and leave the members if
        asked to; fires when done."""

    def figures(self) -> dict[str, int]:
        """Figures for the progress line and the status endpoint."""


class NoPeers:
    """A crawl of one process: everything stays here."""

    shared = False
    kept_salt = None
    crawl_done = True
    leaving = False

    def join(self, crawl: LocalCrawl) -> None:
        pass

    def route_urls(self, urls: list[str], auxes: list[bytes]) -> tuple[list[str], list[bytes]]:
        return urls, auxes

    def route_edges(self, source: str, targets: set[str]) -> Iterable[str]:
        return targets

    def may_give_up(self) -> bool:
        return True

    def stop(self) -> defer.Deferred[None]:
        return defer.succeed(None)

    def figures(self) -> dict[str, int]:
        return {}


def peers_from_crawler(crawler: Any, clock: Any) -> Peers:
    """The crawl's peers: the agent with ``IRL_REDIS_URL``, else :class:`NoPeers`."""
    if not defaults.get(crawler.settings, "IRL_REDIS_URL"):
        return NoPeers()
    peers: Peers = load_object(AGENT_PEERS).from_crawler(crawler, clock)
    return peers
