"""Fair play (issue 35): no bot can know a card it has not been shown.

A spy bot that bundles the engine (``bots/spy_bot.py``) tries every way in: seeds derived
from the public labels and small file seeds, the seeds ``GameEnd`` tells, and its memory of
the deals it met. It writes its predictions of the other seats' hands; here they are checked
against the replays. Against secret deals it never predicts one; against a reproducible run
(the file sets ``seed``) it predicts every hand, which shows the spy works. The replays of each
run also show that no bot process met a deal twice."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import secrets
import sys
import time
from pathlib import Path

import pytest

from participants.compare import compare, house_specs
from participants.final import Final
from participants.roster import Roster
from server.engine import make_config
from server.engine.state import GameState
from server.spec import BotSpec
from server.storage.replay import read_replay
from server.transport.service import Arena, ArenaOptions
from server.web.app import WebOptions, WebServer
from server.web.board import Board, folder_source
from server.web.live import LiveHub
from tournaments.adaptive import play_adaptive
from tournaments.config import load_config, parse_config
from tournaments.grpc_runner import tournament_runner
from tournaments.ladder import open_ladder, run_ladder
from tournaments.runner import open_tournament, play, start_tournament

SPY = Path(__file__).resolve().parent / "bots" / "spy_bot.py"


def field(folder: Path, extra: str, *spy_args: Path) -> str:
    """The spy and two builtins at a table of three (one table: the spy plays every game)."""
    command = json.dumps([sys.executable, str(SPY), str(folder / "predictions.jsonl"), *map(str, spy_args)])
    return (f'name = "spied"\ntable_size = 3\nconcurrency = 1\nsandbox = "none"\n{extra}\n'
            f'[flags]\nshort_game = true\n'
            f'[[bots]]\nname = "spy"\ncommand = {command}\n'
            f'[[bots]]\nname = "random"\nbuiltin = "random"\n[[bots]]\nname = "first"\nbuiltin = "first"\n')


def played(folder: Path, extra: str, kind: str = "tournament") -> Path:
    """Play the field (a tournament, a ladder of two rounds); its output folder."""
    text = field(folder, extra)
    config = parse_config(text, source=str(folder / "spied.toml"))
    out = folder / "out"
    if kind == "ladder":
        with open_ladder(config, text, str(folder / "spied.toml"), out) as store:
            asyncio.run(run_ladder(config, store, out, tournament_runner, rounds=2, handle_signals=False))
        return out
    with start_tournament(config, text, str(folder / "spied.toml"), out) as store:
        if config.schedule == "adaptive":
            asyncio.run(play_adaptive(config, store, out, tournament_runner, progress=False, handle_signals=False))
        else:
            asyncio.run(play(config, store, out, tournament_runner, progress=False))
    return out


def hits(folder: Path, out: Path) -> tuple[int, int]:
    """(predictions of a whole hand that were right, games the spy played)."""
    right = games = 0
    for line in (folder / "predictions.jsonl").read_text().splitlines():
        guess = json.loads(line)
        games += 1
        replay = read_replay(next((out / "replays").glob(f"{guess['game']}.*")))
        state = GameState(make_config("craits", 3, short_game=True), replay.seed)
        for seat, hand in guess["hands"].items():
            right += sorted(map(str, state.hand_of(int(seat)))) == hand
    return right, games


def instances_meeting_a_deal_twice(out: Path) -> list[tuple[str, int]]:
    """(instance, seed) met in more than one game, read from the replays."""
    met: dict[tuple[str, int], str] = {}
    twice = []
    for path in sorted((out / "replays").iterdir()):
        replay = read_replay(path)
        for report in replay.result.get("seat_reports", ()):
            for instance in report.get("instances", ()):
                if (instance, replay.seed) in met:
                    twice.append((instance, replay.seed))
                met[(instance, replay.seed)] = replay.game_id
    assert met, "the replays name no instance: nothing was checked"
    return twice


@pytest.mark.parametrize(("kind", "extra"), [
    ("tournament", "deals = 2"),                              # round robin, fresh deals (the default)
    ("tournament", 'deals = 2\nduplicate = "table"'),         # duplicate deals: one per table's rotations
    ("tournament", 'schedule = "adaptive"\nmax_games = 6'),   # adaptive
    ("ladder", ""),                                           # two rounds
])
def test_a_spy_that_bundles_the_engine_never_knows_an_opponents_hand(tmp_path: Path, kind: str, extra: str) -> None:
    out = played(tmp_path, extra, kind)
    right, games = hits(tmp_path, out)
    assert games == 6 and right == 0
    assert instances_meeting_a_deal_twice(out) == []


def test_the_spy_knows_every_hand_of_a_reproducible_run(tmp_path: Path) -> None:
    """The control: the file sets seed, so anyone (the spy too) can compute every deal."""
    out = played(tmp_path, 'deals = 2\nseed = 7\nduplicate = "table"')
    right, games = hits(tmp_path, out)
    assert games == 6 and right == 2 * games  # (both other hands of every game)
    assert instances_meeting_a_deal_twice(out) == []


def test_two_spy_versions_compared_never_know_an_opponents_hand(tmp_path: Path) -> None:
    """A comparison plays A and B on the same deals: each kept process meets a deal once, and
    neither is told its seed while the other has still to play it."""
    spies = [BotSpec(name=f"spy-v{n}", token="", command=(sys.executable, str(SPY), str(tmp_path / "predictions.jsonl")))
             for n in (1, 2)]
    out = tmp_path / "out"

    async def run() -> None:
        arena = await Arena.start("127.0.0.1:0", ArenaOptions(bot_log_dir=out / "bots", sandbox="none"))
        arena.keep_bots()  # (as play_pending: a version's process plays its next game)
        try:
            await compare(arena.run_game, *spies, house_specs(("random", "first")), seed=secrets.randbits(63),
                          games=12, until_told=False, tag="cmp1", replays=out / "replays")
        finally:
            await arena.shutdown(grace_s=0)

    asyncio.run(run())
    right, games = hits(tmp_path, out)
    assert games == 12 and right == 0  # (2 deals x 3 rotations x 2 versions)
    assert instances_meeting_a_deal_twice(out) == []


def test_a_spy_in_a_final_never_knows_an_opponents_hand(tmp_path: Path) -> None:
    """A roster's final (its own secret key, one kept process per version): the spy's version
    against two house bots, at one table in every rotation of its deals."""
    roster = Roster.create(tmp_path / "roster")
    roster.add("mallory")
    roster.decide(roster.submit("mallory", b"print(1)\n", "bot.py"), "admitted",
                  command=(sys.executable, str(SPY), str(tmp_path / "predictions.jsonl")))
    version = roster.version("mallory", 1)
    assert version is not None
    roster.version_dir(version).mkdir(parents=True, exist_ok=True)  # (as its build leaves it)
    deadline = time.time() + 3600
    (roster.folder / "final.toml").write_text(
        f'deadline = "{time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(deadline))}"\n'
        'games_per_bot = 6\ntable_size = 3\nhouse = ["random", "first"]\nconcurrency = 1\n', encoding="utf-8")
    final = Final(roster)
    path = final.tournament_file(now=deadline + 1)  # (the version was in before the deadline)
    config = dataclasses.replace(load_config(path), sandbox="none")  # (the spy reads the repo's engine)
    with start_tournament(config, path.read_text(), str(path), final.out_dir) as store:
        asyncio.run(play(config, store, final.out_dir, tournament_runner, progress=False))
    right, games = hits(tmp_path, final.out_dir)
    assert games == 6 and right == 0
    assert instances_meeting_a_deal_twice(final.out_dir) == []


@pytest.mark.parametrize("withheld", [True, False])
def test_a_spy_reading_the_board_while_the_run_plays_never_knows_an_opponents_hand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, withheld: bool,
) -> None:
    """`craits web` serves the run as it plays: the spy reads every page, every game's API,
    events and replay before each game. With duplicate deals a finished game's deal is still to
    be played in the next rotations: its replay is withheld until they are played. The control
    (withheld=False: the board serves it at once) shows the spy would use it."""
    if not withheld:
        monkeypatch.setattr(Board, "hidden_deal", lambda self, game: False)
    address = tmp_path / "board.txt"
    text = field(tmp_path, 'deals = 2\nduplicate = "table"', address)
    config = parse_config(text, source=str(tmp_path / "spied.toml"))
    out = tmp_path / "out"

    async def run(store) -> None:
        server = WebServer(LiveHub(), Board(folder_source(out)), WebOptions(port=0, poll_s=0.02))  # (it shows each game as it ends)
        address.write_text(await server.start())
        try:
            await play(config, store, out, tournament_runner, progress=False)
        finally:
            await server.stop()

    with start_tournament(config, text, str(tmp_path / "spied.toml"), out) as store:
        asyncio.run(run(store))
    right, games = hits(tmp_path, out)
    lines = [json.loads(line) for line in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert games == 6
    if withheld:
        assert right == 0
    else:
        # (every later rotation of a deal: 4 games, 2 hands each; one may start before the
        # board lists its deal's first)
        assert right >= 6 and "the board" in {line["how"] for line in lines}
    # (some game's spy found its own deal's earlier rotation recorded, so asked for that replay)
    assert any(line["seen"] > 3 * (int(line["game"][1:5]) - 1) for line in lines if not line["game"].endswith("r1"))
    assert instances_meeting_a_deal_twice(out) == []


def test_a_runs_secret_key_is_kept_in_its_store_so_resume_plays_the_same_deals(tmp_path: Path) -> None:
    text = ('name = "keyed"\ntable_size = 2\ndeals = 2\n[flags]\nshort_game = true\n'
            '[[bots]]\nname = "a"\nbuiltin = "random"\n[[bots]]\nname = "b"\nbuiltin = "first"\n')
    config = parse_config(text, source=str(tmp_path / "keyed.toml"))
    seeds = []
    for out in (tmp_path / "one", tmp_path / "two"):
        with start_tournament(config, text, str(tmp_path / "keyed.toml"), out) as store:
            seeds.append([g.seed for g in store.games()])
            row = store.tournament()
        assert row is not None and row.deal_key is not None and len(row.deal_key) == 32
        assert row.deal_key.hex() not in json.dumps(row.settings) and "deal_key" not in repr(row)
    _, store = open_tournament(tmp_path / "one")  # (refused if its schedule's seeds did not match)
    with store:
        assert [g.seed for g in store.games()] == seeds[0]
    assert len(set(seeds[0])) == 4 and not set(seeds[0]) & set(seeds[1])  # each game its own deal, each run its own key
