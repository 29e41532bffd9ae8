"""DRUM's disk cache: each bucket's keys as sorted runs ("chunks") in LevelDB.

A chunk is one LevelDB value holding a sorted run of keys (and their values); its
LevelDB key is the bucket and the chunk's first key, so a bucket's chunks iterate in
key order and chunk j covers keys from its first key up to chunk j+1's. A merge
rewrites a chunk whole (splitting it past ``2 * chunk_keys`` keys) and deletes its old
LevelDB key in the same write batch.

Layout (big-endian keys; DO NOT CHANGE: part of DRUM format version 1)::

    b"C" bucket: u32 first_key: u64  ->  n: u32le, keys: n * u64le, [values: n * value]
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import numpy as np

_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")
_COUNT = struct.Struct("<I")


class ChunkStore:
    def __init__(
        self, db: Any, value_dtype: np.dtype | None, chunk_keys: int, cached_chunks: int = 8
    ) -> None:
        self.db = db
        self.value_dtype = value_dtype
        self.chunk_keys = chunk_keys
        self.cached_chunks = cached_chunks
        # find(): decoded chunks with the version they were read at; used only while the
        # caller's version (DRUM's merged-generation count) has not moved on
        self._cache: OrderedDict[bytes, tuple[int, np.ndarray, np.ndarray | None]] = OrderedDict()

    @staticmethod
    def prefix(bucket: int) -> bytes:
        return b"C" + _U32.pack(bucket)

    def firsts(self, bucket: int) -> list[int]:
        """First keys of a bucket's chunks, in order."""
        return [
            _U64.unpack(k[5:])[0]
            for k in self.db.iterator(prefix=self.prefix(bucket), include_value=False)
        ]

    def chunk_key(self, bucket: int, first: int) -> bytes:
        return self.prefix(bucket) + _U64.pack(first)

    def load(self, key: bytes | None) -> tuple[np.ndarray, np.ndarray | None]:
        """A chunk's keys and values; empty arrays for None (a bucket with no chunk)."""
        if key is None:
            empty = None if self.value_dtype is None else np.empty(0, self.value_dtype)
            return np.empty(0, np.uint64), empty
        raw = self.db.get(key, verify_checksums=True)  # a damaged block: CorruptionError
        (n,) = _COUNT.unpack_from(raw)
        keys = np.frombuffer(raw, "<u8", n, 4).astype(np.uint64)
        if self.value_dtype is None:
            return keys, None
        return keys, np.frombuffer(raw, self.value_dtype, n, 4 + 8 * n).copy()

    def runs(self) -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
        """Every chunk's keys and values, bucket by bucket, in key order."""
        for key in self.db.iterator(prefix=b"C", include_value=False):
            yield self.load(key)

    def write(self, wb: Any, bucket: int, keys: np.ndarray, stored: np.ndarray | None) -> None:
        """Put a sorted run as one or more chunks of at most 2 * chunk_keys keys."""
        pieces = max(1, -(-len(keys) // (2 * self.chunk_keys)))
        size = -(-len(keys) // pieces)
        for start in range(0, len(keys), size):
            part = keys[start : start + size]
            body = [_COUNT.pack(len(part)), part.astype("<u8").tobytes()]
            if stored is not None:
                body.append(stored[start : start + size].tobytes())
            wb.put(self.chunk_key(bucket, int(part[0])), b"".join(body))

    def contains(self, bucket: int, key: int, version: int) -> bool:
        """True if ``key`` is in its chunk. Reads one chunk at most."""
        return self.find(bucket, key, version)[0]

    def find(self, bucket: int, key: int, version: int) -> tuple[bool, int]:
        """Whether ``key`` is in its chunk, and its value (0 without one, or absent).
        Reads one chunk at most; the last few are kept decoded while ``version`` (the
        caller's count of merged generations) stays the same."""
        prefix = self.prefix(bucket)
        found = next(
            self.db.iterator(
                start=prefix,
                stop=prefix + _U64.pack(key) + b"\x00",
                reverse=True,
                include_value=False,
            ),
            None,
        )
        if found is None:
            return False, 0
        cached = self._cache.get(found)
        if cached is not None and cached[0] == version:
            keys, values = cached[1], cached[2]
        else:
            keys, values = self.load(found)
            self._cache[found] = (version, keys, values)
        self._cache.move_to_end(found)
        if len(self._cache) > self.cached_chunks:
            self._cache.popitem(last=False)
        at = int(np.searchsorted(keys, np.uint64(key)))
        if at < len(keys) and int(keys[at]) == key:
            return True, 0 if values is None else int(values[at])
        return False, 0
