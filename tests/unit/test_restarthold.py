"""Politeness across a restart (irlscrapy.scheduler.frontier.restarthold): while the hold
lasts, a host is not asked before the run opened plus its host's or its IP's delay,
whichever is longer; after the longest delay, nothing is held."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from irlscrapy.scheduler.frontier.restarthold import RestartHold

delays = st.floats(0.0, 30.0)


@given(host=delays, ip=delays, longest=delays, elapsed=st.floats(0.0, 60.0))
def test_nothing_is_asked_before_its_delay_after_the_run_opened(
    host: float, ip: float, longest: float, elapsed: float
) -> None:
    opened = 1000.0
    hold = RestartHold(opened, longest, lambda state: state.delay, lambda entry: entry.delay)
    now, due = opened + elapsed, opened + max(host, ip)
    until = hold.until(SimpleNamespace(delay=host), SimpleNamespace(delay=ip), now)
    if now >= opened + longest or now >= due:
        assert until is None
    else:
        assert until == due


class _Workbench:
    def __init__(self) -> None:
        self.ips = {"1.2.3.4": SimpleNamespace(delay=0.5)}
        self.calls: list[tuple[str, object]] = []

    def add(self, host: str, ip: str, item: object, front: bool) -> None:
        self.calls.append(("add", (item, front)))

    def release(self, state: object, now: float, ip_only: bool) -> None:
        self.calls.append(("release", ip_only))

    def postpone(self, state: object, until: float) -> None:
        self.calls.append(("postpone", until))


def test_a_held_url_goes_back_to_the_front_and_its_host_waits() -> None:
    hold = RestartHold(100.0, 30.0, lambda state: state.delay, lambda entry: entry.delay)
    state = SimpleNamespace(host="a.example", ip="1.2.3.4", delay=5.0)
    workbench = _Workbench()
    assert hold.held(workbench, state, "url", 101.0)
    assert workbench.calls == [("add", ("url", True)), ("release", True), ("postpone", 105.0)]
    assert not hold.held(_Workbench(), state, "url", 105.0)
