"""Rebuild the golden replays in tests/golden/ deterministically.

Each case names a configuration and the features its game must show (a count of 6
or more, a Cooper, a pressure that ends a hand, face cards, ...). The search plays
seeded games with a fixed policy, seed after seed, and keeps the smallest game that
shows them all, so the files stay light. The seeds found are saved in MANIFEST.json;
``--check`` rebuilds every file from the manifest and compares the bytes.

    python tests/golden/regenerate.py            # search seeds, write files + manifest
    python tests/golden/regenerate.py --rebuild  # rewrite the files from the manifest's seeds
    python tests/golden/regenerate.py --check    # exit 1 if a file differs from its rebuild

The golden files change only when the engine's behaviour (or the replay format)
changes on purpose; then run this script and review the diff.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from server.engine import ACTIONS, GameState, make_config  # noqa: E402
from server.storage.replay import record_game  # noqa: E402

GOLDEN_DIR = Path(__file__).resolve().parent
MANIFEST = GOLDEN_DIR / "MANIFEST.json"
SEARCH_SEEDS = 400
"""Seeds tried per case; the smallest game (fewest decisions) among the matches wins."""
MAX_DECISIONS = 3000
"""Games longer than this are not candidates (they would bloat the repository)."""


def golden_policy(state: GameState, rng: random.Random) -> int:
    """A plausible player: plays rather than draws, usually announces "one card", and
    sometimes forgets, so that penalties happen. Deterministic given ``rng``."""
    legal = state.legal_action_ids()
    plays = [a for a in legal if a != 0]
    if not plays:
        return legal[0]
    if 0 in legal and rng.random() < 0.12:  # voluntary draw (voluntary_draw flag or crazy eights)
        return 0
    announced = [a for a in plays if ACTIONS[a].announce]  # type: ignore[union-attr]
    if announced and rng.random() < 0.8:
        return rng.choice(announced)
    plain = [a for a in plays if not ACTIONS[a].announce] or plays  # type: ignore[union-attr]
    return rng.choice(plain)


# --------------------------------------------------------------------------- features


def features(
    config: dict[str, Any],
    events: Iterable[Sequence[Any]],
    decisions: Iterable[dict[str, Any]],
    hands: list[dict[str, Any]],
) -> set[str]:
    """The hard cases a game shows, from its replay records (shared with the coverage test)."""
    found = {f"preset:{config['preset']}"}
    flags = config.get("flags", {})
    for name in ("short_game", "voluntary_draw", "face_cards", "strip_kings_queens"):
        if flags.get(name):
            found.add(f"flag:{name}")
    if flags.get("seven_hits") == "next":
        found.add("flag:seven_hits=next")
    if flags.get("decks") == 2:
        found.add("two_decks")
        if config["players"] >= 6:
            found.add("two_decks_6plus")
    if not flags.get("short_game") and config["preset"] != "crazy-eights" and len(hands) == 15:
        found.add("full_game")
    discard_jacks = 0
    for ev in events:
        kind, _seat, cards, _suit, value = ev
        if kind == "count" and value >= 6:
            found.add("count_6_plus")
        elif kind == "cooper":
            found.add("cooper")
        elif kind == "pressure":
            found.add("pressure")
        elif kind == "reshuffle":
            found.add("reshuffle")
        elif kind == "missed_announcement":
            found.add("missed_announcement")
        elif kind == "penalty_draw":
            found.add("penalty_draw")
        elif kind == "reverse":
            found.add("reverse")
        if kind == "play":
            rank = cards[0] // 4 + 1
            if rank == 11:
                discard_jacks += 1
                if discard_jacks >= 2 and flags.get("face_cards"):
                    found.add("jack_run")
            else:
                discard_jacks = 0
            if cards[0] == 47 and flags.get("face_cards"):  # the queen of spades
                found.add("queen_of_spades")
        elif kind in ("turn_up", "hand_start", "reshuffle"):
            discard_jacks = 1 if kind == "turn_up" and cards[0] // 4 + 1 == 11 else 0
    for rec in decisions:
        kind = rec["kind"]
        if kind == "KING_SEQUENCE":
            found.add("king_sequence")
        elif kind == "NAME_SUIT":
            found.add("dealer_names_suit")
        elif kind == "PENALTY":
            found.add("forfeit_penalty")
        if rec["action"] == 0 and rec["legal"] > 1 and kind != "NAME_SUIT":
            found.add("voluntary_draw_taken")
    for hand in hands:
        reason = hand["reason"]
        if reason == "nothing to reshuffle":
            found.add("pressure_ends_hand")
        elif reason == "blocked":
            found.add("blocked_hand")
        elif reason == "count drawn after a player went out":
            found.add("count_after_out")
    return found


def replay_features(replay: Any) -> set[str]:
    """Features of a :class:`server.replay.Replay`."""
    events: list[Sequence[Any]] = list(replay.start["events"])
    for rec in replay.decisions:
        events.extend(rec["events"])
    return features(replay.header["config"], events, replay.decisions, replay.result["hands"])


# --------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    name: str
    preset: str
    players: int
    wants: frozenset[str]
    flags: dict[str, Any] = field(default_factory=dict)

    @property
    def file(self) -> str:
        return f"{self.name}.jsonl"


def _case(name: str, preset: str, players: int, wants: Iterable[str], **flags: Any) -> Case:
    return Case(name, preset, players, frozenset(wants), dict(flags))


CASES = (
    _case("craits-3p-full", "craits", 3, {"full_game", "count_6_plus"}),
    _case(
        "craits-4p-count-cooper",
        "craits",
        4,
        {"count_6_plus", "cooper", "missed_announcement", "forfeit_penalty"},
        short_game=True,
    ),
    _case(
        "craits-5p-pressure-ends-hand", "craits", 5, {"pressure_ends_hand"}, short_game=True, face_cards=True
    ),
    _case(
        "craits-4p-face-cards",
        "craits",
        4,
        {"jack_run", "queen_of_spades", "king_sequence"},
        short_game=True,
        face_cards=True,
    ),
    _case(
        "craits-4p-voluntary-draw",
        "craits",
        4,
        {"voluntary_draw_taken", "dealer_names_suit"},
        short_game=True,
        voluntary_draw=True,
    ),
    _case("craits-5p-seven-next", "craits", 5, {"reverse"}, short_game=True, seven_hits="next"),
    _case("craits-7p-two-decks", "craits", 7, {"two_decks_6plus", "count_6_plus"}, short_game=True),
    _case("craits-2p", "craits", 2, {"count_after_out"}, short_game=True),
    _case("crates-partners", "crates-partners", 4, {"penalty_draw", "pressure"}, short_game=True),
    _case(
        "crates-partners-stripped",
        "crates-partners",
        4,
        {"jack_run", "penalty_draw"},
        short_game=True,
        strip_kings_queens=True,
        face_cards=True,
    ),
    _case("crazy-eights-2p", "crazy-eights", 2, set()),
    _case("crazy-eights-4p-blocked", "crazy-eights", 4, {"blocked_hand"}),
    _case("crazy-eights-6p-two-decks", "crazy-eights", 6, {"two_decks_6plus"}),
)


def play(case: Case, seed: int) -> tuple[GameState, set[str]] | None:
    """Play one candidate game in memory; None if it runs past MAX_DECISIONS."""
    config = make_config(case.preset, case.players, **case.flags)
    state = GameState(config, seed)
    rng = random.Random(seed)
    decisions: list[dict[str, Any]] = []
    while (decision := state.decision) is not None:
        if state.decisions >= MAX_DECISIONS:
            return None
        legal = state.legal_action_ids()
        action = legal[0] if len(legal) == 1 else golden_policy(state, rng)
        decisions.append({"kind": decision.kind.name, "action": action, "legal": len(legal)})
        state.apply(action)
    hands = [{"reason": h.reason} for h in state.hand_results]
    events = [(k, s, c, su, v) for k, s, c, su, v in state.log]
    return state, features(config.to_dict(), events, decisions, hands)


def search(case: Case) -> int:
    """The seed of the smallest game (fewest decisions) showing every wanted feature."""
    best: tuple[int, int] | None = None
    for seed in range(SEARCH_SEEDS):
        played = play(case, seed)
        if played is None:
            continue
        state, found = played
        if case.wants <= found and (best is None or state.decisions < best[0]):
            best = (state.decisions, seed)
    if best is None:
        raise SystemExit(f"{case.name}: no seed in 0..{SEARCH_SEEDS - 1} shows {sorted(case.wants)}")
    return best[1]


def write_case(case: Case, seed: int, directory: Path) -> Path:
    config = make_config(case.preset, case.players, **case.flags)
    path = directory / case.file
    record_game(path, config, seed, policy=golden_policy, game_id=case.name, tournament="golden", format=1)
    return path


def _load_manifest() -> dict[str, Any]:
    if not MANIFEST.exists():
        raise SystemExit(f"{MANIFEST} is missing: run this script without options to search the seeds")
    data: dict[str, Any] = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return data


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--rebuild", action="store_true", help="rewrite the files from the manifest's seeds")
    mode.add_argument(
        "--check", action="store_true", help="compare the files with a rebuild; exit 1 if any differ"
    )
    args = parser.parse_args(argv)

    if args.check or args.rebuild:
        seeds = {name: entry["seed"] for name, entry in _load_manifest()["cases"].items()}
        unknown = sorted(set(seeds) - {c.name for c in CASES})
        if unknown:
            raise SystemExit(f"manifest names unknown cases: {', '.join(unknown)}")
        if args.rebuild:
            for case in CASES:
                print(f"{case.file}: seed {seeds[case.name]}")
                write_case(case, seeds[case.name], GOLDEN_DIR)
            return 0
        bad = []
        with tempfile.TemporaryDirectory() as tmp:
            for case in CASES:
                if case.name not in seeds:
                    bad.append(f"{case.file}: not in the manifest")
                    continue
                fresh = write_case(case, seeds[case.name], Path(tmp)).read_bytes()
                current = GOLDEN_DIR / case.file
                if not current.exists() or current.read_bytes() != fresh:
                    bad.append(f"{case.file}: differs from its rebuild (seed {seeds[case.name]})")
        for line in bad:
            print(line)
        print("golden replays are up to date" if not bad else f"{len(bad)} golden replay(s) out of date")
        return 1 if bad else 0

    manifest: dict[str, Any] = {"about": "seeds of the golden replays; see regenerate.py", "cases": {}}
    for case in CASES:
        seed = search(case)
        path = write_case(case, seed, GOLDEN_DIR)
        state, found = play(case, seed) or (None, set())
        manifest["cases"][case.name] = {
            "file": case.file,
            "seed": seed,
            "decisions": state.decisions if state else None,
            "features": sorted(found),
        }
        print(f"{case.file}: seed {seed}, {path.stat().st_size} bytes, {sorted(found)}")
    known = {c.file for c in CASES}
    for stale in sorted(GOLDEN_DIR.glob("*.jsonl")):
        if stale.name not in known:
            print(f"removing {stale.name} (no longer a case)")
            stale.unlink()
    MANIFEST.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
