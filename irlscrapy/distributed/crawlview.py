"""The multi-agent crawl seen whole: what each agent tells the crawl about itself, and
the view ``irlscrapy agents status`` prints.

Every :data:`STATUS_EVERY` seconds an agent writes one JSON object under its id in the
crawl's ``status`` hash, in the pipeline of its tick's appends (no round trip, one
command; :meth:`AgentStatus.to_json`). The view (:func:`crawl_view`) joins, per member:
its registry record (host, pid, when it was last seen), whether a process holds its lease
now, its last status, the partitions it owns, and the *exchange lag* of those partitions,
read from the streams themselves: the batches read and not yet acknowledged (the group's
``pending``), those sent to it and not yet read (the stream's length less those: an
acknowledged batch is deleted at once), and the age of the oldest unread one (a stream
entry's id is its append time in ms).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any, cast

from irlscrapy.distributed.partitions import assignment
from irlscrapy.distributed.registry import CrawlRegistry
from irlscrapy.distributed.streams import GROUP, Exchange

#: Seconds between two status records of an agent.
STATUS_EVERY = 5.0


@dataclass
class AgentStatus:
    """What an agent says about itself (counts since it started this run)."""

    t: float  # unix time of the record
    pages: int  # responses received
    pages_per_s: float  # since its previous record
    urls_out: int  # URLs sent to other agents
    urls_in: int  # URLs received from them
    batches_out: int
    batches_in: int
    outbox: int  # records buffered to send
    unsent: int  # batches held by ticks that could not reach Redis
    idle: bool
    redis_errors: int

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, raw: bytes | str) -> AgentStatus:
        return cls(**json.loads(raw))


class StatusClock:
    """When an agent's next status record is due, and what it says."""

    def __init__(self, stats: Any) -> None:
        self.stats = stats
        self.due_at = 0.0
        self._last_pages = (0.0, 0)  # (when, pages) of the previous record

    def due(self, now: float, idle: bool, outbox: int, unsent: int) -> AgentStatus | None:
        """The record to write now (None: not due yet)."""
        if now < self.due_at:
            return None
        self.due_at = now + STATUS_EVERY

        def stat(name: str) -> int:
            return int(self.stats.get_value(name, 0))

        pages = stat("response_received_count")
        then, before = self._last_pages
        self._last_pages = (now, pages)
        return AgentStatus(
            t=time.time(),
            pages=pages,
            pages_per_s=(pages - before) / (now - then) if then and now > then else 0.0,
            urls_out=stat("irl/agent/urls_out"),
            urls_in=stat("irl/agent/urls_in"),
            batches_out=stat("irl/agent/batches_out"),
            batches_in=stat("irl/agent/batches_in"),
            outbox=outbox,
            unsent=unsent,
            idle=idle,
            redis_errors=stat("irl/agent/redis_errors"),
        )


@dataclass
class PartitionLag:
    unread: int = 0  # batches sent and not read by the owner
    pending: int = 0  # read and not acknowledged
    oldest_unread_s: float = 0.0  # age of the oldest unread batch


@dataclass
class AgentView:
    agent: str
    alive: bool  # a process holds its lease
    partitions: int
    member: dict[str, Any]
    status: AgentStatus | None
    lag: PartitionLag = field(default_factory=PartitionLag)


def crawl_view(registry: CrawlRegistry, exchange: Exchange) -> list[AgentView]:
    """Every member's view (see the module docstring), sorted by agent id."""
    client = registry.client
    members = registry.members()
    owners = assignment(members, registry.config.partitions)
    statuses: dict[bytes, bytes] = cast(dict[bytes, bytes], client.hgetall(registry.key("status")))
    views = []
    for agent in members:
        raw = statuses.get(agent.encode())
        views.append(
            AgentView(
                agent=agent,
                alive=registry.alive(agent),
                partitions=len(owners.get(agent, ())),
                member=registry.member(agent) or {},
                status=None if raw is None else AgentStatus.from_json(raw),
                lag=partition_lag(exchange, sorted(owners.get(agent, ()))),
            )
        )
    return views


def partition_lag(exchange: Exchange, partitions: list[int]) -> PartitionLag:
    """The exchange lag of ``partitions`` (two pipelined round trips)."""
    lag = PartitionLag()
    if not partitions:
        return lag
    pipe = exchange.client.pipeline(transaction=False)
    for p in partitions:
        pipe.xinfo_groups(exchange.stream(p))
        pipe.xlen(exchange.stream(p))
    replies = pipe.execute(raise_on_error=False)
    unread_after: dict[int, bytes] = {}
    for p, groups, length in zip(partitions, replies[::2], replies[1::2], strict=True):
        group = _owner_group(groups)
        if group is None or isinstance(length, Exception):
            continue
        pending = int(group["pending"])
        lag.pending += pending
        # an entry acknowledged is deleted at once, so the rest are pending or unread
        # (the group's own "lag" is unknown once entries were deleted out of order)
        unread = int(length) - pending
        lag.unread += unread
        if unread:
            unread_after[p] = group["last-delivered-id"]
    if unread_after:
        pipe = exchange.client.pipeline(transaction=False)
        for p, last in unread_after.items():
            pipe.xrange(exchange.stream(p), min=b"(" + _bytes(last), count=1)
        now_ms = time.time() * 1000
        for entries in pipe.execute():
            if entries:
                sent_ms = int(_bytes(entries[0][0]).split(b"-")[0])
                lag.oldest_unread_s = max(lag.oldest_unread_s, (now_ms - sent_ms) / 1000)
    return lag


def _owner_group(groups: Any) -> dict[str, Any] | None:
    if isinstance(groups, Exception):
        return None
    for group in groups:
        if _bytes(group["name"]) == GROUP.encode():
            return dict(group)
    return None


def _bytes(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode()


def render(crawl: str, partitions: int, views: list[AgentView]) -> str:
    """The view as a table, with a line of totals."""
    lines = [
        f"crawl {crawl}: {len(views)} agents, {partitions} partitions",
        f"{'agent':<12} {'state':<8} {'where':<22} {'parts':>5} {'pages':>9} {'pages/s':>8} "
        f"{'urls out':>9} {'urls in':>9} {'outbox':>7} {'unread':>6} {'lag s':>6}",
    ]
    now = time.time()
    for v in views:
        s = v.status
        state = "running" if v.alive else "stopped"
        if v.alive and s is not None and s.idle:
            state = "idle"
        where = f"{v.member.get('host', '?')}:{v.member.get('pid', '?')}"
        if s is not None and v.alive and now - s.t > 3 * STATUS_EVERY:
            state = "silent"  # a lease renewed, no status for a while
        lines.append(
            f"{v.agent:<12} {state:<8} {where:<22.22} {v.partitions:>5} "
            f"{_n(s and s.pages):>9} {_n(s and round(s.pages_per_s, 1)):>8} "
            f"{_n(s and s.urls_out):>9} {_n(s and s.urls_in):>9} {_n(s and s.outbox):>7} "
            f"{v.lag.unread:>6} {v.lag.oldest_unread_s:>6.1f}"
        )
    live = [v.status for v in views if v.alive and v.status is not None]
    lines.append(
        f"total: {sum(s.pages for s in live)} pages, "
        f"{sum(s.pages_per_s for s in live):.1f} pages/s, "
        f"{sum(v.lag.unread for v in views)} batches unread, "
        f"{sum(v.lag.pending for v in views)} read and not yet durable"
    )
    return "\n".join(lines)


def _n(value: object) -> str:
    return "-" if value is None or value is False else str(value)
