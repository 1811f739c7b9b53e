"""What 200 spectators cost the referee: its decisions per second with and without them.

The referee (an :class:`~server.transport.service.Arena` in this process) plays games of
six-player Craits (long games: spectators move on less often) between bot processes (``bench/referee.py --bot``: a random legal action at once),
one game at a time, recording each replay as a tournament does, with ``--web`` as the
commands run it (``server.web.serve.watching``: the web server in a process of its own, at
a lower priority, fed the games' records in batches). Rounds of games take turns:

* **alone**: the game is not relayed to the web process (its replay writer has no tap);
* **watched**: the game is relayed to the web process, and ``--spectators`` clients each
  follow the board's stream (``/api/stream``) and every live game's event stream
  (``/api/games/{id}/events?form=compact``) from its first record to its end, as a
  spectator's page does. The clients are one other process on 127.0.0.1 at the lowest
  priority (nice 19), asking for the streams deflated as browsers do: real spectators are
  browsers on other machines, not rivals of the referee and its bots for these cores. The
  server's side of every connection (the requests, the writes, the kernel's loopback) is in
  the web process: its CPU is measured too, per game, so the figures say where the cost went.
  Every spectator must receive every record of every watched game (checked).

A game is timed from its first decision to its last (the bots' start-up excluded);
decisions/s is the total of the round's decisions over the total of those times. Rounds
(of one game by default) alternate so a noisy neighbour hurts both alike. The whole run is
bounded by ``--seconds``.

    python bench/web.py            # ~2 minutes
    python bench/web.py --quick    # under a minute

The last line is machine-readable:
``decisions_per_s_alone=X decisions_per_s_watched=Y drop_pct=Z cpu_ratio_watched_vs_alone=C spectators=N
records_received=R every_record=yes web_cpu_ms_per_watched_game=W web_cpu_ms_per_alone_game=A
cpu_ratio_both_watched_vs_alone=B spectators_cpu_ms_per_watched_game=S``: C is this process's
(the referee's) CPU per decision watched over alone; W and A the web process's CPU per game; B
the two processes' CPU per decision together, watched over alone; S the spectators' process's
CPU per watched game (on a machine whose cores share their execution units, as a virtual
machine's often do, even work at the lowest priority slows the referee: S says how much of
the drop is the bench's own clients). ``every_record=NO`` (and exit status 1) when a
spectator missed a record or a game: spectators are never dropped nor records skipped to
make the referee faster.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # allow `python bench/web.py` as well as `python -m bench.web`
    sys.path.insert(0, str(ROOT))

from bench import bots_sandboxed, grpc_io, played_by_their_bots  # noqa: E402  # (first: it chooses gRPC's I/O layer before grpc is imported)

GOAL_DROP_PCT = 5.0
PLAIN_ENV = "CRAITS_BENCH_PLAIN"
"""Set for the spectators' process by ``--plain``."""


# --------------------------------------------------------------------------- the spectators (another process)


class _Counter(asyncio.Protocol):
    """One spectator's event stream, read as a browser's network stack would: it asks for the
    stream deflated (every browser's EventSource does), takes the chunks apart, inflates them
    and counts the records in each whole line (``data: [`` is a decision in the compact form,
    ``event: record`` any other record) until the game's end."""

    MARKS = (b"event: record", b"data: [")

    def __init__(self, counts: dict[str, int], on_done: Callable[[_Counter], None]) -> None:
        self.counts = counts
        self.on_done = on_done
        self.transport: asyncio.Transport | None = None
        self._reset()

    def _reset(self) -> None:
        self.raw = b""
        self.headers = True
        self.left = 0
        """Bytes left of the current chunk, with its closing CRLF."""
        self.inflater = zlib.decompressobj()
        self.deflated = False
        self.line = b""
        self.ended = False

    def get(self, path: str, host: str) -> None:
        assert self.transport is not None
        self._reset()
        accept = "" if os.environ.get(PLAIN_ENV) else "Accept-Encoding: gzip, deflate\r\n"
        self.transport.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n"
                             f"{accept}\r\n".encode())

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        raw = self.raw + data if self.raw else data
        pos = 0
        if self.headers:
            cut = raw.find(b"\r\n\r\n")
            if cut < 0:
                self.raw = raw
                return
            head = raw[:cut].lower()
            if b" 200 " not in head[: head.find(b"\r\n")]:
                self.counts["failed"] += 1
                assert self.transport is not None
                self.transport.close()
                return
            self.headers = False
            self.deflated = b"content-encoding: deflate" in head
            pos = cut + 4
        while pos < len(raw):
            if self.left == 0:
                eol = raw.find(b"\r\n", pos)
                if eol < 0:
                    break
                size = int(raw[pos:eol], 16)
                if size == 0:  # the response's end: wait for its closing CRLF, then the connection is free
                    if len(raw) < eol + 4:
                        break
                    if self.deflated:
                        self._text(self.inflater.flush())
                    self.raw = b""
                    self.on_done(self)
                    return
                pos = eol + 2
                self.left = size + 2
                continue
            take = min(self.left, len(raw) - pos)
            payload = min(take, self.left - 2)
            if payload > 0:
                piece = raw[pos : pos + payload]
                self._text(self.inflater.decompress(piece) if self.deflated else piece)
            pos += take
            self.left -= take
        self.raw = raw[pos:]

    def _text(self, text: bytes) -> None:
        whole = text.rfind(b"\n") + 1  # (a line cut in two is counted once it is whole)
        if not whole:
            self.line += text
            return
        lines = self.line + text[:whole] if self.line else text[:whole]
        self.line = text[whole:]
        if self.ended:
            return
        for mark in self.MARKS:
            self.counts["records"] += lines.count(mark)
        if b"event: end" in lines:
            self.counts["games"] += 1
            self.ended = True


async def _spectator(host: str, port: int, counts: dict[str, int], stop: asyncio.Event) -> None:
    """Follow the board's stream; watch each game that goes live, from its start to its end,
    reusing a free connection (HTTP keep-alive, as a browser does)."""
    loop = asyncio.get_running_loop()
    watching: set[str] = set()
    idle: list[_Counter] = []

    def done(counter: _Counter) -> None:
        idle.append(counter)

    async def watch(game_id: str) -> None:
        path = f"/api/games/{game_id}/events?form=compact"
        try:
            counter = idle.pop() if idle else (await loop.create_connection(
                lambda: _Counter(counts, done), host, port))[1]
        except OSError:
            counts["failed"] += 1
            return
        counter.get(path, host)

    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"GET /api/stream HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n".encode())
    while (await reader.readline()) not in (b"\r\n", b""):
        pass
    counts["connected"] += 1
    event = b""
    tasks: set[asyncio.Task[None]] = set()
    try:
        while not stop.is_set():
            line = await reader.readline()
            if not line:
                counts["lost"] += 1
                break
            if line.startswith(b"event: "):
                event = line[7:].strip()
            elif line.startswith(b"data: ") and event == b"live":
                for game in json.loads(line[6:]):
                    if game["game_id"] not in watching:
                        watching.add(game["game_id"])
                        task = asyncio.create_task(watch(game["game_id"]))
                        tasks.add(task)
                        task.add_done_callback(tasks.discard)
    finally:
        writer.close()
        for counter in idle:
            if counter.transport is not None:
                counter.transport.close()


async def _spectators_main(host: str, port: int, n: int) -> None:
    """Run ``n`` spectators; say ``connected`` once they all are. Then, told on stdin
    ``expect G``, wait (a while at most) until G games are followed to their end in all, and
    print what they received as JSON. At the lowest priority: spectators are browsers on
    other machines, not rivals of the referee and its bots for these cores."""
    os.nice(19)
    counts = {"connected": 0, "records": 0, "games": 0, "failed": 0, "lost": 0}
    stop = asyncio.Event()
    tasks = [asyncio.create_task(_spectator(host, port, counts, stop)) for _ in range(n)]
    loop = asyncio.get_running_loop()
    for _ in range(300):
        if counts["connected"] >= n:
            break
        await asyncio.sleep(0.1)
    print(f"connected {counts['connected']}", flush=True)
    line = await loop.run_in_executor(None, sys.stdin.readline)
    expected = int(line.split()[1]) if line.startswith("expect ") else 0
    for _ in range(300):  # (they read the last game to its end)
        if counts["games"] >= expected:
            break
        await asyncio.sleep(0.1)
    stop.set()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    print(json.dumps(counts), flush=True)


def _cpu_s(pid: int) -> float:
    """A process's CPU time so far (user and system), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --------------------------------------------------------------------------- the referee


async def run_bench(
    rounds: int, games_per_round: int, spectators: int, players: int, seed: int, deadline: float
) -> dict[str, Any]:
    from server.engine import make_config
    from server.game.referee import GameReferee
    from server.spec import BotSpec, Clocks, GameSpec
    from server.storage.replay.writer import REPLAY_TAP
    from server.transport.service import Arena
    from server.web.app import WebOptions
    from server.web.serve import watching

    arena = await Arena.start("127.0.0.1:0")
    config = make_config("craits", players)
    clocks = Clocks(decision_s=5.0, bank_s=30.0, connect_timeout_s=30.0)
    replays = tempfile.TemporaryDirectory(prefix="craits-bench-web-")
    bot = str(ROOT / "bench" / "referee.py")

    def make_spec(n: int) -> GameSpec:
        bots = tuple(
            BotSpec(f"bot{i}", secrets.token_urlsafe(12), command=(sys.executable, bot, "--bot", str(seed * 10 + i)))
            for i in range(players)
        )
        return GameSpec(f"bench-{n}", config, seed + n, bots, clocks, replay_path=Path(replays.name) / f"bench-{n}.jsonl")

    async def alone(spec: GameSpec) -> None:
        REPLAY_TAP.set(None)  # (in a task of its own: the game is not relayed, the next ones may be)
        played_by_their_bots([await arena.run_game(spec)])

    played: list[tuple[int, float]] = []
    original_play = GameReferee._play

    async def timed_play(self: GameReferee, replay: Any) -> None:
        started = time.perf_counter()
        try:
            await original_play(self, replay)
        finally:
            played.append((self.state.decisions, time.perf_counter() - started))

    GameReferee._play = timed_play  # type: ignore[method-assign]
    totals = {"alone": [0, 0.0], "watched": [0, 0.0]}
    watched_records = watched_games = 0
    cpu = {"alone": 0.0, "watched": 0.0}
    web_cpu = {"alone": 0.0, "watched": 0.0}
    clients_cpu = {"alone": 0.0, "watched": 0.0}
    games = {"alone": 0, "watched": 0}
    n = 0
    try:
        async with watching(WebOptions(port=0), title="bench") as web:
            assert web is not None
            port = int(web.url.rstrip("/").rsplit(":", 1)[1])
            clients = await asyncio.create_subprocess_exec(
                sys.executable, str(Path(__file__).resolve()), "--spectators-for", str(port), str(spectators),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            )
            assert clients.stdin is not None and clients.stdout is not None
            await clients.stdout.readline()  # "connected N"
            try:
                for r in range(rounds * 2):
                    if time.monotonic() > deadline:
                        break
                    mode = "watched" if r % 2 else "alone"
                    for _ in range(games_per_round):
                        if time.monotonic() > deadline:
                            break
                        played.clear()
                        cpu_before, web_before = time.process_time(), _cpu_s(web.pid)
                        clients_before = _cpu_s(clients.pid)
                        if mode == "watched":
                            played_by_their_bots([await arena.run_game(make_spec(n))])
                        else:
                            await asyncio.create_task(alone(make_spec(n)))
                        n += 1
                        cpu[mode] += time.process_time() - cpu_before
                        web_cpu[mode] += _cpu_s(web.pid) - web_before
                        clients_cpu[mode] += _cpu_s(clients.pid) - clients_before
                        games[mode] += 1
                        for decisions, seconds in played:
                            totals[mode][0] += decisions
                            totals[mode][1] += seconds
                            if mode == "watched":  # its header, start, decisions and result
                                watched_records += decisions + 3
                                watched_games += 1
                    print(f"  round {r + 1}: {mode:7} {totals[mode][0] / max(totals[mode][1], 1e-9):8.0f} "
                          f"decisions/s so far", flush=True)
            finally:
                clients.stdin.write(f"expect {watched_games * spectators}\n".encode())
                out, _ = await clients.communicate()
    finally:
        GameReferee._play = original_play  # type: ignore[method-assign]
        await arena.shutdown(grace_s=0)
        replays.cleanup()
    received = json.loads(out.decode().strip().splitlines()[-1]) if out.strip() else {}
    made = {mode: max(totals[mode][0], 1) for mode in totals}
    return {
        "cpu_us_alone": 1e6 * cpu["alone"] / made["alone"],
        "cpu_us_watched": 1e6 * cpu["watched"] / made["watched"],
        "web_cpu_us_alone": 1e6 * web_cpu["alone"] / made["alone"],
        "web_cpu_us_watched": 1e6 * web_cpu["watched"] / made["watched"],
        "web_cpu_ms_per_game": {mode: 1e3 * web_cpu[mode] / max(games[mode], 1) for mode in games},
        "clients_cpu_ms_per_game": {mode: 1e3 * clients_cpu[mode] / max(games[mode], 1) for mode in games},
        "alone": totals["alone"][0] / max(totals["alone"][1], 1e-9),
        "watched": totals["watched"][0] / max(totals["watched"][1], 1e-9),
        "games": n,
        "peak_spectators": web.stats.get("most_spectators", 0),
        "dropped": web.stats.get("dropped", 0),
        "expected_records": watched_records * spectators,
        "expected_games": watched_games * spectators,
        "received": received,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (under a minute)")
    parser.add_argument("--spectators", type=int, default=200)
    parser.add_argument("--rounds", type=int, help="pairs of rounds (default 12, 6 with --quick)")
    parser.add_argument("--games", type=int, default=1, help="games per round (default 1)")
    parser.add_argument("--seconds", type=float, help="stop starting games after this long (default 150, 50 quick)")
    parser.add_argument("--players", type=int, default=6, help="seats per game (default 6: long games)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--plain", action="store_true",
                        help="spectators that do not take their streams deflated (as curl without --compressed)")
    parser.add_argument("--spectators-for", nargs=2, metavar=("PORT", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.spectators_for is not None:
        asyncio.run(_spectators_main("127.0.0.1", int(args.spectators_for[0]), int(args.spectators_for[1])))
        return 0

    from server.logging import configure_logging
    from server.web.process import WEB_NICE

    configure_logging(None, console=False)
    rounds = args.rounds or (6 if args.quick else 12)
    seconds = args.seconds or (50.0 if args.quick else 150.0)
    if args.plain:
        os.environ[PLAIN_ENV] = "1"  # (the spectators' process inherits it)
    print(f"web bench: {args.players}-player craits, {args.players} bot processes ({bots_sandboxed()}), one game at a "
          f"time, replays recorded; "
          f"{rounds} pairs of rounds of {args.games} games, alone and watched by {args.spectators} spectators "
          f"(SSE on 127.0.0.1); python {sys.version.split()[0]}, {os.cpu_count()} cpus; {grpc_io()}", flush=True)
    result = asyncio.run(
        run_bench(rounds, args.games, args.spectators, args.players, args.seed, time.monotonic() + seconds)
    )
    drop = 100.0 * (1 - result["watched"] / result["alone"]) if result["alone"] else float("nan")
    got = result["received"]
    print(f"spectators: {got.get('connected', 0)} connected (peak {result['peak_spectators']} streams at the server), "
          f"{got.get('records', 0)} records received, {got.get('games', 0)} games followed to the end, "
          f"{result['dropped']} dropped by the server, {got.get('failed', 0)} refused")
    cpu_ratio = result["cpu_us_watched"] / result["cpu_us_alone"] if result["cpu_us_alone"] else float("nan")
    both_alone = result["cpu_us_alone"] + result["web_cpu_us_alone"]
    both_ratio = (result["cpu_us_watched"] + result["web_cpu_us_watched"]) / both_alone if both_alone else float("nan")
    per_game = result["web_cpu_ms_per_game"]
    print(f"the referee's process, CPU per decision: alone {result['cpu_us_alone']:.0f} us, watched "
          f"{result['cpu_us_watched']:.0f} us ({cpu_ratio:.3f}x)")
    print(f"the web process (nice {WEB_NICE}), CPU per game: alone {per_game['alone']:.0f} ms (spectators "
          f"connected, nothing relayed), watched {per_game['watched']:.0f} ms; both processes per decision: "
          f"alone {both_alone:.0f} us, watched {result['cpu_us_watched'] + result['web_cpu_us_watched']:.0f} us "
          f"({both_ratio:.3f}x)")
    clients = result["clients_cpu_ms_per_game"]
    print(f"the spectators' process (nice 19; in real life: browsers on other machines), CPU per game: alone "
          f"{clients['alone']:.0f} ms, watched {clients['watched']:.0f} ms")
    verdict = "meets" if drop < GOAL_DROP_PCT else "misses"
    print(f"referee decisions/s: alone {result['alone']:.0f}, watched {result['watched']:.0f}: "
          f"{drop:+.1f}% ({verdict} the goal of < {GOAL_DROP_PCT:g}%)")
    complete = (got.get("records") == result["expected_records"] and got.get("games") == result["expected_games"]
                and got.get("connected") == args.spectators and result["expected_games"] > 0)
    if not complete:
        print(f"error: the spectators did not each receive every record of every watched game: "
              f"{got.get('records', 0)} of {result['expected_records']} records, {got.get('games', 0)} of "
              f"{result['expected_games']} games", file=sys.stderr)
    print(f"decisions_per_s_alone={result['alone']:.0f} decisions_per_s_watched={result['watched']:.0f} "
          f"drop_pct={drop:.2f} cpu_ratio_watched_vs_alone={cpu_ratio:.3f} spectators={got.get('connected', 0)} "
          f"records_received={got.get('records', 0)} every_record={'yes' if complete else 'NO'} "
          f"web_cpu_ms_per_watched_game={per_game['watched']:.0f} web_cpu_ms_per_alone_game={per_game['alone']:.0f} "
          f"cpu_ratio_both_watched_vs_alone={both_ratio:.3f} spectators_cpu_ms_per_watched_game={clients['watched']:.0f}")
    return 0 if complete else 1


if __name__ == "__main__":
    sys.exit(main())
