"""The exchange: URLs and PLD edges sent in batches to their owner over Redis Streams
(Cho's exchange mode with batch communication, seeds/001 sections 3 and 5.2).

Theory of operation
-------------------
Each partition ``p`` has one stream, ``irl:{c}:p:{p}``, with one consumer group,
``owner``. Any agent appends to it; only the partition's owner reads it.

*Sending.* :class:`Outbox` buffers, per partition, the URLs (each with the aux bytes the
owner's intake stores with it) and the PLD edges (source PLD, target PLD) STAR counts at
the target's owner, as the *chunks* the agent routed them in, encoded once (the same
bytes go to the agent's outbox journal). A partition's buffer becomes a batch
(:class:`Outgoing`) when it holds ``batch_max`` records or its oldest is ``batch_age``
seconds old; one batch is one ``XADD`` of its chunks end to end (one command for
hundreds of URLs: the communication overhead of exchange mode is per batch, not per
link).

*Receiving.* :meth:`Exchange.read` takes new batches of the agent's partitions with
``XREADGROUP``; a batch stays in the group's pending list until :meth:`Exchange.done`
acknowledges and deletes it (one script for all: ``XACK`` then ``XDEL``), which the agent calls
only once the batch's URLs are durable in its own URLseen and BEAST. So a batch is
delivered at least once, and the owner's URLseen makes discovery exactly-once across
agents. After a kill -9, the restarted agent reads its own pending batches again first
(:meth:`Exchange.pending`), as it does after a tick that failed once it had read some.
(A partition handed over will take the old owner's pending batches with ``XAUTOCLAIM``,
:meth:`Exchange.claim`; the handover is not built yet.)

*Memory.* A batch is deleted when acknowledged, so a stream holds only what is sent and
not yet durable at its owner: Redis memory follows the exchange's backlog, never the
crawl's size, and Redis never holds the set of seen URLs.

*Handover.* An agent leaving the crawl sends the keys of the URLs it has seen to each
partition's new owner as entries of their own (field ``k``: 64-bit keys, big-endian,
end to end), which the owner stores in its URLseen before the URLs that came with them
(:mod:`irlscrapy.distributed.leave`).

Batch encoding (the stream entry's field ``b``, compressed with zlib at
:data:`COMPRESSION`: a stream holds a third to a quarter of the bytes, and so do the
exchange's network and the clients' buffers in Redis; ``v`` is the layout version)::

    batch   := chunk+
    chunk   := count_urls: u32be, count_edges: u32be, url*, edge*
    url     := len_url: u16be, len_aux: u32be, url: utf-8, aux
    edge    := len_src: u16be, len_dst: u16be, src: utf-8, dst: utf-8
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import redis
from redis.client import Pipeline
from redis.typing import EncodableT, FieldT

from irlscrapy.distributed.registry import LAYOUT_VERSION, CrawlRegistry

GROUP = "owner"
#: zlib's level for batches (1: fastest; URLs of one partition share their PLDs, and
#: compress about 3-4x at it already).
COMPRESSION = 1
#: Batches acknowledged by one script call at most.
ACK_CHUNK = 1000
_COUNTS = struct.Struct(">II")
_URL = struct.Struct(">HI")
_EDGE = struct.Struct(">HH")
# KEYS: streams; ARGV: the group, then per stream the count of its entry ids and the
# ids. Acknowledge, then delete them: one command for a tick's acknowledgements.
_DONE = """
local at, acked = 2, 0
for _, stream in ipairs(KEYS) do
    local n = tonumber(ARGV[at])
    local ids = {unpack(ARGV, at + 1, at + n)}
    acked = acked + redis.call('XACK', stream, ARGV[1], unpack(ids))
    redis.call('XDEL', stream, unpack(ids))
    at = at + n + 1
end
return acked
"""


@dataclass
class Batch:
    """URLs (with their aux bytes) and PLD edges bound for one partition."""

    partition: int
    urls: list[str] = field(default_factory=list)
    auxes: list[bytes] = field(default_factory=list)
    edges: list[tuple[str, str]] = field(default_factory=list)
    #: URLseen keys an agent that left had seen (a handover: see the module docstring)
    keys: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))
    #: the stream entry's id (received batches only)
    entry: bytes = b""

    def __len__(self) -> int:
        return len(self.urls) + len(self.edges) + len(self.keys)

    def encode(self) -> bytes:
        """One chunk (see the module docstring)."""
        parts = [_COUNTS.pack(len(self.urls), len(self.edges))]
        for url, aux in zip(self.urls, self.auxes, strict=True):
            raw = url.encode()
            parts += (_URL.pack(len(raw), len(aux)), raw, aux)
        for src, dst in self.edges:
            a, b = src.encode(), dst.encode()
            parts += (_EDGE.pack(len(a), len(b)), a, b)
        return b"".join(parts)

    @classmethod
    def decode(cls, partition: int, data: bytes, entry: bytes = b"") -> Batch:
        """The records of ``data``'s chunks, in order."""
        batch = cls(partition, entry=entry)
        at = 0
        try:
            while 0 <= at < len(data):
                at = batch._decode_chunk(data, at)
        except struct.error:
            at = -1
        if at != len(data):
            raise ValueError(f"a batch of partition {partition} ends inside a record")
        return batch

    def _decode_chunk(self, data: bytes, at: int) -> int:
        """Decode the chunk at ``at``; return where it ends (-1: past the end of data)."""
        count_urls, count_edges = _COUNTS.unpack_from(data, at)
        at += _COUNTS.size
        for _ in range(count_urls):
            n, m = _URL.unpack_from(data, at)
            at += _URL.size
            if at + n + m > len(data):
                return -1
            self.urls.append(data[at : at + n].decode())
            self.auxes.append(data[at + n : at + n + m])
            at += n + m
        for _ in range(count_edges):
            n, m = _EDGE.unpack_from(data, at)
            at += _EDGE.size
            if at + n + m > len(data):
                return -1
            self.edges.append((data[at : at + n].decode(), data[at + n : at + n + m].decode()))
            at += n + m
        return at


def chunk_records(chunk: bytes) -> int:
    """The URLs and edges in an encoded chunk."""
    count_urls, count_edges = _COUNTS.unpack_from(chunk)
    return int(count_urls + count_edges)


@dataclass
class Outgoing:
    """A batch on its way: encoded chunks bound for one partition's stream."""

    partition: int
    chunks: list[bytes] = field(default_factory=list)
    records: int = 0
    #: a handover's URLseen keys instead (big-endian u64s): see the module docstring
    keys: bytes = b""

    def __len__(self) -> int:
        return self.records

    def add(self, chunk: bytes) -> None:
        self.chunks.append(chunk)
        self.records += chunk_records(chunk)

    def split(self, most: int) -> list[Outgoing]:
        """This batch as batches of whole chunks, of at most ``most`` records where the
        chunks allow (one stream entry each: an entry must stay well below Redis's
        512 MB bulk limit, and a leaving agent's batches can be huge)."""
        if self.records <= most or self.keys:
            return [self]
        parts = [Outgoing(self.partition)]
        for chunk in self.chunks:
            if parts[-1].records and parts[-1].records + chunk_records(chunk) > most:
                parts.append(Outgoing(self.partition))
            parts[-1].add(chunk)
        return parts

    @classmethod
    def of_records(cls, records: list[tuple[int, bytes]]) -> list[Outgoing]:
        """(partition, chunk) records as batches, one a partition."""
        batches: dict[int, Outgoing] = {}
        for partition, chunk in records:
            batches.setdefault(partition, cls(partition)).add(chunk)
        return list(batches.values())


class Outbox:
    """Per-partition buffers of what goes to other agents (see the module docstring).
    Pure bookkeeping: :meth:`ready` says which batches are due; the caller sends them."""

    def __init__(self, batch_max: int, batch_age: float) -> None:
        self.batch_max = batch_max
        self.batch_age = batch_age
        self._open: dict[int, Outgoing] = {}
        self._since: dict[int, float] = {}  # partition -> when its oldest record came
        self.records = 0

    def add(self, partition: int, chunk: bytes, now: float) -> None:
        """Add an encoded chunk (:meth:`Batch.encode`) to ``partition``'s open batch."""
        batch = self._open.get(partition)
        if batch is None:
            batch = self._open[partition] = Outgoing(partition)
            self._since[partition] = now
        before = batch.records
        batch.add(chunk)
        self.records += batch.records - before

    def __len__(self) -> int:
        """Open batches."""
        return len(self._open)

    def clear(self) -> None:
        """Drop every open batch (they are on disk: OutboxJournal.spill)."""
        self._open.clear()
        self._since.clear()
        self.records = 0

    def ready(
        self, now: float, everything: bool = False, aged: int | None = None
    ) -> list[Outgoing]:
        """Take the batches that are full, and the old enough ones, oldest first, at most
        ``aged`` of those (None: all); every batch with ``everything``. The caller
        spreads batches of the same age over its calls: partitions that fill at one pace
        would otherwise all come due at once, and Redis would buffer them at once."""
        if everything:
            due = list(self._open)
        else:
            due = [p for p, batch in self._open.items() if len(batch) >= self.batch_max]
            old = sorted(
                (since, p)
                for p, since in self._since.items()
                if now - since >= self.batch_age and len(self._open[p]) < self.batch_max
            )
            due += [p for _, p in old[:aged]]
        taken = []
        for p in due:
            batch = self._open.pop(p)
            del self._since[p]
            self.records -= len(batch)
            taken.append(batch)
        return taken

    def oldest(self) -> float | None:
        """When the oldest record still buffered came (None: nothing is buffered)."""
        return min(self._since.values(), default=None)


class Exchange:
    """One agent's side of the partition streams (blocking redis-py calls: the agent
    runs them on its Redis thread)."""

    def __init__(self, registry: CrawlRegistry, agent: str) -> None:
        self.registry = registry
        self.client: redis.Redis = registry.client
        self.agent = agent
        self._done = self.client.register_script(_DONE)

    def stream(self, partition: int | str) -> str:
        """The stream of ``partition`` ("": the prefix of every partition's stream)."""
        return self.registry.key("p", partition)

    def create_groups(self, partitions: Iterable[int]) -> None:
        """Each partition's stream and consumer group (idempotent)."""
        pipe = self.client.pipeline(transaction=False)
        for p in partitions:
            pipe.xgroup_create(self.stream(p), GROUP, id="0", mkstream=True)
        for result in pipe.execute(raise_on_error=False):
            if isinstance(result, Exception) and "BUSYGROUP" not in str(result):
                raise result

    def send(self, batches: Sequence[Outgoing]) -> None:
        """Append ``batches`` to their partitions' streams, in one round trip."""
        pipe = self.client.pipeline(transaction=False)
        self.queue(pipe, batches)
        pipe.execute()

    def queue(self, pipe: Pipeline, batches: Sequence[Outgoing]) -> None:
        """Queue the appends of ``batches`` on ``pipe`` (the caller executes it)."""
        for batch in batches:
            fields: dict[FieldT, EncodableT] = {"v": LAYOUT_VERSION}
            if batch.keys:
                fields["k"] = batch.keys
            else:
                fields["b"] = zlib.compress(b"".join(batch.chunks), COMPRESSION)
            pipe.xadd(self.stream(batch.partition), fields)

    def read(self, partitions: Sequence[int], count: int, block_ms: int | None) -> list[Batch]:
        """New batches of ``partitions`` (at most ``count`` per partition), waiting up to
        ``block_ms`` for one (None: no wait)."""
        if not partitions:
            return []
        found = self.client.xreadgroup(
            GROUP, self.agent, {self.stream(p): ">" for p in partitions}, count, block_ms
        )
        return self._batches(found)

    def pending(self, partitions: Sequence[int], count: int) -> list[Batch]:
        """This agent's batches read but not acknowledged before it stopped (id 0)."""
        if not partitions:
            return []
        found = self.client.xreadgroup(
            GROUP, self.agent, {self.stream(p): "0" for p in partitions}, count
        )
        return self._batches(found)

    def claim(self, partition: int, min_idle_ms: int, count: int) -> list[Batch]:
        """Take the batches of ``partition`` another consumer read and never acknowledged
        (a partition handed over by an agent that left)."""
        reply: Any = self.client.xautoclaim(  # (typed sync or async, by redis-py version)
            self.stream(partition), GROUP, self.agent, min_idle_ms, "0-0", count
        )
        _, entries, *_ = reply
        return [entry_batch(partition, entry, fields) for entry, fields in entries if fields]

    def done(self, batches: Sequence[Batch]) -> int:
        """Acknowledge and delete ``batches`` (durable at this agent now)."""
        acked = 0
        for at in range(0, len(batches), ACK_CHUNK):  # (Lua's unpack takes ~8,000 at most)
            by_stream: dict[int, list[bytes]] = {}
            for batch in batches[at : at + ACK_CHUNK]:
                by_stream.setdefault(batch.partition, []).append(batch.entry)
            args: list[EncodableT] = [GROUP]
            for entries in by_stream.values():
                args += [len(entries), *entries]
            acked += int(self._done(keys=[self.stream(p) for p in by_stream], args=args))
        return acked

    def backlog(self, partitions: Iterable[int]) -> int:
        """Entries in the streams of ``partitions`` (sent, not yet durable at the owner)."""
        pipe = self.client.pipeline(transaction=False)
        for p in partitions:
            pipe.xlen(self.stream(p))
        return sum(pipe.execute())

    def _batches(self, found: Any) -> list[Batch]:
        batches = []
        for name, entries in found or ():
            partition = int(name.decode().rsplit(":", 1)[1])
            batches += [
                entry_batch(partition, entry, fields) for entry, fields in entries if fields
            ]
        return batches


def entry_batch(partition: int, entry: bytes, fields: dict[bytes, bytes]) -> Batch:
    """The batch a stream entry of ``partition`` holds (ValueError: not one this agent
    reads)."""
    version = int(fields[b"v"])
    if version != LAYOUT_VERSION:
        raise ValueError(
            f"a batch of layout {version} in partition {partition}'s stream; this agent "
            f"reads layout {LAYOUT_VERSION}"
        )
    keys = fields.get(b"k")
    if keys is not None:
        return Batch(partition, keys=np.frombuffer(keys, dtype=">u8").astype(np.uint64),
                     entry=entry)  # fmt: skip
    try:
        data = zlib.decompress(fields[b"b"])
    except zlib.error as exc:
        raise ValueError(f"a damaged batch in partition {partition}'s stream: {exc}") from exc
    return Batch.decode(partition, data, entry)
