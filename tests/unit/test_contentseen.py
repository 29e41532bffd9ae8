"""ContentSeen (irlscrapy.dupefilters.contentseen) against a dict of first captures."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from irlscrapy.dupefilters.contentseen import ContentSeen, Verdict

#: A few distinct bodies, so batches repeat them often.
bodies = st.integers(0, 6).map(lambda n: hashlib.sha1(b"body %d" % n).digest())
batch = st.lists(st.tuples(bodies, st.integers(1, 10**9)), max_size=6)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(batch, st.booleans()), max_size=8), st.sampled_from([24, 72, 1 << 20]))
def test_verdicts_match_a_dict_of_first_captures(
    steps: list[tuple[list, bool]], bucket_bytes: int
) -> None:
    """Merging after every tuple, every third, or never; closing and reopening between
    batches."""
    with tempfile.TemporaryDirectory() as tmp:
        seen = ContentSeen(Path(tmp) / "cs", bucket_bytes)
        seen.open()
        first: dict[bytes, int] = {}
        for pairs, reopen in steps:
            verdicts = seen.check([d for d, _ in pairs], [float(t) for _, t in pairs])
            expected = []
            for digest, t in pairs:
                expected.append(Verdict(digest in first, float(first.setdefault(digest, t))))
            assert verdicts == expected
            assert seen.stored == len(first)
            if reopen:
                seen.close()
                seen.open()
        seen.close()


def test_an_empty_batch_has_no_verdicts(tmp_path: Path) -> None:
    seen = ContentSeen(tmp_path / "cs")
    seen.open()
    assert seen.check([], []) == []
    seen.close()
