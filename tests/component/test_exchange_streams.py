"""The partition streams in a real redis-redis_server: batches sent, read by the owner,
delivered again until acknowledged, claimed after a handover, deleted when done."""

from __future__ import annotations

import numpy as np
import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st

from irlscrapy.distributed.leave import HANDOVER_KEYS, heir_batches
from irlscrapy.distributed.registry import LAYOUT_VERSION, CrawlConfig, CrawlRegistry
from irlscrapy.distributed.streams import ACK_CHUNK, Batch, Exchange, Outbox, Outgoing

PARTITIONS = 8


def exchange(redis_client: redis.Redis, agent: str) -> Exchange:
    ex = Exchange(CrawlRegistry(redis_client, "c", CrawlConfig(PARTITIONS)), agent)
    ex.create_groups(range(PARTITIONS))
    return ex


def outgoing(batch: Batch) -> Outgoing:
    sent = Outgoing(batch.partition)
    sent.add(batch.encode())
    return sent


names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30)


@given(
    st.lists(st.tuples(names, st.binary(max_size=40)), max_size=20),
    st.lists(st.tuples(names, names), max_size=10),
)
def test_a_batch_decodes_to_what_was_encoded(
    urls: list[tuple[str, bytes]], edges: list[tuple[str, str]]
) -> None:
    batch = Batch(3, [u for u, _ in urls], [a for _, a in urls], edges)
    again = Batch.decode(3, batch.encode())
    assert (again.urls, again.auxes, again.edges) == (batch.urls, batch.auxes, batch.edges)
    twice = Batch.decode(3, batch.encode() * 2)  # a batch is chunks end to end
    assert (twice.urls, twice.edges) == (batch.urls * 2, batch.edges * 2)
    with pytest.raises(ValueError, match="ends inside a record"):
        Batch.decode(3, batch.encode() + b"x")
    if urls or edges:
        with pytest.raises(ValueError, match="ends inside a record"):
            Batch.decode(3, batch.encode()[:-1])


def add(box: Outbox, batch: Batch, now: float) -> None:
    box.add(batch.partition, batch.encode(), now)


def test_the_outbox_makes_a_batch_when_full_or_old() -> None:
    box = Outbox(batch_max=3, batch_age=1.0)
    add(box, Batch(1, ["http://a.com/1"], [b"x"]), now=0.0)
    add(box, Batch(2, ["http://b.com/1"], [b"y"]), now=0.5)
    assert box.ready(now=0.9) == [] and box.oldest() == 0.0
    add(box, Batch(1, ["http://a.com/2"], [b"x"], [("c.com", "a.com")]), now=0.9)
    full = box.ready(now=0.95)
    assert [(b.partition, len(b)) for b in full] == [(1, 3)] and box.records == 1
    assert Batch.decode(1, b"".join(full[0].chunks)).urls == ["http://a.com/1", "http://a.com/2"]
    assert [b.partition for b in box.ready(now=1.5)] == [2] and box.oldest() is None
    add(box, Batch(4, edges=[("c.com", "d.com")]), now=2.0)
    assert [b.partition for b in box.ready(now=2.0, everything=True)] == [4]


def test_the_outbox_spreads_batches_due_by_age_oldest_first() -> None:
    box = Outbox(batch_max=2, batch_age=1.0)
    for p in (5, 3, 7):
        add(box, Batch(p, [f"http://p{p}.com/"], [b""]), now=p / 10)
    add(box, Batch(9, ["http://a.com/", "http://b.com/"], [b"", b""]), now=2.0)  # full
    assert [b.partition for b in box.ready(now=2.0, aged=1)] == [9, 3]
    assert [b.partition for b in box.ready(now=2.0, aged=1)] == [5]
    assert [b.partition for b in box.ready(now=2.0, aged=5)] == [7] and len(box) == 0


def test_the_owner_reads_what_others_send_and_done_deletes_it(redis_client: redis.Redis) -> None:
    sender, owner = exchange(redis_client, "a"), exchange(redis_client, "b")
    sender.send(
        [
            outgoing(Batch(5, ["http://x.com/"], [b"\x00aux"], [("y.com", "x.com")])),
            outgoing(Batch(6, ["u"], [b""])),
        ]
    )
    got = owner.read([5], count=10, block_ms=None)
    assert len(got) == 1 and got[0].urls == ["http://x.com/"] and got[0].auxes == [b"\x00aux"]
    assert got[0].edges == [("y.com", "x.com")]
    assert owner.read([5], count=10, block_ms=None) == []  # read once...
    assert [b.urls for b in owner.pending([5], count=10)] == [["http://x.com/"]]  # ...pending
    assert owner.backlog([5, 6]) == 2
    assert owner.done(got) == 1
    assert owner.backlog([5, 6]) == 1 and owner.pending([5], count=10) == []
    assert redis_client.xlen(owner.stream(5)) == 0  # deleted: Redis holds only the backlog


def test_done_takes_more_batches_than_one_script_can_unpack(redis_client: redis.Redis) -> None:
    sender, owner = exchange(redis_client, "a"), exchange(redis_client, "b")
    sender.send([outgoing(Batch(p % 2, ["u"], [b""])) for p in range(2 * ACK_CHUNK + 500)])
    got = owner.read([0, 1], count=10_000, block_ms=None)
    assert len(got) == 2 * ACK_CHUNK + 500
    assert owner.done(got) == len(got) and owner.backlog([0, 1]) == 0


def test_an_agent_killed_before_done_gets_its_batches_again(redis_client: redis.Redis) -> None:
    sender = exchange(redis_client, "a")
    sender.send([outgoing(Batch(1, [f"http://h.com/{n}"], [b""])) for n in range(5)])
    first = exchange(redis_client, "b")
    read = first.read([1], count=3, block_ms=None)
    first.done(read[:1])  # one made durable, then kill -9
    restarted = exchange(redis_client, "b")
    again = restarted.pending([1], count=100)
    assert [b.urls for b in again] == [b.urls for b in read[1:]]
    rest = restarted.read([1], count=100, block_ms=None)
    assert [u for b in rest for u in b.urls] == ["http://h.com/3", "http://h.com/4"]


def test_a_partition_handed_over_takes_the_old_owners_pending_batches(
    redis_client: redis.Redis,
) -> None:
    exchange(redis_client, "a").send([outgoing(Batch(2, ["http://p.com/"], [b""]))])
    old = exchange(redis_client, "old")
    assert len(old.read([2], count=10, block_ms=None)) == 1  # read, never acknowledged
    new = exchange(redis_client, "new")
    claimed = new.claim(2, min_idle_ms=0, count=10)
    assert [b.urls for b in claimed] == [["http://p.com/"]]
    assert new.done(claimed) == 1 and new.backlog([2]) == 0


def test_a_handover_sends_each_heir_every_key_once_on_a_partition_it_takes(
    redis_client: redis.Redis,
) -> None:
    keys = np.array([1, 2**63 + 5, 2**64 - 1, 42], dtype=np.uint64)
    heirs = {"a": frozenset({0, 3, 5}), "b": frozenset({1, 4}), "c": frozenset({2})}
    batches = heir_batches(keys, heirs, owned=frozenset({3, 4, 5}))
    assert sorted(b.partition for b in batches) == [3, 4], "c takes none of the leaver's"
    exchange(redis_client, "leaver").send(batches)
    got = exchange(redis_client, "a").read([3, 4], count=10, block_ms=None)
    assert [(b.partition, b.keys.tolist()) for b in got] == [
        (3, keys.tolist()),
        (4, keys.tolist()),
    ]
    assert all(len(b) == len(keys) and not b.urls for b in got)
    many = heir_batches(np.arange(HANDOVER_KEYS + 1, dtype=np.uint64), heirs, frozenset({2}))
    assert [len(b) for b in many] == [HANDOVER_KEYS, 1]


def test_a_huge_batch_splits_into_entries_of_whole_chunks() -> None:
    chunks = [Batch(1, [f"http://a.com/{i}/{j}" for j in range(n)], [b""] * n).encode()
              for i, n in enumerate([3, 4, 2, 6, 1])]  # fmt: skip
    batch = Outgoing(1)
    for chunk in chunks:
        batch.add(chunk)
    parts = batch.split(7)
    assert [len(p) for p in parts] == [7, 2, 7] and all(p.partition == 1 for p in parts)
    assert b"".join(c for p in parts for c in p.chunks) == b"".join(chunks)
    assert batch.split(16) == [batch]


def test_a_batch_of_another_layout_is_refused(redis_client: redis.Redis) -> None:
    owner = exchange(redis_client, "b")
    redis_client.xadd(owner.stream(0), {"v": 99, "b": Batch(0).encode()})
    with pytest.raises(ValueError, match="layout 99"):
        owner.read([0], count=1, block_ms=None)


def test_a_batch_is_stored_compressed_and_a_damaged_one_is_refused(
    redis_client: redis.Redis,
) -> None:
    sender, owner = exchange(redis_client, "a"), exchange(redis_client, "b")
    urls = [f"http://www{i % 7}.example.com/section/page-{i}.html" for i in range(500)]
    batch = Batch(0, urls, [b"\x00\x01"] * len(urls))
    sent = Outgoing(0)
    sent.add(batch.encode())
    sender.send([sent])
    (_, fields), *_ = redis_client.xrange(owner.stream(0))
    assert len(fields[b"b"]) < len(batch.encode()) / 3
    assert owner.read([0], count=10, block_ms=None)[0].urls == urls
    redis_client.xadd(owner.stream(0), {"v": LAYOUT_VERSION, "b": b"not zlib"})
    with pytest.raises(ValueError, match="damaged batch in partition 0"):
        owner.read([0], count=10, block_ms=None)
