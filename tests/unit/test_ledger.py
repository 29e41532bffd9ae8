"""The fetch ledger against a model (a dict of token -> phase), under Hypothesis: every
token is in flight, pending its page, or done; end() and page_done() act once; the
sweep takes pending pages in the order their fetches ended, PAGE_DONE_AFTER later."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from irlscrapy.scheduler.ledger import PAGE_DONE_AFTER, FetchLedger


class LedgerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.ledger: FetchLedger[str, str] = FetchLedger()
        self.now = 0.0
        self.phase: dict[int, str] = {}  # token -> "flight" | "page" | "done"
        self.released: dict[int, float] = {}
        self.order: list[int] = []  # release order of pages still pending

    @rule(robots=st.booleans())
    def hand_out(self, robots: bool) -> None:
        token = self.ledger.hand_out("host", f"item{len(self.phase) + 1}", robots)
        assert token not in self.phase
        self.phase[token] = "flight"

    @rule(seconds=st.floats(0, 2 * PAGE_DONE_AFTER))
    def wait(self, seconds: float) -> None:
        self.now += seconds

    @precondition(lambda self: self.phase)
    @rule(data=st.data())
    def end(self, data: st.DataObject) -> None:
        token = data.draw(st.sampled_from(sorted(self.phase)))
        fetch = self.ledger.end(token, self.now)
        if self.phase[token] == "flight":
            assert fetch is not None and fetch.item == f"item{token}"
            self.phase[token] = "page"
            self.released[token] = self.now
            self.order.append(token)
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
            self.order.remove(token)
        else:
            assert item is None

    @rule()
    def sweep(self) -> None:
        swept = list(self.ledger.sweep(self.now))
        expected = []
        for token in list(self.order):
            if self.released[token] > self.now - PAGE_DONE_AFTER:
                break
            expected.append(f"item{token}")
            self.phase[token] = "done"
            self.order.remove(token)
        assert swept == expected

    @invariant()
    def counts_agree(self) -> None:
        flying = [t for t, p in self.phase.items() if p == "flight"]
        assert len(self.ledger) == len(flying)
        assert self.ledger.pages_pending == sum(1 for p in self.phase.values() if p == "page")
        for token in flying:
            fetch = self.ledger.in_flight(token)
            assert fetch is not None and fetch.item == f"item{token}"


TestLedger = LedgerMachine.TestCase
TestLedger.settings = settings(max_examples=200, stateful_step_count=40, deadline=None)
