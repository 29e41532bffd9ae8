"""One PLD holding half of all discovered URLs must not stall the crawl.

A discrete-event simulation of the frontier (real BEAST files, workbench, journal; a
simulated clock and downloader; no network): 64 fetches in flight, each taking
FETCH_SECONDS, politeness tau_h = 4 s and tau_s = 0.5 s binding, every page found
LINKS_PER_PAGE new URLs. In the control web the new URLs spread over many PLDs; in the
test web half of them belong to one PLD with a few hosts on one IP, the paper's
"monster" site. Pages per simulated second must stay >= 80% of the control's.
"""

from __future__ import annotations

import heapq
import random
from pathlib import Path

from twisted.internet import defer

from harness.frontierfixture import open_test_frontier
from irlscrapy.scheduler.frontier.workbench import IPEntry, VisitState
from irlscrapy.scheduler.frontieritems import Item
from irlscrapy.scheduler.hosts.addressguard import AddressGuard
from irlscrapy.scheduler.hosts.delays import Politeness
from irlscrapy.scheduler.requestcodec import encode_link

IN_FLIGHT = 64
FETCH_SECONDS = 0.25
LINKS_PER_PAGE = 6  # new unique URLs per page (IRLbot's L is about 6.5)
PLDS = 3000
HOSTS_PER_PLD = 3
HOSTS_PER_IP = 27
HUGE_HOSTS = 4  # the monster PLD's hosts, all on one IP
FETCHES = 3000
SEEDS = 200


def simulate(work: Path, huge_share: float, seed: int = 0) -> float:
    """Pages per simulated second over FETCHES fetches (the first SEEDS excluded)."""
    rng = random.Random(seed)
    politeness = Politeness(4.0, 1.0, 0.5, 0.05, default_budget=10)

    def host_delay(state: VisitState) -> float:
        return politeness.host(state.budget)

    def ip_delay(entry: IPEntry) -> float:
        return politeness.ip(entry.mean_budget)

    def address(host: str) -> defer.Deferred[str]:
        if host.startswith("huge"):
            return defer.succeed("10.255.0.1")
        number = int(host.split(".")[0][1:]) * HOSTS_PER_PLD + int(host.split(".")[1][1:])
        return defer.succeed(f"10.0.{number // HOSTS_PER_IP // 256}.{number // HOSTS_PER_IP % 256}")

    frontier = open_test_frontier(
        work,
        capacity=20_000,
        host_cap=64,
        clock=lambda: now,  # the simulated time
        budget=10,
        host_delay=host_delay,
        ip_delay=ip_delay,
        resolve=address,
        guard=AddressGuard(allow=True),  # the simulation's addresses are private ones
    )
    workbench = frontier.workbench
    counter = 0

    def new_url() -> str:
        nonlocal counter
        counter += 1
        if rng.random() < huge_share:
            return f"http://huge{counter % HUGE_HOSTS}.monster.com/{counter}"
        pld = rng.randrange(PLDS)
        return f"http://p{pld}.h{rng.randrange(HOSTS_PER_PLD)}.com/{counter}"

    for _ in range(SEEDS):
        frontier.push(encode_link(new_url(), 0, None, None))
    now, done, started_at = 0.0, 0, 0.0
    flying: list[tuple[float, int, VisitState, Item]] = []
    while done < FETCHES:
        while len(flying) < IN_FLIGHT:
            frontier.admission.admit()  # as IRLScheduler.next_request does before each take
            got = frontier.take(now)
            if got is None:
                break
            state, item = got
            assert isinstance(item, tuple)
            heapq.heappush(flying, (now + FETCH_SECONDS, id(item), state, item))
        due = workbench.next_due()
        if len(flying) >= IN_FLIGHT or due is None or due <= now:
            assert flying, "the simulated crawl ran dry"
            now = max(now, flying[0][0])  # the next fetch to end
        else:
            now = min(due, flying[0][0]) if flying else due
        while flying and flying[0][0] <= now:
            end, _, state, item = heapq.heappop(flying)
            workbench.release(state, end)
            frontier.finished(item)
            done += 1
            if done == SEEDS:
                started_at = end
            for _ in range(LINKS_PER_PAGE):
                frontier.push(encode_link(new_url(), 1, None, None))
    frontier.close()
    return (done - SEEDS) / (now - started_at)


def test_a_monster_pld_with_half_the_urls_keeps_80_percent_of_the_rate(tmp_path: Path) -> None:
    (tmp_path / "control").mkdir()
    (tmp_path / "monster").mkdir()
    control = simulate(tmp_path / "control", huge_share=0.0)
    monster = simulate(tmp_path / "monster", huge_share=0.5)
    print(
        f"pages per simulated second: control {control:.1f}, one PLD with half the URLs "
        f"{monster:.1f}, ratio {monster / control:.3f}"
    )
    assert monster >= 0.8 * control
