"""A small seeded generator (SplitMix64) owned by each game.

The engine never touches the global ``random`` module: every shuffle draws from
the game's own generator, so a game is fully determined by its seed and the
decisions made. SplitMix64 is tiny, fast enough for shuffles (the engine's hot
path never shuffles) and easy to reproduce in another language.
"""

from __future__ import annotations

import sys

_MASK = (1 << 64) - 1
_SPAN = 1 << 64
_GAMMA = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB
_TABLED = 128
_LIMITS = tuple(_SPAN - _SPAN % n if n else 0 for n in range(_TABLED))
"""_LIMITS[n]: draws at or above it are rejected, so ``x % n`` stays unbiased (two decks: 104 cards)."""
_NEVER_REJECTED = _SPAN - _TABLED
"""Below every limit in _LIMITS (``_SPAN % n < n``): a draw under it is accepted whatever ``n``."""
_LANE = 128
"""Bits per lane of the packed form (see ``_lanes``): room for a 64-bit value times a 64-bit constant."""
_LITTLE = sys.byteorder == "little"
_PACKINGS: dict[int, tuple[int, int, int]] = {}


def _packing(steps: int) -> tuple[int, int, int]:
    """Constants to pack ``steps`` generator states into one int, one per 128-bit lane.

    (ONES, GAMMAS, LANES): ONES has 1 in each lane, GAMMAS has (k + 1) * _GAMMA in lane k,
    LANES has the low 64 bits of each lane set. Cached per number of steps (at most 127).
    """
    packing = _PACKINGS.get(steps)
    if packing is None:
        ones = gammas = 0
        for k in range(steps):
            ones |= 1 << (_LANE * k)
            gammas |= ((k + 1) * _GAMMA) << (_LANE * k)
        packing = _PACKINGS[steps] = (ones, gammas, ones * _MASK)
    return packing


def _lanes(state: int, steps: int) -> list[int]:
    """The next ``steps`` outputs of SplitMix64 from ``state``, computed all at once.

    A SplitMix64 state is a counter (the k-th is ``state + k * _GAMMA`` mod 2**64), so the
    states of a whole shuffle are known up front. Packed one per 128-bit lane of a single
    int, each xor-shift and multiply of the mix runs on every lane in one big-int operation
    (a 64-bit lane times a 64-bit constant fits its 128-bit lane; masking with LANES drops
    what a shift carried in from the next lane and reduces each lane mod 2**64). Python's
    per-operation cost, not the arithmetic, dominates a scalar SplitMix64, so this is many
    times faster than stepping the generator once per card.
    """
    ones, gammas, lanes = _packing(steps)
    z = (state * ones + gammas) & lanes
    z = (((z ^ (z >> 30)) & lanes) * _MIX1) & lanes
    z = (((z ^ (z >> 27)) & lanes) * _MIX2) & lanes
    z = (z ^ (z >> 31)) & lanes
    words = memoryview(z.to_bytes(16 * steps, sys.byteorder)).cast("Q")
    # Each lane's low 64 bits as an unsigned machine word: even words from the start on a
    # little-endian machine, odd words from the end on a big-endian one.
    return (words[::2] if _LITTLE else words[::-2]).tolist()


class SplitMix64:
    __slots__ = ("_state",)

    def __init__(self, seed: int) -> None:
        self._state = seed & _MASK

    def next_u64(self) -> int:
        self._state = (self._state + _GAMMA) & _MASK
        z = self._state
        z = ((z ^ (z >> 30)) * _MIX1) & _MASK
        z = ((z ^ (z >> 27)) * _MIX2) & _MASK
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """An unbiased integer in 0..n-1 (rejection sampling)."""
        if n <= 0:
            raise ValueError("n must be positive")
        limit = _SPAN - (_SPAN % n)
        while True:
            x = self.next_u64()
            if x < limit:
                return x % n

    def shuffle(self, items: list[int]) -> None:
        """Fisher-Yates in place: ``j = self.below(i + 1)`` for each i from the last down to 1.

        Every deal and reshuffle runs this. The draws are computed all at once (``_lanes``);
        if any could be a rejection (about one shuffle in 10**17), the step-by-step form
        below redoes the whole shuffle exactly.
        """
        steps = len(items) - 1
        if steps < 1:
            return
        if steps < _TABLED:
            draws = _lanes(self._state, steps)
            if max(draws) < _NEVER_REJECTED:
                for i, x in zip(range(steps, 0, -1), draws, strict=True):
                    j = x % (i + 1)
                    items[i], items[j] = items[j], items[i]
                self._state = (self._state + steps * _GAMMA) & _MASK
                return
        self._shuffle_stepwise(items)

    def _shuffle_stepwise(self, items: list[int]) -> None:
        """The reference shuffle, one generator step (and possible rejection) at a time."""
        state = self._state
        for i in range(len(items) - 1, 0, -1):
            n = i + 1
            limit = _LIMITS[n] if n < _TABLED else _SPAN - _SPAN % n
            while True:
                state = (state + _GAMMA) & _MASK
                z = ((state ^ (state >> 30)) * _MIX1) & _MASK
                z = ((z ^ (z >> 27)) * _MIX2) & _MASK
                x = z ^ (z >> 31)
                if x < limit:
                    break
            j = x % n
            items[i], items[j] = items[j], items[i]
        self._state = state

    def getstate(self) -> int:
        return self._state

    def setstate(self, state: int) -> None:
        self._state = state
