"""The payload of one DRUM journal record: one submitted batch.

Grammar (little-endian; DO NOT CHANGE: part of DRUM format version 1)::

    batch := seq: u64, n: u32, has_values: u8, has_aux: u8,
             keys: n * u64, ops: n * u8, [values: n * value],
             [aux_lengths: n * u32, aux_bytes]

The record framing (length, CRC) is :mod:`irlscrapy.storage.recordfile`'s.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

HEAD = struct.Struct("<QIBB")


class JournalBatch(NamedTuple):
    seq: int
    keys: np.ndarray  # uint64
    ops: np.ndarray  # uint8
    values: np.ndarray | None
    aux: list[bytes] | None


def encode_body(
    keys: np.ndarray, ops: np.ndarray, values: np.ndarray | None, aux: Sequence[bytes] | None
) -> list[bytes]:
    """Everything after the head, as parts to join (the head needs the sequence number,
    which is given out later, under the intake lock)."""
    parts = [keys.astype("<u8", copy=False).tobytes(), ops.astype(np.uint8).tobytes()]
    if values is not None:
        parts.append(values.tobytes())
    if aux is not None:
        parts.append(np.fromiter(map(len, aux), dtype="<u4", count=len(aux)).tobytes())
        parts.append(b"".join(aux))
    return parts


def encode_head(seq: int, n: int, has_values: bool, has_aux: bool) -> bytes:
    return HEAD.pack(seq, n, has_values, has_aux)


def peek(payload: bytes) -> tuple[int, int]:
    """(sequence number, tuple count) without decoding the rest."""
    seq, n, _, _ = HEAD.unpack_from(payload)
    return seq, n


def decode(payload: bytes, value_dtype: np.dtype | None, with_aux: bool = True) -> JournalBatch:
    seq, n, has_values, has_aux = HEAD.unpack_from(payload)
    at = HEAD.size
    keys = np.frombuffer(payload, "<u8", n, at).astype(np.uint64)
    ops = np.frombuffer(payload, np.uint8, n, at + 8 * n)
    at += 9 * n
    values = None
    if has_values:
        assert value_dtype is not None, "a batch with values in a keys-only DRUM"
        values = np.frombuffer(payload, value_dtype, n, at)
        at += n * value_dtype.itemsize
    aux = None
    if has_aux and with_aux:
        lengths = np.frombuffer(payload, "<u4", n, at)
        ends = np.cumsum(lengths, dtype=np.int64) + at + 4 * n
        starts = (ends - lengths).tolist()
        aux = [payload[s:e] for s, e in zip(starts, ends.tolist(), strict=True)]
    return JournalBatch(seq, keys, ops, values, aux)
