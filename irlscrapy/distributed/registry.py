"""A crawl's registry in Redis: its configuration, its members and one lease per agent id.

Theory of operation
-------------------
Every key of crawl ``c`` is ``irl:{c}:...``: the braces are a Redis Cluster hash tag, so
a crawl's keys share one slot and its Lua scripts may touch several of them.

``irl:{c}:config``
    The crawl's configuration (:class:`CrawlConfig`, JSON), written once by the first
    agent (``SET NX``). Every agent compares its own with it on start and refuses to
    join a crawl whose partition count or partition function differ: two agents that
    disagree on who owns a PLD would both crawl it.
``irl:{c}:members``
    A hash: agent id -> JSON (joined, last seen, host, pid). An agent is a *member* from
    its first join until it leaves gracefully (:meth:`CrawlRegistry.hand_over`).
    Ownership (:mod:`irlscrapy.distributed.partitions`) is computed over the members,
    **not** over the agents alive now: an agent killed with kill -9 keeps its partitions,
    and the URLs sent to it wait in its streams until it is back with the same id and
    JOBDIR (only its JOBDIR knows which of their URLs it has seen). A member that never
    comes back is taken out by ``irlscrapy agents remove`` (:meth:`CrawlRegistry.remove`).
``irl:{c}:leave:{agent}``, ``irl:{c}:left``
    An operator's request that ``agent`` leave (``irlscrapy agents leave``), and the
    agents that left or were removed: IRL_AGENT_MEMBERS does not make them members again; a
    join (with a new JOBDIR: irlscrapy.distributed.leavemarks) does.
``irl:{c}:holds``
    A hash: agent id -> the partitions it holds (irlscrapy.distributed.ownership).
``irl:{c}:lease:{agent}``
    The running agent's lease: a random token with a TTL, renewed every third of it. A
    second process with the same agent id finds the lease held and waits up to one TTL
    for it to lapse (the holder was killed) before it refuses to start: two processes
    with one id would read the same streams.

Invariants:
*At most one process holds an agent id's lease at a time* (a holder whose renewal finds
another token has lost it and must stop).
*The configuration of a crawl never changes once written.*
*Membership changes only by join, graceful leave and removal, never by a lapse of a
lease.*
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import time
from dataclasses import asdict, dataclass
from typing import Any, cast

import redis

from irlscrapy.distributed.ownership import decode_holds, encode_holds
from irlscrapy.distributed.partitions import PARTITION_FUNCTION, check_partitions
from irlscrapy.exceptions import AgentConflict, ConfigurationError

#: The version of the registry's and the streams' layout in Redis (DO NOT CHANGE the
#: meaning of a version: agents of different layouts must not share a crawl).
LAYOUT_VERSION = 4  # 2: a batch is chunks end to end; 3: IP leases; 4: batches in zlib

# KEYS[1] the lease, KEYS[2] the members hash; ARGV: token, ttl ms, agent id, member JSON.
# Renew the lease if it is ours (1), take it if it is free (2); 0 if another token holds it.
_HOLD = """
local held = redis.call('GET', KEYS[1])
if held and held ~= ARGV[1] then
    return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('HSET', KEYS[2], ARGV[3], ARGV[4])
if held then return 1 end
return 2
"""
# KEYS: the members hash, the lease, the leave request, the set of agents that left,
# the partitions each agent holds (irlscrapy.distributed.ownership);
# ARGV: the agent, its token, the members (sorted, comma-separated) its handover was for.
# Leave only if the members are still those and some other stays: 1, else 0.
_HAND_OVER = """
local members = redis.call('HKEYS', KEYS[1])
table.sort(members)
if table.concat(members, ',') ~= ARGV[3] or #members < 2 then
    return 0
end
if redis.call('GET', KEYS[2]) == ARGV[2] then
    redis.call('DEL', KEYS[2])
end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[3])
redis.call('SADD', KEYS[4], ARGV[1])
redis.call('HDEL', KEYS[5], ARGV[1])
return 1
"""
# KEYS: the members hash, the lease, the holds, the idle flags, the status records, the
# leave request, the set of agents out of the crawl; ARGV[1]: the agent. Remove a member
# no process runs as: 1; -1 if one does, 0 if it is no member, -2 if it is the only one.
_REMOVE = """
if redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
if redis.call('HLEN', KEYS[1]) < 2 then return -2 end
for i = 3, 5 do redis.call('HDEL', KEYS[i], ARGV[1]) end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[6])
redis.call('SADD', KEYS[7], ARGV[1])
return 1
"""
# KEYS[1] the lease; ARGV[1] the token: release the lease only if it is ours.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
"""

# KEYS[1] the members hash, KEYS[2] the idle flags, KEYS[3] the "seeded" flag; ARGV: the
# streams' key prefix, P, this agent's id. Returns {the crawl is done, every other agent
# is idle and every stream empty}; a crawl that never had a URL is not done.
_CRAWL_DONE = """
if redis.call('EXISTS', KEYS[3]) == 0 then
    return {0, 0}
end
local me, others = 1, 1
for _, member in ipairs(redis.call('HKEYS', KEYS[1])) do
    if redis.call('HGET', KEYS[2], member) ~= '1' then
        if member == ARGV[3] then me = 0 else others = 0 end
    end
end
if others == 1 then
    for p = 0, tonumber(ARGV[2]) - 1 do
        if redis.call('XLEN', ARGV[1] .. p) > 0 then
            others = 0
            break
        end
    end
end
return {me * others, others}
"""


#: What :meth:`CrawlRegistry.renew` returns when it took a free lease.
TAKEN = 2


@dataclass(frozen=True)
class CrawlConfig:
    """What every agent of a crawl must agree on."""

    partitions: int
    partition_function: str = PARTITION_FUNCTION
    layout: int = LAYOUT_VERSION
    #: IRL_STAR_PRIVATE_SUFFIXES: what a PLD is, so where a URL belongs
    private_suffixes: bool = False

    def __post_init__(self) -> None:
        check_partitions(self.partitions)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def stored_config(client: redis.Redis, crawl: str) -> CrawlConfig | None:
    """The configuration crawl ``crawl`` was started with (None: no such crawl)."""
    raw = cast(bytes | None, client.get(f"irl:{{{check_crawl_id(crawl)}}}:config"))
    return None if raw is None else CrawlConfig(**json.loads(raw))


def check_crawl_id(crawl: str) -> str:
    if not crawl or any(c in crawl for c in "{}:") or not crawl.isprintable():
        raise ConfigurationError(
            f"IRL_CRAWL_ID must be a non-empty printable name without '{{', '}}' or ':' "
            f"(got {crawl!r})"
        )
    return crawl


class CrawlRegistry:
    """One crawl's registry (see the module docstring). Blocking redis-py calls: the
    agent runs them on its Redis thread, never on the reactor."""

    def __init__(self, client: redis.Redis, crawl: str, config: CrawlConfig) -> None:
        self.client = client
        self.crawl = check_crawl_id(crawl)
        self.config = config
        self.prefix = f"irl:{{{crawl}}}:"
        self._hold = client.register_script(_HOLD)
        self._release = client.register_script(_RELEASE)
        self._crawl_done = client.register_script(_CRAWL_DONE)
        self._hand_over = client.register_script(_HAND_OVER)
        self._remove = client.register_script(_REMOVE)

    def key(self, *parts: object) -> str:
        return self.prefix + ":".join(map(str, parts))

    # -- configuration -------------------------------------------------------------------
    def ensure_config(self) -> None:
        """Store this agent's configuration if the crawl has none; refuse a different one."""
        mine = self.config.to_json()
        self.client.set(self.key("config"), mine, nx=True)
        stored = self._get(self.key("config"))
        if stored is None:  # deleted in between: try once more
            self.client.set(self.key("config"), mine, nx=True)
            stored = self._get(self.key("config"))
        if stored is None:
            raise ConfigurationError(f"crawl {self.crawl!r}: its configuration keeps vanishing")
        theirs = json.loads(stored)
        if theirs != json.loads(mine):
            differ = ", ".join(
                f"{name}: the crawl's {theirs.get(name)!r}, this agent's {value!r}"
                for name, value in asdict(self.config).items()
                if theirs.get(name) != value
            )
            raise ConfigurationError(
                f"crawl {self.crawl!r} in Redis was started with another configuration "
                f"({differ}); start this agent with the crawl's settings, or use another "
                "IRL_CRAWL_ID"
            )

    # -- membership and leases -----------------------------------------------------------
    def join(self, agent: str, lease_s: float, wait_s: float | None = None) -> str:
        """Become (or stay) a member and take ``agent``'s lease; returns its token. If a
        live process holds the lease, wait up to ``wait_s`` (default: one lease) for it
        to lapse, then raise :class:`AgentConflict`."""
        token = secrets.token_hex(16)
        self.client.srem(self.key("left"), agent)  # (a new JOBDIR joins again)
        deadline = time.monotonic() + (lease_s if wait_s is None else wait_s)
        while not self.renew(agent, token, lease_s):
            if time.monotonic() >= deadline:
                raise AgentConflict(
                    f"agent {agent!r} of crawl {self.crawl!r} is already running "
                    f"({self.member(agent) or 'unknown'}): its lease was renewed during "
                    f"the {lease_s:g} s this process waited. Start this one with another "
                    "IRL_AGENT_ID, or stop the other first"
                )
            time.sleep(min(0.2, lease_s / 10))
        return token

    def renew(self, agent: str, token: str, lease_s: float) -> int:
        """Renew ``agent``'s lease (1), or take it if it is free (:data:`TAKEN`: it had
        lapsed, if this token held it before); 0 if another token holds it."""
        member = self.member(agent) or {}
        now = time.time()
        member.update(
            joined=member.get("joined", now), seen=now, host=socket.gethostname(), pid=os.getpid()
        )
        held = self._hold(
            keys=[self.key("lease", agent), self.key("members")],
            args=[token, max(1, int(lease_s * 1000)), agent, json.dumps(member)],
        )
        return int(held)

    def add_member(self, agent: str) -> None:
        """Make ``agent`` a member before it first runs (IRL_AGENT_MEMBERS: the crawl's first
        members, so ownership is fixed from the start whichever agent starts first),
        unless it has left the crawl (irlscrapy.distributed.leave)."""
        if not self.has_left(agent):
            self.client.hsetnx(self.key("members"), agent, json.dumps({"listed": time.time()}))

    def has_left(self, agent: str) -> bool:
        """Did ``agent`` leave the crawl, handing its partitions over (and not join again)?"""
        return bool(self.client.sismember(self.key("left"), agent))

    def hand_over(self, agent: str, token: str, members: list[str]) -> bool:
        """Leave for good, if the members are still ``members`` and another stays
        (irlscrapy.distributed.leave): the partitions go to the others, the lease and
        the leave request go, and ``agent`` is recorded as left. False: nothing done."""
        keys = [self.key("members"), self.key("lease", agent), self.key("leave", agent)]
        left = self._hand_over(
            keys=[*keys, self.key("left"), self.key("holds")],
            args=[agent, token, ",".join(sorted(members))],
        )
        return bool(left)

    def remove(self, agent: str) -> int:
        """Remove ``agent``, a member no process runs as, from the crawl for good: 1;
        -1 if a process runs as it, 0 if it is no member, -2 if it is the only one."""
        keys = [self.key("members"), self.key("lease", agent), self.key("holds")]
        keys += [self.key("idle"), self.key("status"), self.key("leave", agent), self.key("left")]
        return int(self._remove(keys=keys, args=[agent]))

    def holds(self) -> dict[str, frozenset[int]]:
        """The partitions each agent holds (irlscrapy.distributed.ownership)."""
        raw = cast(dict[bytes, bytes], self.client.hgetall(self.key("holds")))
        return {agent.decode(): decode_holds(value) for agent, value in raw.items()}

    def publish_holds(self, pipe: Any, agent: str, partitions: frozenset[int]) -> None:
        """``agent`` holds ``partitions`` from now on (queued on ``pipe``, or sent if it
        is the client)."""
        pipe.hset(self.key("holds"), agent, encode_holds(partitions))

    def release(self, agent: str, token: str) -> None:
        """Give the lease up (the agent stops, and stays a member)."""
        self._release(keys=[self.key("lease", agent)], args=[token])

    def members(self) -> list[str]:
        """The agent ids that own partitions, sorted."""
        names = cast(list[bytes], self.client.hkeys(self.key("members")))
        return sorted(name.decode() for name in names)

    def member(self, agent: str) -> dict[str, Any] | None:
        raw = cast(bytes | None, self.client.hget(self.key("members"), agent))
        return None if raw is None else dict(json.loads(raw))

    def _get(self, key: str) -> bytes | None:
        # (redis-py's stubs type a reply as sync or async, by version: cast to the sync)
        return cast(bytes | None, self.client.get(key))

    def alive(self, agent: str) -> bool:
        """Does a process hold ``agent``'s lease now?"""
        return bool(self.client.exists(self.key("lease", agent)))

    def crawl_done(self, streams: str, partitions: int, agent: str) -> tuple[bool, bool]:
        """(Is the crawl done, is every agent but ``agent`` idle with every stream
        empty?), read in one script: every member idle, the partitions' streams (keys
        ``streams`` + p) empty, and the crawl seeded.

        An agent is *idle* when it has nothing to fetch, nothing in flight, nothing buffered
        to send and nothing read but not acknowledged: when a crawl of one process would
        close. An agent publishes "not idle" before, in the same pipeline, it acknowledges a
        batch, and "idle" only after its last batch is sent; and from the moment it decides
        it is idle it takes up no work of its own until Redis has its "not idle"
        (``Agent.quiesce``: the parked URLs of a host whose retirement ends meanwhile
        wait for the next tick, which publishes "not idle", then go back to BEAST). So the
        script never sees a moment where work exists but hides: a URL is either in a stream,
        or at an agent that says it is busy.
        """
        both = self._crawl_done(
            keys=[self.key("members"), self.key("idle"), self.key("seeded")],
            args=[streams, partitions, agent],
        )
        return bool(both[0]), bool(both[1])
