"""The outbox on disk (irlscrapy.distributed.outboxjournal): nothing routed is lost
before it is sent, and sent generations go."""

from __future__ import annotations

from pathlib import Path

from irlscrapy.distributed.outboxjournal import OutboxJournal
from irlscrapy.distributed.streams import Batch


def urls(chunks: list[tuple[int, bytes]]) -> list[tuple[int, str]]:
    return [(p, u) for p, chunk in chunks for u in Batch.decode(p, chunk).urls]


def append(journal: OutboxJournal, batch: Batch) -> None:
    journal.append(batch.partition, batch.encode())


def test_what_a_killed_run_routed_is_read_back_and_stays_on_disk(tmp_path: Path) -> None:
    journal = OutboxJournal(tmp_path)
    assert journal.open() == []
    append(journal, Batch(3, ["http://a.com/"], [b"aux"], [("b.com", "a.com")]))
    append(journal, Batch(7, ["http://c.com/"], [b""]))
    # kill -9: nothing closed
    rerun = OutboxJournal(tmp_path)
    left = rerun.open()
    assert urls(left) == [(3, "http://a.com/"), (7, "http://c.com/")]
    first = Batch.decode(*left[0])
    assert first.edges == [("b.com", "a.com")] and first.auxes == [b"aux"]
    third = OutboxJournal(tmp_path)  # killed again before sending: still there
    assert urls(third.open()) == urls(left)
    for each in (journal, rerun, third):
        each.close()


def test_a_checkpoint_retires_the_older_generations(tmp_path: Path) -> None:
    journal = OutboxJournal(tmp_path)
    journal.open()
    append(journal, Batch(1, ["http://a.com/"], [b""]))
    retired = journal.checkpoint()
    append(journal, Batch(2, ["http://b.com/"], [b""]))
    assert len(retired) == 1 and retired[0].exists()
    for path in retired:  # their batches were sent
        path.unlink()
    journal.close()
    again = OutboxJournal(tmp_path)
    assert urls(again.open()) == [(2, "http://b.com/")]
    again.remove_all()
    assert list(tmp_path.glob("outbox-*.rec")) == []
