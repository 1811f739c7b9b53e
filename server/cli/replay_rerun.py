"""``craits replay messages`` and ``craits replay rerun``: a recorded game, seen and played again
from one seat (docs/rerun.md)."""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from server.errors import UserError
from server.transport.commands import bot_command, bot_command_help

if TYPE_CHECKING:
    from server.storage.replay.reader import Replay

RERUN_EPILOG = """\
Up to decision N (--from N; default: the seat's first fault in the record, else the end)
the game follows the record whatever the bot answers, and the bot's answers are compared
with the recorded ones; from N on the bot's answers are played, the other seats playing
their recorded actions while the game stays on the recorded path, then --others.
Exit code 0 when the bot has no fault from N on, 1 when it has one, 2 for a mistake.
"""


def load_verified(path: str) -> Replay:
    """The replay at ``path``, read and re-simulated; a damaged or hostile file is a UserError."""
    from server.storage.replay.format import ReplayError
    from server.storage.replay.reader import read_replay
    from server.storage.replay.verify import verify_replay

    target = Path(path)
    if target.is_dir():
        raise UserError(f"{path} is a folder: give one replay file")
    if not target.exists():
        raise UserError(f"{path}: no such file{did_you_mean(target)}")
    try:
        verify_replay(target)
        return read_replay(target)
    except ReplayError as err:
        raise UserError(f"refused: {err}") from None


def did_you_mean(target: Path) -> str:
    """``; did you mean X?`` when the same game's replay is there under the other suffix
    (new replays end in ``.jsonl.gz``; older guides and habits say ``.jsonl``)."""
    from server.storage.replay.format import V1_SUFFIX, V2_SUFFIX

    name = target.name
    for have, other in ((V1_SUFFIX, V2_SUFFIX), (V2_SUFFIX, V1_SUFFIX)):
        if name.endswith(have) and not (have == V1_SUFFIX and name.endswith(V2_SUFFIX)):
            sibling = target.with_name(name[: -len(have)] + other)
            if sibling.is_file():
                return f"; did you mean {sibling}?"
    return ""


def _seat(replay: Replay, seat: int) -> int:
    players = replay.config.players
    if not 0 <= seat < players:
        names = ", ".join(f"{i} {name}" for i, name in enumerate(replay.bots))
        raise UserError(f"--seat {seat}: this game's seats are {names}")
    return seat


def _cmd_messages(args: argparse.Namespace) -> int:
    from server.game.transcript import is_builtin, transcript

    replay = load_verified(args.file)
    seat = _seat(replay, args.seat)
    if is_builtin(replay, seat):
        raise UserError(f"seat {seat} is the built-in bot {replay.bots[seat]}: it plays inside the referee and "
                        "is sent no messages")
    rebuilt = transcript(replay, seat)
    out_path = Path(args.output) if args.output else None
    if args.format == "binary":
        data = rebuilt.delimited()
        if out_path is None:
            if sys.stdout.isatty():
                raise UserError("binary messages are not for a terminal: give -o FILE (or --format jsonl)")
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        else:
            _write(out_path, data)
    else:
        text = "".join(line + "\n" for line in rebuilt.json_lines())
        if out_path is None:
            sys.stdout.write(text)
        else:
            _write(out_path, text.encode("utf-8"))
    for caveat in rebuilt.caveats:
        print(f"note: {caveat}", file=sys.stderr)
    if out_path is not None:
        sent = len(rebuilt.sent)
        print(f"wrote {out_path}: {sent} messages to seat {rebuilt.seat} ({rebuilt.bot}) of game "
              f"{rebuilt.game_id or '-'}", file=sys.stderr)
    return 0


def _write(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    except OSError as err:
        raise UserError(f"cannot write {path}: {err.strerror or err}") from None


def _cmd_rerun(args: argparse.Namespace) -> int:
    from server.cli.play import refuse_unsandboxable  # (the same checks as `craits play`)
    from server.logging import configure_logging
    from server.spec import BotSpec
    from server.transport import sandbox as sandboxes
    from server.transport.launcher import command_problem

    replay = load_verified(args.file)
    seat = _seat(replay, args.seat)
    command = _command(args.command, "the bot to rerun: give it after --, e.g. -- python my_bot.py")
    others: str | list[str] = args.others
    if args.others not in ("default", "random", "greedy"):
        others = _command(shlex.split(args.others), "--others: default, random, greedy or a command")
    decisions = len(replay.decisions)
    if args.from_n is not None and not 1 <= args.from_n <= decisions + 1:
        raise UserError(f"--from {args.from_n}: this game has decisions 1 to {decisions}")
    bots = [BotSpec("bot", "", tuple(command))] + ([BotSpec("others", "", tuple(others))] if isinstance(
        others, list) else [])
    try:
        sandbox = sandboxes.mode(unsandboxed=args.no_sandbox, launches=True)
    except sandboxes.SandboxError as err:
        raise UserError(str(err)) from None
    if sandbox == "none":
        print(sandboxes.UNSANDBOXED, file=sys.stderr)
    else:
        refuse_unsandboxable(bots)
    for bot in bots:
        assert bot.command is not None
        if (problem := command_problem(list(bot.command))) is not None:
            raise UserError(f"{shlex.join(bot.command)}: {problem}")
    out = Path(args.output)
    configure_logging(out, name="rerun", console=False)
    return asyncio.run(_rerun(args, replay, seat, command, others, sandbox, out))


def _command(words: list[str], missing: str) -> list[str]:
    if words and words[0] == "--":
        words = words[1:]
    if not words:
        raise UserError(missing)
    return bot_command(words)


async def _rerun(args: argparse.Namespace, replay: Replay, seat: int, command: list[str],
                 others: str | list[str], sandbox: str, out: Path) -> int:
    from server.storage.replay.faults import first_fault
    from server.storage.replay.format import ReplayError
    from server.storage.replay.reader import read_replay
    from server.storage.replay.verify import verify_replay
    from server.transport.rerun import RerunGames, outcome, rerun_spec
    from server.transport.service import Arena, ArenaError, ArenaOptions

    fault_n = first_fault(replay, seat)
    from_n = args.from_n or fault_n or len(replay.decisions) + 1
    spec = rerun_spec(replay, seat, command, others, out)
    games = RerunGames(replay, seat, from_n, others if isinstance(others, str) else "default")
    try:
        arena = await Arena.start("127.0.0.1:0", ArenaOptions(bot_log_dir=out / "bots", sandbox=sandbox))
    except ArenaError as err:
        raise UserError(str(err)) from None
    try:
        record = await arena.run_game(spec, games)
    except ArenaError as err:
        raise UserError(str(err)) from None
    finally:
        await arena.shutdown(grace_s=0)
    assert games.game is not None
    if record.replay_path is None:
        raise UserError(f"the rerun's replay could not be written in {out}")
    try:
        verify_replay(record.replay_path)
        new = read_replay(record.replay_path)
    except ReplayError as err:  # a bug of ours: say so plainly
        print(f"the rerun's replay does not verify: {err}", file=sys.stderr)
        return 1
    found = outcome(games.game, record, new, fault_n if fault_n == from_n else None)
    print(_report(replay, seat, found, record.replay_path, out / "bots" / f"{spec.game_id}-seat{seat}.log"))
    return 0 if found.fault_gone else 1


def _report(replay: Replay, seat: int, found: Any, path: Path, bot_log: Path) -> str:
    from server.storage.replay.faults import fault_words

    name = replay.bots[seat]
    decisions = len(replay.decisions)
    lines = [f"rerun of {replay.path.name}, seat {seat} ({name}): the recorded path up to decision "
             f"{found.from_n - 1}, live from decision {found.from_n}" if found.from_n <= decisions
             else f"rerun of {replay.path.name}, seat {seat} ({name}): the whole recorded game, compared"]
    if found.difference is None:
        lines.append(f"the bot's {found.compared} answer(s) before decision {found.from_n} are the recorded ones")
    else:
        lines.append(found.difference.line())
    if found.fault_n is not None:
        was = fault_words(replay.decisions[found.fault_n - 1])
        now = [what for n, what in found.faults if n == found.fault_n]
        if now:
            lines.append(f"the fault at decision {found.fault_n} is reproduced: {now[0]} (recorded: {was})")
        else:
            lines.append(f"the fault at decision {found.fault_n} is gone (recorded: {was})")
    later = [(n, what) for n, what in found.faults if n != found.fault_n]
    reproduced = any(n == found.fault_n for n, _ in found.faults)
    if later:
        n, what = later[0]
        lines.append(f"a fault at decision {n}: {what}" + (f" (and {len(later) - 1} more)" if len(later) > 1 else ""))
    elif found.from_n <= decisions and not reproduced:
        lines.append(f"no fault from decision {found.from_n} to the end of the game")
    if found.left_at is not None:
        how = f" ({found.left_how})" if found.left_how else ""
        lines.append(f"the game left the recorded path at decision {found.left_at}{how}; the other seats played "
                     "their recorded actions up to it, the chosen policy after")
    totals = " ".join(str(t) for t in found.record.result.totals)
    was = " ".join(str(t) for t in replay.result.get("totals", ()))
    lines.append(f"new game: totals {totals}" + (f" (recorded: {was})" if was else "")
                 + (f", aborted: {found.record.aborted}" if found.record.aborted else ""))
    lines.append(f"replay: {path} (verified)")
    if bot_log.exists():
        lines.append(f"the bot's output: {bot_log}")
    if not found.fault_gone:
        lines.append("FAULT: the bot still faults" if reproduced else "FAULT")
    else:
        lines.append("FAULT GONE" if found.fault_n is not None else "NO FAULT")
    return "\n".join(lines)


def register_rerun(actions: Any) -> None:
    """Add ``craits replay messages`` and ``craits replay rerun`` to ``craits replay``."""
    messages = actions.add_parser(
        "messages", help="every message the referee sent one seat in a recorded game, byte for byte, and its answers")
    messages.add_argument("file", metavar="FILE")
    messages.add_argument("--seat", type=int, required=True, help="the seat, from 0")
    messages.add_argument("--format", choices=("jsonl", "binary"), default="jsonl",
                          help="jsonl (default): a line per message (JSON and its bytes) and per answer; "
                               "binary: the RefereeMessages, length-delimited")
    messages.add_argument("-o", "--output", metavar="OUT", help="write to OUT (default: standard output)")
    messages.set_defaults(func=_cmd_messages)

    # argparse gives a REMAINDER after a positional every option that follows it (FILE --seat 1 -- ...):
    # this one parser splits its words at "--" first (add_parser has no argument for its class).
    ordinary, actions._parser_class = actions._parser_class, _CommandAfterDashes
    try:
        rerun = actions.add_parser(
            "rerun", help="play a recorded game again with your bot in a seat: compare its answers, then play live",
            description="Play a recorded game again on this machine with your bot in one seat.",
            epilog=RERUN_EPILOG + "\n" + bot_command_help(),
            formatter_class=argparse.RawDescriptionHelpFormatter)
    finally:
        actions._parser_class = ordinary
    rerun.add_argument("file", metavar="FILE")
    rerun.add_argument("--seat", type=int, required=True, help="the seat your bot takes, from 0")
    rerun.add_argument("--from", dest="from_n", type=int, metavar="N",
                       help="the first decision played live (default: the seat's first fault, else none)")
    rerun.add_argument("--others", default="default", metavar="POLICY|COMMAND",
                       help="who plays the other seats once the game leaves the recorded path: default, random, "
                            "greedy, or a bot command (default: default)")
    rerun.add_argument("-o", "--output", default="logs/rerun", metavar="DIR",
                       help="the new game's replay, logs and the bot's output go here (default logs/rerun)")
    rerun.add_argument("--no-sandbox", action="store_true",
                       help="run the bot unsandboxed, as this user (trusted bots only)")
    rerun.set_defaults(func=_cmd_rerun, command=[])


class _CommandAfterDashes(argparse.ArgumentParser):
    """A parser whose words after ``--`` are the bot's command (``args.command``)."""

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        words = list(sys.argv[1:] if args is None else args)
        command: list[str] = []
        if "--" in words:
            at = words.index("--")
            words, command = words[:at], words[at + 1:]
        namespace, extras = super().parse_known_args(words, namespace)
        namespace.command = command
        return namespace, extras

    def format_usage(self) -> str:
        return super().format_usage().rstrip("\n") + " -- COMMAND ...\n"

    def format_help(self) -> str:
        usage = super().format_usage()
        return super().format_help().replace(usage.strip(), usage.strip() + " -- COMMAND ...", 1)
