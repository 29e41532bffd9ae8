"""Ownership: which agent of a crawl owns a PLD.

Theory of operation
-------------------
Two levels, as BUbiNG's agents and Cho's site-hash partitioning combine them (seeds/001
section 3, seeds/002 section 4):

1. A PLD maps to one of ``P`` fixed *partitions*: ``domain_key(pld) % P``, the stable
   64-bit PLD key that BEAST and STAR use already. ``P`` is fixed for the crawl's life
   (stored in Redis with the crawl's configuration), so a PLD never changes partition.
   Partitioning by PLD, not host, gives a PLD's budget, STAR in-degree, hosts, robots.txt
   and back-off one owner, and keeps a site's internal links (most links) local.
2. Partitions map to the live agents by rendezvous (highest random weight) hashing:
   partition ``p`` belongs to the agent with the largest ``weight(agent, p)``. Every agent
   computes the same answer from the same member list, with no coordination; when an
   agent leaves, only its partitions move (each to the agent with the next weight), and
   when one joins, it takes from each other agent only the partitions where it now
   weighs most: about ``P / n`` partitions move, the least any assignment can move.

Invariants (tests/unit/test_partitions.py, with Hypothesis):
*every partition has exactly one owner among the live agents*;
*a change of membership moves only the partitions of the agents that left, or those
taken by the agents that joined*;
*the assignment is a pure function of (P, the set of live agent ids)*, whatever order
the ids come in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from hashlib import blake2b

from irlscrapy.domains import domain_key
from irlscrapy.exceptions import ConfigurationError

#: The name of the partition function, stored with the crawl's configuration: an agent
#: whose code partitions otherwise refuses to join (DO NOT CHANGE what it names).
PARTITION_FUNCTION = "domain_key(pld) % P; rendezvous blake2b-64(agent, partition)"
MAX_PARTITIONS = 1 << 16
#: Hosts, and PLDs, whose partition a PartitionCache keeps.
CACHE_KEYS = 1 << 16


def check_partitions(partitions: int) -> int:
    if not 1 <= partitions <= MAX_PARTITIONS:
        raise ConfigurationError(
            f"IRL_AGENT_PARTITIONS must be between 1 and {MAX_PARTITIONS} (got {partitions}); "
            "choose about 16 per agent you may ever run, and keep it for the crawl's life"
        )
    return partitions


def partition_of(pld: str, partitions: int) -> int:
    """The partition of a pay-level domain."""
    return domain_key(pld) % partitions


def weight(agent: str, partition: int) -> int:
    """The rendezvous weight of ``agent`` for ``partition``."""
    data = f"{agent}\x1f{partition}".encode()
    return int.from_bytes(blake2b(data, digest_size=8, person=b"irl-owner").digest(), "big")


def owner(partition: int, agents: Iterable[str]) -> str:
    """The live agent that owns ``partition`` (ties, at 2^-64, go to the larger id)."""
    best = max(((weight(agent, partition), agent) for agent in agents), default=None)
    if best is None:
        raise ValueError("no live agent to own a partition")
    return best[1]


def assignment(agents: Iterable[str], partitions: int) -> dict[str, frozenset[int]]:
    """Every live agent's partitions (an agent that owns none maps to an empty set)."""
    members = sorted(set(agents))
    owned: dict[str, set[int]] = {agent: set() for agent in members}
    for p in range(partitions):
        owned[owner(p, members)].add(p)
    return {agent: frozenset(parts) for agent, parts in owned.items()}


class PartitionCache:
    """The partitions of hosts and of PLDs, each kept in a dict cleared when it holds
    :data:`CACHE_KEYS` (a PLD lookup and a hash per URL otherwise). Hosts and PLDs are
    kept apart: a PLD is not always its own PLD (``[::1]``'s is ``::1``, whose is "")."""

    def __init__(self, plds: Callable[[str], str], partitions: int) -> None:
        self.plds = plds
        self.partitions = partitions
        self._hosts: dict[str, int] = {}
        self._plds: dict[str, int] = {}

    def of_host(self, host: str) -> int:
        found = self._hosts.get(host)
        if found is None:
            found = self.of_pld(self.plds(host))
            if len(self._hosts) >= CACHE_KEYS:
                self._hosts.clear()
            self._hosts[host] = found
        return found

    def of_pld(self, pld: str) -> int:
        found = self._plds.get(pld)
        if found is None:
            if len(self._plds) >= CACHE_KEYS:
                self._plds.clear()
            found = self._plds[pld] = partition_of(pld, self.partitions)
        return found
