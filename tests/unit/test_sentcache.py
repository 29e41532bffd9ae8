"""The cache of URLs recently sent to their owners (irlscrapy.distributed.sentcache)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from irlscrapy.distributed.sentcache import SentCache

keys = st.lists(st.integers(0, 2**64 - 1) | st.integers(0, 40), max_size=60)


@given(st.lists(keys, max_size=6), st.sampled_from([0, 8, 100]))
def test_a_key_is_sent_unless_it_is_in_its_slot(batches: list[list[int]], small: int) -> None:
    """Model: a dict slot -> key. Every key not in its slot is sent once per batch, and
    then holds the slot; key 0 is always sent. (Vectorised, one by one, and mixed.)"""
    cache = SentCache(16)
    cache.small = small
    model: dict[int, int] = {}
    for batch in batches:
        array = np.array(batch, dtype=np.uint64)
        send = cache.first_sends(array).tolist()
        expected, seen = [], set()
        for key in batch:
            fresh = model.get(key & 15) != key or key == 0
            expected.append(fresh and key not in seen)
            if fresh and key not in seen:
                seen.add(key)
        for key, sent in zip(batch, expected, strict=True):
            if sent:
                model[key & 15] = key
        assert send == expected
    assert cache.hits + cache.misses == sum(map(len, batches))


def test_popular_urls_are_sent_once_while_they_stay() -> None:
    cache = SentCache(1 << 10)
    popular = np.arange(1, 51, dtype=np.uint64)
    sent = sum(int(cache.first_sends(popular).sum()) for _ in range(100))
    assert sent == 50 and cache.hits == 4_950


def test_the_slot_count_is_a_power_of_two() -> None:
    with pytest.raises(ValueError, match="power of two"):
        SentCache(1000)
