"""Where each URL and PLD edge an agent finds goes (the multi-agent mode).

Theory of operation
-------------------
A PLD's partition (:mod:`irlscrapy.distributed.partitions`) belongs to one member of
the crawl. The intake asks :meth:`Router.route_urls` before URLseen: the URLs of this
agent's partitions go on to its URLseen as before; the others go to their owner's
partition stream (:mod:`irlscrapy.distributed.streams`) in batches, each URL with the aux
bytes the owner's intake stores with it (priority, depth, callback, referer). A URL sent
recently is not sent again (:class:`irlscrapy.distributed.sentcache.SentCache`). STAR's
PLD edges go the same way to the owner of the *target* PLD (:meth:`Router.route_edges`),
whose in-degree store counts them. What is routed away is on disk (the outbox's journal,
:mod:`irlscrapy.distributed.outboxjournal`) before the page that found it is done, so a
kill -9 loses none of it. All of it runs on the reactor.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from irlscrapy.distributed.outboxjournal import OutboxJournal
from irlscrapy.distributed.partitions import PartitionCache
from irlscrapy.distributed.sentcache import SentCache
from irlscrapy.distributed.streams import Batch, Outbox
from irlscrapy.domains import PayLevelDomains, url_host
from irlscrapy.dupefilters.urlkey import url_keys


class Router:
    def __init__(
        self,
        plds: PayLevelDomains,
        partitions: int,
        outbox: Outbox,
        sent: SentCache | None,
        stats: Any,
        clock: Any,
    ) -> None:
        self.partitions = PartitionCache(plds, partitions)
        self.owned_mask = np.zeros(partitions, dtype=bool)
        self.outbox = outbox
        self.sent = sent
        self.stats = stats
        self.clock = clock
        self.journal: OutboxJournal | None = None  # set by the agent as it starts
        self.began = False  # this agent routed a URL or had work: the crawl has begun

    def own(self, owned: Iterable[int]) -> None:
        """From now on this agent owns the partitions ``owned``, and no other."""
        self.owned_mask[:] = False
        self.owned_mask[list(owned)] = True

    def route_urls(
        self, urls: Sequence[str], auxes: Sequence[bytes]
    ) -> tuple[list[str], list[bytes]]:
        """The URLs (and auxes) this agent owns; the others go to the outbox."""
        self.began = True
        parts = np.fromiter(
            (self.partitions.of_host(url_host(u)) for u in urls), dtype=np.int64, count=len(urls)
        )
        mine = self.owned_mask[parts]
        if mine.all():
            return list(urls), list(auxes)
        foreign = np.flatnonzero(~mine)
        if self.sent is None:
            send = np.ones(len(foreign), dtype=bool)
        else:
            send = self.sent.first_sends(url_keys([urls[i] for i in foreign.tolist()]))
        routed: dict[int, Batch] = {}
        for i in foreign[send].tolist():
            p = int(parts[i])
            batch = routed.setdefault(p, Batch(p))
            batch.urls.append(urls[i])
            batch.auxes.append(auxes[i])
        self._route(routed)
        self.stats.inc_value("irl/agent/urls_out", int(send.sum()))
        self.stats.inc_value("irl/agent/urls_out_cached", len(foreign) - int(send.sum()))
        kept = np.flatnonzero(mine).tolist()
        return [urls[i] for i in kept], [auxes[i] for i in kept]

    def route_edges(self, source: str, targets: Iterable[str]) -> list[str]:
        """The PLDs of ``targets`` this agent owns; the edges to the others go to the
        outbox, for the target's owner to count."""
        mine = []
        routed: dict[int, Batch] = {}
        for target in targets:
            p = self.partitions.of_pld(target)
            if self.owned_mask[p]:
                mine.append(target)
            else:
                routed.setdefault(p, Batch(p)).edges.append((source, target))
        self._route(routed)
        return mine

    def hand_over_urls(self, urls: Sequence[str], auxes: Sequence[bytes]) -> None:
        """URLs this agent held, each to its partition's stream (it is leaving)."""
        routed: dict[int, Batch] = {}
        for url, aux in zip(urls, auxes, strict=True):
            p = self.partitions.of_host(url_host(url))
            batch = routed.setdefault(p, Batch(p))
            batch.urls.append(url)
            batch.auxes.append(aux)
        self._route(routed)

    def _route(self, routed: dict[int, Batch]) -> None:
        """To the outbox, and on disk first: before the page that found them is done,
        so a kill -9 loses none."""
        if routed:
            assert self.journal is not None, "start() first"
            now = self.clock.seconds()
            for p, batch in routed.items():
                chunk = batch.encode()
                self.journal.append(p, chunk)
                self.outbox.add(p, chunk, now)
