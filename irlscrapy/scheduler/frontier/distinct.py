"""How many distinct 64-bit keys were seen: exact while few, a HyperLogLog sketch after.

BEAST needs V, the number of domains a crawl has met (eq. 31 of the IRLbot paper), at
any scale: an exact set of a hundred million PLD keys would cost gigabytes, and V only
has to be right within a few percent. So :class:`DistinctCount` keeps the keys in a set
up to ``EXACT_LIMIT`` (tests and small crawls get the exact figure), then switches to a
HyperLogLog of ``2**PRECISION`` one-byte registers (Flajolet et al. 2007, with the
small-range correction by linear counting; standard error about 1.04 / sqrt(registers),
3% here) and stays there.

Keys must be uniform 64-bit hashes (``irlscrapy.domains.domain_key`` is blake2b): the
sketch takes the register index from the top ``PRECISION`` bits and the rank from the
rest.

The sketch keeps its harmonic sum (``sum 2**-register``, scaled to an integer so that it
is exact) and its count of zero registers up to date as registers grow, so
:meth:`DistinctCount.estimate` costs O(1): BEAST asks at every cycle end, which on a
small frontier is every few records.

Invariants:
*While at most EXACT_LIMIT distinct keys were added, estimate() is exact.*
*estimate() never decreases as keys are added.* (The sketch's registers only grow.)
*The kept sum and zero count equal those recomputed from the registers.*
"""

from __future__ import annotations

import math

#: Keys counted exactly before the sketch takes over (DO NOT CHANGE: a saved state's
#: meaning depends on it).
EXACT_LIMIT = 4096
#: log2 of the sketch's register count (DO NOT CHANGE, as above).
PRECISION = 12
_REGISTERS = 1 << PRECISION
_REST = 64 - PRECISION
_ALPHA = 0.7213 / (1 + 1.079 / _REGISTERS)
#: 2**-rank scaled by 2**_SCALE, an integer for every rank (rank <= _REST + 1)
_SCALE = _REST + 1


class DistinctCount:
    __slots__ = ("_exact", "_harmonic", "_registers", "_zeros")

    def __init__(self) -> None:
        self._exact: set[int] | None = set()
        self._registers: bytearray | None = None
        self._harmonic = 0  # sum of 2**(_SCALE - register) over the registers
        self._zeros = 0  # registers still 0

    def add(self, key: int) -> None:
        exact = self._exact
        if exact is not None:
            if key in exact:
                return
            exact.add(key)
            if len(exact) <= EXACT_LIMIT:
                return
            self._exact = None
            self._use_registers(bytearray(_REGISTERS))
            for k in exact:
                self._sketch(k)
            return
        self._sketch(key)

    def _use_registers(self, registers: bytearray) -> None:
        self._registers = registers
        self._harmonic = sum(1 << (_SCALE - r) for r in registers)
        self._zeros = registers.count(0)

    def _sketch(self, key: int) -> None:
        registers = self._registers
        assert registers is not None
        index = key >> _REST
        rest = key & ((1 << _REST) - 1)
        rank = _REST - rest.bit_length() + 1
        old = registers[index]
        if rank > old:
            registers[index] = rank
            self._harmonic -= (1 << (_SCALE - old)) - (1 << (_SCALE - rank))
            self._zeros -= old == 0

    def estimate(self) -> int:
        if self._exact is not None:
            return len(self._exact)
        raw = _ALPHA * _REGISTERS * _REGISTERS * (1 << _SCALE) / self._harmonic
        if raw <= 2.5 * _REGISTERS and self._zeros:
            raw = _REGISTERS * math.log(_REGISTERS / self._zeros)  # linear counting
        return max(EXACT_LIMIT, round(raw))

    def state(self) -> dict[str, object]:
        """A JSON-able form (for BEAST's state.json)."""
        if self._exact is not None:
            return {"exact": list(self._exact)}
        assert self._registers is not None
        return {"registers": self._registers.hex()}

    @classmethod
    def from_state(cls, state: object) -> DistinctCount:
        counter = cls()
        if not isinstance(state, dict):
            return counter  # a state file written before the count existed
        if "registers" in state:
            counter._exact = None
            counter._use_registers(bytearray.fromhex(str(state["registers"])))
        else:
            counter._exact = {int(k) for k in state.get("exact", [])}
        return counter
