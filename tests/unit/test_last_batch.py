"""The restart skip's view of what a stop left: the last URLseen batch tag stored and
which of its URLs were, whatever subset of a batch's records the stop let reach disk
(BEAST writes a batch a queue file at a time)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from irlscrapy.scheduler.frontieritems import HEAD
from irlscrapy.scheduler.resume import LastBatch


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3)), max_size=40), st.randoms())
def test_the_last_tag_and_its_payloads_in_any_order(
    records: list[tuple[int, int]], rng: object
) -> None:
    stored = [(tag, b"u%d-%d" % (tag, n)) for n, (tag, _) in enumerate(records)]
    rng.shuffle(stored)  # type: ignore[attr-defined]
    last = LastBatch()
    for tag, payload in stored:
        last.visit(HEAD.pack(1, tag) + payload)
    tags = [tag for tag, _ in stored if tag]  # tag 0: a record of no URLseen batch
    assert last.tag == (max(tags) if tags else -1)
    assert last.payloads == {p for tag, p in stored if tags and tag == max(tags)}
