"""A roster's versions on a running ladder: picked up between rounds, each rated on its own,
a new one starting from its predecessor's rating mean."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from participants.admission import admit_pending
from participants.entrants import RosterEntrants
from participants.roster import Roster
from server.errors import UserError
from tests.participants.conftest import LADDER
from tests.participants.uploads import good_bot
from tournaments.config import parse_config
from tournaments.grpc_runner import tournament_runner
from tournaments.ladder import LadderRound, open_ladder, run_ladder
from tournaments.standings import Standings, read_priors


def test_a_version_admitted_while_the_ladder_runs_plays_from_the_next_round(tmp_path: Path) -> None:
    roster = Roster.create(tmp_path / "roster")
    roster.add("alice")
    roster.submit("alice", good_bot(), "mybot.zip")
    assert [o.status for _, o in admit_pending(roster)] == ["admitted"]
    config = parse_config(LADDER, source="class.toml", base_dir=tmp_path)
    entrants = RosterEntrants(config)
    out = tmp_path / "out"
    store = open_ladder(config, LADDER, str(tmp_path / "class.toml"), out)
    seated: list[tuple[str, ...]] = []
    after_first: dict[str, float] = {}

    def on_round(played: LadderRound, standings: Standings) -> None:
        seated.append(played.seats)
        if len(seated) == 1:  # alice submits again; it is admitted before the next round is picked
            after_first.update({row.bot: row.rating_mu for row in standings.rows})
            roster.submit("alice", good_bot(build="true"), "mybot-v2.zip")
            worker = threading.Thread(target=admit_pending, args=(roster,))
            worker.start()
            worker.join()

    with store:
        asyncio.run(run_ladder(entrants.config(), store, out, tournament_runner, rounds=3, on_round=on_round,
                               handle_signals=False, entrants=entrants))
        names = store.bot_names()
    assert sorted(seated[0]) == ["alice.v1", "house"]
    assert all(sorted(seats) == ["alice.v2", "house"] for seats in seated[1:])
    assert {"alice.v1", "alice.v2"} <= set(names)
    assert read_priors(roster.folder)["alice.v2"] == after_first["alice.v1"]
    assert [v.status for v in roster.versions("alice")] == ["admitted", "admitted"]


def _alices_own_bot(tmp_path: Path, stderr: int = subprocess.DEVNULL,
                    ) -> tuple[Roster, str, str, RosterEntrants, subprocess.Popen[str]]:
    """A ladder file with a fixed referee address, its roster with alice, and alice's own bot
    started with her token: (roster, token, file text, entrants, bot)."""
    roster = Roster.create(tmp_path / "roster")
    token = roster.add("alice")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    text = LADDER.replace('roster = "roster"\n', f'roster = "roster"\naddress = "127.0.0.1:{port}"\n')
    entrants = RosterEntrants(parse_config(text, source="class.toml", base_dir=tmp_path))
    bot = subprocess.Popen([sys.executable, "-m", "craits_bot.examples.random_bot"],
                           env={**os.environ, "CRAITS_SERVER": f"127.0.0.1:{port}", "CRAITS_TOKEN": token},
                           stdout=subprocess.DEVNULL, stderr=stderr, text=True)
    return roster, token, text, entrants, bot


def test_a_participants_token_lets_their_own_bot_connect_and_play_as_them(tmp_path: Path) -> None:
    _, token, text, entrants, bot = _alices_own_bot(tmp_path)
    config = entrants.base
    out = tmp_path / "out"
    wrong = entrants.resolve_token(token[:-2] + "zz")
    try:
        with open_ladder(config, text, str(tmp_path / "class.toml"), out) as store:
            runner = functools.partial(tournament_runner, resolve_token=entrants.resolve_token)
            asyncio.run(asyncio.wait_for(run_ladder(entrants.config(), store, out, runner, rounds=2,
                                                    handle_signals=False, entrants=entrants), 120))
            seated = {seat for game in store.games() for seat in game.seats}
            tokens = store.bot_tokens()
    finally:
        bot.kill()
        bot.wait()
    assert wrong is None
    assert seated == {"alice", "house"}
    assert tokens["alice"] == "resolved:alice" and token not in (tmp_path / "out" / "tournament.db").read_bytes().decode(
        "latin-1")


def test_a_house_bot_named_as_a_participant_or_their_version_is_refused_before_anything_is_played(
    tmp_path: Path,
) -> None:
    """Their own bot would sit at the same table under the same name (it was a traceback then)."""
    Roster.create(tmp_path / "roster").add("house")
    for name in ("house", "house.v2"):
        text = LADDER.replace('name = "house"', f'name = "{name}"')
        with pytest.raises(UserError, match=f"bot '{name}' is named as participant 'house' of the roster"):
            RosterEntrants(parse_config(text, source="class.toml", base_dir=tmp_path))


def test_a_revoked_token_ends_its_bots_stream_at_once_and_the_board_says_why(tmp_path: Path) -> None:
    roster, _, _, entrants, bot = _alices_own_bot(tmp_path, stderr=subprocess.PIPE)  # (a few lines)
    out = tmp_path / "out"
    out.mkdir()

    def board_says() -> str:
        with contextlib.suppress(OSError, ValueError, KeyError):
            return str(json.loads((out / "connections.json").read_text())["bots"]["alice"]["state"])
        return ""

    async def run() -> tuple[str, set[str]]:
        async with tournament_runner(entrants.config(), out, resolve_token=entrants.resolve_token,
                                     revoked=entrants.revoked) as pool:
            while "alice" not in pool.online_bots():
                await asyncio.sleep(0.05)
            await asyncio.to_thread(roster.revoke, "alice")
            while board_says() != "token revoked":
                await asyncio.sleep(0.05)
            return board_says(), pool.online_bots()

    try:
        state, online = asyncio.run(asyncio.wait_for(run(), 60))
        code = bot.wait(60)
    finally:
        bot.kill()
        said = bot.communicate()[1]
    assert state == "token revoked" and "alice" not in online
    assert code != 0 and "your token was revoked" in said and "Traceback" not in said


def test_a_ladder_file_sets_its_pace_with_a_pause_between_rounds(tmp_path: Path) -> None:
    """pause_s = 1: a class's practice ladder waits a second between rounds (it played flat out,
    2,049 games in 7.5 minutes); a pause that is not a whole number of seconds is refused."""
    import datetime as dt
    import itertools

    from server.cli import main as craits

    file = tmp_path / "paced.toml"
    file.write_text('name = "paced"\ntable_size = 2\npause_s = 1\n[flags]\nshort_game = true\n'
                    '[[bots]]\nname = "a"\nbuiltin = "random"\n[[bots]]\nname = "b"\nbuiltin = "default"\n',
                    encoding="utf-8")
    assert craits(["ladder", "run", str(file), "--out", str(tmp_path / "out"), "--rounds", "3"]) == 0
    events = [json.loads(line) for line in (tmp_path / "out" / "tournament.log").read_text().splitlines()]
    starts = [dt.datetime.fromisoformat(e["timestamp"]) for e in events if e["event"] == "ladder_round"]
    assert len(starts) == 3 and all((later - earlier).total_seconds() >= 1.0
                                    for earlier, later in itertools.pairwise(starts))
    file.write_text(file.read_text().replace("pause_s = 1", "pause_s = -2"), encoding="utf-8")
    assert craits(["ladder", "run", str(file), "--out", str(tmp_path / "out2"), "--rounds", "1"]) == 2
