"""DRUM sizes from one RAM budget, after the paper's model (seeds/003 section IV.D).

The paper keeps ``k`` bucket buffers of ``M`` bytes and one bucket of ``r`` bytes in
RAM ``R`` and finds the optimum at ``k0 = R / (4 M)``. Here a bucket is merged in RAM
at about six times its size on disk (the sort order, keys, tags and derived arrays),
so a bucket holds ``R / 8``, and the partition buffer gets another ``R / 8``.
"""

from __future__ import annotations

from typing import NamedTuple

#: The paper's per-bucket buffer M.
BUCKET_BUFFER = 256 * 1024
MAX_BUCKETS = 1024


class DrumSizes(NamedTuple):
    buckets: int
    bucket_bytes: int
    spill_bytes: int

    @classmethod
    def from_memory(cls, memory: int) -> DrumSizes:
        k0 = max(1, memory // (4 * BUCKET_BUFFER))
        buckets = min(1 << (k0.bit_length() - 1), MAX_BUCKETS)  # a power of two <= k0
        share = max(memory // 8, 1 << 16)
        return cls(buckets, share, share)
