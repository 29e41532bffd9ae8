"""Opening the frontier over a state directory, and resuming what a restart finds there.

:func:`open_frontier` opens BEAST, the admitted journal and the parked store under the
state directory (:mod:`irlscrapy.scheduler.statedir` has the file map) and builds the
:class:`~irlscrapy.scheduler.stages.Frontier` on them. It returns what the previous
run left (:class:`Found`): the URLs it had admitted to RAM (fetched again: their pages
were not done), the URLs it parked, and the *restart skip* of the intake
(:mod:`irlscrapy.scheduler.intake`): the last URLseen batch found stored, and how many
of its URLs were. :func:`resume` queues the first two again, once the scheduler has
wired the frontier's callbacks (a URL refused on its way back must reach the engine).
The URLs admitted again, and the restart hold, are recoveries
(:mod:`irlscrapy.storage.recovery`: ``irl/recovered/readmitted``, ``irl/recovered/restart_hold``).

Invariant: *a URL that was admitted before the stop and is readmitted at open is
fetched once in the resumed run, whichever path brought it (a Request, a page's
``Links``, a redirect or a retry)*; and a URL whose page was done before the stop is
fetched again only if a kill -9 came while it was in flight (its page not done). What
holds it:

- the admitted journal and BEAST hold each URL not done once between them: every
  record BEAST hands out moves the journal's cursor past it, the records given back
  to a later queue for a full host included (:meth:`AdmittedJournal.returned`), so
  BEAST resumes after it and a readmitted URL is not also queued (a kill -9 between a
  record's copy and its cursor record, one append apart, leaves it queued twice);
- a retry or a redirect is journaled as it reaches its host (``push_direct``) before
  the fetch it replaces is done, so one of the two is readmitted, never both (but at a
  kill -9 in between: the original was in flight);
- what URLseen delivers again after a stop (the batches merged and not stored) is
  stored from where the stop cut it (the intake's restart skip), and a URL it stored
  before is not delivered again;
- a start request (Scrapy's ``start_urls`` are ``dont_filter``) is taken in once per
  state directory (:mod:`irlscrapy.scheduler.startrequests`), so a rerun does not queue it
  again.

tests/component/test_resume_exactness.py holds the frontier to the first two against
a set, across closes and kills; tests/e2e/firsthour/test_resume.py holds a Scrapy
project stopped by SIGINT and kill -9 to stock Scrapy's items.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from irlscrapy import defaults
from irlscrapy.domains import PayLevelDomains, domain_key
from irlscrapy.exceptions import ConfigurationError
from irlscrapy.scheduler.frontier.admitted import Admitted, AdmittedJournal, journal_lost
from irlscrapy.scheduler.frontier.beast import Beast
from irlscrapy.scheduler.frontier.horizon import Horizon
from irlscrapy.scheduler.frontier.parking import ParkedStore
from irlscrapy.scheduler.frontier.restarthold import RestartHold
from irlscrapy.scheduler.frontier.workbench import Workbench
from irlscrapy.scheduler.frontieritems import unpack_record
from irlscrapy.scheduler.hosts.delays import Politeness
from irlscrapy.scheduler.hosts.robotscache import RobotsCache
from irlscrapy.scheduler.resplitter import begun_on_open, discard_off_the_reactor
from irlscrapy.scheduler.stages import Frontier
from irlscrapy.state.directory import StateDirectory
from irlscrapy.storage.recovery import recovered

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class FrontierSettings:
    max_queues: int  # IRL_BEAST_MAX_QUEUES
    capacity: int  # IRL_WORKBENCH_URLS
    host_cap: int  # IRL_WORKBENCH_HOST_URLS
    horizon: float  # IRL_WORKBENCH_HORIZON; 0: none
    user_agent: str  # ROBOTSTXT_USER_AGENT, else USER_AGENT
    obey_robots: bool  # ROBOTSTXT_OBEY
    max_crawl_delay: float  # IRL_ROBOTS_MAX_CRAWL_DELAY

    @classmethod
    def from_settings(cls, settings: Any) -> FrontierSettings:
        for name in ("IRL_WORKBENCH_URLS", "IRL_WORKBENCH_HOST_URLS"):
            if defaults.get(settings, name) < 1:
                raise ConfigurationError(f"{name} must be >= 1")
        horizon = defaults.get(settings, "IRL_WORKBENCH_HORIZON")
        if horizon < 0:
            raise ConfigurationError(
                f"IRL_WORKBENCH_HORIZON={horizon}: give seconds >= 0 (0: no horizon)"
            )
        return cls(
            max_queues=defaults.get(settings, "IRL_BEAST_MAX_QUEUES"),
            capacity=defaults.get(settings, "IRL_WORKBENCH_URLS"),
            host_cap=defaults.get(settings, "IRL_WORKBENCH_HOST_URLS"),
            horizon=horizon,
            user_agent=settings.get("ROBOTSTXT_USER_AGENT") or settings.get("USER_AGENT"),
            obey_robots=settings.getbool("ROBOTSTXT_OBEY"),
            max_crawl_delay=defaults.get(settings, "IRL_ROBOTS_MAX_CRAWL_DELAY"),
        )


@dataclass
class Found:
    """What a previous run left in the state directory."""

    admitted: list[Admitted]  # admitted to RAM, pages not done
    parked: list[Any]  # the parked files before this run (ParkedStore.open)
    #: the last URLseen batch tag stored, and the payloads of it stored; (-1, {}) none
    stored_before_restart: tuple[int, set[bytes]]


class LastBatch:
    """The URLseen batch tag stored last, and which of its URLs were stored, from the
    records a restart finds (a batch's records may be stored in any subset: BEAST writes
    them a queue file at a time, irlscrapy.scheduler.intake's restart skip)."""

    def __init__(self) -> None:
        self.tag = -1
        self.payloads: set[bytes] = set()

    def visit(self, record: bytes) -> None:
        _, tag, payload = unpack_record(record)
        if not tag:
            return  # a record of no URLseen batch
        if tag > self.tag:
            self.tag, self.payloads = tag, set()
        if tag == self.tag:
            self.payloads.add(payload)


def open_frontier(
    state: StateDirectory,
    settings: FrontierSettings,
    politeness: Politeness,
    beast_budget: Callable[[int], int],
    delay_budget: Callable[[int], int],
    robots: RobotsCache,
    plds: PayLevelDomains,
    **services: Any,
) -> tuple[Frontier, Found]:
    """The frontier on ``state`` and what the last run left. ``beast_budget``: a PLD
    key's budget per BEAST queue; ``delay_budget``: the budget that scales its hosts'
    delays (:func:`irlscrapy.star.budgets.budget_sources`); ``services``: Frontier's
    resolve, stats, clock and guard."""
    lost = journal_lost(state.root, state / "beast" / "state.json")
    if lost is not None:
        raise lost
    journal = AdmittedJournal(state.root)
    admitted = journal.open()
    beast = Beast(
        state / "beast",
        beast_budget,
        max_queues=settings.max_queues,
        on_slot_read=journal.slot_read,
        on_resplit=begun_on_open,  # (the scheduler's Resplitter runs re-splits)
        discard=discard_off_the_reactor,
    )
    last = LastBatch()
    beast.open(journal.cursor, last.visit)
    for entry in admitted:
        last.visit(entry.item)

    def host_budget(host: str) -> int:
        """The budget of the host's PLD: where a host joins the workbench, and at
        every release (STAR's ranks change while it stays)."""
        return delay_budget(domain_key(plds(host)))

    workbench = Workbench(
        politeness.of_host,
        politeness.of_ip,
        budget_of=host_budget,
        host_wait=politeness.wait_of_host,
    )

    horizon = Horizon(settings.horizon, services["clock"]) if settings.horizon > 0 else None
    parked = ParkedStore(state.root)
    parked_before = parked.open()
    frontier = Frontier(
        beast,
        workbench,
        journal,
        parked,
        host_budget=host_budget,
        capacity=settings.capacity,
        host_cap=settings.host_cap,
        user_agent=settings.user_agent,
        robots=robots if settings.obey_robots else None,
        max_crawl_delay=settings.max_crawl_delay,
        plds=plds,
        horizon=horizon,
        **services,
    )
    if admitted or len(beast) or journal.next_id > 1:  # a run before this one fetched
        longest = max(politeness.longest, settings.max_crawl_delay)
        frontier.restart_hold = RestartHold(
            services["clock"](), longest, workbench.host_delay, workbench.ip_delay
        )
        recovered("restart_hold", detail=f"for up to {longest:g} s")
    if admitted or len(beast):
        logger.info("resuming from %s: %d URLs queued", state.path, len(beast))
    if admitted:
        recovered("readmitted", count=len(admitted))
    return frontier, Found(admitted, parked_before, (last.tag, last.payloads))


def resume(frontier: Frontier, found: Found) -> None:
    """Queue again what the last run admitted and parked."""
    frontier.readmit(found.admitted)
    replayed = frontier.holds.replay_parked(found.parked)
    if replayed:
        logger.info(
            "%d parked URLs (of hosts retired, or given up by the last run) queued again",
            replayed,
        )


def leave(frontier: Frontier, state: StateDirectory, stats: Any) -> None:
    """Close the frontier, saying what the next run will find parked."""
    parked = frontier.holds.parked.count
    if parked:
        stats.set_value("irl/frontier/parked_at_close", parked)
        logger.info(
            "%d URLs of hosts or origins that kept failing are parked in %s%s",
            parked,
            state.path,
            ""
            if state.temporary
            else "; run the crawl again with the same JOBDIR to try them again",
        )
    frontier.close()
