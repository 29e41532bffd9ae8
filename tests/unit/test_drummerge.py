"""The DRUM merge kernel against a dict applied tuple by tuple."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from irlscrapy.storage.drummerge import CHECK, CHECK_UPDATE, UPDATE, apply_sorted
from tests.strategies import combined

small_keys = st.integers(0, 12)
tuples = st.lists(
    st.tuples(small_keys, st.sampled_from([CHECK, UPDATE, CHECK_UPDATE]), st.integers(-5, 5)),
    min_size=1,
    max_size=40,
)


def model(
    stored: dict[int, int], batch: list[tuple[int, int, int]], combine: str, valued: bool
) -> tuple[list[bool], list[int], dict[int, int]]:
    d = dict(stored)
    unique, values = [], []
    for key, op, v in batch:
        unique.append(key not in d)
        if op & UPDATE:
            d[key] = combined(d.get(key), v, combine) if valued else 0
        values.append(d.get(key, 0))
    return unique, values, d


@given(
    initial=st.dictionaries(small_keys, st.integers(-5, 5)),
    batch=tuples,
    combine=st.sampled_from(["add", "overwrite", "first"]),
    valued=st.booleans(),
)
def test_kernel_matches_tuple_by_tuple_model(
    initial: dict[int, int], batch: list[tuple[int, int, int]], combine: str, valued: bool
) -> None:
    keys = np.array(sorted(initial), dtype=np.uint64)
    stored = np.array([initial[k] for k in sorted(initial)], dtype=np.int64) if valued else None
    order = sorted(range(len(batch)), key=lambda i: (batch[i][0], i))  # (key, arrival)
    tkeys = np.array([batch[i][0] for i in order], dtype=np.uint64)
    tops = np.array([batch[i][1] for i in order], dtype=np.uint8)
    tvalues = np.array([batch[i][2] for i in order], dtype=np.int64) if valued else None
    got = apply_sorted(keys, stored, tkeys, tops, tvalues, combine)

    unique, values, after = model(
        initial if valued else dict.fromkeys(initial, 0), batch, combine, valued
    )
    assert [bool(got.unique[order.index(i)]) for i in range(len(batch))] == unique
    assert list(got.keys) == sorted(after)
    if valued:
        assert got.values is not None and got.stored is not None
        assert [int(got.values[order.index(i)]) for i in range(len(batch))] == values
        assert list(got.stored) == [after[k] for k in sorted(after)]
    assert got.changed == any(op & UPDATE for _, op, _ in batch)
