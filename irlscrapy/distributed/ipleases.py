"""Global per-IP politeness: one lease per IP in Redis, so hosts owned by different
agents that share an address are never fetched closer together than the IP delay.

Theory of operation
-------------------
Partitions follow PLDs, so an IP's hosts can belong to several agents (virtual hosting:
IRLbot counted about 27 hosts per IP). Each agent keeps the IP delay in its workbench;
across agents, an IP is fetched only by the agent holding its *lease*:

``irl:{c}:ips``
    A hash: IP -> ``holder|free_at|waiter,waiter,...``. ``holder`` fetches the IP now
    (empty: nobody); ``free_at`` is the earliest instant the next holder may fetch it (the
    last holder's next due time there: its last fetch's end plus the IP delay);
    ``waiters`` want it, first come first served.
``irl:{c}:yield:{agent}``
    A set: IPs ``agent`` holds that others wait for.

*The workbench.* Every IP entry the workbench makes is gated (:meth:`IPLeases.entry_added`:
``not_before`` = inf) and wanted; a granted lease opens the gate at ``free_at``
(:meth:`irlscrapy.scheduler.frontier.workbench.Workbench.hold_ip`). An entry the
workbench forgets (no URLs, its delay past) gives its lease back.

*One script a round*, every ``IRL_AGENT_IP_ROUND`` seconds (:data:`_ROUND`, run with a
tick of the agent's exchange on its Redis thread, so no request waits for Redis): give
back the leases to drop (to the first waiter, who holds it from then), ask for the IPs
wanted (granted if free, held by this agent, or held by an agent whose lease on its id
has lapsed; else this agent joins the waiters and the holder is told), and take this
agent's yield requests. A holder asked to yield closes its gate once it has held the
lease :data:`HOLD_S` seconds (at once if it has no URL there), and gives the lease back
when its request in flight there ends (with its next due time as ``free_at``); it wants
the IP again if it still has URLs there, behind the waiters. Costs: one script (of a few
commands) a round, whatever the number of IPs; an IP changes hands in one or two rounds,
and a new IP waits up to a round for its lease.

*Redis away* (:meth:`IPLeases.failed`). From :data:`FALLBACK_AFTER` seconds without a
successful round, every gate opens and the agent's IP delay is multiplied by the number
of members, so the agents together fetch an IP at most once per IP delay on average
(gaps between two agents' fetches are no longer kept). Once a round succeeds again,
every gate closes and every IP is asked for anew (leases still held by this agent come
back at once).

*Clocks.* ``free_at`` is the holder's wall clock; agents on several machines need clocks
kept in step (NTP), and a skew adds to, or takes from, the gap at a handover.

Invariants:
*At most one agent holds an IP's lease; an agent takes from an IP only while it holds
its lease* (or in the fallback).
*A new holder's first fetch starts no earlier than the last holder's ``free_at``.*
*A waiter gets the lease within HOLD_S plus the holder's request in flight plus two
rounds, while both agents run.*
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from irlscrapy.distributed.agentsettings import TICK
from irlscrapy.distributed.registry import CrawlRegistry
from irlscrapy.scheduler.frontier.workbench import IPEntry, Workbench

#: Seconds an agent holds an IP others wait for before it yields it.
HOLD_S = 3.0
#: Seconds without a successful round before the fallback (see the module docstring).
FALLBACK_AFTER = 3.0
#: Fields one Redis command of the script takes at most (Lua's unpack stops near 8,000).
_CHUNK = 1000

# KEYS[1] the leases, KEYS[2] this agent's yield requests. ARGV: this agent, now, the
# prefix of agents' lease keys, the prefix of yield sets, the counts of drops and of
# cleans, then drops (ip, free_at), cleans (ip, free_at) and the IPs wanted. A drop gives
# the lease back, or takes this agent off the waiters. Returns {granted (ip, free_at)
# flat, IPs this agent is asked to yield}.
_ROUND = """
local me, now = ARGV[1], tonumber(ARGV[2])
local ndrop, nclean = tonumber(ARGV[5]), tonumber(ARGV[6])
local drops, cleans = 7, 7 + 2 * ndrop
local wants = cleans + 2 * nclean
local function chunked(command, key, items)
    for i = 1, #items, 1000 do
        redis.call(command, key, unpack(items, i, math.min(i + 999, #items)))
    end
end
local fields = {}
for i = drops, wants - 2, 2 do fields[#fields + 1] = ARGV[i] end
for i = wants, #ARGV do fields[#fields + 1] = ARGV[i] end
local leases = {}
for i = 1, #fields, 1000 do
    local part = {unpack(fields, i, math.min(i + 999, #fields))}
    local values = redis.call('HMGET', KEYS[1], unpack(part))
    for j, ip in ipairs(part) do
        local v = values[j]
        if v then
            local holder, free, waiting = string.match(v, '^([^|]*)|([^|]*)|(.*)$')
            local waiters = {}
            for w in string.gmatch(waiting, '[^,]+') do waiters[#waiters + 1] = w end
            leases[ip] = {holder = holder, free = free, waiters = waiters}
        end
    end
end
local alive = {[me] = true}
local function is_alive(agent)
    if alive[agent] == nil then
        alive[agent] = redis.call('EXISTS', ARGV[3] .. agent) == 1
    end
    return alive[agent]
end
local changed, deleted, notify, granted, yields = {}, {}, {}, {}, {}
local function tell(agent, ip)
    notify[agent] = notify[agent] or {}
    table.insert(notify[agent], ip)
end
for i = drops, cleans - 2, 2 do
    local ip, free = ARGV[i], ARGV[i + 1]
    local lease = leases[ip]
    if lease and lease.holder == me then
        if tonumber(free) > tonumber(lease.free) then lease.free = free end
        lease.holder = ''
        while #lease.waiters > 0 and lease.holder == '' do
            local next_holder = table.remove(lease.waiters, 1)
            if is_alive(next_holder) then lease.holder = next_holder end
        end
        if lease.holder ~= '' and #lease.waiters > 0 then tell(lease.holder, ip) end
        if lease.holder == '' and tonumber(lease.free) <= now then
            leases[ip] = nil
            deleted[ip] = true
        else
            changed[ip] = true
        end
    elseif lease then
        local others = {}
        for _, w in ipairs(lease.waiters) do
            if w ~= me then others[#others + 1] = w end
        end
        if #others < #lease.waiters then
            lease.waiters = others
            changed[ip] = true
        end
    end
end
for i = cleans, wants - 2, 2 do
    local ip = ARGV[i]
    local lease = leases[ip]
    if lease and lease.holder == '' and #lease.waiters == 0 and tonumber(lease.free) <= now then
        leases[ip] = nil
        deleted[ip] = true
    end
end
for i = wants, #ARGV do
    local ip = ARGV[i]
    local lease = leases[ip]
    if not lease or lease.holder == '' or lease.holder == me or not is_alive(lease.holder) then
        lease = lease or {free = '0', waiters = {}}
        local others = {}
        for _, w in ipairs(lease.waiters) do
            if w ~= me then others[#others + 1] = w end
        end
        lease.holder, lease.waiters = me, others
        leases[ip] = lease
        changed[ip], deleted[ip] = true, nil
        granted[#granted + 1] = ip
        granted[#granted + 1] = lease.free
        if #others > 0 then yields[#yields + 1] = ip end
    else
        local listed = false
        for _, w in ipairs(lease.waiters) do listed = listed or w == me end
        if not listed then
            table.insert(lease.waiters, me)
            changed[ip] = true
        end
        tell(lease.holder, ip)
    end
end
local values, gone = {}, {}
for ip in pairs(changed) do
    local lease = leases[ip]
    values[#values + 1] = ip
    local waiters = table.concat(lease.waiters, ',')
    values[#values + 1] = lease.holder .. '|' .. lease.free .. '|' .. waiters
end
for ip in pairs(deleted) do gone[#gone + 1] = ip end
chunked('HSET', KEYS[1], values)
chunked('HDEL', KEYS[1], gone)
for agent, ips in pairs(notify) do chunked('SADD', ARGV[4] .. agent, ips) end
for _, ip in ipairs(redis.call('SPOP', KEYS[2], 100000)) do yields[#yields + 1] = ip end
return {granted, yields}
"""


@dataclass
class LeaseRound:
    """What one round sends: leases to give back and free entries to clean, each with
    its ``free_at``, and the IPs wanted; ``now``, the tick's time."""

    now: float
    #: (IP, free_at, when it was granted; None: this agent leaves the waiters)
    drops: list[tuple[str, float, float | None]] = field(default_factory=list)
    cleans: list[tuple[str, float]] = field(default_factory=list)
    wants: list[str] = field(default_factory=list)


@dataclass
class LeaseReply:
    granted: list[tuple[str, float]]
    yields: list[str]


class IPLeases:
    """This agent's side of the IP leases (see the module docstring). The reactor calls
    :meth:`round`, :meth:`apply` and :meth:`failed`, and the workbench its gate hooks;
    the Redis thread calls :meth:`run`."""

    def __init__(self, registry: CrawlRegistry, agent: str, round_s: float = 2 * TICK) -> None:
        self.registry = registry
        self.agent = agent
        #: seconds between rounds (IRL_AGENT_IP_ROUND; a round runs a few Redis commands:
        #: at one a second they were as many as the exchange's, BENCHMARKS.md)
        self.round_s = round_s
        self._script = registry.client.register_script(_ROUND)
        self.bench: Workbench | None = None
        self.wake: Callable[[], None] = lambda: None  # a gate opened: the engine may fetch
        self.held: dict[str, float] = {}  # IP -> when it was granted
        self.wanted: set[str] = set()  # gated IPs of the workbench, asked for
        self.yielding: set[str] = set()  # held IPs others wait for
        #: IP -> (free_at, when it was granted; None: not granted, this agent only
        #: leaves the waiters): to give back at the next round
        self._drops: dict[str, tuple[float, float | None]] = {}
        #: (free_at, IP) of leases given back free with a future free_at: deleted from
        #: Redis at a round after it (nobody came meanwhile)
        self._cleans: list[tuple[float, str]] = []
        #: the IP delay's multiplier: 1, or the number of members in the fallback
        self.factor = 1.0
        self._failing_since: float | None = None
        self._last_ok: float | None = None  # when a round last succeeded
        self._round_at = 0.0  # when the next round is due

    def attach(self, bench: Workbench, wake: Callable[[], None]) -> None:
        """Gate ``bench``'s IPs from now on (those it holds already are wanted too)."""
        self.bench = bench
        self.wake = wake
        bench.gate = self
        for entry in bench.ips.values():
            self.entry_added(entry)

    def due(self, now: float) -> bool:
        """Is a round due at ``now`` (the caller then runs one)?"""
        if self.bench is None or now < self._round_at:
            return False
        self._round_at = now + self.round_s - TICK / 2  # (ticks come late, never early)
        return True

    def ip_delay(self, delay: Callable[[IPEntry], float]) -> Callable[[IPEntry], float]:
        """``delay`` as this agent keeps it: multiplied by :attr:`factor`."""
        return lambda entry: delay(entry) * self.factor

    # -- the workbench's gate ------------------------------------------------------------
    def entry_added(self, entry: IPEntry) -> None:
        ip = entry.ip
        if self.factor > 1.0:
            return  # the fallback: open
        dropped = self._drops.pop(ip, None)
        if dropped is not None and dropped[1] is not None:
            self.held[ip] = dropped[1]  # still held: its drop had not gone out
            return
        entry.not_before = math.inf
        self.wanted.add(ip)

    def entry_dropped(self, entry: IPEntry) -> None:
        """Give the lease back, or leave the waiters (the lease may be on its way)."""
        ip = entry.ip
        self.yielding.discard(ip)
        since = self.held.pop(ip, None)
        if since is not None or ip in self.wanted:
            self.wanted.discard(ip)
            self._drops[ip] = (entry.next_fetch, since)

    # -- a round -------------------------------------------------------------------------
    def round(self, now: float) -> LeaseRound:
        """What this tick sends (on the reactor): drops, including the yields due now."""
        bench = self.bench
        assert bench is not None, "attach() first"
        bench.forget_idle(now)  # (an idle agent's engine may not ask: leases would stay)
        for ip in sorted(self.yielding) if self.factor == 1.0 else ():
            entry = bench.ips[ip]
            if now - self.held[ip] < HOLD_S and entry.urls:
                continue  # (with nothing left to fetch there, it yields at once)
            bench.hold_ip(ip, math.inf)  # no new fetch there
            if entry.in_flight:
                continue  # given back once it ends
            self.yielding.discard(ip)
            self._drops[ip] = (entry.next_fetch, self.held.pop(ip))
            self.wanted.add(ip)  # behind the waiters
        cleans = []
        while self._cleans and self._cleans[0][0] < now:
            free_at, ip = self._cleans.pop(0)
            cleans.append((ip, free_at))
        drops = [(ip, free_at, since) for ip, (free_at, since) in self._drops.items()]
        self._drops.clear()
        for ip, free_at, _ in drops:
            if free_at > now:
                self._cleans.append((free_at, ip))
        self._cleans.sort()
        # (in the fallback every gate is open: a round that gets through asks for all)
        wanted = bench.ips if self.factor > 1.0 else self.wanted
        return LeaseRound(now, drops, cleans, sorted(wanted))

    def run(self, lease_round: LeaseRound) -> LeaseReply:
        """The round in Redis (on the Redis thread)."""
        registry = self.registry
        args: list[Any] = [
            self.agent,
            repr(lease_round.now),
            registry.key("lease", ""),
            registry.key("yield", ""),
            len(lease_round.drops),
            len(lease_round.cleans),
        ]
        for ip, free_at, _ in lease_round.drops:
            args += (ip, repr(free_at))
        for ip, free_at in lease_round.cleans:
            args += (ip, repr(free_at))
        args += lease_round.wants
        granted, yields = self._script(
            keys=[registry.key("ips"), registry.key("yield", self.agent)], args=args
        )
        pairs = [(ip.decode(), float(t)) for ip, t in zip(granted[::2], granted[1::2], strict=True)]
        return LeaseReply(pairs, [ip.decode() for ip in yields])

    def apply(self, reply: LeaseReply, now: float) -> None:
        """Open the gates of the IPs granted (on the reactor); the first round after the
        fallback closes every gate first."""
        bench = self.bench
        assert bench is not None, "attach() first"
        if self._failing_since is not None:
            self._recover()
        self._failing_since = None
        opened = False
        for ip, free_at in reply.granted:
            if ip in self.wanted and bench.hold_ip(ip, free_at):
                self.wanted.discard(ip)
                self.held[ip] = now
                opened = True
            elif ip not in self.held:
                self._drops[ip] = (free_at, now)  # no longer wanted here
        for ip in reply.yields:
            if ip in self.held:
                self.yielding.add(ip)
            elif ip not in self.wanted and ip not in self._drops:
                # held in Redis by this agent unawares (a reply lost with a failed tick,
                # a kill -9 and a restart): give it back
                self._drops[ip] = (now, None)
        self._last_ok = now
        if opened:
            self.wake()

    def failed(self, lease_round: LeaseRound, now: float, members: int) -> None:
        """The round did not reach Redis: its drops wait for the next one; from
        FALLBACK_AFTER on, every gate opens and the IP delay grows (module docstring)."""
        for ip, free_at, _ in lease_round.drops:
            # (the script may have run, and handed the lease on, before the tick failed:
            # a lease given back is never taken as still held)
            self._drops.setdefault(ip, (free_at, None))
        self._cleans = sorted([*self._cleans, *((t, ip) for ip, t in lease_round.cleans)])
        if self._failing_since is None:
            self._failing_since = now if self._last_ok is None else self._last_ok
        if now - self._failing_since >= FALLBACK_AFTER and self.factor == 1.0:
            self.factor = float(max(1, members))
            self.yielding.clear()
            bench = self.bench
            assert bench is not None, "attach() first"
            for ip in list(bench.ips):
                bench.hold_ip(ip, 0.0)
            self.wake()

    def lapse(self) -> None:
        """This agent's lease on its id may have lapsed (a renewal found it free, or
        none succeeded for most of a lease): others may have taken its IPs as a dead
        agent's, so it holds none and asks for them all again (not in the fallback,
        where every gate is open anyway)."""
        bench = self.bench
        if self.factor > 1.0 or bench is None:
            return
        for ip in self.held:
            bench.hold_ip(ip, math.inf)
            self.wanted.add(ip)
        self.held.clear()
        self.yielding.clear()

    def _recover(self) -> None:
        """Redis is back: every IP is asked for anew (see the module docstring)."""
        bench = self.bench
        assert bench is not None
        if self.factor == 1.0:
            return  # no fallback: the leases held are still held
        self.factor = 1.0
        for ip in self.held:
            if ip not in bench.ips:
                self._drops[ip] = (0.0, 0.0)
        self.held.clear()
        self.yielding.clear()
        self.wanted = set(bench.ips)
        for ip in self.wanted:
            bench.hold_ip(ip, math.inf)

    def release_all(self, now: float) -> LeaseRound:
        """The round of an agent that stops: every lease it holds goes back."""
        bench = self.bench
        drops = dict(self._drops)
        for ip, since in self.held.items():
            entry = bench.ips.get(ip) if bench is not None else None
            drops[ip] = (entry.next_fetch if entry is not None else now, since)
        for ip in self.wanted:
            drops.setdefault(ip, (now, None))
        self.held.clear()
        self.wanted.clear()
        self._drops.clear()
        return LeaseRound(now, [(ip, t, since) for ip, (t, since) in drops.items()], [], [])

    def figures(self) -> dict[str, int]:
        return {
            "agent_ips_held": len(self.held),
            "agent_ips_waiting": len(self.wanted),
        }
