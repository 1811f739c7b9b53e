"""The engine's generator: SplitMix64 with rejection sampling, the same sequence on every machine.

Deals depend on it byte for byte (the golden replays pin whole games); these tests pin
the generator itself, and check that the fast shuffle equals the step-by-step reference.
"""

from __future__ import annotations

import random

import pytest

from server.engine import rng as rng_module
from server.engine.rng import SplitMix64


def test_the_first_outputs_are_splitmix64s_published_values_for_seed_0() -> None:
    """Reference values of SplitMix64 (Vigna) from seed 0, so a port to another language can check itself."""
    g = SplitMix64(0)
    assert [g.next_u64() for _ in range(3)] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]


def test_below_is_the_rejection_sampled_remainder() -> None:
    g, h = SplitMix64(99), SplitMix64(99)
    for n in (1, 2, 3, 52, 104, 1000):
        assert g.below(n) == h.next_u64() % n  # no rejection at these sizes for this seed
    with pytest.raises(ValueError, match="positive"):
        g.below(0)


@pytest.mark.parametrize("size", [0, 1, 2, 3, 31, 52, 104, 127, 128, 129, 200])
def test_the_fast_shuffle_equals_the_step_by_step_shuffle(size: int) -> None:
    picker = random.Random(size)
    seeds = [0, 1, 2**63, 2**64 - 1, *(picker.getrandbits(64) for _ in range(40))]
    for seed in seeds:
        fast, slow = SplitMix64(seed), SplitMix64(seed)
        a, b = list(range(size)), list(range(size))
        for _ in range(3):  # chained shuffles: the state after one is the start of the next
            fast.shuffle(a)
            slow._shuffle_stepwise(b)
            assert a == b, (seed, size)
            assert fast.getstate() == slow.getstate()


def test_a_possible_rejection_falls_back_to_the_exact_shuffle(monkeypatch: pytest.MonkeyPatch) -> None:
    """A draw that might be rejected (about once in 10**17 shuffles) sends the whole shuffle
    down the step-by-step path, from the state it started with. Lowering the threshold makes
    nearly every shuffle fall back; the decks and states must not change."""
    expected = []
    for seed in range(50):
        g, deck = SplitMix64(seed), list(range(52))
        g.shuffle(deck)
        expected.append((deck, g.getstate()))
    fallbacks = []
    stepwise = SplitMix64._shuffle_stepwise

    def counted(self: SplitMix64, items: list[int]) -> None:
        fallbacks.append(len(items))
        stepwise(self, items)

    monkeypatch.setattr(rng_module, "_NEVER_REJECTED", 2**63)
    monkeypatch.setattr(SplitMix64, "_shuffle_stepwise", counted)
    for seed in range(50):
        g, deck = SplitMix64(seed), list(range(52))
        g.shuffle(deck)
        assert (deck, g.getstate()) == expected[seed]
    assert len(fallbacks) >= 45


def test_a_shuffle_is_a_permutation() -> None:
    g = SplitMix64(7)
    deck = list(range(104))
    g.shuffle(deck)
    assert sorted(deck) == list(range(104)) and deck != list(range(104))
