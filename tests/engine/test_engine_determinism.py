"""A game is fully determined by its configuration, its seed and the decisions (STYLE 2)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
from pathlib import Path

from server.engine import new_game
from tests.engine.play import play_out

# A fast mix: short Craits games and crazy eights with 2 to 4 players.
MIX = [
    ("craits", 2, {"short_game": True}),
    ("craits", 3, {"short_game": True, "face_cards": True}),
    ("craits", 4, {"short_game": True}),
    ("crates-partners", 4, {"short_game": True, "voluntary_draw": True}),
    ("crazy-eights", 3, {}),
]
GAMES = 1000


def digests(first_seed: int) -> list[str]:
    out = []
    for i in range(GAMES):
        preset, players, flags = MIX[i % len(MIX)]
        seed = first_seed + i
        out.append(play_out(new_game(preset, players, seed=seed, **flags), choice_seed=seed).digest())
    return out


def test_one_thousand_seeded_games_replay_to_the_same_digests_and_seeds_differ() -> None:
    first = digests(0)
    assert digests(0) == first
    assert len(set(first)) == GAMES, "each seed gives a different game"


def test_a_different_seed_gives_a_different_log() -> None:
    a = new_game("craits", 4, seed=1)
    b = new_game("craits", 4, seed=2)
    assert a.log != b.log and a.digest() != b.digest()
    assert new_game("craits", 4, seed=1).log == a.log


_DIGESTS_PROBE = """
import json, sys
from server.engine import new_game
from tests.engine.play import play_out
print(json.dumps([play_out(new_game("craits", 3, seed=s, face_cards=True, short_game=True), choice_seed=s).digest()
                  for s in range(40)]))
"""


def test_digests_do_not_depend_on_the_process_or_its_hash_seed() -> None:
    """Another interpreter with a different PYTHONHASHSEED replays to the same digests."""
    here = [play_out(new_game("craits", 3, seed=s, face_cards=True, short_game=True), choice_seed=s).digest() for s in range(40)]
    root = Path(__file__).resolve().parents[2]
    for hash_seed in ("1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run([sys.executable, "-c", _DIGESTS_PROBE], cwd=root, env=env,
                             capture_output=True, text=True, check=True, timeout=120)
        assert json.loads(out.stdout) == here


def test_the_digest_is_the_hash_of_the_whole_log_at_every_moment_and_in_a_clone() -> None:
    """``digest()`` is SHA-256 of ``repr(log)``, kept until the log grows: asked again after each
    decision, and of a clone that then plays on differently, it is always the log's own."""
    def of(game) -> str:  # type: ignore[no-untyped-def]
        return hashlib.sha256(repr(game.log).encode()).hexdigest()

    game = new_game("craits", 4, seed=21, short_game=True)
    rng = random.Random(21)
    clone = None
    while game.decision is not None:
        assert game.digest() == game.digest() == of(game)
        if game.decisions == 40:
            clone = game.clone()
        legal = game.legal_action_ids()
        game.apply(legal[rng.randrange(len(legal))])
    assert game.digest() == of(game)
    assert clone is not None and clone.digest() != game.digest()
    clone.apply(clone.legal_action_ids()[-1])
    assert clone.digest() == of(clone)
