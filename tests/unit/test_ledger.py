"""The fetch ledger against a model (a dict of token -> phase), under Hypothesis: every
token is in flight, pending its page, or done; end() and page_done() act once; finished()
takes the pending pages (or only the handled ones) whose requests the engine no longer
holds, and only those; a page cut (its download cut as the spider closed) is never
done; the fetches downloading are those in flight less the robots.txt fetches that
left; a retry or redirect may replace a fetch in flight, or pending and not handled."""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from irlscrapy.scheduler.ledger import FetchLedger


class LedgerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.ledger: FetchLedger[str, str] = FetchLedger()
        self.phase: dict[int, str] = {}  # token -> "flight" | "page" | "done" | "cut"
        self.running: set[str] = set()  # the requests the engine holds
        self.robots: set[int] = set()  # robots.txt fetches
        self.left: set[int] = set()  # robots.txt fetches out of the downloader, in flight
        self.handled: set[int] = set()  # pages pending the spider has yielded all of

    @rule(robots=st.booleans())
    def hand_out(self, robots: bool) -> None:
        request = f"request{len(self.phase) + 1}"
        token = self.ledger.hand_out("host", f"item{len(self.phase) + 1}", robots, request)
        assert token not in self.phase
        self.phase[token] = "flight"
        self.running.add(request)
        if robots:
            self.robots.add(token)

    @precondition(lambda self: self.robots)
    @rule(data=st.data())
    def robots_left_the_downloader(self, data: st.DataObject) -> None:
        token = data.draw(st.sampled_from(sorted(self.robots)))
        if self.phase[token] == "flight" and token not in self.left:
            self.ledger.left(token, 1.0)
            self.left.add(token)

    @precondition(lambda self: self.running)
    @rule(data=st.data())
    def engine_lets_go(self, data: st.DataObject) -> None:
        self.running.discard(data.draw(st.sampled_from(sorted(self.running))))

    @precondition(lambda self: self.phase)
    @rule(data=st.data())
    def end(self, data: st.DataObject) -> None:
        token = data.draw(st.sampled_from(sorted(self.phase)))
        fetch = self.ledger.end(token)
        if self.phase[token] == "flight":
            assert fetch is not None and fetch.item == f"item{token}"
            assert fetch.request == f"request{token}"
            self.phase[token] = "page"
            self.left.discard(token)
        else:
            assert fetch is None

    @precondition(lambda self: self.phase)
    @rule(data=st.data())
    def page_done(self, data: st.DataObject) -> None:
        token = data.draw(st.sampled_from(sorted(self.phase)))
        item = self.ledger.page_done(token)
        if self.phase[token] == "page":
            assert item == f"item{token}"
            self.phase[token] = "done"
            self.handled.discard(token)
        else:
            assert item is None

    @precondition(lambda self: self.phase)
    @rule(data=st.data())
    def handled_by_the_spider(self, data: st.DataObject) -> None:
        token = data.draw(st.sampled_from(sorted(self.phase)))
        self.ledger.handled(token)
        if self.phase[token] == "page":
            self.handled.add(token)

    @precondition(lambda self: self.phase)
    @rule(data=st.data())
    def cut(self, data: st.DataObject) -> None:
        token = data.draw(st.sampled_from(sorted(self.phase)))
        self.ledger.cut(token)
        if self.phase[token] == "page":
            self.phase[token] = "cut"  # its URL stays admitted: never done
            self.handled.discard(token)

    @rule(handled=st.booleans())
    def finished(self, handled: bool) -> None:
        done = self.ledger.finished(self.running, handled=handled)
        expected = [
            f"item{token}"
            for token, phase in self.phase.items()
            if phase == "page"
            and f"request{token}" not in self.running
            and (token in self.handled or not handled)
        ]
        assert sorted(done) == sorted(expected)
        for item in done:
            token = int(item.removeprefix("item"))
            self.phase[token] = "done"
            self.handled.discard(token)

    @invariant()
    def counts_agree(self) -> None:
        flying = [t for t, p in self.phase.items() if p == "flight"]
        assert len(self.ledger) == len(flying)
        assert self.ledger.downloading == len(flying) - len(self.left)
        assert self.ledger.pages_pending == sum(1 for p in self.phase.values() if p == "page")
        assert self.ledger.pages_handled == len(self.handled)
        assert all(self.phase[token] == "page" for token in self.handled)
        for token, phase in self.phase.items():  # a retry or redirect may replace these
            expected = phase == "flight" or (phase == "page" and token not in self.handled)
            assert self.ledger.replaceable(token) == expected
        for token in flying:
            fetch = self.ledger.in_flight(token)
            assert fetch is not None and fetch.item == f"item{token}"


TestLedger = LedgerMachine.TestCase
