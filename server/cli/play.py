"""`craits play BOT BOT ...`: one game (or a few) between bots, through the real referee.

A bot is a built-in name (``random``, ``first``, ``default``: played in-process),
a command (``"python my_bot.py"``, or just ``my_bot.py``), or
``remote:NAME:TOKEN`` for a bot that connects on its own. The referee listens
on 127.0.0.1 with a free port (``--address`` to choose); launched bots find it in
CRAITS_SERVER, and with remote seats it says on standard error where to connect.
"""

from __future__ import annotations

import argparse
import json
import re
import secrets
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from craits import grpc_io

from server.errors import UserError
from server.game.policies import POLICY_NAMES
from server.transport.commands import bot_command, bot_command_help, runnable_command
from tournaments.schedule import derive_seed

if TYPE_CHECKING:
    from server.engine import GameConfig
    from server.spec import BotSpec, Clocks, GameRecord, GameSpec

CONNECT_TIMEOUT_MS = 10_000
"""How long a game waits for a bot's first Hello, unless told."""
REMOTE_CONNECT_TIMEOUT_MS = 300_000
"""The same when a seat is a bot someone starts by hand, in another terminal (a
``remote:NAME:TOKEN`` seat of ``craits play`` or ``craits serve --bot``)."""


@dataclass(frozen=True, slots=True)
class GameSettings:
    config: GameConfig
    clocks: Clocks
    seed: int
    replays: Path | None
    seeded: bool = True
    """``--seed`` was given (reproducible games); else the seed is secret: random, and kept out
    of the game ids (a bot that bundles the engine would read every hand from it)."""


def add_game_options(parser: argparse.ArgumentParser) -> None:
    """The options that describe a game: preset, flags, seed, clocks, replays, logs."""
    g = parser.add_argument_group("game")
    g.add_argument("--preset", default="craits", help="craits, crates-partners or crazy-eights (default craits)")
    g.add_argument("--flag", action="append", default=[], metavar="NAME=VALUE",
                   help="a variant flag, e.g. short_game=true, seven_hits=next, decks=2 (repeatable)")
    g.add_argument("--seed", type=int, default=None,
                   help="seed of the (first) game, for reproducible games (default: a secret random one)")
    g.add_argument("--replays", metavar="DIR", help="write one replay per game into DIR")
    c = parser.add_argument_group("clocks")
    c.add_argument("--decision-ms", type=int, default=1000, help="time per decision (default 1000)")
    c.add_argument("--bank-ms", type=int, default=10_000, help="time bank per game (default 10000)")
    c.add_argument("--max-strikes", type=int, default=3, help="strikes before the default policy takes over (default 3)")
    c.add_argument("--reconnect-grace-ms", type=int, default=5000, help="time to reconnect (default 5000)")
    c.add_argument("--connect-timeout-ms", type=int, default=None,
                   help=f"time for a bot's first Hello (default {CONNECT_TIMEOUT_MS}; with a "
                        f"remote:NAME:TOKEN seat, a bot started by hand: {REMOTE_CONNECT_TIMEOUT_MS})")
    parser.add_argument("--log-dir", default="logs", help="JSON logs (and launched bots' output) go here (default logs)")


def _flag_value(text: str) -> Any:
    low = text.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if text.isdigit():
        return int(text)
    return text


def game_settings(args: argparse.Namespace, bots: Sequence[BotSpec]) -> GameSettings:
    """Validate the game options for a game between ``bots`` (user mistakes become UserError)."""
    from server.engine import ConfigError, make_config
    from server.spec import Clocks

    players = len(bots)
    flags: dict[str, Any] = {}
    for item in args.flag:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UserError(f"--flag {item!r}: expected NAME=VALUE, e.g. short_game=true")
        flags[name.strip()] = _flag_value(value.strip())
    try:
        config = make_config(args.preset, players, **flags)
    except ConfigError as err:
        raise UserError(str(err)) from None
    if args.connect_timeout_ms is None:
        # A remote seat's bot is started by hand once the referee says where: give them time to.
        remote = any(not bot.command and not bot.builtin for bot in bots)
        args.connect_timeout_ms = REMOTE_CONNECT_TIMEOUT_MS if remote else CONNECT_TIMEOUT_MS
    for name in ("decision_ms", "bank_ms", "reconnect_grace_ms", "connect_timeout_ms"):
        if getattr(args, name) < 0:
            raise UserError(f"--{name.replace('_', '-')} must not be negative")
    if args.decision_ms == 0:
        raise UserError("--decision-ms must be more than 0")
    if args.max_strikes < 1:
        raise UserError("--max-strikes must be 1 or more")
    clocks = Clocks(
        decision_s=args.decision_ms / 1000,
        bank_s=args.bank_ms / 1000,
        max_strikes=args.max_strikes,
        reconnect_grace_s=args.reconnect_grace_ms / 1000,
        connect_timeout_s=args.connect_timeout_ms / 1000,
    )
    seed = secrets.randbits(62) if args.seed is None else args.seed
    return GameSettings(config, clocks, seed, Path(args.replays) if args.replays else None, args.seed is not None)


def parse_bot(text: str) -> BotSpec:
    """One bot argument as a BotSpec (commands get a fresh token per game in :func:`make_spec`)."""
    from server.spec import BotSpec
    from server.transport.launcher import command_problem

    text = text.strip()
    if not text:
        raise UserError("an empty bot: give a built-in name, a command or remote:NAME:TOKEN")
    if text in POLICY_NAMES:
        return BotSpec(name=text, token="", builtin=text)
    if text.startswith("remote:"):
        parts = text.split(":", 2)
        if len(parts) != 3 or not parts[1] or not parts[2]:
            raise UserError(f"bot {text!r}: expected remote:NAME:TOKEN")
        return BotSpec(name=parts[1], token=parts[2])
    try:
        command = shlex.split(text)
    except ValueError as err:
        raise UserError(f"bot {text!r}: {err}") from None
    command = bot_command(command)
    problem = command_problem(command)
    if problem is not None:
        raise UserError(f"bot {text!r}: {problem}")
    return BotSpec(name=_command_name(command), token="", command=tuple(command))


def refuse_unsandboxable(bots: Sequence[BotSpec]) -> None:
    """Refuse, before any game, a bot to launch that the sandbox could not run: its folder or
    script unreadable by the uid a root referee runs it as, its program outside what it sees
    (the check a tournament file's bots get, worded for a command line)."""
    from server.transport import sandbox as sandboxes

    for bot in bots:
        if bot.command and (problem := sandboxes.outside_problem(bot.command, None, command_line=True)):
            raise UserError(f"bot {bot.name} cannot run in the sandbox: {problem}")


def _command_name(command: list[str]) -> str:
    """A short seat name: the script or module, plus a --strategy if given
    ("heuristic_bot", "bot.js:random"), so two launched bots are told apart."""
    if "-m" in command[:-1]:
        name = command[command.index("-m") + 1].rsplit(".", 1)[-1]
    else:
        script = next((Path(c) for c in command if c.endswith((".py", ".js"))), None)
        name = script.stem if script is not None else Path(command[0]).name
    if "--strategy" in command[:-1]:
        name += ":" + Path(command[command.index("--strategy") + 1]).stem
    return name


def parse_bots(texts: Sequence[str]) -> list[BotSpec]:
    """Parse the bot arguments; equal names get #2, #3 so each seat is told apart."""
    from server.spec import BotSpec

    bots = [parse_bot(t) for t in texts]
    seen: dict[str, int] = {}
    out = []
    for bot in bots:
        n = seen[bot.name] = seen.get(bot.name, 0) + 1
        if n > 1:
            bot = BotSpec(f"{bot.name}#{n}", bot.token, bot.command, bot.builtin, bot.cwd)
        out.append(bot)
    return out


def make_spec(bots: Sequence[BotSpec], settings: GameSettings, n: int, *, prefix: str = "play",
              rotate: bool = False) -> GameSpec:
    """The spec of game ``n``: seed + n (with ``--seed``), seats rotated if asked (launched bots get their
    tokens from the referee)."""
    from server.spec import GameSpec
    from server.storage.replay.format import REPLAY_SUFFIX

    seated = list(bots)
    if rotate and seated:
        k = n % len(seated)
        seated = seated[k:] + seated[:k]
    seats = tuple(seated)
    game_id = f"{prefix}-{settings.seed + n if settings.seeded else n + 1}-{secrets.token_hex(3)}"
    replay = settings.replays / f"{game_id}{REPLAY_SUFFIX}" if settings.replays is not None else None
    # (a secret seed: each game's own, so the seed GameEnd tells says nothing of the next game's)
    seed = settings.seed + n if settings.seeded else derive_seed(settings.seed, "play", n)
    return GameSpec(game_id, settings.config, seed, seats, settings.clocks, replay)


def record_summary(spec: GameSpec, record: GameRecord) -> dict[str, Any]:
    """A GameRecord as plain JSON (for result files and --json)."""
    return {
        "game_id": record.game_id,
        "seed": spec.seed,
        "preset": spec.config.preset,
        "bots": [s.bot for s in record.seats],
        "totals": list(record.result.totals),
        "placings": list(record.result.placings),
        "statuses": [str(s.status) for s in record.seats],
        "seats": [
            {
                "bot": s.bot, "status": str(s.status), "decisions": s.decisions, "timeouts": s.timeouts,
                "strikes": s.strikes, "illegal": s.illegal, "malformed": s.malformed,
                "disconnects": s.disconnects, "default_actions": s.default_actions,
                "bot_errors": s.bot_errors, "bot_error": s.bot_error,
                "think_ms": round(s.think_s * 1000, 3), "transport_ms": round(s.transport_s * 1000, 3),
                "events": list(s.events),
            }
            for s in record.seats
        ],
        "aborted": record.aborted,
        "replay": str(record.replay_path) if record.replay_path else None,
        "digest": record.digest,
    }


_EVENTS_SHOWN = 3


def flag_words(config: GameConfig) -> list[str]:
    """Every flag that differs from the preset's default for the player count: a true flag by
    its name, any other as NAME=VALUE (``short_game``, ``seven_hits=next``, ``decks=2``)."""
    from server.engine import FLAG_NAMES, make_config

    default = make_config(config.preset, config.players).flags
    words = []
    for name in FLAG_NAMES:
        value = getattr(config.flags, name)
        if value != getattr(default, name):
            words.append(name if value is True else f"{name}={str(value).lower()}")
    return words


_NODE_TRAILER = re.compile(r"Node\.js v\d")
_ERROR_LINE = re.compile(r"[\w.$]*(Error|Exception)\b")
_JAVA_FRAME = re.compile(r"(at [\w$./<>]+\(.*\)|\.\.\. \d+ more|\.\.\. \d+ common frames omitted)$")
_JAVA_UNCAUGHT = re.compile(r'Exception in thread "[^"]*" ')
_CPP_TERMINATE = re.compile(r"terminate called after throwing an instance of '(.+)'$")
_CPP_WHAT = re.compile(r"what\(\):\s*(.*)$")


def crash_line(lines: Sequence[str]) -> str:
    """What a crashed bot's output says it died of, in one line: its last line, unless that is a
    runtime's trailer, in which case the exception it names. Python's traceback ends with the
    exception (``ZeroDivisionError: division by zero``); Node's with its version below the stack;
    Java's with the stack below ``Exception in thread "main" java.lang.X: why`` (or its last
    ``Caused by:``); C++'s std::terminate says the type, then ``what():`` and the message."""
    lines = [line.strip() for line in lines if line.strip()]
    if not lines:
        return ""
    last = lines[-1]
    if _NODE_TRAILER.match(last):  # Node ends an uncaught error with its version: the error is above the stack
        return next((line for line in reversed(lines) if _ERROR_LINE.match(line)), last)
    if _JAVA_FRAME.match(last):  # a Java stack: the exception is the line above its frames
        above = next((line for line in reversed(lines) if not _JAVA_FRAME.match(line)), last)
        above = _JAVA_UNCAUGHT.sub("", above.removeprefix("Caused by: "))
        if " ERROR the bot crashed: " in above:  # (the Java kit's own line says it already)
            above = above.split(" ERROR the bot crashed: ", 1)[1]
        return above
    for i in range(len(lines) - 1, max(-1, len(lines) - 4), -1):  # C++: the type, then what()
        if terminate := _CPP_TERMINATE.search(lines[i]):
            what = next((m[1] for line in lines[i + 1:] if (m := _CPP_WHAT.search(line))), "")
            return f"{terminate[1]}: {what}" if what else terminate[1]
    return last


def _last_line(path: Path, limit: int = 200) -> str:
    """What a crashed bot died of, from its output file (its last 4 KiB): :func:`crash_line`,
    shortened to ``limit``."""
    try:
        with path.open("rb") as handle:
            handle.seek(max(0, path.stat().st_size - 4096))
            tail = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    last = crash_line(tail.splitlines())
    return last if len(last) <= limit else last[: limit - 3] + "..."


def format_record(spec: GameSpec, record: GameRecord, bot_logs: Path | None = None) -> str:
    """A game's result as a small table, then what went wrong at any seat (its first
    faults and refusals, and where a launched bot's output is, in ``bot_logs``)."""
    from server.checker.report import EXITED_AT_ONCE
    from server.spec import SeatStatus

    cfg = spec.config
    flags = flag_words(cfg)
    lines = [f"game {record.game_id}: {cfg.preset}, {cfg.players} players, seed {spec.seed}"
             + (f", {' '.join(flags)}" if flags else "")]
    if record.aborted:
        lines.append(f"  ABORTED: {record.aborted}")
    width = max(4, *(len(s.bot) for s in record.seats))
    lines.append(f"  {'seat':>4}  {'bot':<{width}}  {'total':>6}  {'place':>5}  {'status':<15} "
                 f"{'asked':>5} {'timeouts':>8} {'strikes':>7}  {'think ms/dec':>12}")
    for i, s in enumerate(record.seats):
        per = f"{s.think_s * 1000 / s.decisions:.2f}" if s.decisions else "-"
        lines.append(
            f"  {i:>4}  {s.bot:<{width}}  {record.result.totals[i]:>6}  {record.result.placings[i]:>5}  "
            f"{s.status!s:<15} {s.decisions:>5} {s.timeouts:>8} {s.strikes:>7}  {per:>12}"
        )
    if record.result.team_totals:
        lines.append("  teams: " + ", ".join(f"team {t} {v}" for t, v in enumerate(record.result.team_totals)))
    lines.append("  " + ("lowest total wins" if record.result.lower_wins else "highest total wins"))
    for i, s in enumerate(record.seats):
        if not s.events:
            continue
        lines.append(f"  seat {i} {s.bot}:")
        lines += [f"    {event}" for event in s.events[:_EVENTS_SHOWN]]
        if len(s.events) > _EVENTS_SHOWN:
            lines.append(f"    ... and {len(s.events) - _EVENTS_SHOWN} more (--json lists them all)")
        if s.status is SeatStatus.NEVER_CONNECTED and "bot process exited with code 0" in s.events:
            lines.append(f"    ({EXITED_AT_ONCE})")
        output = bot_logs / f"{record.game_id}-seat{i}.log" if bot_logs is not None else None
        if output is not None and spec.seats[i].command and output.exists():
            lines.append(f"    its output: {output}")
            crashed = any((e.startswith("bot process exited with code ") and e != "bot process exited with code 0")
                          or e.startswith("bot process killed by ") for e in s.events)
            last = _last_line(output) if crashed else ""
            if last:  # (a SyntaxError, an ImportError: the student sees what without opening the file)
                lines.append(f"    it ended with: {last}")
        command = spec.seats[i].command
        if record.replay_path and command and s.decisions:  # the game again, with the bot fixed (docs/rerun.md)
            lines.append(f"    rerun:  craits replay rerun {shlex.quote(str(record.replay_path))} --seat {i} -- "
                         f"{shlex.join(runnable_command(command, spec.seats[i].cwd))}")
    # A launched bot whose seat had no trouble may still have logged its own (the kit answers
    # for a choose() that raises, and says so only there): say where, once per game.
    quiet = [i for i, s in enumerate(record.seats) if not s.events and spec.seats[i].command and bot_logs is not None
             and (bot_logs / f"{record.game_id}-seat{i}.log").exists()]
    if quiet and bot_logs is not None:
        seats = ", ".join(str(i) for i in quiet)
        lines.append(f"  what launched bots printed and logged: {bot_logs / record.game_id}-seat<N>.log "
                     f"(seat{'s' if len(quiet) > 1 else ''} {seats})")
    if record.replay_path:
        lines.append(f"  replay: {record.replay_path}")
    return "\n".join(lines)


def register_cli(subparsers: Any) -> None:
    """Add ``craits play``."""
    parser = subparsers.add_parser(
        "play",
        help="play one game between bots (built-in names or commands) and print the result",
        description=__doc__,
        epilog=bot_command_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("bots", nargs="+", metavar="BOT",
                        help=f"one per seat: {', '.join(POLICY_NAMES)}, a command, or remote:NAME:TOKEN")
    parser.add_argument("--games", type=int, default=1, help="games to play, seats rotating (default 1)")
    parser.add_argument("--address", default="127.0.0.1:0", help="where the referee listens (default: a free port)")
    parser.add_argument("--json", action="store_true", help="print one JSON line per game instead of a table")
    parser.add_argument("--no-sandbox", action="store_true",
                        help="run command bots unsandboxed, as this user (trusted bots only)")
    add_game_options(parser)
    parser.set_defaults(func=_cmd_play)


def _cmd_play(args: argparse.Namespace) -> int:
    from server.logging import configure_logging

    if args.games < 1:
        raise UserError("--games must be 1 or more")
    bots = parse_bots(args.bots)
    settings = game_settings(args, bots)
    configure_logging(args.log_dir, name="play", console=False)
    return grpc_io.run(_play(args, bots, settings))


async def _play(args: argparse.Namespace, bots: list[BotSpec], settings: GameSettings) -> int:
    from server.transport import sandbox as sandboxes
    from server.transport.service import Arena, ArenaError, ArenaOptions, listening_text, security_notes

    bot_logs = Path(args.log_dir) / "bots"
    launches = any(bot.command for bot in bots)
    try:
        sandbox = sandboxes.mode(unsandboxed=args.no_sandbox, launches=launches)
    except sandboxes.SandboxError as err:
        raise UserError(str(err)) from None
    if launches and sandbox == "none":
        print(sandboxes.UNSANDBOXED, file=sys.stderr)
    elif launches:
        refuse_unsandboxable(bots)
    try:
        arena = await Arena.start(args.address, ArenaOptions(bot_log_dir=bot_logs, sandbox=sandbox))
    except ArenaError as err:
        raise UserError(str(err)) from None
    remote = [bot for bot in bots if not bot.command and not bot.builtin]
    for bot in remote:
        arena.register_token(bot.token, bot.name)
    for note in security_notes(arena):  # (a public --address: its risk, in one line)
        print(note, file=sys.stderr, flush=True)
    if remote:
        print(listening_text(arena, [bot.name for bot in remote])
              + f"; the game waits up to {settings.clocks.connect_timeout_s:g} s for them", file=sys.stderr, flush=True)
    wins: dict[str, float] = {b.name: 0.0 for b in bots}
    places: dict[str, list[int]] = {b.name: [] for b in bots}
    try:
        for n in range(args.games):
            spec = make_spec(bots, settings, n, rotate=args.games > 1)
            try:
                record = await arena.run_game(spec)
            except ArenaError as err:
                raise UserError(str(err)) from None
            if args.json:
                print(json.dumps(record_summary(spec, record), sort_keys=True), flush=True)
            else:
                print(format_record(spec, record, bot_logs), flush=True)
            for s, place in zip(record.seats, record.result.placings, strict=True):
                places[s.bot].append(place)
                if place == 1:
                    wins[s.bot] += 1
    finally:
        await arena.shutdown(grace_s=0)
    if args.games > 1 and not args.json:
        print(f"\nafter {args.games} games:")
        for name in sorted(places, key=lambda b: sum(places[b]) / len(places[b])):
            mean = sum(places[name]) / len(places[name])
            print(f"  {name:<20} mean place {mean:.2f}  first places {int(wins[name])}")
    return 0
