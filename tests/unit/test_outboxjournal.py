"""The outbox on disk (irlscrapy.distributed.outboxjournal): nothing routed is lost
before it is sent, sent generations go, and what RAM lets go of comes back."""

from __future__ import annotations

from pathlib import Path

from irlscrapy.distributed.outboxjournal import OutboxJournal
from irlscrapy.distributed.streams import Batch


def urls(records: list[tuple[int, bytes]]) -> list[tuple[int, str]]:
    return [(p, u) for p, chunk in records for u in Batch.decode(p, chunk).urls]


def append(journal: OutboxJournal, partition: int, *urls: str) -> None:
    journal.append(partition, Batch(partition, list(urls), [b""] * len(urls)).encode())


def files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.glob("outbox-*.rec"))


def test_what_a_killed_run_routed_is_read_back_and_stays_on_disk_until_sent(
    tmp_path: Path,
) -> None:
    journal = OutboxJournal(tmp_path)
    journal.open()
    assert not journal.spilling
    journal.append(3, Batch(3, ["http://a.com/"], [b"aux"], [("b.com", "a.com")]).encode())
    append(journal, 7, "http://c.com/")
    # kill -9: nothing closed
    rerun = OutboxJournal(tmp_path)
    rerun.open()
    assert rerun.spilling
    left = rerun.replay(100)
    assert urls(left) == [(3, "http://a.com/"), (7, "http://c.com/")]
    first = Batch.decode(*left[0])
    assert first.edges == [("b.com", "a.com")] and first.auxes == [b"aux"]
    third = OutboxJournal(tmp_path)  # killed again before sending: still there
    third.open()
    assert urls(third.replay(100)) == urls(left)
    third.replayed()  # sent
    assert not third.spilling and files(tmp_path) == ["outbox-2.rec"]
    for each in (journal, rerun, third):
        each.close()


def test_a_checkpoint_retires_generations_once_what_they_hold_is_sent(tmp_path: Path) -> None:
    journal = OutboxJournal(tmp_path)
    journal.open()
    append(journal, 1, "http://a.com/")
    journal.checkpoint(now=10.0)
    append(journal, 2, "http://b.com/")
    journal.retire(oldest_unsent=5.0)  # a record of before the checkpoint is unsent
    assert files(tmp_path) == ["outbox-0.rec", "outbox-1.rec"]
    journal.retire(oldest_unsent=12.0)
    assert files(tmp_path) == ["outbox-1.rec"]
    journal.checkpoint(now=20.0)
    journal.retire(oldest_unsent=None)  # nothing is left to send
    assert files(tmp_path) == ["outbox-2.rec"]
    journal.remove_all()
    assert files(tmp_path) == []


def test_a_spill_reads_everything_back_in_bounded_chunks_then_deletes_it(
    tmp_path: Path,
) -> None:
    journal = OutboxJournal(tmp_path)
    journal.open()
    for n in range(5):
        append(journal, n, f"http://h{n}.com/")
    journal.checkpoint(now=1.0)  # retiring generation 0
    append(journal, 9, "http://late.com/")
    journal.spill()  # RAM lets go of all six
    append(journal, 4, "http://after.com/")  # routed after: in RAM again, not replayed
    got = []
    while chunk := journal.replay(2):
        assert len(chunk) <= 2
        got += urls(chunk)
    assert sorted(got) == sorted(
        [(n, f"http://h{n}.com/") for n in range(5)] + [(9, "http://late.com/")]
    )
    assert journal.spilling and len(files(tmp_path)) == 3  # read, not yet sent
    journal.replayed()
    assert not journal.spilling and files(tmp_path) == ["outbox-2.rec"]
    journal.close()
