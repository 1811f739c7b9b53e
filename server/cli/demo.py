"""`craits demo`: the README's first command.

By default it runs ``tournaments/demo.toml`` end to end (referee on its embedded
defaults, the bundled bots, standings, database, replays and logs under logs/).
``craits demo --game`` instead prints one seeded game of in-process random
players hand by hand, which needs nothing but the engine.

The bundled bots are launched in the sandbox every tournament gives its bots. Where bwrap
cannot run (not installed, user namespaces off), the demo plays them unsandboxed and says
so in one line: they are this project's own code, not a stranger's. Tournaments, ladders
and ``craits play`` of other bots keep refusing to run unsandboxed unless told to.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Any

from server.errors import UserError

ROOT = Path(__file__).resolve().parents[2]
DEMO_TOURNAMENT = ROOT / "tournaments" / "demo.toml"


def register_cli(sub: Any) -> None:
    p = sub.add_parser(
        "demo",
        help="run the demo tournament of the bundled bots (or one printed game with --game)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--out", help="output folder of the demo tournament (default logs/demo)")
    p.add_argument("--game", action="store_true", help="print one seeded game of random players instead")
    p.add_argument("--seed", type=int, default=2026, help="seed of the printed game (default 2026)")
    p.add_argument("--players", type=int, default=4, help="seats in the printed game (default 4)")
    p.add_argument("--preset", default="craits", help="preset of the printed game (default craits)")
    p.add_argument("--short", action="store_true", help="printed game: the first eight hands only")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from server.cli import tournament
    from server.transport import sandbox

    if args.game:
        return print_demo_game(args.seed, args.players, args.preset, args.short)
    why = sandbox.problem()
    if why is not None:
        print(unsandboxed_line(why), file=sys.stderr, flush=True)
    parser = argparse.ArgumentParser(prog="craits")  # the scheduler's own command, with its own defaults
    tournament.register_cli(parser.add_subparsers())
    run = parser.parse_args(demo_argv(args.out, unsandboxed=why is not None))
    run.unsandboxed_said = True  # (that one line, not the tournament's warning about strangers' bots)
    return int(run.func(run))


def unsandboxed_line(why: str) -> str:
    """What the demo says when it plays its bundled bots without the sandbox."""
    return (f"craits demo: the bundled bots play unsandboxed, as you: the sandbox cannot run here ({why}); "
            "tournaments of other bots need it: `craits doctor` says how to set it up")


def demo_argv(out: str | None = None, *, unsandboxed: bool = False) -> list[str]:
    """The command `craits demo` stands for."""
    return ["tournament", "run", str(DEMO_TOURNAMENT), "--overwrite", *(["--out", out] if out else []),
            *(["--no-sandbox"] if unsandboxed else [])]


def print_demo_game(seed: int, players: int, preset: str, short: bool) -> int:
    from server.engine import ConfigError, GameState, make_config

    flags = {"short_game": True} if short else {}
    try:
        config = make_config(preset, players, **flags)
    except ConfigError as err:
        raise UserError(str(err)) from err
    game = GameState(config, seed)
    chooser = random.Random(seed)
    print(f"Craits demo: preset {preset}, {players} random players, seed {seed}")
    hands_seen = 0
    while game.decision is not None:
        ids = game.legal_action_ids()
        game.apply(ids[chooser.randrange(len(ids))])
        while hands_seen < len(game.hand_results):
            hand = game.hand_results[hands_seen]
            hands_seen += 1
            left = "  ".join(
                f"S{s}:{' '.join(str(c) for c in cards) or '-'}" for s, cards in enumerate(hand.cards_left)
            )
            print(f"hand {hand.number:>2} (dealer S{hand.dealer}, {hand.reason}): scores {list(hand.scores)}  left {left}")
    result = game.result()
    print("\nfinal score sheet")
    print("seat  total  pressures  place")
    for seat in range(players):
        print(f"S{seat:<4} {result.totals[seat]:>6} {result.pressures[seat]:>10} {result.placings[seat]:>6}")
    if result.team_totals:
        print(f"teams (S0+S2, S1+S3): {list(result.team_totals)}")
    return 0
