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
import contextlib
import itertools
import json
import os
import sqlite3
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from craits import grpc_io

from server.cli.tls_options import add_tls_options
from server.cli.tournament_shared import (
    _announce_resume,
    _first_and_more,
    _locked,
    _play_ladder,
    _quiet_referee_logs,
    _report,
    _s,
    _show_standings,
    _with_address,
    bot_commands,
    choose_runner,
    say_reproducible,
)
from server.cli.web_options import add_web_options, web_options
from server.errors import UserError
from server.storage.settings import STORE_ENV
from server.transport.commands import bot_command_help
from tournaments.schedule import (
    pair_counts,
    schedule_digest,
    suggest_balanced,
)

if TYPE_CHECKING:
    from server.storage.store import Store, TournamentStore
    from tournaments.config import TournamentConfig
    from tournaments.runner import RunnerFactory, RunSummary, TournamentError

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
    run.set_defaults(func=cmd_run, unsandboxed_said=False)  # (craits demo says it its own way)

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
        "well above the workers' --heartbeat, 2 s by default). A worker killed outright (its connections "
        "closed) is named and its games go back within seconds",
    )
    parser.add_argument(
        "--wait-for-workers", action="store_true",
        help="with --store: when every connected worker refuses games (a bot's files missing on its machine, no "
        "sandbox there), keep waiting for one that can play them (default: say why and stop at once)",
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
    from server.storage.store import Store
    from tournaments.config import STORE_URL_PREFIXES

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


def cmd_run(args: argparse.Namespace) -> int:
    from server.storage.store import StoreError
    from tournaments.config import load_config
    from tournaments.runner import TournamentError, start_tournament

    web_options(args)  # --web and --reveal-after checked before anything is created
    config = _with_address(load_config(args.file), args)
    _refuse_a_large_plan(config, args)
    if url := store_url(args, config):
        _refuse_adaptive_store(config)
        from server.cli import tournament_pg  # (PostgreSQL's queue is loaded only when used)

        return tournament_pg.cmd_run(args, config, url)
    out_dir = config.output_dir(args.out)
    factory = choose_runner(args.runner, config, out_dir, unsandboxed_said=args.unsandboxed_said)
    text = Path(args.file).read_text(encoding="utf-8")
    with _locked(out_dir), _database_errors(out_dir):
        try:
            store = start_tournament(config, text, str(Path(args.file).resolve()), out_dir, overwrite=args.overwrite)
        except (TournamentError, StoreError) as err:
            raise UserError(str(err)) from None
        with store:
            say_reproducible(config)
            print(f"{config.name}: {_plan_text(config)}; output in {out_dir}", file=sys.stderr)
            if not args.no_progress:  # (what Progress will show: a line kept up to date, or one estimate)
                print("time: the progress line shows the rate and the time left, measured on the first games"
                      if sys.stderr.isatty() else "time: estimated once the first 10 s of games have measured this "
                      "machine's speed", file=sys.stderr)
            return _play_and_report(config, store, out_dir, factory, args)


def _deals_text(config: TournamentConfig) -> str:
    """Where the deals come from, for a plan."""
    return f"seed {config.seed} (reproducible deals)" if config.seeded else "secret deals (a new key per run)"


def _plan_text(config: TournamentConfig) -> str:
    """Bots, tables and games of the file's schedule, in one line."""
    from tournaments.config import planned_games

    games = planned_games(config)
    k = config.table_size
    if config.schedule == "adaptive":
        return (f"{len(config.bots)} bots, adaptive: tables of {k} x {k} seat rotations until stop = "
                f"{config.stop!r} at {config.confidence:.0%} (at most {games:,} games)")
    if config.schedule == "balanced":
        return (f"{len(config.bots)} bots, balanced: {config.games_per_bot} games per bot = "
                f"{games // k:,} table{_s(games // k)} of {k} x {k} seat rotations = {games:,} games")
    tables = games // k // config.deals
    if config.duplicate == "none":
        return (f"{len(config.bots)} bots, round robin: {tables:,} table{_s(tables)} of {k}, each played "
                f"{config.deals} x {k} seat rotations = {games:,} games, every game a fresh deal")
    return (f"{len(config.bots)} bots, round robin: {tables:,} table{_s(tables)} of {k} x "
            f"{config.deals} deal{_s(config.deals)} x {k} seat rotations = {games:,} games")


def _refuse_a_large_plan(config: TournamentConfig, args: argparse.Namespace) -> None:
    """More than LARGE_PLAN games only with --yes; the message says how to make it smaller."""
    from tournaments.config import planned_games

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


def _refuse_adaptive_store(config: TournamentConfig | None) -> None:
    if config is not None and config.schedule == "adaptive":
        raise UserError(f'{config.source}: an adaptive schedule plays on the SQLite store of its output folder only, '
                        f"for now: run it without --store (and {STORE_ENV})")


def cmd_resume(args: argparse.Namespace) -> int:
    web_options(args)
    if url := store_url(args, _file_config(args.target), args.target):
        _refuse_adaptive_store(_file_config(args.target))
        from server.cli import tournament_pg

        return tournament_pg.cmd_resume(args, url)
    out_dir = _target_dir(args.target, getattr(args, "out", None), check_file=True)
    with _locked(out_dir), _database_errors(out_dir):
        return _resume(args, out_dir)


def _resume(args: argparse.Namespace, out_dir: Path) -> int:
    from server.storage.store import Store
    from tournaments.adaptive import adaptive_finished
    from tournaments.runner import load_standings

    config, store = _open(out_dir, readonly=True)  # (read without the bots: their folders may have gone)
    with store:
        done, total = store.counts()
        retried = args.retry_aborted and any(result.aborted for result in store.results())
        over = config.schedule != "adaptive" or adaptive_finished(config, store) is not None
    if done == total and not retried and over:  # nothing to play, so nothing to launch: the standings
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
    from tournaments.pages import fault_links, game_links
    from tournaments.runner import load_standings

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


def cmd_plan(args: argparse.Namespace) -> int:
    from tournaments.adaptive import tables_per_batch
    from tournaments.config import key_for, load_config, schedule_for

    config = load_config(args.file)
    if config.unrunnable:  # (as run would refuse it)
        raise UserError(_first_and_more(config.unrunnable, "whose command cannot run"))
    if config.schedule == "adaptive":
        print(f"{config.name}: {_plan_text(config)}")
        print(f"tables picked as results come in: each seats a pair the stop still waits for, the other seats "
              f"drawn from all bots; tied within {config.tie_within:g} counts as settled")
        print(f"{_deals_text(config)}; concurrency {config.concurrency} ({tables_per_batch(config)} table(s) a batch)")
        print(f"output: {config.output_dir()}")
        return 0
    games = schedule_for(config, key_for(config))  # (the seating only: no seed is shown)
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
    print(f"duplicate deals: {config.duplicate}; {_deals_text(config)}; concurrency {config.concurrency}")
    print(f"output: {config.output_dir()}")
    if len(games) > LARGE_PLAN:
        print(f"more than {LARGE_PLAN:,} games: `craits tournament run` plays them only with --yes")
    for bot in config.bots:
        counts = " ".join(f"seat{s}={seats[bot.name][s]}" for s in range(config.table_size))
        print(f"  {bot.name:<20} {bot.kind:<8} {counts}")
    return 0


def cmd_ladder_run(args: argparse.Namespace) -> int:
    from tournaments.config import load_config
    from tournaments.ladder import open_ladder
    from tournaments.runner import TournamentError

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
            say_reproducible(config)
            return _play_ladder(args, config, store, out_dir, factory, again)


def cmd_ladder_standings(args: argparse.Namespace) -> int:
    from tournaments.ladder import ladder_standings, reopen_ladder
    from tournaments.pages import fault_links, game_links
    from tournaments.runner import TournamentError

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
    from tournaments.config import load_config

    path = Path(target)
    return load_config(path, check_paths=False) if path.is_file() else None


def _target_dir(target: str, out: str | None, *, check_file: bool, kind: str = "tournament") -> Path:
    """An output folder, or a tournament file whose output folder is meant."""
    from server.storage.store import Store
    from tournaments.config import load_config, schedule_for
    from tournaments.runner import stored_deals

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
        if row is not None and row.schedule_digest != schedule_digest(schedule_for(stored_deals(config, row),
                                                                                  row.deal_key)):
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
    from tournaments.runner import settings_of

    now = json.loads(json.dumps(settings_of(config)))
    changed = [key for key, value in now.items() if key != "concurrency" and stored.get(key) != value]
    if changed:
        raise UserError(
            f"{target} no longer describes the tournament stored in {out_dir} (its {', '.join(changed)} changed); "
            f"resume the folder ({out_dir}) to finish it as it started, or run the file with --overwrite"
        )


@contextlib.contextmanager
def _database_errors(out_dir: Path) -> Iterator[None]:
    """A database that breaks under a command (a damaged page, a full disk) is one line."""
    from server.storage.store import Store, StoreError

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
    from server.storage.store import StoreError
    from tournaments.runner import TournamentError, open_tournament

    try:
        return open_tournament(out_dir, readonly=readonly)
    except (TournamentError, StoreError) as err:
        raise UserError(str(err)) from None


def _play_and_report(
    config: TournamentConfig, store: TournamentStore, out_dir: Path, factory: RunnerFactory, args: argparse.Namespace
) -> int:
    from server.web.serve import board_place, run_watched
    from tournaments.adaptive import play_adaptive
    from tournaments.runner import TournamentError, load_standings, local_runner, play

    if factory is not local_runner:
        _quiet_referee_logs(out_dir)
    summary: RunSummary | None = None
    failure: TournamentError | None = None
    try:
        summary = grpc_io.run(run_watched(
            web_options(args), board_place(store, out_dir), f"Craits tournament {config.name}",
            lambda: (play_adaptive if config.schedule == "adaptive" else play)(
                config, store, out_dir, factory, concurrency=args.concurrency,
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


