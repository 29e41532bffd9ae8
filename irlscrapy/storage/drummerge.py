"""DRUM's merge kernel: apply pending tuples to one sorted run of the disk cache.

Pure numpy; no I/O. The engine (:mod:`irlscrapy.storage.drum`) calls it once per
cache chunk with the pending tuples whose keys fall in that chunk's key range.

Semantics, defined tuple by tuple in arrival order against a dict ``d`` (the model
the property tests check):

    CHECK         unique = key not in d;  value = d.get(key, 0)
    UPDATE        d[key] = combine(d.get(key), v);  value = d[key]
    CHECK_UPDATE  unique = key not in d;  d[key] = combine(d.get(key), v);  value = d[key]

``combine`` is ``add`` (missing counts as 0), ``overwrite``, or ``first`` (the value
stored first is kept: ``d.setdefault(key, v)``, what content dedup remembers of a body's
first capture). A keys-only DRUM (URLseen) has no values; UPDATE then just inserts the key.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

CHECK = 1
UPDATE = 2
CHECK_UPDATE = CHECK | UPDATE
COMBINES = ("overwrite", "add", "first")


def op_array(ops: int | np.ndarray, n: int) -> np.ndarray:
    """The ops of a batch of ``n`` tuples, as uint8: one op for all, or one each."""
    if isinstance(ops, int):  # one for all (the common case: no array to scan)
        if not CHECK <= ops <= CHECK_UPDATE:
            raise ValueError("ops must be CHECK, UPDATE or CHECK_UPDATE")
        return np.full(n, ops, dtype=np.uint8)
    array = np.broadcast_to(np.asarray(ops, dtype=np.uint8), (n,))
    if n and (array.min() < CHECK or array.max() > CHECK_UPDATE):
        raise ValueError("ops must be CHECK, UPDATE or CHECK_UPDATE")
    return array


class Applied(NamedTuple):
    unique: np.ndarray  # bool per tuple: the key was absent when the tuple arrived
    values: np.ndarray | None  # per tuple: see the module docstring
    keys: np.ndarray  # the run's keys afterwards, sorted
    stored: np.ndarray | None  # the run's values afterwards
    changed: bool  # some tuple updated: the run must be written back


def apply_sorted(
    keys: np.ndarray,
    stored: np.ndarray | None,
    tkeys: np.ndarray,
    tops: np.ndarray,
    tvalues: np.ndarray | None,
    combine: str,
) -> Applied:
    """Apply tuples, sorted by (key, arrival), to a sorted run of unique keys.

    Invariant: *every tuple sees exactly the effect of the tuples with the same key that
    arrived before it, and of nothing else.*
    """
    n = len(tkeys)
    assert n > 0 and (stored is None) == (tvalues is None)
    is_update = (tops & UPDATE) != 0
    if len(keys):
        pos = np.searchsorted(keys, tkeys)
        at = np.minimum(pos, len(keys) - 1)
        existing = keys[at] == tkeys
    else:
        pos = at = np.zeros(n, dtype=np.intp)
        existing = np.zeros(n, dtype=bool)
    run_start = np.empty(n, dtype=bool)
    run_start[0] = True
    np.not_equal(tkeys[1:], tkeys[:-1], out=run_start[1:])
    starts = np.flatnonzero(run_start)
    ends = np.append(starts[1:] - 1, n - 1)
    run_of = np.cumsum(run_start) - 1
    updates_incl = np.cumsum(is_update)
    updates_excl = updates_incl - is_update
    earlier_updates = updates_excl - updates_excl[starts][run_of]
    unique = ~existing & (earlier_updates == 0)
    run_updated = (updates_incl[ends] - updates_excl[starts]) > 0

    values = None
    if stored is not None and tvalues is not None:
        base = np.where(existing, stored[at] if len(stored) else 0, 0).astype(stored.dtype)
        if combine == "add":
            contrib = np.where(is_update, tvalues, 0).astype(stored.dtype)
            incl = np.cumsum(contrib)
            before = base + (incl - contrib) - (incl - contrib)[starts][run_of]
            values = before + contrib
        elif combine == "first":
            # the run's first update, if it came at or before this tuple, set the value
            first = np.minimum.reduceat(np.where(is_update, np.arange(n), n), starts)[run_of]
            fresh = np.where(first <= np.arange(n), tvalues[np.minimum(first, n - 1)], 0)
            values = np.where(existing, base, fresh).astype(stored.dtype)
        else:
            last = np.maximum.accumulate(np.where(is_update, np.arange(n), -1))
            values = np.where(last >= starts[run_of], tvalues[np.maximum(last, 0)], base)

    if not run_updated.any():
        return Applied(unique, values, keys, stored, False)
    run_keys = tkeys[starts]
    run_pos = pos[starts]
    run_existing = existing[starts]
    new = run_updated & ~run_existing
    new_keys = np.insert(keys, run_pos[new], run_keys[new])
    new_stored = None
    if stored is not None and values is not None:
        final = values[ends]
        refreshed = stored.copy()
        old = run_updated & run_existing
        refreshed[run_pos[old]] = final[old]
        new_stored = np.insert(refreshed, run_pos[new], final[new])
    return Applied(unique, values, new_keys, new_stored, True)
