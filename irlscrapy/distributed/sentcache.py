"""The cache of URLs recently sent to their owners (Cho's replication, seeds/001 section
5.3; BUbiNG's sieve cache): a popular URL met on many pages is sent once per stay in the
cache, not once per page.

A direct-mapped table of 64-bit URL keys in a numpy array: slot ``key & mask``; a hit
when the slot holds the key; a miss overwrites it. Fixed RAM (8 bytes a slot), O(1),
no Python object per key, and a batch is one vectorised pass (a few keys, one page's
links, are checked one by one: numpy's fixed cost per call is larger). A miss costs only a URL
sent again, which the owner's URLseen drops: the cache saves messages, it is never
what makes discovery exactly-once. Key 0 marks an empty slot, so a URL whose key is 0
is always sent (1 URL in 2^64).
"""

from __future__ import annotations

import numpy as np

#: Batches of at most this many keys are checked in a Python loop.
SMALL = 32


class SentCache:
    def __init__(self, slots: int) -> None:
        if slots < 1 or slots & (slots - 1):
            raise ValueError(f"the sent-URL cache needs a power of two slots (got {slots})")
        self._keys = np.zeros(slots, dtype=np.uint64)
        self._mask = np.uint64(slots - 1)
        self.small = SMALL
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._keys)

    def first_sends(self, keys: np.ndarray) -> np.ndarray:
        """A boolean mask over ``keys`` (uint64): True for the keys to send (not in the
        cache; each is cached now). A key repeated within ``keys`` is sent once."""
        if len(keys) <= self.small:
            return self._first_sends_few(keys.tolist())
        slots = keys & self._mask
        send = (self._keys[slots] != keys) | (keys == 0)
        # within the batch, only the first of equal keys is sent
        _, first = np.unique(keys, return_index=True)
        once = np.zeros(len(keys), dtype=bool)
        once[first] = True
        send &= once
        self._keys[slots[send]] = keys[send]
        sent = int(send.sum())
        self.misses += sent
        self.hits += len(keys) - sent
        return send

    def _first_sends_few(self, keys: list[int]) -> np.ndarray:
        """:meth:`first_sends` one key at a time, against the table as it was before."""
        table, mask = self._keys, int(self._mask)
        fresh = [key == 0 or table.item(key & mask) != key for key in keys]
        send, seen = [], set()
        for key, new in zip(keys, fresh, strict=True):
            send.append(new and key not in seen)
            seen.add(key)
        for key, sent in zip(keys, send, strict=True):
            if sent:
                table[key & mask] = key
        sent_count = sum(send)
        self.misses += sent_count
        self.hits += len(keys) - sent_count
        return np.array(send, dtype=bool)
