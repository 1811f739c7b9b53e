"""What the tournament and ladder commands share, whatever their store (SQLite, or PostgreSQL in
``tournament_pg``): the runner chosen and its bots checked before any game, the output folder's
lock, the announcements, the report (standings, files, viewer pages) and the ladder's loop.

It sits below ``tournament_pg`` (the commands on PostgreSQL), which sits below ``tournament``
(the commands, and SQLite's): ``tournament`` hands a command given a PostgreSQL store to
``tournament_pg``, which imports nothing of ``tournament``.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import functools
import json
import re
import shlex
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from craits import grpc_io

from server.cli.tls_options import tls_request
from server.cli.web_options import web_options
from server.errors import UserError
from server.transport.commands import runnable_command

if TYPE_CHECKING:
    import asyncio

    from server.storage.store import TournamentStore
    from tournaments.config import TournamentConfig
    from tournaments.ladder import LadderRound
    from tournaments.runner import RunGame, RunnerFactory, RunSummary
    from tournaments.standings import Standings


def _with_address(config: TournamentConfig, args: argparse.Namespace) -> TournamentConfig:
    """The file's configuration with ``--address`` (and ``--no-sandbox``, ``--tls*``) applied."""
    from tournaments.config import address_problem

    if getattr(args, "no_sandbox", False):
        config = dataclasses.replace(config, sandbox="none")
    if (tls := tls_request(args)) is not None:
        config = dataclasses.replace(config, tls=tls)
    if args.address is None:
        return config
    if (problem := address_problem(args.address)) is not None:
        raise UserError(f"--address: {problem}")
    return dataclasses.replace(config, address=args.address)


def _s(n: int) -> str:
    """The plural's s, for any number but one: f"{n} table{_s(n)}"."""
    return "" if n == 1 else "s"


def _announce_resume(config: TournamentConfig, store: TournamentStore, out_dir: Path, *, retry_aborted: bool) -> None:
    """What a resume will do, on standard error (aborted games put back first, if asked)."""
    from tournaments.adaptive import adaptive_finished

    if retry_aborted:
        print(f"{config.name}: {store.forget_aborted()} aborted game(s) will be played again", file=sys.stderr)
    done, total = store.counts()
    if config.schedule == "adaptive":
        why = adaptive_finished(config, store)
        print(f"{config.name}: {why}" if why else f"{config.name}: resuming the adaptive schedule, {done} games "
              f"recorded; output in {out_dir}", file=sys.stderr)
    elif done == total:
        print(f"{config.name}: all {total} games are already recorded", file=sys.stderr)
    else:
        print(f"{config.name}: resuming, {done}/{total} games recorded; output in {out_dir}", file=sys.stderr)


def bot_commands(config: Any) -> dict[str, str]:
    """Each launched bot's command as one line (for the rerun commands of ``--faults``), with its
    files made absolute: the line runs from wherever it is printed, not only from the bot's cwd
    (``-- ./bot.sh`` failed from the project's folder)."""
    return {bot.name: shlex.join(runnable_command(bot.command, getattr(bot, "cwd", None)))
            for bot in config.bots if getattr(bot, "command", None)}


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


def _play_ladder(
    args: argparse.Namespace, config: TournamentConfig, store: TournamentStore, out_dir: Path,
    factory: RunnerFactory, again: str,
    play_pending: Callable[[asyncio.Event, RunGame], Awaitable[RunSummary]] | None = None,
) -> int:
    from server.web.serve import board_place, run_watched
    from tournaments.grpc_runner import tournament_runner
    from tournaments.ladder import drop_departed, ladder_standings, rounds_played, run_ladder, tables_at_once
    from tournaments.runner import TournamentError, local_runner

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
            factory = functools.partial(tournament_runner, resolve_token=entrants.resolve_token,
                                        revoked=entrants.revoked)
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
    if factory is not local_runner and play_pending is None:  # (on a store: organizer.jsonl, set up by the caller)
        _quiet_referee_logs(out_dir)
    goal = 0
    if args.rounds is not None:
        goal = rounds_played(store.games(), {g.game_id for g in store.pending_games()}) + args.rounds
    progress = RoundProgress(done, goal)
    try:
        summary = grpc_io.run(run_watched(
            web_options(args), board_place(store, out_dir, goal_rounds=goal), f"Craits ladder {config.name}", lambda: run_ladder(
                config, store, out_dir, factory, rounds=args.rounds, concurrency=args.concurrency,
                on_round=progress.round_played, play_pending=play_pending, entrants=entrants,
            )))
    except TournamentError as err:
        _report(ladder_standings(config, store, out_dir), store, out_dir, f"Craits ladder {config.name}")
        print(f"craits: error: {err}\n{store.counts()[0]} games are recorded; after fixing it, "
              f"continue with: {again}", file=sys.stderr)
        return 1
    written = _report(ladder_standings(config, store, out_dir), store, out_dir, f"Craits ladder {config.name}")
    left = len(store.pending_games())
    unplayed = ""
    if left:  # (a stop mid-round: its games are not lost, say where they went)
        unplayed = (f"; {left} game(s) of the round in flight stay queued: the workers play them, and the next start "
                    "continues the ladder" if play_pending is not None else
                    f"; {left} game(s) of the round in flight are stored unplayed: the next start plays them first")
    print(f"stopped after {summary.rounds} new round(s) ({summary.why}; {summary.games} games recorded by this run"
          f"{unplayed}); continue with: {again}", file=sys.stderr)
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
        from tournaments.standings import RATING_HEADERS

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
        neighbours = (standings.anytime or {}).get("neighbours", [])
        settled = sum(n["settled"] for n in neighbours)
        return (f"round {played.number}: {', '.join(played.seats)}; {self.games} games played, "
                f"{rate:.2f} games/s; leader {leader.bot} ({RATING_HEADERS[0]} {leader.rating_ordinal:.2f} "
                f"after {leader.games} games); {settled}/{len(neighbours)} neighbours settled (valid at any time)"
                f"{goal}")


@contextlib.contextmanager
def _locked(out_dir: Path) -> Iterator[None]:
    from tournaments.runner import TournamentError, folder_lock

    try:
        with folder_lock(out_dir):
            yield
    except TournamentError as err:
        raise UserError(str(err)) from None


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as err:
        raise UserError(f"cannot write {path}: {err}") from None
    print(f"wrote {path}", file=sys.stderr)


def _report(standings: Standings, store: TournamentStore, out_dir: Path, title: str) -> bool:
    """Write the standings' files and the replay viewer's pages, then print the standings (the
    files first: a reader of the output that goes away, ``| head``, does not cost them); False
    when the files could not be written (the results are in the database all the same)."""
    from server.storage.postgres import PostgresStore
    from tournaments.pages import REPLAY_DIR, game_links, write_viewer_pages
    from tournaments.runner import write_standings

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
    from server.logging import configure_logging

    configure_logging(out_dir, name="referee", console=False)


def choose_runner(
    name: str, config: TournamentConfig, out_dir: Path | None = None, *, resuming: bool = False,
    unsandboxed_said: bool = False,
) -> RunnerFactory:
    """The local runner for builtin-only tournaments (or when asked), else the referee's (its
    launched bots checked, and that none of them can read ``out_dir``). ``unsandboxed_said``:
    the caller has said why its bots run unsandboxed (``craits demo``)."""
    from tournaments.grpc_runner import tournament_runner
    from tournaments.runner import local_runner

    if name == "local" or (name == "auto" and all(b.builtin for b in config.bots) and config.roster is None):
        others = [b.name for b in config.bots if b.builtin is None]
        if others:
            raise UserError(
                f"the local runner plays only builtin bots; {', '.join(others)} need the referee: use --runner grpc"
            )
        return local_runner
    _check_referee_builtins(config)
    _check_bot_commands(config)
    _check_sandbox(config, unsandboxed_said)
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


def _check_sandbox(config: TournamentConfig, unsandboxed_said: bool = False) -> None:
    """Launched bots run sandboxed, or the file says they need not be (then said once, aloud);
    never silently unsandboxed because bwrap cannot run here."""
    from server.transport.sandbox import UNSANDBOXED, SandboxError
    from server.transport.sandbox import check as check_sandbox

    if not config.launched_bots and config.roster is None:
        return
    if config.sandbox == "none" and config.roster is not None:
        raise UserError(f"{config.source}: a roster's bots are strangers' code and always run sandboxed: "
                        'remove sandbox = "none" (or run trusted bots on a ladder without a roster)')
    if config.sandbox == "none":
        if not unsandboxed_said:
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
    from server.game.policies import POLICY_NAMES

    unknown = [bot for bot in config.bots if bot.builtin is not None and bot.builtin not in POLICY_NAMES]
    if unknown:
        kinds = sorted({bot.builtin for bot in unknown if bot.builtin is not None})
        raise UserError(
            f"bot{_s(len(unknown))} {_names([bot.name for bot in unknown])}: the referee has no builtin "
            f"{' or '.join(map(repr, kinds))} (it has {', '.join(POLICY_NAMES)}); "
            "use --runner local for a builtin-only tournament"
        )


def say_reproducible(config: TournamentConfig) -> None:
    """The one line a run whose file sets ``seed`` starts with (see ``REPRODUCIBLE_WARNING``)."""
    from tournaments.config import REPRODUCIBLE_WARNING

    if config.seeded:
        print(f"{config.name}: " + REPRODUCIBLE_WARNING.format(seed=config.seed), file=sys.stderr)
