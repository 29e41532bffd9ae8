"""Resume exactness: the frontier over a state directory, stopped (closed, or killed)
and reopened by :func:`irlscrapy.scheduler.resume.open_frontier`, against a set.

A Hypothesis state machine pushes new URLs of a few hosts, admits them from BEAST into
a workbench that holds one or two URLs per host (so most records are taken and given
back to later queues: deferred), hands them out, finishes some, replaces some by a
retry or a redirect (which go straight to their host), and stops the crawl by a close
or by a kill -9 (the objects dropped unclosed, their files as a killed process leaves
them), then reopens. The model is the set of URLs pushed and not finished.

Invariants (:mod:`irlscrapy.scheduler.resume`):
*after a reopen, the URLs readmitted and those BEAST holds are the model's, each once*;
*in a run, no URL is handed out twice*; and at the end every URL is handed out.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from twisted.internet import defer

from harness.frontierfixture import Stats
from irlscrapy.domains import PayLevelDomains
from irlscrapy.scheduler.frontier.workbench import VisitState
from irlscrapy.scheduler.frontieritems import HEAD, Item
from irlscrapy.scheduler.hosts.addressguard import AddressGuard
from irlscrapy.scheduler.hosts.delays import Politeness
from irlscrapy.scheduler.hosts.robotscache import RobotsCache
from irlscrapy.scheduler.requestcodec import encode_link, payload_url
from irlscrapy.scheduler.resume import Found, FrontierSettings, open_frontier, resume
from irlscrapy.scheduler.stages import Frontier
from irlscrapy.state.directory import StateDirectory

#: the hosts, and their addresses (public ones: the address guard refuses the others)
ADDRESSES = {"a.example": "8.8.8.8", "b.example": "8.8.4.4", "c.example": "8.8.4.4"}
HOSTS = tuple(ADDRESSES)


def record_url(record: bytes) -> str:
    return payload_url(record[HEAD.size :])


class ResumeMachine(RuleBasedStateMachine):
    @initialize(host_cap=st.integers(1, 2), budget=st.integers(1, 3))
    def start(self, host_cap: int, budget: int) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="irlscrapy-resume-"))
        self.host_cap, self.budget = host_cap, budget
        self.now = 0.0
        self.pushed = 0
        self.outstanding: set[str] = set()  # the model: pushed, not finished
        self.killed: list[tuple[Frontier, StateDirectory]] = []
        self._open()

    def _open(self) -> None:
        self.state = StateDirectory(self.dir)
        self.state.open()
        self.frontier, found = open_frontier(
            self.state,
            FrontierSettings(
                max_queues=8,
                capacity=100,
                host_cap=self.host_cap,
                horizon=0,
                user_agent="test",
                obey_robots=False,
                max_crawl_delay=0.0,
            ),
            Politeness(0.0, 0.0, 0.0, 0.0, self.budget),
            lambda domain: self.budget,
            lambda domain: self.budget,
            RobotsCache(ttl=1.0, retry_delay=1.0, retries=1, ram_hosts=10, ram_bodies=10),
            PayLevelDomains(),
            resolve=lambda host: defer.succeed(ADDRESSES[host]),
            stats=Stats(),
            clock=lambda: self.now,
            guard=AddressGuard(),
        )
        self.check_found(found)
        resume(self.frontier, found)
        self.handed: Counter[str] = Counter()  # handed out in this run
        self.in_flight: list[tuple[VisitState, Item]] = []

    def check_found(self, found: Found) -> None:
        """What the last run left: the URLs not finished, each once."""
        held = Counter(record_url(a.item) for a in found.admitted)
        held.update(record_url(record) for record in self.frontier.beast.records())
        assert held == Counter(self.outstanding), {
            "twice": sorted(url for url, n in held.items() if n > 1),
            "lost": sorted(self.outstanding - set(held)),
            "finished, back": sorted(set(held) - self.outstanding),
        }

    @rule(host=st.sampled_from(HOSTS), count=st.integers(1, 6))
    def push(self, host: str, count: int) -> None:
        for _ in range(count):
            self.pushed += 1
            url = f"http://{host}/{self.pushed}"
            self.frontier.push(encode_link(url, 0, None, None))
            self.outstanding.add(url)

    @rule()
    def admit(self) -> None:
        self.frontier.admission.resume()  # (as the dispatcher's idle refill does)
        self.frontier.admission.admit()

    @rule(records=st.integers(1, 4))
    def resplit(self, records: int) -> None:
        """A slice of BEAST's re-split in flight (the scheduler runs them between
        reactor turns: irlscrapy.scheduler.resplitter)."""
        self.frontier.beast.resplit_step(records)

    @rule()
    def take(self) -> None:
        self.now += 1.0
        got = self.frontier.take(self.now)
        if got is None:
            return
        state, item = got
        assert isinstance(item, tuple)
        url = payload_url(item[0])
        assert url in self.outstanding, f"{url} was finished before"
        self.handed[url] += 1
        assert self.handed[url] == 1, f"{url} handed out twice in a run"
        self.in_flight.append((state, item))

    @precondition(lambda self: self.in_flight)
    @rule(which=st.integers(0, 1000))
    def finish(self, which: int) -> None:
        """A fetch ends and its page is done."""
        state, item = self.in_flight.pop(which % len(self.in_flight))
        self.frontier.workbench.release(state, self.now)
        self.frontier.finished(item)
        self.outstanding.discard(payload_url(item[0]))

    @precondition(lambda self: self.in_flight)
    @rule(which=st.integers(0, 1000), redirect=st.booleans())
    def replace(self, which: int, redirect: bool) -> None:
        """A fetch comes back as a retry of its URL, or a redirect to another URL of its
        host (Intake.enqueue_request): the new request reaches its host first, then the
        fetch it replaces is done."""
        state, item = self.in_flight.pop(which % len(self.in_flight))
        url = payload_url(item[0])
        if redirect:
            self.pushed += 1
            target = f"http://{state.host}/{self.pushed}"
            self.frontier.push_direct(encode_link(target, 0, None, None))
            self.outstanding.add(target)
            self.outstanding.discard(url)
        else:
            self.frontier.push_direct(item[0])
            self.handed[url] -= 1  # (the retry is handed out once more)
        self.frontier.workbench.release(state, self.now)
        self.frontier.finished(item)

    @rule(killed=st.booleans())
    def restart(self, killed: bool) -> None:
        """Ctrl-C (close) or kill -9 (files left as they are), then the next run."""
        if killed:
            self.killed.append((self.frontier, self.state))
            self.state.close()  # (the lock goes with a killed process)
        else:
            self.frontier.close()
            self.state.close()
        self._open()

    @invariant()
    def holds_what_is_outstanding(self) -> None:
        assert len(self.frontier) + len(self.in_flight) >= len(self.outstanding)

    def teardown(self) -> None:
        if not hasattr(self, "frontier"):
            return
        try:
            self.drain()
        finally:
            self.frontier.close()
            self.state.close()
            for frontier, _ in self.killed:
                frontier.beast.close()  # (its files only: the directory is gone next)
                frontier.journal.close()
                frontier.holds.parked.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    def drain(self) -> None:
        """The crawl to its end: every URL outstanding is handed out once."""
        for state, item in self.in_flight:
            self.frontier.workbench.release(state, self.now)
            self.frontier.finished(item)
            self.outstanding.discard(payload_url(item[0]))
        self.in_flight = []
        while self.outstanding:
            self.now += 1.0
            self.frontier.admission.resume()
            self.frontier.admission.admit()
            got = self.frontier.take(self.now)
            if got is None:
                beast = self.frontier.beast
                assert beast.resplit_step() or self.frontier.admission.can_admit(), sorted(
                    self.outstanding
                )
                continue
            state, item = got
            url = payload_url(item[0])  # type: ignore[index]
            assert url in self.outstanding, f"{url} handed out again"
            self.handed[url] += 1
            self.frontier.workbench.release(state, self.now)
            self.frontier.finished(item)
            self.outstanding.discard(url)
        assert not len(self.frontier), "URLs left after every URL was handed out"


ResumeMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=40, deadline=None)
test_resume_is_exact = ResumeMachine.TestCase
