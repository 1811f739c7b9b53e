"""`craits tournament|ladder ... --store postgresql://...`: the same commands on a PostgreSQL store.

A tournament in PostgreSQL is named by its file's ``name`` (one database holds many):
``run FILE`` stores the schedule and queues its games, which ``craits worker``s on any
machine play (this command plays them itself, ``--local-workers``, when no worker is
running); it follows the progress and writes the standings, the replays (exported from
the database) and the viewer pages into the output folder, as a SQLite run does. Bots that
connect on their own connect to this command, which plays their games itself (``hosts_bots``).
``resume`` and ``standings`` take the file or the tournament's name.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import psycopg
from craits import grpc_io
from psycopg.conninfo import conninfo_to_dict

from participants.roster import PostgresRoster, Roster
from server.cli.tournament_shared import (
    _announce_resume,
    _check_output_unseen,
    _locked,
    _play_ladder,
    _report,
    _show_standings,
    _with_address,
    bot_commands,
    choose_runner,
    say_reproducible,
)
from server.cli.web_options import web_options
from server.errors import UserError
from server.logging import configure_logging
from server.spec import GameRecord, GameSpec
from server.storage.postgres import GoneWorker, PostgresStore, Refusal, redact
from server.storage.store import StoreError
from server.web.serve import board_place, run_watched
from tournaments.config import TournamentConfig, load_config
from tournaments.distributed import (
    HOSTED,
    Followed,
    GameRefused,
    WorkerSettings,
    adopt_queue_logs,
    forget,
    open_tournament_pg,
    play_queued,
    refusal_lines,
    refusals_text,
    start_tournament_pg,
)
from tournaments.grpc_runner import tournament_runner
from tournaments.ladder import ladder_standings, open_ladder
from tournaments.pages import fault_links, game_links
from tournaments.runner import (
    Progress,
    RunGame,
    RunnerFactory,
    RunSummary,
    TournamentError,
    clear_output,
    install_stop_handlers,
    load_standings,
)

LOG_NAME = "organizer"
"""``<out>/organizer.jsonl``: this command's events, the queue's and its local workers' (the
workers elsewhere keep their own ``worker.jsonl``)."""


@contextlib.contextmanager
def _errors(again: str = "") -> Iterator[None]:
    """Store and tournament errors as one line; ``again``: how to continue after a lost database."""
    try:
        yield
    except (TournamentError, StoreError) as err:
        unreachable = again and "the database is unreachable" in str(err)
        raise UserError(f"{err}; once it is back, continue with: {again}" if unreachable else str(err)) from None


def runner_for(runner: str) -> Callable[[TournamentConfig], RunnerFactory]:
    """What a worker plays a tournament's games with: a bot whose program is missing on this
    machine makes it refuse the game (``GameRefused``), which leaves it to other workers."""

    def choose(config: TournamentConfig) -> RunnerFactory:
        try:
            return choose_runner(runner, config)
        except UserError as err:
            raise GameRefused(str(err)) from None

    return choose


def hosts_bots(config: TournamentConfig, *, ladder: bool = False) -> bool:
    """Whether bots may connect on their own (a file's ``token`` bots, a ladder's roster
    participants' own bots): they connect to this command, which hosts the bot port and plays
    their games itself (``distributed.play_hosted``) whatever ``--local-workers`` says."""
    return bool(config.remote_bots) or (ladder and config.roster is not None)


def _check_runnable(args: argparse.Namespace, config: TournamentConfig, out_dir: Path, hosting: bool) -> None:
    """A bot that cannot run here, or could read the output, refused first: when this
    command plays games (local workers, or the games of bots that connect to it)."""
    if args.local_workers != 0 or hosting:
        choose_runner(args.runner, config, out_dir)


def cmd_run(args: argparse.Namespace, config: TournamentConfig, url: str) -> int:
    out_dir = config.output_dir(args.out)
    text = Path(args.file).read_text(encoding="utf-8")
    _check_runnable(args, config, out_dir, hosts_bots(config))
    with _locked(out_dir), _errors():
        store = start_tournament_pg(config, text, str(Path(args.file).resolve()), url, overwrite=args.overwrite)
        if args.overwrite:
            clear_output(out_dir)  # (an earlier run's replays and log in the folder)
        with store:
            _, total = store.counts()
            say_reproducible(config)
            print(f"{config.name}: {total} games, {len(config.bots)} bots, tables of {config.table_size}; "
                  f"results in {redact(url)}; output in {out_dir}", file=sys.stderr)
            return _play_and_report(args, config, store, out_dir, url)


def _name_and_out(target: str, out: str | None) -> tuple[str, Path | None]:
    """A command's target: a tournament file (its name and output folder) or a stored name."""
    path = Path(target)
    if path.is_file():
        config = load_config(path)
        return config.name, config.output_dir(out)
    if path.is_dir():
        raise UserError(f"{target} is a folder: with a PostgreSQL store, give the tournament's file or its name")
    return target, Path(out) if out else None


def cmd_resume(args: argparse.Namespace, url: str) -> int:
    name, out = _name_and_out(args.target, getattr(args, "out", None))
    with _errors():
        config, store = open_tournament_pg(url, name)
    config = _with_address(config, args)
    out_dir = out or config.output_dir()
    with store:
        if args.local_workers != 0 or hosts_bots(config):  # (bots played here must not read the replays so far)
            _check_output_unseen(config, out_dir, resuming=True)
        with _locked(out_dir), _errors():
            _announce_resume(config, store, out_dir, retry_aborted=args.retry_aborted)
            return _play_and_report(args, config, store, out_dir, url)


def _play_and_report(
    args: argparse.Namespace, config: TournamentConfig, store: PostgresStore, out_dir: Path, url: str
) -> int:
    configure_logging(out_dir, name=LOG_NAME, console=False)  # (the queue's and local workers' events)
    adopt_queue_logs()
    settings = _settings(args, config, out_dir)
    done, total = store.counts()
    progress = Progress(total, done, enabled=False if args.no_progress else None)

    def on_progress(recorded: int, scheduled: int) -> None:
        if recorded > progress.done:
            progress.advance(recorded - progress.done)

    on_refused, on_database = _tellers(config.name, progress.enabled, settings,
                                       f"craits tournament resume {config.name} --store URL")

    async def follow() -> Followed:
        stop = asyncio.Event()
        restore = install_stop_handlers(stop.set)
        try:
            async with _hosting(config, out_dir) as hosted:
                followed = await play_queued(
                    url, store, local_workers=args.local_workers, settings=settings,
                    runner_for=runner_for(args.runner), on_progress=on_progress, on_refused=on_refused,
                    on_database=on_database, on_gone=tell_gone(config.name, progress.enabled), stop=stop,
                    wait_for_workers=args.wait_for_workers, hosted=hosted,
                )
        finally:
            restore()
            progress.close()
        return followed

    title = f"Craits tournament {config.name}"
    try:
        followed = grpc_io.run(run_watched(web_options(args), board_place(store, out_dir), title, follow))
    except StoreError as err:  # (the database gone longer than this command waits: the workers wait on)
        raise UserError(f"{err}; the games stay queued for the workers: once the database is back, continue "
                        f"with: craits tournament resume {config.name} --store URL") from None
    recorded, scheduled, failed = followed.recorded, followed.scheduled, followed.failed
    if recorded == scheduled:
        store.mark_finished()
    written = _report(load_standings(config, store), store, out_dir, f"Craits tournament {config.name}")
    again = f"craits tournament resume {config.name} --store URL"
    if followed.refused:
        print(f"craits: error: {refusals_text(config.name, followed.refused)}\n{recorded}/{scheduled} games are "
              f"recorded; continue with: {again}", file=sys.stderr)
        return 1
    if failed:
        print(f"craits: error: {failed_text(failed)}\n{recorded}/{scheduled} games are recorded; after fixing it, continue with: {again}", file=sys.stderr)
        return 1
    if recorded < scheduled:
        print(f"stopped after {recorded}/{scheduled} games (queued games stay queued for the workers); "
              f"continue with: {again}", file=sys.stderr)
        return 130
    return 0 if written else 1


@contextlib.asynccontextmanager
async def _hosting(config: TournamentConfig, out_dir: Path) -> AsyncIterator[RunGame | None]:
    """The referee the bots that connect on their own connect to, for the whole run (None: none may)."""
    if not hosts_bots(config):
        yield None
        return
    async with tournament_runner(config, out_dir) as run_game:
        yield run_game


def failed_text(failed: list[tuple[str, str]]) -> str:
    """Which games failed, and whose log says why (a worker's, or this command's own for the
    games it played: ``distributed.play_hosted``)."""
    games = ", ".join(game for game, _ in failed[:5])
    here = any(worker == HOSTED for _, worker in failed)
    return (f"{len(failed)} game(s) failed on a worker ({games}); the worker's log says why"
            + (f" (for the games this command played, {LOG_NAME}.jsonl in the output folder)" if here else ""))


def _duration(seconds: float) -> str:
    return f"{seconds / 3600:g} h" if seconds >= 3600 else f"{seconds:g} s"


def cmd_standings(args: argparse.Namespace, url: str, *, ladder: bool = False) -> int:
    name, out = _name_and_out(args.target, None)
    with _errors():
        config, store = open_tournament_pg(url, name, ladder=ladder, readonly=True)
        with store:
            standings = ladder_standings(config, store, with_status=True) if ladder else load_standings(config, store)
            games = game_links(store, out or config.output_dir())
            faults = (fault_links(store, out or config.output_dir(), bot_commands(config), Path.cwd())
                      if getattr(args, "faults", False) else None)
    return _show_standings(standings, games, args, faults)


def cmd_ladder_run(args: argparse.Namespace, config: TournamentConfig, url: str) -> int:
    """Rounds are stored and their games queued: workers anywhere play them (this command
    too, when none is running), and may come and go while the ladder runs."""
    if config.roster is not None:
        _check_roster(args.file, config.roster, url)
    out_dir = config.output_dir(args.out)
    hosting = hosts_bots(config, ladder=True)  # (their referee: the ladder's runner, which also says who is online)
    _check_runnable(args, config, out_dir, hosting)
    text = Path(args.file).read_text(encoding="utf-8")
    again = f"craits ladder run {args.file} --store URL"
    with _locked(out_dir), _errors(again):
        store = PostgresStore(url, config.name)
        try:
            if args.overwrite:
                if store.tournament() is not None:
                    forget(store)
                clear_output(out_dir)
            open_ladder(config, text, str(Path(args.file).resolve()), out_dir, store=store)
            say_reproducible(config)
        except BaseException:
            store.close()
            raise
        configure_logging(out_dir, name=LOG_NAME, console=False)
        adopt_queue_logs()
        settings = _settings(args, config, out_dir)
        on_refused, on_database = _tellers(config.name, False, settings, again)

        async def play_pending(stop: asyncio.Event, run_game: RunGame) -> RunSummary:
            started = time.monotonic()
            before, _ = store.counts()
            followed = await play_queued(url, store, local_workers=args.local_workers, settings=settings,
                                         runner_for=runner_for(args.runner), stop=stop, on_refused=on_refused,
                                         on_database=on_database, on_gone=tell_gone(config.name),
                                         wait_for_workers=args.wait_for_workers,
                                         hosted=run_game if hosting else None)
            if followed.refused:
                raise TournamentError(refusals_text(config.name, followed.refused))
            if followed.failed:
                raise TournamentError(failed_text(followed.failed))
            return RunSummary(followed.recorded - before, followed.recorded, followed.scheduled, followed.stopped,
                              time.monotonic() - started)

        with store:
            return _play_ladder(args, config, store, out_dir, tournament_runner if hosting else _no_runner, again,
                                play_pending)


def _check_roster(file: str, folder: str, url: str) -> None:
    """A ladder's workers fetch its participants' versions from its database: the roster must
    be kept there (participants.roster_pg), not in a folder on this machine."""
    roster = Roster(folder)
    if not isinstance(roster, PostgresRoster):
        raise UserError(f"{file}: its roster {folder} is kept in SQLite on this machine, where workers elsewhere "
                        "cannot fetch its versions; keep it in the ladder's database: make it in a new folder with "
                        "`craits roster import FOLDER FILE.csv --store URL` (docs/teachers.md), or drop store = ... "
                        "(and --store, $CRAITS_STORE) to run the ladder here")
    if not same_database(roster.url, url):
        raise UserError(f"{file}: its roster {folder} is kept in {redact(roster.url)}, the ladder in {redact(url)}: "
                        "they must be the same database (its workers fetch the versions from the ladder's)")


def same_database(a: str, b: str) -> bool:
    """Whether two PostgreSQL URLs name the same database (host, port, database, user)."""
    keys = ("host", "port", "dbname", "user")
    try:
        left, right = conninfo_to_dict(a), conninfo_to_dict(b)
    except psycopg.ProgrammingError:  # (a URL it cannot read)
        return a == b
    return all(str(left.get(k, "")) == str(right.get(k, "")) for k in keys)


@contextlib.asynccontextmanager
async def _no_runner(config: TournamentConfig, out_dir: Path) -> AsyncIterator[RunGame]:
    """The ladder's own runner, unused: its games go through the queue."""

    async def refuse(spec: GameSpec) -> GameRecord:
        raise TournamentError("a ladder on a PostgreSQL store plays through the queue")

    yield refuse


def _tellers(name: str, progress_shown: bool | None, settings: WorkerSettings, again: str
             ) -> tuple[Callable[[int, list[Refusal]], None], Callable[[str | None], None]]:
    """What the organizer's terminal says while the queue's games wait: games workers refused
    (once, again if it grows, with each new reason) and a database lost (then once a minute
    while it is) and back."""
    clear = "\r\x1b[K" if progress_shown else ""
    told = 0
    lost_at: float | None = None
    reasons_told: set[tuple[str, str]] = set()

    def on_refused(refused: int, refusals: list[Refusal]) -> None:
        nonlocal told
        if not refusals:  # (no worker noted a refusal: games back from a worker killed or a database lost)
            return
        new = [r for r in refusals if (r.worker, r.reason) not in reasons_told]
        if refused <= 2 * told and not new:
            return
        told = max(told, refused)
        reasons_told.update((r.worker, r.reason) for r in new)
        why = refusal_lines(new)
        print(f"{clear}{name}: {refused} game(s) refused by a worker that cannot run their bots; they wait for a "
              "worker that can" + (why or " (its log says why: game_refused)"), file=sys.stderr, flush=True)

    def on_database(lost: str | None) -> None:  # (once when it goes, once a minute while it is, once back)
        nonlocal lost_at
        if lost is None:
            away = f" after {_duration(round(time.monotonic() - lost_at))}" if lost_at is not None else ""
            lost_at = None
            print(f"{clear}{name}: the database is back{away}", file=sys.stderr, flush=True)
            return
        if lost_at is not None:
            print(f"{clear}{name}: still waiting for the database (lost {_duration(round(time.monotonic() - lost_at))}"
                  f" ago): Ctrl-C stops this command, the games stay queued", file=sys.stderr, flush=True)
            return
        lost_at = time.monotonic()
        print(f"{clear}{name}: {lost}; waiting for it as the workers do (up to "
              f"{_duration(settings.database_wait_s)}): Ctrl-C stops this command, the games stay queued, and "
              f"`{again}` continues", file=sys.stderr, flush=True)

    return on_refused, on_database


def tell_gone(name: str, progress_shown: bool | None = False) -> Callable[[GoneWorker], None]:
    """What the organizer's terminal says of a worker found gone (killed): its name, how it was
    found, and its games, back in the queue for another worker."""
    clear = "\r\x1b[K" if progress_shown else ""

    def on_gone(gone: GoneWorker) -> None:
        games = [g.split("/", 1)[-1] for g in gone.games]
        held = (f"its game(s) in hand ({', '.join(games[:5])}{', ...' if len(games) > 5 else ''}) are back in the "
                "queue for another worker" if games else "it held no game")
        print(f"{clear}{name}: worker {gone.name} on {gone.host} is gone ({gone.why}); {held}",
              file=sys.stderr, flush=True)

    return on_gone


def _settings(args: argparse.Namespace, config: TournamentConfig, out_dir: Path) -> WorkerSettings:
    if args.stalled_after <= 0:
        raise UserError("--stalled-after must be positive")
    return WorkerSettings(concurrency=args.concurrency or config.concurrency, work_dir=out_dir / "worker",
                          stalled_s=args.stalled_after, heartbeat_s=min(2.0, args.stalled_after / 4))
