"""One agent's partitions: those it owns, those it has taken over and not yet read, and
those it still *holds*.

Theory of operation
-------------------
Ownership follows the members (:func:`irlscrapy.distributed.partitions.assignment`), and
changes the moment the members do. What an agent knows of a partition does not: its
URLseen has the keys of the partition's URLs it has seen, its frontier the URLs it has
not fetched yet. A partition is *held* by an agent from the moment it owns it until it
has handed that knowledge over (:mod:`irlscrapy.distributed.join` when another agent
joins and takes it, :mod:`irlscrapy.distributed.leave` when this one leaves).

Every agent publishes what it holds (``irl:{c}:holds``, agent -> partitions), and a new
owner reads the partitions it has taken over only once no other agent holds any of
them (:meth:`Ownership.readable`), all in one read: the keys their last owners hand over
(each to one of the partitions it gives this agent) are then delivered before any URL
another agent sent to any of them. What it holds survives a
restart in Redis, so an agent killed during a handoff hands off again when it starts.

Invariants:
*An agent holds every partition it owns.*
*The partitions an agent has taken over are read only once no other agent holds any.*
"""

from __future__ import annotations

from collections.abc import Mapping

from irlscrapy.distributed.partitions import assignment


def encode_holds(partitions: frozenset[int]) -> str:
    return ",".join(map(str, sorted(partitions)))


def decode_holds(value: bytes | str) -> frozenset[int]:
    text = value.decode() if isinstance(value, bytes) else value
    return frozenset(int(p) for p in text.split(",") if p)


class Ownership:
    def __init__(self, agent: str, partitions: int) -> None:
        self.agent = agent
        self.partitions = partitions
        self.members: list[str] = []
        self.owned: frozenset[int] = frozenset()
        #: partitions newly owned whose whole backlog is still to be read
        self.taken_over: list[int] = []
        #: partitions it owns, or lost and has not handed off yet (module docstring)
        self.holds: frozenset[int] = frozenset()
        #: what Redis has of ``holds`` (None: nothing yet)
        self.published: frozenset[int] | None = None
        #: the salt of the URLs it hands over now (irlscrapy.distributed.leavemarks), and
        #: what for: "leave", "handoff" or "none"
        self.salt, self.salt_kind = 0, "none"

    def set_salt(self, kind: str, salt: int) -> None:
        """The URLs this agent hands over from now on go under ``salt``, for ``kind``
        ("leave", "handoff"; "none": no handover yet)."""
        self.salt_kind, self.salt = kind, salt

    @property
    def kept_salt(self) -> int | None:
        """The salt of URLs this agent sent and still holds: a leave's (nothing leaves
        BEAST before the leave ends, so those that come back after a kill are here
        still). None otherwise: a handoff's URLs left this agent when it forwarded
        them, and those that come back (their new owner left) must be admitted."""
        return self.salt if self.salt_kind == "leave" else None

    def start(self, members: list[str], held_before: frozenset[int]) -> frozenset[int]:
        """Ownership at the start, with what Redis says this agent held before (empty:
        it never ran); return the partitions it holds and no longer owns."""
        self.holds = held_before
        lost = self.set_members(members)
        self.published = self.holds  # (the caller publishes it at once)
        return lost

    def set_members(self, members: list[str]) -> frozenset[int]:
        """The members are ``members`` from now on; return the partitions this agent
        holds and no longer owns (to hand off). Partitions newly owned (at the start:
        all, it may have missed a handover) have their whole backlog read."""
        before = self.owned
        self.members = members
        self.owned = assignment(members, self.partitions).get(self.agent, frozenset())
        self.taken_over = [p for p in self.taken_over if p in self.owned]
        self.taken_over += sorted(self.owned - before)
        lost = self.holds - self.owned
        self.holds |= self.owned
        return lost

    @property
    def routed_here(self) -> frozenset[int]:
        """Partitions whose URLs this agent keeps (those taken over go through their
        stream until it has read their backlog)."""
        return self.owned - set(self.taken_over)

    def released(self, partitions: frozenset[int]) -> None:
        """Their knowledge is handed off (and on its way to Redis)."""
        self.holds -= partitions - self.owned

    def unpublished(self) -> frozenset[int] | None:
        """What this agent holds, if Redis does not know it yet."""
        return self.holds if self.holds != self.published else None

    def readable(self, taken: list[int], holds: Mapping[str, frozenset[int]]) -> list[int]:
        """``taken`` if no other agent holds any of them (``holds``: each agent's), else
        none (see the module docstring)."""
        held = set().union(*(h for agent, h in holds.items() if agent != self.agent))
        return [] if held.intersection(taken) else list(taken)

    def read(self, partitions: list[int]) -> None:
        """The whole backlog of ``partitions`` (taken over) is read."""
        self.taken_over = [p for p in self.taken_over if p not in partitions]
