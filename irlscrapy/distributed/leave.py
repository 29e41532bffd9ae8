"""An agent that leaves a multi-agent crawl gracefully hands its partitions over, with
the URLs it holds for them and the knowledge of the URLs it has seen.

Theory of operation
-------------------
``irlscrapy agents leave AGENT`` sets ``irl:{c}:leave:{agent}``; the agent reads it at
its next renewal (:mod:`irlscrapy.distributed.agent`) and its scheduler starts a
:class:`Departure`:

1. *Settle.* No fetch is handed out any more; the agent reads no more batches. Once
   nothing is in flight, no page is being handled, the batches read are acknowledged
   and every URL submitted to URLseen is merged and stored (in BEAST, or in the
   workbench), the agent holds everything it knows.
2. *Export.* The stored URLs (:func:`stored_records`: the workbench's and the bench's,
   parked first, then every record of BEAST and of the parked store, read without
   taking them) go to their partitions' streams *handed over*, with the aux bytes the
   new owner's intake stores (their priority and payload) and the handover's salt
   (:mod:`irlscrapy.distributed.leavemarks`). The keys URLseen holds go
   to every heir, once per heir (:func:`heir_batches`): URLseen keys carry no
   partition, and a key another partition's owner stores is never looked up there, so
   each heir may have them all.
   A URL handed over is admitted by its new owner although these keys (or its own:
   the URL may come back to an agent that held it before) say it was seen, once per
   salt (:meth:`irlscrapy.scheduler.intake.Intake.receive`).
3. *Leave.* The spider closes (reason ``agent_left``); the agent's last round of I/O
   sends all of it, acknowledges, gives its IP leases back, then removes it from the
   members, which hands its partitions to the others (rendezvous hashing over the
   members), and clears the request. The JOBDIR is marked left: started again, it
   refuses (its work was handed over; a new JOBDIR joins the crawl anew).

*The heirs.* An agent that finds itself owning new partitions reads their whole
backlog at once, the batches the old owner read and never acknowledged included
(``XAUTOCLAIM``), and stores the handed-over keys in its URLseen before any URL of the
same delivery (:meth:`irlscrapy.scheduler.intake.Intake.receive_keys`). Since the leaver
sends everything before it stops being a member, the backlog holds every key by then:
no URL the leaver had seen is admitted again, and each URL it held is admitted once.

*A kill during a leave.* Nothing is taken out of BEAST or the parked store, and the URL
records sent are in the outbox's journal, so a leave cut short starts over at the next
start, under the same salt: the records it sent meanwhile come back to it (it still
owns their partitions) and its intake drops them (their salt is its own), those its
heirs already have are not admitted twice, and the keys it sent change nothing.

A handoff under way (:mod:`irlscrapy.distributed.join`) ends before the export.

Not handed over: STAR's in-degrees of the moved PLDs (their new owner counts from the
links it receives from then on), robots.txt rules and host health (learnt again), and
Requests that cannot be stored (refused, as a finished crawl refuses them). Politeness
across the handover: the IP delay holds (the leaver gives its IP leases back with their
due times); a host's delay is not carried over, but an heir reaches a moved host only
after the leave (seconds: the leaver settles, closes, and the heirs see the new members
at their next renewal), and its first request there is the host's robots.txt.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
from twisted.internet import task

from irlscrapy.distributed.leavemarks import new_salt
from irlscrapy.distributed.partitions import assignment
from irlscrapy.distributed.streams import Outgoing
from irlscrapy.runtime.closing import close_spider
from irlscrapy.runtime.internals import spider_busy
from irlscrapy.scheduler.frontieritems import unpack_record
from irlscrapy.scheduler.intake import handed_off_aux
from irlscrapy.scheduler.peers import LEFT_REASON
from irlscrapy.scheduler.requestcodec import payload_url

if TYPE_CHECKING:
    from irlscrapy.distributed.agent import Agent
    from irlscrapy.scheduler.dispatch import Dispatcher
    from irlscrapy.scheduler.intake import Intake
    from irlscrapy.scheduler.stages import Frontier

logger = logging.getLogger(__name__)

#: Seconds between two looks at whether the agent has settled ...
SETTLE_POLL_S = 0.5
#: ... and between two log lines saying what it still waits for.
SAY_EVERY_S = 10.0
#: Keys a handover entry holds at most (8 bytes each: half a megabyte).
HANDOVER_KEYS = 65_536
#: URLs routed per call while exporting.
EXPORT_CHUNK = 10_000


def heir_batches(
    keys: np.ndarray, heirs: dict[str, frozenset[int]], owned: frozenset[int]
) -> list[Outgoing]:
    """``keys`` for every heir (agent -> the partitions it will own) that takes one of
    the ``owned`` partitions, as entries of the stream of the first it takes."""
    raw = np.asarray(keys, dtype=">u8")
    batches = []
    for partitions in heirs.values():
        moved = sorted(partitions & owned)
        for at in range(0, len(raw) if moved else 0, HANDOVER_KEYS):
            part = raw[at : at + HANDOVER_KEYS]
            batches.append(Outgoing(moved[0], records=len(part), keys=part.tobytes()))
    return batches


def stored_records(frontier: Frontier) -> Iterator[bytes]:
    """Every stored URL of ``frontier`` as a frontier record (priority, batch, payload):
    those in RAM are parked first (Frontier.give_up), then BEAST's records and the
    parked ones are read where they lie."""
    frontier.give_up()
    yield from frontier.beast.records()
    yield from frontier.holds.parked.records()


class Departure:
    """The leaving agent's side (see the module docstring): started by :meth:`begin`,
    it closes the spider once everything is ready to go."""

    def __init__(
        self,
        agent: Agent,
        intake: Intake,
        frontier: Frontier,
        dispatcher: Dispatcher,
        crawler: Any,
        clock: Any,
        handing_off: Callable[[], bool],
    ) -> None:
        self.agent = agent
        self.handing_off = handing_off  # a handoff under way ends first
        self.crawler = crawler
        self.intake = intake
        self.frontier = frontier
        self.dispatcher = dispatcher
        self.clock = clock
        self.begun = False
        self._loop: task.LoopingCall | None = None
        self._say_at = 0.0  # when to say what it waits for

    def begin(self) -> None:
        if self.begun:
            return
        self.begun = True
        directory = self.agent.journal.directory if self.agent.journal is not None else None
        ownership = self.agent.ownership
        # (a leave cut short goes on under its salt, read at the start: Agent.start)
        if directory is not None and ownership.salt_kind != "leave":
            ownership.set_salt("leave", new_salt(directory, "leave"))
        self._say_at = self.clock.seconds() + SAY_EVERY_S
        logger.info(
            "Agent %s leaves the crawl: it finishes its fetches in flight, then hands its "
            "partitions over",
            self.agent.id,
        )
        self._loop = task.LoopingCall(self._look)
        self._loop.clock = self.clock
        self._loop.start(SETTLE_POLL_S, now=False)

    def waiting_for(self) -> list[str]:
        """What keeps the agent from having all it knows on its disk (empty: nothing)."""
        intake, ledger = self.intake, self.dispatcher.ledger
        if intake.pending and not intake.merging:
            intake.flush()
        waits = {
            "fetches in flight": len(ledger),
            "pages being handled": spider_busy(self.crawler),
            "URLseen merging or storing": intake.merging,
            "URLs waiting for URLseen": intake.pending,
            "URLs waiting for DNS": self.frontier.waiting_dns,
            "batches read and not acknowledged": not self.agent.reads_settled,
            "records spilled to disk, to send": self.agent.journal is not None
            and self.agent.journal.spilling,
            "partitions taken over, to read": self.agent.ownership.taken_over,
            "a handoff to agents that joined": self.handing_off(),
        }
        return [what for what, count in waits.items() if count]

    def _look(self) -> None:
        waits = self.waiting_for()
        if waits:
            now = self.clock.seconds()
            if now >= self._say_at:
                self._say_at = now + SAY_EVERY_S
                logger.info("Agent %s leaves once it has no %s", self.agent.id, ", ".join(waits))
            return
        assert self._loop is not None
        self._loop.stop()
        urls, keys = self.export()
        logger.info(
            "Agent %s hands over %d URLs it held and %d keys of URLs it has seen",
            self.agent.id,
            urls,
            keys,
        )
        close_spider(self.crawler, LEFT_REASON)

    def export(self) -> tuple[int, int]:
        """Route the stored URLs to their partitions, handed over, and the seen keys to
        the heirs; return how many of each."""
        agent = self.agent
        members = agent.handover_members = sorted(agent.ownership.members)
        salt = agent.ownership.salt
        sent = 0
        urls: list[str] = []
        auxes: list[bytes] = []
        for record in stored_records(self.frontier):
            priority, _, payload = unpack_record(record)
            urls.append(payload_url(payload))
            auxes.append(handed_off_aux(priority, payload, salt))
            if len(urls) >= EXPORT_CHUNK:
                agent.router.hand_over_urls(urls, auxes)
                sent, urls, auxes = sent + len(urls), [], []
        agent.router.hand_over_urls(urls, auxes)
        sent += len(urls)
        keys = 0
        drum = self.intake.urlseen.drum
        assert drum is not None
        heirs = assignment([m for m in members if m != agent.id], agent.settings.partitions)
        for stored, _ in drum.items():
            agent.send_as_it_leaves(heir_batches(stored, heirs, agent.ownership.owned))
            keys += len(stored)
        agent.handed_over = True
        return sent, keys
