"""A tournament file (TOML), parsed once into frozen values.

A tournament file looks like this (``tournaments/examples/reference.toml``
lists every key with its default)::

    name = "demo"
    table_size = 3            # seats per game, 2 to 5
    preset = "craits"         # craits | crates-partners | crazy-eights
    deals = 4                 # deals per table; each deal is played in every seat rotation
                              # (or: schedule = "balanced" with games_per_bot = 48)
    concurrency = 2

    [flags]                   # the engine's variant flags
    short_game = true

    [clocks]                  # server.spec.Clocks
    decision_s = 1.0

    [[bots]]
    name = "random"
    command = ["python", "-m", "craits_bot.examples.random_bot"]

Launched bots run sandboxed (``sandbox = "bwrap"``, the default; ``"none"`` for trusted
bots) within ``[limits]`` (:class:`server.transport.sandbox.Limits`); a bot's
``allow_read = [...]`` adds paths it may read.

Every mistake is reported with the file, the line and the key
(``demo.toml:12: bots[2].command: ...``), unknown keys get a did-you-mean, and
presets and flags are checked by the engine itself so the messages match.
"""

from __future__ import annotations

import difflib
import math
import re
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from server.engine import ConfigError, GameConfig, make_config
from server.errors import UserError
from server.spec import BotSpec, Clocks
from server.transport.commands import bot_command
from server.transport.launcher import command_problem
from server.transport.pool import DEFAULT_ABOVE_MB, RestartPolicy
from server.transport.sandbox import LIMIT_NAMES, SANDBOXES, Limits, outside_problem, parse_limit
from server.transport.tls import TLSRequest
from server.transport.tls import request as tls_request
from tournaments.anytime import TIE_WITHIN, StopRule
from tournaments.schedule import (
    DUPLICATE_MODES,
    ScheduledGame,
    ScheduleError,
    check_balanced,
    deal_key,
    games_per_deal,
    make_balanced_schedule,
    make_schedule,
)

MIN_TABLE, MAX_TABLE = 2, 5
DEFAULT_REMOTE_ADDRESS = "127.0.0.1:50051"
"""Where a tournament with remote bots listens unless its file or --address says otherwise
(as ``craits serve``); other machines need e.g. ``address = "0.0.0.0:50051"``."""
MAX_GAMES = 1_000_000
"""A schedule larger than this is almost certainly a typo (a big ``deals``)."""
BUILTINS = ("random", "first", "greedy", "default")
"""In-process policies a bot may be (see ``tournaments.local``)."""
SCHEDULES = ("round-robin", "balanced", "adaptive")
"""round-robin: every combination of bots is a table; balanced: ``games_per_bot`` games for
each bot, every pair meeting about equally often (``tournaments.schedule``); adaptive: tables
picked from the results so far until ``stop`` is met (``tournaments.adaptive``)."""
DEFAULT_MAX_GAMES = 20_000
"""An adaptive tournament's cap unless ``max_games`` says otherwise."""
STORE_URL_PREFIXES = ("postgresql://", "postgres://")
MIB = 2**20
RESOLVED_PREFIX = "resolved:"
"""The token of a remote bot that only a resolver opens (a roster participant's own bot, whose
real token is stored only hashed): a file's tokens may not start with it."""
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,39}$")

TOP_KEYS = (
    "name", "table_size", "preset", "schedule", "deals", "games", "games_per_bot", "seed", "concurrency",
    "duplicate", "output", "address", "store", "sandbox", "flags", "clocks", "limits", "bots", "roster",
    "restart", "restart_after_games", "restart_above_mb",  # launched bots kept between games
    "tls", "tls_cert", "tls_key",  # the referee's bot port over TLS (server.transport.tls)
    "stop", "confidence", "max_games", "tie_within",  # an adaptive schedule's stopping rule
    "pause_s",  # a ladder's pace: seconds between rounds
)
RESTART_MODES = ("keep", "game")
BOT_KEYS = ("name", "command", "builtin", "token", "cwd", "allow_read")
CLOCK_KEYS = tuple(f.name for f in fields(Clocks))


class TournamentFileError(UserError):
    """A tournament file that cannot be used; the message names file, line and key."""


@dataclass(frozen=True, slots=True)
class BotEntry:
    """One bot of the tournament, as the file describes it.

    ``command`` bots are launched by the referee for each game and receive
    ``CRAITS_SERVER`` (host:port), ``CRAITS_TOKEN`` and ``CRAITS_BOT_NAME`` in their
    environment; a bot with only a ``token`` connects from elsewhere with it; a
    ``builtin`` bot is an in-process policy.
    """

    name: str
    command: tuple[str, ...] | None = None
    builtin: str | None = None
    token: str | None = None
    cwd: str | None = None
    allow_read: tuple[str, ...] = ()
    """Paths (absolute, checked to exist) a sandboxed command bot may read beside its folder."""

    @property
    def kind(self) -> str:
        if self.builtin is not None:
            return "builtin"
        return "command" if self.command is not None else "remote"

    def spec(self, token: str) -> BotSpec:
        """The referee's view of this bot, with its (stored) token."""
        return BotSpec(name=self.name, token=token, command=self.command, builtin=self.builtin, cwd=self.cwd,
                       allow_read=self.allow_read)


@dataclass(frozen=True, slots=True)
class TournamentConfig:
    """A validated tournament. ``deals`` is the number of deals per table: each deal
    is played once in every seat rotation, so the round robin has
    ``tables x deals x table_size`` games (see ``tournaments.schedule``). A
    ``balanced`` schedule plays ``games_per_bot`` games for each bot instead (one deal
    per table, ``deals`` is then 1)."""

    name: str
    bots: tuple[BotEntry, ...]
    table_size: int
    game: GameConfig
    deals: int
    seed: int
    """The file's ``seed`` (0 when unset): the seating's shuffles, and with ``seeded`` the deals."""
    clocks: Clocks = field(default_factory=Clocks)
    concurrency: int = 1
    pause_s: int = 0
    """A ladder's pause between rounds, in seconds (0: flat out): a class's practice ladder need
    not fill a disk with games nobody looks at."""
    duplicate: str = "none"
    seeded: bool = False
    """The file sets ``seed``: a reproducible run, its deal key derived from it (anyone who
    knows the seed knows every deal); else the deal key is secret (``schedule.deal_key``)."""
    output: str | None = None
    address: str | None = None
    """Where the referee listens (HOST:PORT); None: the default of :meth:`listen_address`."""
    tls: TLSRequest = field(default_factory=TLSRequest)
    """The referee's bot port over TLS: ``tls = "self-signed"``, or ``tls_cert`` and ``tls_key``
    (paths relative to the file); plain text by default."""
    schedule: str = "round-robin"
    games_per_bot: int = 0
    """With ``schedule = "balanced"``: the games each bot plays (0 for the round robin)."""
    restart: RestartPolicy = field(default_factory=RestartPolicy)
    """When a launched bot gets a fresh process (``restart``, ``restart_after_games``,
    ``restart_above_mb``; default: kept between games)."""
    sandbox: str = "bwrap"
    """How launched bots run: "bwrap" (sandboxed) or "none" (as this user; trusted bots only)."""
    limits: Limits = field(default_factory=Limits)
    """What each launched bot may use (in the sandbox; ``output`` applies either way)."""
    unsandboxable: tuple[str, ...] = ()
    """Why launched bots cannot run sandboxed (FILE:LINE: KEY: ... each: a script outside its
    bot's folder, a folder other users cannot read); refused before a sandboxed run, moot
    with sandbox = "none" (so a file that sets it, or --no-sandbox, still runs and reopens)."""
    unrunnable: tuple[str, ...] = ()
    """Why launched bots' commands cannot run here (FILE:LINE: bots[N].command: ... each: a program
    not found or not executable, a script that is not there); refused before a run plays a game,
    as it would lose every game as a bot that never connected."""
    stop: str = ""
    """With ``schedule = "adaptive"``: when to stop (``tournaments.anytime.StopRule``: "settled",
    "top:K", "pair:A,B"); empty for the fixed schedules."""
    confidence: float = 0.95
    """Of the intervals valid at any time, and so of the stop's verdicts."""
    max_games: int = 0
    """An adaptive schedule's cap (0 for the fixed schedules)."""
    tie_within: float = TIE_WITHIN
    """Two bots each placed above the other in 1/2 +- this of the games they shared, for
    certain (their head-to-head, ``tournaments.anytime``), are "tied within" it: a settled verdict."""
    store: str | None = None
    """A PostgreSQL URL (``postgresql://...``) to keep the results in, and queue the games
    for workers; None: SQLite in the output folder."""
    source: str = ""
    """Where the file came from (for messages)."""
    roster: str | None = None
    """A roster folder (absolute): a ladder also seats its participants' admitted versions
    (``participants/``); the file then needs no bots of its own."""

    @property
    def preset(self) -> str:
        return self.game.preset

    @property
    def bot_names(self) -> tuple[str, ...]:
        return tuple(b.name for b in self.bots)

    @property
    def launched_bots(self) -> tuple[BotEntry, ...]:
        """The bots the referee starts, each game (the ones a sandbox confines)."""
        return tuple(b for b in self.bots if b.kind == "command")

    @property
    def remote_bots(self) -> tuple[BotEntry, ...]:
        """The bots that connect on their own, with their tokens."""
        return tuple(b for b in self.bots if b.kind == "remote")

    def listen_address(self) -> str:
        """``address``, else 127.0.0.1:50051 when bots connect on their own (a port they can be
        told in advance), else any free port on 127.0.0.1 (launched bots are told it)."""
        if self.address:
            return self.address
        return DEFAULT_REMOTE_ADDRESS if self.remote_bots else "127.0.0.1:0"

    def output_dir(self, override: str | Path | None = None) -> Path:
        """``--out``, else the file's ``output``, else ``logs/<name>``; relative to the
        current directory."""
        return Path(override or self.output or Path("logs") / self.name)


# --------------------------------------------------------------------- loading


def load_config(path: str | Path, *, check_paths: bool = True) -> TournamentConfig:
    """Read and validate a tournament file; raise TournamentFileError naming key and line.
    ``check_paths`` False: the bots' folders need not exist (see :func:`parse_config`)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TournamentFileError(f"{path}: no such tournament file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise TournamentFileError(f"{path}: cannot read the tournament file: {err}") from None
    return parse_config(text, source=str(path), base_dir=path.resolve().parent, check_paths=check_paths)


def parse_config(
    text: str, source: str = "<tournament>", base_dir: Path | None = None, *, check_paths: bool = True,
    bot_port: bool = True,
) -> TournamentConfig:
    """Validate the TOML ``text``. Relative bot ``cwd`` resolves against ``base_dir``.
    ``check_paths`` False: the bots' folders and ``allow_read`` paths need not exist (the file
    of a tournament that is only read, whose bots may have moved on since). ``bot_port`` False:
    a worker's view, whose referee no bot reaches over the network (its launched bots use its
    Unix socket): the file's ``tls`` keys are not read, so its certificate and key may stay on
    the organizer's machine.

    A leading byte-order mark (Windows editors write one) is not part of the TOML."""
    text = text.removeprefix("\ufeff")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise TournamentFileError(_syntax_message(err, text, source)) from None
    return _Validator(data, text, source, base_dir or Path.cwd(), check_paths, bot_port).config()


def _syntax_message(err: tomllib.TOMLDecodeError, text: str, source: str) -> str:
    message = str(err)
    if message.startswith("Cannot declare ('bots',) twice"):  # ([bots] for each bot: a table, not an array)
        message = message.replace("twice", "twice (each bot is a [[bots]] section, with double brackets)", 1)
    found = re.search(r"\s*\(at line (\d+), column (\d+)\)$", message)
    if found:
        return f"{source}:{found[1]}:{found[2]}: TOML syntax error: {message[: found.start()]}"
    found = re.search(r"\s*\(at end of document\)$", message)
    if found:
        last = max(1, text.count("\n") + (0 if text.endswith("\n") else 1))
        return f"{source}:{last}: TOML syntax error at the end of the file: {message[: found.start()]}"
    return f"{source}: TOML syntax error: {message}"


class _LineIndex:
    """Where each key sits in the source, for messages about valid TOML with bad values.

    A small line scanner: it follows ``[table]`` and ``[[array]]`` headers and
    ``key =`` lines, which is all a tournament file uses. Keys it cannot place
    (inline tables, dotted keys) fall back to their table's header line.
    """

    _HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-\" ]+?)\s*\]\]?\s*(#.*)?$")
    _KEY = re.compile(r"^\s*(\"[^\"]*\"|'[^']*'|[A-Za-z0-9_\-]+)\s*=")

    def __init__(self, text: str) -> None:
        self.lines: dict[tuple[Any, ...], int] = {}
        table: tuple[Any, ...] = ()
        counts: dict[str, int] = {}
        for number, line in enumerate(text.splitlines(), start=1):
            header = self._HEADER.match(line)
            if header:
                name = header[2].strip().strip('"')
                if header[1] == "[[":
                    index = counts.get(name, 0)
                    counts[name] = index + 1
                    table = (name, index)
                    self.lines.setdefault((name,), number)
                else:
                    table = tuple(name.split("."))
                self.lines.setdefault(table, number)
                continue
            key = self._KEY.match(line)
            if key:
                self.lines.setdefault((*table, key[1].strip("\"'")), number)

    def line_of(self, path: tuple[Any, ...]) -> int | None:
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None


def _key_text(path: tuple[Any, ...]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part + 1}]"
        else:
            out += ("." if out else "") + part
    return out


class _Validator:
    def __init__(self, data: dict[str, Any], text: str, source: str, base_dir: Path, check_paths: bool = True,
                 bot_port: bool = True) -> None:
        self.check_paths = check_paths
        self.bot_port = bot_port
        self.data = data
        self.source = source
        self.base_dir = base_dir
        self.index = _LineIndex(text)

    def fail(self, path: tuple[Any, ...], message: str) -> TournamentFileError:
        line = self.index.line_of(path)
        where = f"{self.source}:{line}" if line else self.source
        key = _key_text(path)
        return TournamentFileError(f"{where}: {key}: {message}" if key else f"{where}: {message}")

    def check_keys(self, table: dict[str, Any], allowed: tuple[str, ...], path: tuple[Any, ...]) -> None:
        for key in table:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(allowed)}"
                raise self.fail((*path, key), f"unknown key{hint}")

    # ----------------------------------------------------------- typed getters

    def text(self, table: dict[str, Any], key: str, path: tuple[Any, ...], default: str | None = None) -> str | None:
        value = table.get(key, default)
        if value is not None and not isinstance(value, str):
            raise self.fail((*path, key), f"must be a string, got {value!r}")
        return value

    def integer(self, table: dict[str, Any], key: str, low: int, high: int, default: int | None = None) -> int:
        value = table.get(key, default)
        if value is None:
            raise self.fail((), f"the key {key!r} is missing (a whole number from {low} to {high})")
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail((key,), f"must be a whole number, got {value!r}")
        if not low <= value <= high:
            raise self.fail((key,), f"must be from {low} to {high}, got {value}")
        return value

    # ------------------------------------------------------------------- parts

    def config(self) -> TournamentConfig:
        data = self.data
        self.check_keys(data, TOP_KEYS, ())
        name = self.text(data, "name", ())
        if name is None:
            raise self.fail((), "the key 'name' is missing (a short name: letters, digits, _ . -)")
        if not _NAME.match(name):
            raise self.fail(("name",), f"{name!r} is not a usable name: 1 to 40 letters, digits, '_', '.' or '-'")
        table_size = self.integer(data, "table_size", MIN_TABLE, MAX_TABLE)
        preset = self.text(data, "preset", (), "craits")
        assert preset is not None
        game = self.game_config(preset, table_size)
        roster = self.text(data, "roster", ())
        if roster is not None:
            roster = str((self.base_dir / Path(roster).expanduser()).resolve())
        bots = self.bots(table_size, roster=roster is not None)
        seed = self.integer(data, "seed", 0, 2**63 - 1, 0)
        concurrency = self.integer(data, "concurrency", 1, 256, 1)
        pause_s = self.integer(data, "pause_s", 0, 86_400, 0)
        duplicate = self.text(data, "duplicate", (), "none")
        if duplicate not in DUPLICATE_MODES:
            raise self.fail(("duplicate",), f"must be one of {', '.join(DUPLICATE_MODES)}, got {duplicate!r}")
        remote = [b.name for b in bots if b.kind == "remote"] + (["a roster's participants"] if roster else [])
        if duplicate != "none" and remote:
            raise self.fail(("duplicate",), f"duplicate deals need launched or builtin bots: {remote[0]} connects on "
                            "its own, one process the referee cannot split, and would meet a deal again in its next "
                            'rotation (keep the default, duplicate = "none": every game its own deal)')
        output = self.text(data, "output", ())
        if output is not None:  # ("~/results" is not a folder named ~ in the current one: no shell reads the file)
            output = str(Path(output).expanduser())
        address = self.text(data, "address", ())
        if address is not None and (problem := address_problem(address)):
            raise self.fail(("address",), problem)
        store = self.text(data, "store", ())
        if store is not None and not store.startswith(STORE_URL_PREFIXES):
            raise self.fail(("store",), f"must be a PostgreSQL URL (postgresql://user@host:port/database), got {store!r}")
        clocks = self.clocks()
        limits = self.limits()
        sandbox = self.text(data, "sandbox", (), "bwrap")
        if sandbox not in SANDBOXES:
            raise self.fail(("sandbox",), f"must be one of {', '.join(SANDBOXES)}, got {sandbox!r}")
        unsandboxable = tuple(
            str(self.fail(("bots", i, "command"), problem)) for i, bot in enumerate(bots)
            if bot.command is not None and (problem := outside_problem(bot.command, bot.cwd, bot.allow_read))
        )
        unrunnable = tuple(
            str(self.fail(("bots", i, "command"), f"cannot run {' '.join(bot.command)!r}: {problem}" + (
                f" (a command's paths are relative to its bot's cwd, {bot.cwd})"
                if "(in " not in problem and any("/" in w and not w.startswith("/") for w in bot.command) else "")))
            for i, bot in enumerate(bots) if bot.command is not None and (problem := command_problem(bot.command, bot.cwd))
        )
        schedule = self.text(data, "schedule", (), "round-robin")
        if schedule not in SCHEDULES:
            close = difflib.get_close_matches(str(schedule), SCHEDULES, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise self.fail(("schedule",), f"must be one of {', '.join(SCHEDULES)}, got {schedule!r}{hint}")
        games_per_bot = 0
        stop, confidence, max_games, tie_within = self.stopping(schedule, bots, table_size)
        if schedule == "adaptive":
            for key in ("deals", "games", "games_per_bot"):
                if key in data:
                    raise self.fail((key,), 'an adaptive schedule plays until its stop is met (or max_games): '
                                    f"remove {key!r}")
            if store is not None:
                raise self.fail(("schedule",), 'an adaptive schedule plays on the SQLite store of its output folder '
                                "only, for now: remove store (or use a fixed schedule)")
            deals = 1
        elif schedule == "balanced":
            games_per_bot = self.games_per_bot(len(bots), table_size, seed)
            deals = 1
        else:
            if "games_per_bot" in data:
                raise self.fail(("games_per_bot",), 'applies only to schedule = "balanced" (the round robin '
                                "plays every combination of bots: give deals or games)")
            deals = self.deals(len(bots), table_size, game)
        return TournamentConfig(
            name=name, bots=bots, table_size=table_size, game=game, deals=deals, seed=seed,
            clocks=clocks, concurrency=concurrency, pause_s=pause_s, duplicate=duplicate, seeded="seed" in data,
            output=output, address=address, schedule=schedule, games_per_bot=games_per_bot, source=self.source,
            restart=self.restart(),
            sandbox=sandbox, limits=limits, unsandboxable=unsandboxable, unrunnable=unrunnable, store=store,
            stop=stop, confidence=confidence, max_games=max_games, tie_within=tie_within,
            roster=roster, tls=self.tls() if self.bot_port else TLSRequest(),
        )

    def stopping(self, schedule: str, bots: tuple[BotEntry, ...], table_size: int) -> tuple[str, float, int, float]:
        """``stop``, ``confidence``, ``max_games`` and ``tie_within``: an adaptive schedule's
        (``confidence`` and ``tie_within`` also set the intervals every standings show)."""
        data = self.data
        confidence = self.fraction("confidence", 0.95, 0.5, 0.9999)
        tie_within = self.fraction("tie_within", TIE_WITHIN, 0.0, 0.5)
        if schedule != "adaptive":
            for key in ("stop", "max_games"):
                if key in data:
                    raise self.fail((key,), f'applies only to schedule = "adaptive" (the {schedule} schedule plays '
                                    f"a fixed number of games)")
            return "", confidence, 0, tie_within
        stop = self.text(data, "stop", (), "settled")
        assert stop is not None
        try:
            StopRule.parse(stop, [b.name for b in bots])
        except ValueError as err:
            raise self.fail(("stop",), str(err)) from None
        max_games = self.integer(data, "max_games", table_size, MAX_GAMES, DEFAULT_MAX_GAMES)
        return stop, confidence, max_games, tie_within

    def fraction(self, key: str, default: float, low: float, high: float) -> float:
        """A number strictly between ``low`` and ``high`` (``tie_within`` may be 0: no tie verdict)."""
        value = self.data.get(key, default)
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
            raise self.fail((key,), f"must be a number, e.g. {default}, got {value!r}")
        if not (low < value < high or (key == "tie_within" and value == low)):
            raise self.fail((key,), f"must be above {low:g} and below {high:g}, e.g. {default}, got {value!r}")
        return float(value)

    def tls(self) -> TLSRequest:
        """``tls = "self-signed"`` or ``tls_cert`` with ``tls_key`` (read when the referee starts)."""
        keys = ("tls", "tls_cert", "tls_key")
        mode, cert, key = (self.text(self.data, name, ()) for name in keys)
        paths = []
        for name, value in (("tls_cert", cert), ("tls_key", key)):
            if value is not None:
                value = str((self.base_dir / Path(value).expanduser()).resolve())
                if self.check_paths and not Path(value).is_file():
                    raise self.fail((name,), f"no such file {value}")
            paths.append(value)
        try:
            wanted = tls_request(mode, paths[0], paths[1], names=("tls =", "tls_cert", "tls_key"))
        except UserError as err:
            raise self.fail((next(name for name in keys if name in self.data),), str(err)) from None
        return wanted or TLSRequest()

    def games_per_bot(self, n_bots: int, table_size: int, seed: int) -> int:
        """``games_per_bot`` of a balanced schedule, checked by building it (see
        ``tournaments.schedule.check_balanced``: the refusal names numbers that work)."""
        for key in ("deals", "games"):
            if key in self.data:
                raise self.fail((key,), f'a balanced schedule plays games_per_bot games for each bot (one deal per '
                                f"table, in every seat rotation); remove {key!r}")
        if "games_per_bot" not in self.data:
            raise self.fail(("schedule",), f'schedule = "balanced" needs games_per_bot: the games each bot plays, '
                            f"a multiple of table_size ({table_size})")
        games = self.integer(self.data, "games_per_bot", 1, MAX_GAMES)
        if n_bots * games // table_size > MAX_GAMES:
            raise self.fail(("games_per_bot",), f"{n_bots} bots x {games} games make {n_bots * games // table_size} "
                            f"games; at most {MAX_GAMES} are allowed")
        try:
            check_balanced(n_bots, table_size, games, seed)
        except ScheduleError as err:
            raise self.fail(("games_per_bot",), str(err)) from None
        return games

    def restart(self) -> RestartPolicy:
        """``restart = "keep"`` (default) or ``"game"``, and the limits of a kept process."""
        data = self.data
        mode = self.text(data, "restart", (), "keep")
        if mode not in RESTART_MODES:
            raise self.fail(("restart",), f"must be \"keep\" (bots stay up between games) or \"game\" "
                                          f"(a fresh process every game), got {mode!r}")
        after = self.integer(data, "restart_after_games", 0, MAX_GAMES, 0)
        above = self.integer(data, "restart_above_mb", 0, 1_000_000, DEFAULT_ABOVE_MB)
        return RestartPolicy(every_game=mode == "game", after_games=after, above_mb=above)

    def game_config(self, preset: str, table_size: int) -> GameConfig:
        flags = self.data.get("flags", {})
        if not isinstance(flags, dict):
            raise self.fail(("flags",), "must be a table of the engine's flags, e.g. [flags] short_game = true")
        try:
            return make_config(preset, table_size, **flags)
        except ConfigError as err:
            message = str(err)
            path: tuple[Any, ...] = ("preset",) if "preset" in message or "players" in message else ("flags",)
            for flag in flags:
                if flag in message:
                    path = ("flags", flag)
                    break
            if path == ("preset",) and "preset" not in self.data:
                path = ("table_size",)
            raise self.fail(path, message) from None

    def deals(self, n_bots: int, table_size: int, game: GameConfig) -> int:
        """``deals`` is exact; ``games`` is a minimum total, rounded up to whole deals
        so that every bot still sits in every seat equally often."""
        per_deal = games_per_deal(n_bots, table_size, game.partnerships)
        if "deals" in self.data and "games" in self.data:
            raise self.fail(("games",), "give either 'deals' (per table) or 'games' (a total), not both")
        if "games" in self.data:
            games = self.integer(self.data, "games", 1, MAX_GAMES)
            deals = math.ceil(games / per_deal)
        else:
            deals = self.integer(self.data, "deals", 1, MAX_GAMES, 1)
        if deals * per_deal > MAX_GAMES:
            key = "games" if "games" in self.data else "deals"
            raise self.fail((key,), f"{deals} deals make {deals * per_deal} games; at most {MAX_GAMES} are allowed "
                            f'(a large field: schedule = "balanced" with games_per_bot plays far fewer)')
        return deals

    def clocks(self) -> Clocks:
        table = self.data.get("clocks", {})
        if not isinstance(table, dict):
            raise self.fail(("clocks",), "must be a table, e.g. [clocks] decision_s = 1.0")
        self.check_keys(table, CLOCK_KEYS, ("clocks",))
        values: dict[str, Any] = {}
        for f in fields(Clocks):
            if f.name not in table:
                continue
            value = table[f.name]
            path = ("clocks", f.name)
            if f.type in (int, "int"):
                if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                    raise self.fail(path, f"must be a whole number of at least 0, got {value!r}")
            else:
                if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
                    raise self.fail(path, f"must be a number of seconds above 0, got {value!r}")
                value = float(value)
            values[f.name] = value
        return Clocks(**values)

    def limits(self) -> Limits:
        table = self.data.get("limits", {})
        if not isinstance(table, dict):
            raise self.fail(("limits",), 'must be a table, e.g. [limits] memory = "512 MiB"')
        self.check_keys(table, LIMIT_NAMES, ("limits",))
        values: dict[str, int] = {}
        for key, value in table.items():
            try:
                values[key] = parse_limit(key, value)
            except ValueError as err:
                raise self.fail(("limits", key), str(err)) from None
            if key == "memory" and values[key] < MIB and not isinstance(value, str):
                # ("memory = 512" meant MiB: every launched bot would be killed as it starts and lose
                # every game, the tournament "complete")
                raise self.fail(("limits", key), f"{value} is {value} bytes (a number without a unit counts bytes), "
                                                 f'too little for any bot to start; write a size: "{value} MiB"')
        return Limits(**values)

    def bots(self, table_size: int, *, roster: bool = False) -> tuple[BotEntry, ...]:
        """The file's bots (with a roster, its participants may fill the tables: none needed)."""
        raw = self.data.get("bots")
        if raw is None and roster:
            return ()
        if raw is None:
            raise self.fail((), "no bots: add one [[bots]] table per bot, with a name and a command, builtin or token")
        if not isinstance(raw, list) or not all(isinstance(b, dict) for b in raw):
            raise self.fail(("bots",), "must be an array of tables: one [[bots]] section per bot")
        bots: list[BotEntry] = []
        seen: dict[str, int] = {}
        tokens: dict[str, int] = {}
        for i, table in enumerate(raw):
            bot = self.bot(table, ("bots", i))
            if bot.name in seen:
                first = seen[bot.name]
                line = self.index.line_of(("bots", first, "name"))
                raise self.fail(("bots", i, "name"), f"{bot.name!r} is already the name of bots[{first + 1}]"
                                + (f" (line {line})" if line else ""))
            seen[bot.name] = i
            if bot.token is not None:
                if bot.token in tokens:
                    raise self.fail(("bots", i, "token"), f"the same token as bots[{tokens[bot.token] + 1}]; every bot needs its own")
                tokens[bot.token] = i
            bots.append(bot)
        if len(bots) < table_size and not roster:
            raise self.fail(("bots",), f"{len(bots)} bot(s) cannot fill a table of {table_size}; add bots or lower table_size")
        return tuple(bots)

    def bot(self, table: dict[str, Any], path: tuple[Any, ...]) -> BotEntry:
        self.check_keys(table, BOT_KEYS, path)
        name = self.text(table, "name", path)
        if name is None:
            raise self.fail(path, "a bot needs a name")
        if not _NAME.match(name):
            raise self.fail((*path, "name"), f"{name!r} is not a usable name: 1 to 40 letters, digits, '_', '.' or '-'")
        command = table.get("command")
        if command is not None:
            if isinstance(command, str):
                raise self.fail((*path, "command"), f'must be a list of strings, e.g. ["python", "bot.py"], got {command!r}')
            if not isinstance(command, list) or not command or not all(isinstance(c, str) and c for c in command):
                raise self.fail((*path, "command"), f"must be a non-empty list of non-empty strings, got {command!r}")
            command = _portable_command(command)
        builtin = self.text(table, "builtin", path)
        if builtin is not None and builtin not in BUILTINS:
            raise self.fail((*path, "builtin"), f"unknown builtin {builtin!r}: choose one of {', '.join(BUILTINS)}")
        token = self.text(table, "token", path)
        if token is not None and len(token) < 8:
            raise self.fail((*path, "token"), "a token needs at least 8 characters (make it hard to guess)")
        if token is not None and token.startswith(RESOLVED_PREFIX):
            raise self.fail((*path, "token"), f"a token may not start with {RESOLVED_PREFIX!r} (reserved for a roster's)")
        kinds = [kind for kind, value in (("command", command), ("builtin", builtin), ("token", token))
                 if value is not None]
        if len(kinds) > 1:
            raise self.fail(path, f"bot {name!r} has a {' and a '.join(kinds)}: a bot is one of the three, a command "
                                  "(the referee launches it), a builtin (played in-process) or a token (it connects "
                                  "on its own with it)")
        if not kinds:
            raise self.fail(path, f"bot {name!r} needs a command (launched per game), a token (connects itself) or a builtin")
        cwd = self.text(table, "cwd", path)
        if cwd is not None:
            if command is None:
                raise self.fail((*path, "cwd"), "cwd applies only to a bot with a command")
            resolved = (self.base_dir / Path(cwd).expanduser()).resolve()
            if self.check_paths and not resolved.is_dir():
                raise self.fail((*path, "cwd"), f"{cwd!r} is not a folder (resolved to {resolved})")
            cwd = str(resolved)
        elif command is not None:
            cwd = str(self.base_dir)
        allow_read = self.allow_read(table, path, command is not None)
        return BotEntry(
            name=name,
            command=tuple(command) if command is not None else None,
            builtin=builtin,
            token=token,
            cwd=cwd,
            allow_read=allow_read,
        )

    def allow_read(self, table: dict[str, Any], path: tuple[Any, ...], launched: bool) -> tuple[str, ...]:
        """A bot's extra read-only paths, each resolved against the file's folder and checked to exist."""
        raw = table.get("allow_read")
        if raw is None:
            return ()
        where = (*path, "allow_read")
        if not launched:
            raise self.fail(where, "allow_read applies only to a bot with a command")
        if not isinstance(raw, list) or not all(isinstance(p, str) and p for p in raw):
            raise self.fail(where, f'must be a list of paths, e.g. ["/opt/jdk"], got {raw!r}')
        paths = []
        for entry in raw:
            resolved = (self.base_dir / Path(entry).expanduser()).resolve()
            if self.check_paths and not resolved.exists():
                raise self.fail(where, f"{entry!r} does not exist (resolved to {resolved})")
            paths.append(str(resolved))
        return tuple(paths)


def address_problem(address: str) -> str | None:
    """What is wrong with a HOST:PORT the referee is to listen on, or None."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        return (f"{address!r} is not HOST:PORT, e.g. \"127.0.0.1:50051\" (this machine only), "
                f"\"0.0.0.0:50051\" (every network interface) or port 0 for any free port")
    return None


def _portable_command(command: list[str]) -> list[str]:
    """The command as every craits command runs a bot (server.transport.commands): e.g.
    ``python`` means the interpreter running craits, so a bundled bot runs in the same
    environment on a machine where only one of python and python3 exists."""
    return bot_command(command)


def schedule_for(config: TournamentConfig, key: bytes | None) -> tuple[ScheduledGame, ...]:
    """The schedule of a tournament file: ``games_per_bot`` games per bot, or ``deals`` of every
    table (an adaptive one's grows as it plays: empty here); its deals from the run's deal key
    (None: a run stored before deal keys, whose deals came from the file's seed)."""
    if config.schedule == "adaptive":
        return ()
    deals_from: bytes | int = config.seed if key is None else key
    if config.schedule == "balanced":
        return make_balanced_schedule(config.bot_names, config.table_size, config.games_per_bot, config.seed,
                                      key=deals_from, partnerships=config.game.partnerships,
                                      duplicate=config.duplicate)
    return make_schedule(config.bot_names, config.table_size, config.deals, deals_from,
                         partnerships=config.game.partnerships, duplicate=config.duplicate)


def key_for(config: TournamentConfig) -> bytes:
    """A new run's deal key: secret, or derived from the file's ``seed`` when it sets one."""
    return deal_key(config.seed if config.seeded else None)


REPRODUCIBLE_WARNING = ("seed {seed} is set: a reproducible run; anyone who knows that seed can compute "
                        "every deal (remove seed for secret deals)")
"""The one line a run whose file sets ``seed`` starts with."""


def planned_games(config: TournamentConfig) -> int:
    """How many games the file's schedule has, without building it (an adaptive one's: at most)."""
    if config.schedule == "adaptive":
        return config.max_games
    if config.schedule == "balanced":
        return len(config.bots) * config.games_per_bot // config.table_size
    return config.deals * games_per_deal(len(config.bots), config.table_size, config.game.partnerships)
