"""`craits tournament ...`: run, resume and report tournaments.

    craits tournament run FILE [--runner auto|local|grpc] [--out DIR] [--concurrency N] [--overwrite] [--yes]
    craits tournament resume FILE|DIR [--retry-aborted] [--runner ...] [--concurrency N]
    craits tournament standings DIR|FILE [--csv F] [--json F]
    craits tournament plan FILE
    craits ladder run FILE [--rounds N] [--runner ...] [--out DIR] [--concurrency N] [--overwrite]
    craits ladder standings DIR|FILE [--csv F] [--json F]

Everything a run produces lands in its output folder (``logs/<name>/`` unless
``--out`` or the file's ``output`` says otherwise): ``tournament.db`` (SQLite),
``tournament.log`` (JSON lines, one event per game), ``replays/``,
``standings.json``/``.csv`` and, with the referee, ``referee.jsonl`` and ``bots/``
(each launched bot's output).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import functools
import itertools
import json
import os
import re
import shlex
import sqlite3
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from server.cli.tls_options import add_tls_options, tls_request
from server.errors import UserError
from server.game.policies import POLICY_NAMES
from server.logging import configure_logging
from server.storage.postgres import STORE_ENV, PostgresStore
from server.storage.store import Store, StoreError, TournamentStore
from server.transport.commands import bot_command_help
from server.transport.sandbox import UNSANDBOXED, SandboxError
from server.transport.sandbox import check as check_sandbox
from server.web.serve import add_web_options, board_place, run_watched, web_options
from tournaments.config import STORE_URL_PREFIXES, TournamentConfig, address_problem, load_config
from tournaments.grpc_runner import tournament_runner
from tournaments.ladder import (
    LadderRound,
    drop_departed,
    ladder_standings,
    open_ladder,
    reopen_ladder,
    rounds_played,
    run_ladder,
    tables_at_once,
)
from tournaments.pages import REPLAY_DIR, fault_links, game_links, write_viewer_pages
from tournaments.runner import (
    RunnerFactory,
    RunSummary,
    TournamentError,
    folder_lock,
    load_standings,
    local_runner,
    open_tournament,
    play,
    settings_of,
    start_tournament,
    write_standings,
)
from tournaments.schedule import (
    pair_counts,
    planned_games,
    schedule_digest,
    schedule_for,
    suggest_balanced,
)
from tournaments.standings import RATING_HEADERS, Standings

RUNNERS = ("auto", "local", "grpc")
LARGE_PLAN = 20_000
"""``tournament run`` plays a schedule of more games than this only with --yes: at a few
games a second it takes hours (30 bots in a round robin at tables of four: 109,620 games)."""


def register_cli(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "tournament",
        help="run, resume and report round-robin tournaments",
        description="Round robin, or a balanced schedule of so many games per bot, with seat rotation and "
        "duplicate deals; persisted, resumable and rated.",
    )
    sub = parser.add_subparsers(dest="tournament_command", metavar="ACTION", required=True)

    run = sub.add_parser("run", help="start a tournament from its TOML file", epilog=bot_command_help())
    run.add_argument("file", help="the tournament file, e.g. tournaments/demo.toml")
    run.add_argument("--out", help="output folder (default: the file's output, else logs/<name>)")
    run.add_argument("--overwrite", action="store_true", help="replace an earlier run in the output folder")
    run.add_argument("--yes", action="store_true", help=f"play a schedule of more than {LARGE_PLAN:,} games")
    _runner_options(run)
    run.set_defaults(func=cmd_run)

    resume = sub.add_parser("resume", help="play the games a stopped or killed run did not record",
                            epilog=bot_command_help())
    resume.add_argument("target", help="the tournament's output folder, or its TOML file")
    resume.add_argument("--out", help="with a FILE: its output folder, if not the default")
    resume.add_argument(
        "--retry-aborted", action="store_true",
        help="play the aborted games again (when the referee, not a bot, was at fault)",
    )
    _runner_options(resume)
    resume.set_defaults(func=cmd_resume)

    standings = sub.add_parser("standings", help="print (and export) the standings of a tournament")
    standings.add_argument("target", help="the tournament's output folder, or its TOML file")
    standings.add_argument("--csv", metavar="FILE", help="also write the standings as CSV")
    standings.add_argument("--json", metavar="FILE", help="also write the standings (with head to head) as JSON")
    standings.add_argument("--against", metavar="BOT", help="also print BOT's head to head against every other bot")
    standings.add_argument("--faults", action="store_true",
                           help="also list each bot's faults: the decision in the replay and the command that "
                                "reruns it (docs/rerun.md)")
    _store_option(standings)
    standings.set_defaults(func=cmd_standings)

    plan = sub.add_parser("plan", help="check a tournament file and show its schedule without playing",
                          epilog=bot_command_help())
    plan.add_argument("file")
    plan.set_defaults(func=cmd_plan)

    ladder = subparsers.add_parser(
        "ladder",
        help="run a continuous ladder: round after round until stopped, ranked by rating",
        description="The bots of a tournament file play round after round (a table, a deal in every seat "
        "rotation), the least played and closest rated first, until stopped; persisted, continued by running "
        "it again, ranked by OpenSkill rating. Bots may join or leave between runs.",
    )
    ladder_sub = ladder.add_subparsers(dest="ladder_command", metavar="ACTION", required=True)
    ladder_run = ladder_sub.add_parser("run", help="start a ladder, or continue the one in its output folder",
                                       epilog=bot_command_help())
    ladder_run.add_argument("file", help="a tournament file (its schedule, deals and games are not used)")
    ladder_run.add_argument("--out", help="output folder (default: the file's output, else logs/<name>)")
    ladder_run.add_argument(
        "--rounds", type=_non_negative, help="new rounds to play, then stop (default: until Ctrl-C or SIGTERM)"
    )
    ladder_run.add_argument("--overwrite", action="store_true", help="replace an earlier run in the output folder")
    _runner_options(ladder_run, progress=False)
    ladder_run.set_defaults(func=cmd_ladder_run)

    ladder_standings_cmd = ladder_sub.add_parser("standings", help="print (and export) a ladder's standings")
    ladder_standings_cmd.add_argument("target", help="the ladder's output folder, or its TOML file")
    ladder_standings_cmd.add_argument("--csv", metavar="FILE", help="also write the standings as CSV")
    ladder_standings_cmd.add_argument("--json", metavar="FILE", help="also write the standings as JSON")
    ladder_standings_cmd.add_argument("--faults", action="store_true",
                                      help="also list each bot's faults and the commands that rerun them")
    ladder_standings_cmd.add_argument("--against", metavar="BOT",
                                      help="also print BOT's head to head against every other bot")
    _store_option(ladder_standings_cmd)
    ladder_standings_cmd.set_defaults(func=cmd_ladder_standings)


def _runner_options(parser: argparse.ArgumentParser, *, progress: bool = True) -> None:
    parser.add_argument(
        "--runner", choices=RUNNERS, default="auto",
        help="local: in-process builtin bots; grpc: the referee with launched/remote bots; "
        "auto (default): local when every bot is builtin, else grpc",
    )
    parser.add_argument("--concurrency", type=_positive, help="games at once (default: the file's concurrency)")
    parser.add_argument(
        "--address", metavar="HOST:PORT",
        help="where the referee listens (default: the file's address; else 127.0.0.1:50051 when bots connect "
        "on their own, any free port otherwise)",
    )
    parser.add_argument(
        "--no-sandbox", action="store_true",
        help='run launched bots unsandboxed, as this user (trusted bots only; the file\'s sandbox = "none")',
    )
    if progress:
        parser.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")
    add_tls_options(parser)
    add_web_options(parser)
    _store_option(parser)
    parser.add_argument(
        "--local-workers", type=_non_negative, metavar="N",
        help="with --store: games this command plays itself at once (default: --concurrency when no "
        "`craits worker` is running, else 0)",
    )
    parser.add_argument(
        "--stalled-after", type=float, default=30.0, metavar="S",
        help="with --store: a worker silent this long is dead, its games go to another (default 30; keep it "
        "well above the workers' --heartbeat, 5 s by default)",
    )


def _store_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store", metavar="URL",
        help="a PostgreSQL database (postgresql://user@host:port/db) for the results, whose games "
        "`craits worker`s on any machine play (default: $CRAITS_STORE, else the file's store, else "
        "SQLite in the output folder)",
    )


def store_url(args: argparse.Namespace, config: TournamentConfig | None = None, target: str | None = None) -> str | None:
    """--store, else $CRAITS_STORE, else the file's ``store``: a PostgreSQL URL, or None for SQLite
    (also for a ``target`` folder holding a SQLite tournament, unless --store says otherwise)."""
    if target is not None and getattr(args, "store", None) is None and (Path(target) / Store.FILENAME).is_file():
        return None
    url = getattr(args, "store", None) or os.environ.get(STORE_ENV) or (config.store if config else None)
    if url and not url.startswith(STORE_URL_PREFIXES):
        raise UserError(f"--store/{STORE_ENV}: {url!r} is not a PostgreSQL URL (postgresql://user@host:port/db)")
    return url or None


def _positive(text: str) -> int:
    return _whole(text, 1)


def _non_negative(text: str) -> int:
    return _whole(text, 0)


def _whole(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"must be at least {low}")
    return value


# ------------------------------------------------------------------ commands


def _with_address(config: TournamentConfig, args: argparse.Namespace) -> TournamentConfig:
    """The file's configuration with ``--address`` (and ``--no-sandbox``, ``--tls*``) applied."""
    if getattr(args, "no_sandbox", False):
        config = dataclasses.replace(config, sandbox="none")
    if (tls := tls_request(args)) is not None:
        config = dataclasses.replace(config, tls=tls)
    if args.address is None:
        return config
    if (problem := address_problem(args.address)) is not None:
        raise UserError(f"--address: {problem}")
    return dataclasses.replace(config, address=args.address)


def cmd_run(args: argparse.Namespace) -> int:
    web_options(args)  # --web and --reveal-after checked before anything is created
    config = _with_address(load_config(args.file), args)
    _refuse_a_large_plan(config, args)
    if url := store_url(args, config):
        from server.cli import tournament_pg

        return tournament_pg.cmd_run(args, config, url)
    out_dir = config.output_dir(args.out)
    factory = choose_runner(args.runner, config, out_dir)
    text = Path(args.file).read_text(encoding="utf-8")
    with _locked(out_dir), _database_errors(out_dir):
        try:
            store = start_tournament(config, text, str(Path(args.file).resolve()), out_dir, overwrite=args.overwrite)
        except (TournamentError, StoreError) as err:
            raise UserError(str(err)) from None
        with store:
            print(f"{config.name}: {_plan_text(config)}; output in {out_dir}", file=sys.stderr)
            if not args.no_progress:  # (what Progress will show: a line kept up to date, or one estimate)
                print("time: the progress line shows the rate and the time left, measured on the first games"
                      if sys.stderr.isatty() else "time: estimated once the first 10 s of games have measured this "
                      "machine's speed", file=sys.stderr)
            return _play_and_report(config, store, out_dir, factory, args)


def _s(n: int) -> str:
    """The plural's s, for any number but one: f"{n} table{_s(n)}"."""
    return "" if n == 1 else "s"


def _plan_text(config: TournamentConfig) -> str:
    """Bots, tables and games of the file's schedule, in one line."""
    games = planned_games(config)
    k = config.table_size
    if config.schedule == "balanced":
        return (f"{len(config.bots)} bots, balanced: {config.games_per_bot} games per bot = "
                f"{games // k:,} table{_s(games // k)} of {k} x {k} seat rotations = {games:,} games")
    tables = games // k // config.deals
    return (f"{len(config.bots)} bots, round robin: {tables:,} table{_s(tables)} of {k} x "
            f"{config.deals} deal{_s(config.deals)} x {k} seat rotations = {games:,} games")


def _refuse_a_large_plan(config: TournamentConfig, args: argparse.Namespace) -> None:
    """More than LARGE_PLAN games only with --yes; the message says how to make it smaller."""
    games = planned_games(config)
    if games <= LARGE_PLAN or args.yes:
        return
    smaller = "; or lower games_per_bot"
    if config.schedule != "balanced":
        proposal = suggest_balanced(len(config.bots), config.table_size, config.seed)
        smaller = "; or give the file fewer deals" if proposal is None else (
            f'; or give the file schedule = "balanced" with games_per_bot = {proposal} '
            f"({len(config.bots) * proposal // config.table_size:,} games)")
    raise UserError(f"{args.file}: {games:,} games is more than {LARGE_PLAN:,} ({_plan_text(config)}): "
                    f"play it with --yes{smaller}")


def cmd_resume(args: argparse.Namespace) -> int:
    web_options(args)
    if url := store_url(args, _file_config(args.target), args.target):
        from server.cli import tournament_pg

        return tournament_pg.cmd_resume(args, url)
    out_dir = _target_dir(args.target, getattr(args, "out", None), check_file=True)
    with _locked(out_dir), _database_errors(out_dir):
        return _resume(args, out_dir)


def _announce_resume(config: TournamentConfig, store: TournamentStore, out_dir: Path, *, retry_aborted: bool) -> None:
    """What a resume will do, on standard error (aborted games put back first, if asked)."""
    if retry_aborted:
        print(f"{config.name}: {store.forget_aborted()} aborted game(s) will be played again", file=sys.stderr)
    done, total = store.counts()
    if done == total:
        print(f"{config.name}: all {total} games are already recorded", file=sys.stderr)
    else:
        print(f"{config.name}: resuming, {done}/{total} games recorded; output in {out_dir}", file=sys.stderr)


def _resume(args: argparse.Namespace, out_dir: Path) -> int:
    config, store = _open(out_dir, readonly=True)  # (read without the bots: their folders may have gone)
    with store:
        done, total = store.counts()
        retried = args.retry_aborted and any(result.aborted for result in store.results())
    if done == total and not retried:  # nothing to play, so nothing to launch: the standings
        with Store(out_dir / Store.FILENAME) as finished:
            finished.mark_finished()  # (a run killed between its last game and its end)
            _announce_resume(config, finished, out_dir, retry_aborted=args.retry_aborted)
            written = _report(load_standings(config, finished), finished, out_dir, f"Craits tournament {config.name}")
        return 0 if written else 1
    config, store = _open(out_dir)
    config = _with_address(config, args)
    with store:
        _announce_resume(config, store, out_dir, retry_aborted=args.retry_aborted)
        factory = choose_runner(args.runner, config, out_dir, resuming=True)
        return _play_and_report(config, store, out_dir, factory, args)


def cmd_standings(args: argparse.Namespace) -> int:
    if url := store_url(args, _file_config(args.target), args.target):
        from server.cli import tournament_pg

        return tournament_pg.cmd_standings(args, url)
    out_dir = _target_dir(args.target, None, check_file=False)
    with _database_errors(out_dir):
        config, store = _open(out_dir, readonly=True)
        with store:
            standings = load_standings(config, store)
            games = game_links(store, out_dir)
            faults = fault_links(store, out_dir, bot_commands(config), Path.cwd()) if args.faults else None
    return _show_standings(standings, games, args, faults)


def bot_commands(config: Any) -> dict[str, str]:
    """Each launched bot's command as one line (for the rerun commands of ``--faults``)."""
    return {bot.name: shlex.join(bot.command) for bot in config.bots if getattr(bot, "command", None)}


def format_faults(faults: list[dict[str, Any]]) -> str:
    """``--faults``: each bot's first fault per game, where it is, and how to play it again."""
    if not faults:
        return "faults: none"
    lines = [f"faults ({len(faults)}: each bot's first per game; rerun them with your bot, docs/rerun.md):"]
    for f in faults:
        more = f" (and {f['count'] - 1} more)" if f["count"] > 1 else ""
        lines += [f"  {f['bot']}: game {f['game_id']}, seat {f['seat']}, decision {f['decision']}: {f['what']}{more}",
                  f"    viewer: {f['viewer']}", f"    rerun:  {f['command']}"]
    return "\n".join(lines)


def _show_standings(standings: Standings, games: list[dict[str, Any]], args: argparse.Namespace,
                    faults: list[dict[str, Any]] | None = None) -> int:
    """Print the table (and one bot's head to head with --against, the faults with --faults);
    write the CSV and JSON exports asked for with --csv and --json."""
    against = getattr(args, "against", None)
    if against is not None:
        try:
            record = standings.format_against(against)
        except ValueError as err:
            raise UserError(str(err)) from None
    print(standings.format_table())
    if against is not None:
        print(f"\n{record}")
    if faults is not None:
        print(f"\n{format_faults(faults)}")
    if args.csv:
        _write(args.csv, standings.to_csv())
    if args.json:
        _write(args.json, json.dumps({**standings.to_dict(), "games": games}, indent=2, sort_keys=True) + "\n")
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    config = load_config(args.file)
    if config.unrunnable:  # (as run would refuse it)
        raise UserError(_first_and_more(config.unrunnable, "whose command cannot run"))
    games = schedule_for(config)
    seats: dict[str, Counter[int]] = {b: Counter() for b in config.bot_names}
    for game in games:
        for seat, name in enumerate(game.seats):
            seats[name][seat] += 1
    tables = len({g.table for g in games})
    met = pair_counts(games)
    shared = [met[frozenset(pair)] for pair in itertools.combinations(config.bot_names, 2)]
    print(f"{config.name}: {len(config.bots)} bots, tables of {config.table_size}, preset {config.preset}")
    if config.schedule == "balanced":
        print(f"balanced schedule: {config.games_per_bot} games per bot = {tables} table{_s(tables)} x "
              f"{config.table_size} seat rotations = {len(games)} games")
    else:
        print(f"{tables} table{_s(tables)} x {config.deals} deal{_s(config.deals)} x {config.table_size} seat "
              f"rotations = {len(games)} games")
    low, high = min(shared), max(shared)
    print(f"each pair of bots shares {'' if low == high else f'{low} to '}{high} table{_s(high)} "
          f"(average {sum(shared) / len(shared):.2f})")
    print(f"duplicate deals: {config.duplicate}; seed {config.seed}; concurrency {config.concurrency}")
    print(f"output: {config.output_dir()}")
    if len(games) > LARGE_PLAN:
        print(f"more than {LARGE_PLAN:,} games: `craits tournament run` plays them only with --yes")
    for bot in config.bots:
        counts = " ".join(f"seat{s}={seats[bot.name][s]}" for s in range(config.table_size))
        print(f"  {bot.name:<20} {bot.kind:<8} {counts}")
    return 0


def cmd_ladder_run(args: argparse.Namespace) -> int:
    web_options(args)
    config = _with_address(load_config(args.file), args)
    if url := store_url(args, config):
        from server.cli import tournament_pg

        return tournament_pg.cmd_ladder_run(args, config, url)
    out_dir = config.output_dir(args.out)
    factory = choose_runner(args.runner, config, out_dir)
    text = Path(args.file).read_text(encoding="utf-8")
    again = f"craits ladder run {args.file}" + (f" --out {args.out}" if args.out else "")
    with _locked(out_dir), _database_errors(out_dir):
        try:
            store = open_ladder(config, text, str(Path(args.file).resolve()), out_dir, overwrite=args.overwrite)
        except TournamentError as err:
            raise UserError(str(err)) from None
        with store:
            return _play_ladder(args, config, store, out_dir, factory, again)


def _play_ladder(
    args: argparse.Namespace, config: TournamentConfig, store: TournamentStore, out_dir: Path,
    factory: RunnerFactory, again: str, play_pending: Callable[[asyncio.Event], Awaitable[RunSummary]] | None = None,
) -> int:
    entrants = None
    if config.roster is not None:  # the participants' admitted versions play too, picked up round by round
        from participants.entrants import RosterEntrants

        entrants = RosterEntrants(config)
        config = entrants.config()
        print(f"{config.name}: roster {config.roster}: {len(entrants.roster.participants())} participant(s), "
              f"{len(entrants.versions())} admitted version(s) playing"
              + ("" if getattr(args, "web", None) else "; without --web they cannot log in or submit"), file=sys.stderr)
        args.roster_dir = config.roster  # (--web: its participants log in and submit there)
        if factory is tournament_runner:  # (their tokens also let their own bots connect)
            factory = functools.partial(tournament_runner, resolve_token=entrants.resolve_token)
    dropped = drop_departed(config, store)
    if dropped:
        print(f"{config.name}: {len(dropped)} unplayed game(s) of bots no longer in {args.file} dropped",
              file=sys.stderr)
    done, _ = store.counts()
    until = "until Ctrl-C or SIGTERM" if args.rounds is None else f"{args.rounds} new round(s)"
    if config.schedule == "balanced":
        print(f'{config.name}: a ladder picks its tables round by round; the file\'s schedule = "balanced" '
              f"and games_per_bot are not used", file=sys.stderr)
    at_once = tables_at_once(config, args.concurrency)
    tables = f"tables of {config.table_size}" + (f", {at_once} at once" if at_once > 1 else "")
    print(f"{config.name}: ladder of {len(config.bots)} bots, {tables}, {done} games "
          f"recorded so far; playing {until}; output in {out_dir}", file=sys.stderr)
    if factory is not local_runner:
        _quiet_referee_logs(out_dir)
    goal = 0
    if args.rounds is not None:
        goal = rounds_played(store.games(), {g.game_id for g in store.pending_games()}) + args.rounds
    progress = RoundProgress(done, goal)
    try:
        summary = asyncio.run(run_watched(
            args, board_place(store, out_dir, goal_rounds=goal), f"Craits ladder {config.name}", lambda: run_ladder(
                config, store, out_dir, factory, rounds=args.rounds, concurrency=args.concurrency,
                on_round=progress.round_played, play_pending=play_pending, entrants=entrants,
            )))
    except TournamentError as err:
        _report(ladder_standings(config, store, out_dir), store, out_dir, f"Craits ladder {config.name}")
        print(f"craits: error: {err}\n{store.counts()[0]} games are recorded; after fixing it, "
              f"continue with: {again}", file=sys.stderr)
        return 1
    written = _report(ladder_standings(config, store, out_dir), store, out_dir, f"Craits ladder {config.name}")
    print(f"stopped after {summary.rounds} new round(s) ({summary.why}; {summary.games} games recorded by this run); "
          f"continue with: {again}", file=sys.stderr)
    return 0 if written else 1


class RoundProgress:
    """A ladder's progress on the organizer's terminal, one line a round: a ladder has no end,
    so no bar; the rounds and games played, the rate over the last minute, and the leader (with
    ``--rounds N``, the rounds out of the goal)."""

    WINDOW_S = 60.0

    def __init__(self, games_before: int, goal_rounds: int = 0) -> None:
        self.games = games_before
        self.rounds = 0
        self.goal = goal_rounds
        self._samples: collections.deque[tuple[float, int]] = collections.deque([(time.monotonic(), games_before)])

    def round_played(self, played: LadderRound, standings: Standings) -> None:
        print(self.line(played, standings), file=sys.stderr, flush=True)

    def line(self, played: LadderRound, standings: Standings, now: float | None = None) -> str:
        now = time.monotonic() if now is None else now
        self.rounds += 1
        self.games = standings.games_recorded
        self._samples.append((now, self.games))
        while len(self._samples) > 2 and now - self._samples[1][0] > self.WINDOW_S:
            self._samples.popleft()
        first_t, first_games = self._samples[0]
        rate = (self.games - first_games) / (now - first_t) if now > first_t else 0.0
        leader = standings.rows[0]
        goal = f"; round {played.number} of {self.goal}" if self.goal else ""
        return (f"round {played.number}: {', '.join(played.seats)}; {self.games} games played, "
                f"{rate:.2f} games/s; leader {leader.bot} ({RATING_HEADERS[0]} {leader.rating_ordinal:.2f} "
                f"after {leader.games} games){goal}")


def cmd_ladder_standings(args: argparse.Namespace) -> int:
    if url := store_url(args, _file_config(args.target), args.target):
        from server.cli import tournament_pg

        return tournament_pg.cmd_standings(args, url, ladder=True)
    out_dir = _target_dir(args.target, None, check_file=False, kind="ladder")
    with _database_errors(out_dir):
        try:
            config, store = reopen_ladder(out_dir)
        except TournamentError as err:
            raise UserError(str(err)) from None
        with store:
            standings = ladder_standings(config, store, out_dir)
            games = game_links(store, out_dir)
            faults = fault_links(store, out_dir, bot_commands(config), Path.cwd()) if args.faults else None
    return _show_standings(standings, games, args, faults)


# ------------------------------------------------------------------ helpers


def _file_config(target: str) -> TournamentConfig | None:
    """The configuration of a tournament file given as a command's target (None for a folder or a name),
    read to find its tournament: its bots' folders need not be there (a resume that plays checks them)."""
    path = Path(target)
    return load_config(path, check_paths=False) if path.is_file() else None


def _target_dir(target: str, out: str | None, *, check_file: bool, kind: str = "tournament") -> Path:
    """An output folder, or a tournament file whose output folder is meant."""
    path = Path(target)
    if path.is_dir():
        return path
    if not path.exists():
        raise UserError(f"{target}: no such folder or tournament file")
    config = load_config(path, check_paths=False)  # (its output folder's; the bots may have moved on)
    out_dir = config.output_dir(out)
    if not (out_dir / Store.FILENAME).is_file():  # (a folder that is not there is not created by looking)
        where = "--out" if out else "the file's output" if config.output else "the default logs/<name>"
        raise UserError(
            f"{target}: no {kind} in its output folder {out_dir} ({where}, from the current folder: "
            f"{out_dir.absolute()}); give the folder it was played into, or start it with "
            f"`craits {kind} run {target}`"
        )
    if check_file:
        with Store(out_dir / Store.FILENAME) as store:
            row = store.tournament()
        if row is not None and row.schedule_digest != schedule_digest(schedule_for(config)):
            raise UserError(
                f"{target} no longer describes the tournament stored in {out_dir} (its schedule changed); "
                f"resume the folder ({out_dir}) to finish it as it started, or run the file with --overwrite"
            )
        if row is not None and row.source_text != path.read_text(encoding="utf-8"):
            _refuse_changed_settings(target, out_dir, config, row.settings)
            print(f"{target}: changed since the tournament in {out_dir} started; it is resumed as it started, "
                  f"with the copy of the file stored then (to play the file as it is now: run it with "
                  f"--overwrite)", file=sys.stderr)
    return out_dir


def _refuse_changed_settings(target: str, out_dir: Path, config: TournamentConfig, stored: dict[str, Any]) -> None:
    """A file whose game, clocks, deals or bots differ from those its folder's games were played
    with is refused by resume (its schedule may be the same: short_game, say, changes no seat)."""
    now = json.loads(json.dumps(settings_of(config)))
    changed = [key for key, value in now.items() if key != "concurrency" and stored.get(key) != value]
    if changed:
        raise UserError(
            f"{target} no longer describes the tournament stored in {out_dir} (its {', '.join(changed)} changed); "
            f"resume the folder ({out_dir}) to finish it as it started, or run the file with --overwrite"
        )


@contextlib.contextmanager
def _locked(out_dir: Path) -> Iterator[None]:
    try:
        with folder_lock(out_dir):
            yield
    except TournamentError as err:
        raise UserError(str(err)) from None


@contextlib.contextmanager
def _database_errors(out_dir: Path) -> Iterator[None]:
    """A database that breaks under a command (a damaged page, a full disk) is one line."""
    try:
        yield
    except StoreError as err:
        raise UserError(str(err)) from None
    except sqlite3.DatabaseError as err:
        raise UserError(
            f"{out_dir / Store.FILENAME}: {err} (a full disk: free space and resume; a damaged file: "
            f"run the tournament again with --overwrite)"
        ) from None


def _open(out_dir: Path, *, readonly: bool = False) -> tuple[TournamentConfig, Store]:
    try:
        return open_tournament(out_dir, readonly=readonly)
    except (TournamentError, StoreError) as err:
        raise UserError(str(err)) from None


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as err:
        raise UserError(f"cannot write {path}: {err}") from None
    print(f"wrote {path}", file=sys.stderr)


def _play_and_report(
    config: TournamentConfig, store: TournamentStore, out_dir: Path, factory: RunnerFactory, args: argparse.Namespace
) -> int:
    if factory is not local_runner:
        _quiet_referee_logs(out_dir)
    summary: RunSummary | None = None
    failure: TournamentError | None = None
    try:
        summary = asyncio.run(run_watched(
            args, board_place(store, out_dir), f"Craits tournament {config.name}",
            lambda: play(config, store, out_dir, factory, concurrency=args.concurrency,
                         progress=False if args.no_progress else None),
        ))
    except TournamentError as err:
        failure = err
    written = _report(load_standings(config, store), store, out_dir, f"Craits tournament {config.name}")
    if failure is not None or summary is None:
        done, total = store.counts()
        then = (f"{done}/{total} games are recorded; after fixing it, continue with: craits tournament resume {out_dir}"
                if done < total else f"all {total} games are recorded")
        print(f"craits: error: {failure}\n{then}", file=sys.stderr)
        return 1
    if not summary.complete:
        print(f"stopped after {summary.recorded}/{summary.scheduled} games; continue with: "
              f"craits tournament resume {out_dir}", file=sys.stderr)
        return 130
    return 0 if written else 1


def _report(standings: Standings, store: TournamentStore, out_dir: Path, title: str) -> bool:
    """Write the standings' files and the replay viewer's pages, then print the standings (the
    files first: a reader of the output that goes away, ``| head``, does not cost them); False
    when the files could not be written (the results are in the database all the same)."""
    try:
        if isinstance(store, PostgresStore):  # its replays are in the database: the pages need the files
            store.export_replays(out_dir / REPLAY_DIR)
        json_path, csv_path = write_standings(standings, out_dir, game_links(store, out_dir))
        index = write_viewer_pages(store, out_dir, title=title, announce=_announce_pages(out_dir))
    except OSError as err:  # a full disk, say
        print(standings.format_table())
        print(f"\ncraits: error: cannot write the standings files in {out_dir}: {err.strerror or err}; "
              f"the results are safe in {store.path} (the standings command prints them once fixed)",
              file=sys.stderr)
        return False
    print(standings.format_table())
    log = out_dir / "tournament.log"
    if isinstance(store, PostgresStore) and not log.exists():
        log = out_dir / "organizer.jsonl"  # (tournament_pg.LOG_NAME; the workers keep their own logs)
    print(f"\nstandings: {json_path} {csv_path}; database: {store.path}; log: {log}"
          f"\nreplays: {out_dir / 'replays'}; watch them in a browser: {index}",
          file=sys.stderr)
    _warn_absent_bots(standings, out_dir)
    return True


PAGES_ANNOUNCED = 200
"""From this many viewer pages to write (about half a minute), the run says so before the
standings: a 100-bot tournament's 3,900 pages take minutes after its last game."""


def _announce_pages(out_dir: Path) -> Callable[[int], None]:
    def announce(n: int) -> None:
        if n >= PAGES_ANNOUNCED:
            print(f"viewer: writing {n:,} game pages in {out_dir / 'viewer'} (a page per game, each holding its "
                  "whole replay); the standings follow", file=sys.stderr, flush=True)
    return announce


def _warn_absent_bots(standings: Standings, out_dir: Path) -> None:
    """Bots that lost games without playing them (a script that crashes at start shows in the
    standings only as never_connected): one line each, and where their own output is."""
    absent = [
        f"{row.bot} " + " and ".join(f"{what.replace('_', ' ')} in {row.issues[what]}"
                                     for what in ("never_connected", "disconnected") if row.issues.get(what))
        + f" of its {row.games} games"
        for row in standings.rows if row.issues.get("never_connected") or row.issues.get("disconnected")
    ]
    if absent:
        bots = out_dir / "bots"
        where = f"; what launched bots printed (a crash's traceback, say) is in {bots}" if bots.is_dir() else ""
        print(f"craits: warning: {'; '.join(absent)} (the default policy played for them){where}", file=sys.stderr)


def _quiet_referee_logs(out_dir: Path) -> None:
    """The referee's events go to ``<out>/referee.jsonl``, not the terminal, which
    keeps the progress bar and the standings; bot faults show in the standings."""
    configure_logging(out_dir, name="referee", console=False)


def choose_runner(
    name: str, config: TournamentConfig, out_dir: Path | None = None, *, resuming: bool = False
) -> RunnerFactory:
    """The local runner for builtin-only tournaments (or when asked), else the referee's (its
    launched bots checked, and that none of them can read ``out_dir``)."""
    if name == "local" or (name == "auto" and all(b.builtin for b in config.bots) and config.roster is None):
        others = [b.name for b in config.bots if b.builtin is None]
        if others:
            raise UserError(
                f"the local runner plays only builtin bots; {', '.join(others)} need the referee: use --runner grpc"
            )
        return local_runner
    _check_referee_builtins(config)
    _check_bot_commands(config)
    _check_sandbox(config)
    if out_dir is not None:
        _check_output_unseen(config, out_dir, resuming=resuming)
    _check_key_unseen(config)
    return tournament_runner


def _check_key_unseen(config: TournamentConfig) -> None:
    """The referee's TLS private key must not be readable by a sandboxed bot (in its cwd, by
    default the file's folder, or an allow_read path): with it, whoever has it can pose as the referee."""
    key = config.tls.key
    if key is None or config.sandbox == "none":
        return
    for bot in config.launched_bots:
        for seen in (bot.cwd, *bot.allow_read):
            if seen is not None and Path(key).resolve().is_relative_to(Path(seen).resolve()):
                raise UserError(f"bot {bot.name!r} could read the referee's TLS key {key}, which is inside its folder "
                                f"{seen}: keep the key out of every bot's folder (and allow_read)")


def _check_output_unseen(config: TournamentConfig, out_dir: Path, *, resuming: bool = False) -> None:
    """A sandboxed bot reads its folder (cwd: the file's folder by default) and its allow_read
    paths; the output folder must not be among them: its replays of the games already played
    show the cards of the deals still to come (duplicate deals), and its database the tokens."""
    if config.sandbox == "none":
        return  # (trusted bots: they read everything of yours anyway)
    out = out_dir.resolve()
    for bot in config.launched_bots:
        for seen in (bot.cwd, *bot.allow_read):
            if seen is not None and out.is_relative_to(Path(seen).resolve()):
                default = seen == bot.cwd and bot.cwd == str(Path(config.source).resolve().parent)
                what = "allow_read path" if seen != bot.cwd else "cwd" + (
                    " (by default the tournament file's folder)" if default else "")
                raise UserError(
                    f"bot {bot.name!r} could read the output folder {out_dir}, which is inside its {what} {seen}: "
                    f"the replays there show the deals still to be played; " + (
                        "move the folder out of it, and resume it there" if resuming else
                        'give each bot a folder of its own (cwd = "..." in the file), or put the output elsewhere '
                        "(--out)")
                )


def _check_sandbox(config: TournamentConfig) -> None:
    """Launched bots run sandboxed, or the file says they need not be (then said once, aloud);
    never silently unsandboxed because bwrap cannot run here."""
    if not config.launched_bots and config.roster is None:
        return
    if config.sandbox == "none" and config.roster is not None:
        raise UserError(f"{config.source}: a roster's bots are strangers' code and always run sandboxed: "
                        'remove sandbox = "none" (or run trusted bots on a ladder without a roster)')
    if config.sandbox == "none":
        print(UNSANDBOXED, file=sys.stderr)
        return
    if config.unsandboxable:
        raise UserError(_first_and_more(config.unsandboxable, "that cannot run sandboxed"))
    try:
        check_sandbox()
    except SandboxError as err:
        raise UserError(str(err)) from None


def _check_bot_commands(config: TournamentConfig) -> None:
    """Refuse, before any game, a bot whose command cannot run here (else it would lose
    every game as a bot that never connected)."""
    if config.unrunnable:
        raise UserError(_first_and_more(config.unrunnable, "whose command cannot run"))


def _first_and_more(problems: tuple[str, ...], what: str, shown: int = 10) -> str:
    """The first of the bots' problems (FILE:LINE: KEY: ...) and the lines of the others, in
    one line: a file of 100 bots is put right in one go, not one bot per try."""
    if len(problems) == 1:
        return problems[0]
    lines = [match.group(1) if (match := re.match(r".*?:(\d+): ", p)) else "?" for p in problems[1:]]
    listed = ", ".join(lines[:shown]) + (f" and {len(lines) - shown} more" if len(lines) > shown else "")
    return f"{problems[0]} (and {len(lines)} more bot{_s(len(lines))} {what}, at line{_s(len(lines))} {listed})"


def _names(names: list[str], shown: int = 10) -> str:
    """'a', 'b' and 3 more."""
    listed = ", ".join(map(repr, names[:shown]))
    return listed + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _check_referee_builtins(config: TournamentConfig) -> None:
    """The referee knows fewer in-process policies than the local runner ("greedy" is local only);
    every bot that names one is listed, not only the first."""
    unknown = [bot for bot in config.bots if bot.builtin is not None and bot.builtin not in POLICY_NAMES]
    if unknown:
        kinds = sorted({bot.builtin for bot in unknown if bot.builtin is not None})
        raise UserError(
            f"bot{_s(len(unknown))} {_names([bot.name for bot in unknown])}: the referee has no builtin "
            f"{' or '.join(map(repr, kinds))} (it has {', '.join(POLICY_NAMES)}); "
            "use --runner local for a builtin-only tournament"
        )
