"""Workers on PostgreSQL: games per second with 1, 2 and 3 worker processes, against the
one-process SQLite runner, and what the queue and the database cost per game.

One tournament (four bots at a table of four, full Craits games, every deal in all four
seat rotations) is played from scratch:

* ``sqlite``: in this process on SQLite (``TournamentRunner``), the file's concurrency;
* ``workers=K`` for K in 1, 2, 3: the same file on PostgreSQL, its games queued
  (procrastinate) and played by K ``craits worker`` processes at the same concurrency
  each, started and alive before the clock starts; the clock stops when the last game is
  recorded.

Runners (``--runner``): ``grpc`` (default when the Python kit is installed), the referee
with the kit's bots launched as processes, the real thing; ``local``, builtin bots in
threads of their process (one core's worth of games per worker; a game lasts tens of ms,
the worst case for the coordination's share).

The coordination cost per game is ``1/rate(workers=1) - 1/rate(sqlite)``: the same games
at the same concurrency each way, the difference being the queue (a job taken and
finished), the database round trips and storing the replay; it is also given as a share
of a game's time. K workers can reach K times one only with K free cores (the bench says
how many the machine has; other load on it shows in the figures). The PostgreSQL server
is started by the bench in a temporary folder (as the tests do: Debian's ``postgresql``),
or ``--store URL`` names an empty database.

    python bench/distributed.py           # grpc: 6 deals = 24 games per leg; local: 160
    python bench/distributed.py --quick   # grpc: 8 games per leg; local: 40
    python bench/distributed.py --queue-only   # the queue's ceiling alone

**The queue's ceiling** (issue 29): the same tournament's games, at 25 deals, handed out by
the queue and recorded in PostgreSQL with games that cost nothing: a worker "plays" a game by
copying a replay recorded beforehand (one per deal, a full four-seat game in format 2) to the
game's replay path and returning its result, ``--queue-concurrency`` at a time (default 16):
in ``--queue-workers`` worker processes of their own (default 2), as a competition runs them
(``queue_games_per_s``), and in this one process (``queue_games_per_s_one_process``). What is
left is the coordinator queueing the games, the queue handing them out in batches
(``BatchedJobs``), and each game recorded in one transaction with its replay, its job finished
in it: how many games a second one database can take, hence how many worker machines it
feeds. The baseline, in the same run and interleaved with it, is procrastinate alone: a job
taken per round trip and finished by a statement of its own. Each says where a game's time
goes: the processes' CPU, the PostgreSQL server's (when the bench started it), and (in this
process) the waits of each call. It also gives the bytes the database holds per game (its craits tables, compacted, over the
games recorded), and the queue's share of a real game: the ms an instant game waits on the
queue and the store, in a leg of its own at the real games' ``--concurrency`` (a worker's games
at once), over the SQLite run's ms a game (an upper bound: a game's own slot lasts
``--concurrency`` times the SQLite figure); the same waits at the ceiling, 16 games at once, are
printed beside it (there a game also waits for the batch ahead of its own).

The last line is machine-readable: ``workers_speedup_2_vs_1=X pg_overhead_ms_per_game=Y
queue_games_per_s=Q queue_games_per_s_one_process=Q1 queue_games_per_s_one_job_per_trip=Q0 pg_bytes_per_game=B
queue_share_pct=S``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # allow `python bench/distributed.py` as well as `-m`
    sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from bench import bots_output, bots_sandboxed, played_by_their_bots  # noqa: E402
from bench.tournament import KIT_BOTS, LOCAL_BOTS, grpc_available  # noqa: E402
from server.logging import configure_logging  # noqa: E402
from server.storage.postgres import migrate  # noqa: E402
from tests.postgres_server import PostgresServer, find_pg_bin  # noqa: E402
from tournaments.config import parse_config  # noqa: E402
from tournaments.distributed import WorkerSettings, play_queued, refusals_text, start_tournament_pg  # noqa: E402
from tournaments.grpc_runner import tournament_runner  # noqa: E402
from tournaments.runner import TournamentRunner, local_runner, start_tournament  # noqa: E402


def tournament_text(name: str, deals: int, concurrency: int, runner: str) -> str:
    bots = KIT_BOTS if runner == "grpc" else LOCAL_BOTS
    return (f'name = "{name}"\ntable_size = 4\npreset = "craits"\ndeals = {deals}\nseed = 4242\n'
            'duplicate = "tournament"\n'
            f"concurrency = {concurrency}\n{bots}")


async def sqlite_run(deals: int, concurrency: int, runner: str) -> tuple[int, float]:
    text = tournament_text("bench-sqlite", deals, concurrency, runner)
    config = parse_config(text, source="bench", base_dir=ROOT)
    with tempfile.TemporaryDirectory(prefix="craits-bench-") as tmp:
        out = Path(tmp)
        store = start_tournament(config, text, str(out / "bench.toml"), out)
        factory = tournament_runner if runner == "grpc" else local_runner
        async with factory(config, out) as run_game:
            started = time.perf_counter()
            summary = await TournamentRunner(config, store, run_game, out, progress=False,
                                             handle_signals=False).run()
            elapsed = time.perf_counter() - started
        try:
            played_by_their_bots(store.results(), bots_output(out / "bots"))
        finally:
            store.close()
    if not summary.complete:
        raise SystemExit("bench: the SQLite run did not finish")
    return summary.played, elapsed


def live_workers(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM procrastinate_workers"
                           " WHERE last_heartbeat > now() - interval '5 seconds'").fetchone()
    return int(row[0]) if row else 0


async def workers_run(
    url: str, k: int, deals: int, concurrency: int, runner: str, log_dir: Path
) -> tuple[int, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("CRAITS_STORE", None)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "server.cli", "worker", "--store", url, "--concurrency", str(concurrency),
             "--runner", runner, "--name", f"bench-w{i}", "--log-dir", str(log_dir / f"w{k}-{i}")],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        for i in range(k)
    ]
    try:
        wait_until_live(url, procs, lambda: "bench: the workers did not start")
        name = f"bench-k{k}"
        text = tournament_text(name, deals, concurrency, runner)
        config = parse_config(text, source="bench", base_dir=ROOT)
        store = start_tournament_pg(config, text, str(ROOT / "bench.toml"), url, overwrite=True)
        with store:
            started = time.perf_counter()
            followed = await play_queued(url, store, local_workers=0, settings=WorkerSettings(concurrency=concurrency),
                                         runner_for=lambda c: local_runner, poll_s=0.1,  # (unused: no local workers)
                                         wait_for_workers=False)
            elapsed = time.perf_counter() - started
            if followed.refused:
                raise SystemExit(f"bench: {refusals_text(name, followed.refused)}; no figures")
            played_by_their_bots(store.results(), f"the workers' logs in {log_dir}")
        if followed.recorded != followed.scheduled:
            raise SystemExit(f"bench: {k} worker(s) did not finish: {followed}")
        return followed.recorded, elapsed
    finally:
        stop_workers(procs)


def wait_until_live(url: str, procs: list[subprocess.Popen[bytes]], why: Callable[[], str],
                    timeout_s: float = 60.0) -> None:
    """Return once every worker process beats in the queue (before the clock starts); else stop the
    bench with ``why()`` as soon as one has exited, or after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while live_workers(url) < len(procs):
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            raise SystemExit(why())
        time.sleep(0.05)


def stop_workers(procs: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM every worker process (each finishes its games in hand), then wait; kill those that hang."""
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def instant_games(deals: int) -> dict[int, tuple[Any, str, bytes]]:
    """A full four-seat game per deal's seed, played once now: (its result, digest, replay's bytes)."""
    from server.engine import make_config
    from server.storage.replay import record_game

    config = make_config("craits", 4)
    games = {}
    with tempfile.TemporaryDirectory(prefix="craits-bench-instant-") as tmp:
        for seed in deals_seeds(deals):
            path = Path(tmp) / f"{seed}.jsonl.gz"
            state = record_game(path, config, seed)
            games[seed] = (state.result(), state.digest(), path.read_bytes())
    return games


def deals_seeds(deals: int) -> list[int]:
    """The seeds the tournament's games use (``tournaments.schedule``'s, read from a schedule)."""
    from tournaments.config import key_for, schedule_for

    text = tournament_text("seeds", deals, 1, "local")
    config = parse_config(text, source="bench", base_dir=ROOT)
    return sorted({game.seed for game in schedule_for(config, key_for(config))})  # (its file sets seed)


@contextlib.asynccontextmanager
async def instant_runner(games: dict[int, tuple[Any, str, bytes]]) -> AsyncIterator[Callable[[Any], Any]]:
    """A runner whose games cost nothing: the deal's game recorded beforehand, as this game."""
    from server.spec import GameRecord, SeatReport

    async def run_game(spec: Any) -> Any:
        result, digest, body = games[spec.seed]
        Path(spec.replay_path).parent.mkdir(parents=True, exist_ok=True)
        Path(spec.replay_path).write_bytes(body)
        return GameRecord(game_id=spec.game_id, result=result,
                          seats=tuple(SeatReport(bot=bot.name) for bot in spec.seats),
                          replay_path=spec.replay_path, digest=digest)

    yield run_game


class StoreTimer:
    """Wall time a game waits in the calls a worker makes for it, by wrapping them for the run:
    the store's (reading its slot, recording it, each gathered with other games' in one
    statement) and the queue's (procrastinate fetching the job, finishing it): where the queue's
    ceiling goes. A call made for many games at once counts for each game that waited on it."""

    CALLS = (("GameWorker", "_read_slot"), ("GameWorker", "_record"),
             ("BatchedJobs", "fetch_job"), ("BatchedJobs", "finish_job"))

    def __init__(self) -> None:
        self.spent = {name: 0.0 for _, name in self.CALLS}
        self._lock = threading.Lock()
        self._saved: list[tuple[Any, str, Any]] = []

    def _add(self, name: str, started: float) -> None:
        with self._lock:
            self.spent[name] += time.perf_counter() - started

    def __enter__(self) -> StoreTimer:
        from tournaments import distributed

        for owner_name, name in self.CALLS:
            owner = getattr(distributed, owner_name)
            original = owner.__dict__[name]
            self._saved.append((owner, name, original))

            async def timed(self_: Any, *args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> Any:
                started = time.perf_counter()
                try:
                    return await _original(self_, *args, **kwargs)
                finally:
                    self._add(_name, started)

            setattr(owner, name, timed)
        return self

    def __exit__(self, *_: object) -> None:
        for owner, name, original in self._saved:
            setattr(owner, name, original)


@contextlib.contextmanager
def one_job_at_a_time() -> Iterator[None]:
    """The queue as procrastinate runs it alone (the baseline): a job taken per round trip, each
    finished in a statement of its own, instead of :class:`~tournaments.distributed.BatchedJobs`'
    batches and a job finished in its game's recording."""
    from procrastinate.manager import JobManager

    from tournaments.distributed import BatchedJobs

    saved = {name: BatchedJobs.__dict__[name] for name in ("fetch_job", "finish_job", "finish_in_record")}
    for name in ("fetch_job", "finish_job"):
        setattr(BatchedJobs, name, getattr(JobManager, name))
    BatchedJobs.finish_in_record = False  # (each job finished by a statement of its own)
    try:
        yield
    finally:
        for name, method in saved.items():
            setattr(BatchedJobs, name, method)


@dataclasses.dataclass
class QueueLeg:
    games: int
    elapsed: float
    cpu: float
    """This process's CPU seconds (the coordinator, the worker, the queue, psycopg)."""
    pg_cpu: float | None
    """The PostgreSQL server's CPU seconds (None: not the bench's own server)."""
    timer: StoreTimer

    @property
    def rate(self) -> float:
        return self.games / self.elapsed


async def queue_run(url: str, games: dict[int, tuple[Any, str, bytes]], deals: int, concurrency: int,
                    pg_cpu: Callable[[], float | None]) -> QueueLeg:
    """The queue, the coordinator and PostgreSQL handing out and recording games that cost
    nothing, ``concurrency`` at once in this process."""
    text = tournament_text("bench-queue", deals, concurrency, "local")
    config = parse_config(text, source="bench", base_dir=ROOT)
    store = start_tournament_pg(config, text, str(ROOT / "bench.toml"), url, overwrite=True)
    timer = StoreTimer()
    stop = asyncio.Event()
    with store, timer:
        started, cpu, server = time.perf_counter(), time.process_time(), pg_cpu()
        watchdog = asyncio.get_running_loop().call_later(QUEUE_LEG_LIMIT_S, stop.set)
        followed = await play_queued(url, store, local_workers=concurrency,
                                     settings=WorkerSettings(concurrency=concurrency), stop=stop,
                                     runner_for=lambda c: (lambda config, out: instant_runner(games)), poll_s=0.05)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        watchdog.cancel()
        server_after = pg_cpu()
        if followed.recorded != followed.scheduled or followed.failed:
            raise SystemExit(f"bench: the instant games did not finish within {QUEUE_LEG_LIMIT_S:.0f} s: {followed}; "
                             "no figures")
        played_as_recorded(store, games)
    spent = None if server is None or server_after is None else server_after - server
    spent = None if server is None or server_after is None else server_after - server
    return QueueLeg(followed.recorded, elapsed, cpu, spent, timer)



def instant_worker(url: str, games_file: Path, concurrency: int, name: str) -> int:
    """A worker process of the queue's ceiling (``--instant-worker``): ``craits worker``'s service
    with the instant runner, until SIGTERM; it then finishes the games in hand, as a worker does."""
    import pickle

    from tournaments.distributed import WorkerService

    games = pickle.loads(games_file.read_bytes())

    async def serve() -> None:
        service = WorkerService(url, WorkerSettings(concurrency=concurrency, name=name),
                                lambda config: (lambda c, out: instant_runner(games)))
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, service.stop)
        await service.run_until_stopped()

    configure_logging(None, console=False)
    asyncio.run(serve())
    return 0


def process_cpu(pids: list[int]) -> float:
    """CPU seconds these live processes have used so far (user and system, from /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


@dataclasses.dataclass
class ProcessLeg:
    games: int
    elapsed: float
    cpu: float
    """The coordinator's CPU seconds (this process)."""
    workers_cpu: float
    """The worker processes' CPU seconds."""
    pg_cpu: float | None

    @property
    def rate(self) -> float:
        return self.games / self.elapsed


def queue_run_processes(url: str, games: dict[int, tuple[Any, str, bytes]], games_file: Path, deals: int,
                        workers: int, concurrency: int, pg_cpu: Callable[[], float | None]) -> ProcessLeg:
    """The queue's ceiling as a competition runs it: ``workers`` worker processes of their own
    (``concurrency`` instant games at once each), started and connected before the clock starts,
    this process the coordinator that queues the games and follows them."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("CRAITS_STORE", None)
    errs = [(games_file.parent / f"worker-{i}.err").open("w+b") for i in range(workers)]
    procs = [subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--instant-worker", url,
                               "--games-file", str(games_file), "--concurrency", str(concurrency),
                               "--name", f"bench-instant-{i}"],
                              env=env, stdout=subprocess.DEVNULL, stderr=errors, start_new_session=True)
             for i, errors in enumerate(errs)]
    try:
        wait_until_live(url, procs, lambda: "bench: the instant workers did not start; no figures" + "".join(
            f"\n{Path(e.name).read_text(errors='replace')[-2000:]}" for e in errs))
        text = tournament_text("bench-queue", deals, concurrency, "local")  # (one tournament in the database at a time)
        config = parse_config(text, source="bench", base_dir=ROOT)
        store = start_tournament_pg(config, text, str(ROOT / "bench.toml"), url, overwrite=True)
        pids = [p.pid for p in procs]

        async def follow() -> Any:
            stop = asyncio.Event()
            watchdog = asyncio.get_running_loop().call_later(QUEUE_LEG_LIMIT_S, stop.set)
            try:
                return await play_queued(url, store, local_workers=0, settings=WorkerSettings(concurrency=concurrency),
                                         runner_for=lambda c: local_runner, poll_s=0.05, stop=stop,
                                         wait_for_workers=False)
            finally:
                watchdog.cancel()

        with store:
            started, cpu, workers_cpu, server = time.perf_counter(), time.process_time(), process_cpu(pids), pg_cpu()
            followed = asyncio.run(follow())
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
            workers_cpu, server_after = process_cpu(pids) - workers_cpu, pg_cpu()
            if followed.refused:
                raise SystemExit(f"bench: {refusals_text(store.name, followed.refused)}; no figures")
            if followed.recorded != followed.scheduled or followed.failed:
                raise SystemExit(f"bench: the instant games did not finish within {QUEUE_LEG_LIMIT_S:.0f} s: "
                                 f"{followed}; no figures")
            played_as_recorded(store, games)
        spent = None if server is None or server_after is None else server_after - server
        return ProcessLeg(followed.recorded, elapsed, cpu, workers_cpu, spent)
    finally:
        stop_workers(procs)
        for errors in errs:
            errors.close()


QUEUE_LEG_LIMIT_S = 300.0
"""A leg of instant games that has not ended by then is stopped, and the bench prints no figure
(a game never recorded would otherwise keep it waiting for good)."""


def played_as_recorded(store: Any, games: dict[int, tuple[Any, str, bytes]]) -> None:
    """Every scheduled game is recorded once, as the deal's game recorded beforehand (its digest),
    with its replay in the database: else no figure (the games did not happen)."""
    slots = {g.game_id: g.seed for g in store.games()}
    results = store.results()
    wrong = [r.game_id for r in results if games[slots[r.game_id]][1] != r.digest]
    replays = set(store.replay_ids())
    if len(results) != len(slots) or wrong or replays != set(slots):
        raise SystemExit(f"bench: {len(results)} results and {len(replays)} replays for {len(slots)} games, "
                         f"{len(wrong)} not the game played; no figures")


def server_cpu(server: PostgresServer | None) -> Callable[[], float | None]:
    """The CPU seconds the bench's PostgreSQL server has used so far (its postmaster, the
    backends alive, and those gone, which the postmaster reaped), read from /proc."""
    if server is None or not Path("/proc/self/stat").exists():
        return lambda: None
    tick = os.sysconf("SC_CLK_TCK")
    data = str(server.data).encode()

    def stat(pid: str) -> tuple[int, float, float] | None:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return int(fields[1]), (int(fields[11]) + int(fields[12])) / tick, (int(fields[13]) + int(fields[14])) / tick

    def read() -> float | None:
        stats = {int(pid): st for pid in os.listdir("/proc") if pid.isdigit() and (st := stat(pid)) is not None}
        roots = []
        for pid in stats:
            with contextlib.suppress(OSError):
                if data in Path(f"/proc/{pid}/cmdline").read_bytes():
                    roots.append(pid)
        if not roots:
            return None
        own = sum(stats[p][1] + stats[p][2] for p in roots)
        return own + sum(st[1] for pid, st in stats.items() if st[0] in roots)

    return read


def pg_bytes_per_game(url: str) -> float:
    """The craits tables' size (rows, indexes, TOAST), compacted first, over the games recorded in them (before
    2026-11-28 the dead rows of the legs overwritten before the last were counted too: 27 KB a game, 8.5 live)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM FULL ANALYZE")  # (the overwritten legs' dead rows are not a game's bytes)
        size = conn.execute("SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n "
                            "ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND n.nspname = 'public' "
                            "AND c.relname LIKE 'craits%'").fetchone()[0]
        recorded = conn.execute("SELECT count(*) FROM craits_results").fetchone()[0]
    return float(size) / max(1, recorded)


QUEUE_ROUNDS = 2
"""Legs of each kind, interleaved (baseline, batched, baseline, batched): the machine's other
load falls on both alike; the best of each is kept."""


def queue_ceiling(url: str, args: argparse.Namespace, server: PostgresServer | None,
                  ) -> tuple[float, float, float, float, float]:
    """(games a second with instant games played by worker processes, the same in this one
    process, the same with procrastinate's one job per round trip, bytes a game in the database,
    the ms a game waits on the queue and the store at the real games' concurrency); printed,
    with where a game's time goes."""
    import pickle

    deals = args.deals or (25 if args.quick else 100)
    games = instant_games(deals)
    pg_cpu = server_cpu(server)
    legs: dict[str, list[QueueLeg]] = {"one at a time": [], "batched": []}
    procs: list[ProcessLeg] = []
    each = max(1, args.queue_concurrency // args.queue_workers)
    with tempfile.TemporaryDirectory(prefix="craits-bench-instant-") as tmp:
        games_file = Path(tmp) / "games.pickle"
        games_file.write_bytes(pickle.dumps(games))
        for _ in range(QUEUE_ROUNDS):
            with one_job_at_a_time():
                legs["one at a time"].append(asyncio.run(queue_run(url, games, deals, args.queue_concurrency, pg_cpu)))
            legs["batched"].append(asyncio.run(queue_run(url, games, deals, args.queue_concurrency, pg_cpu)))
            procs.append(queue_run_processes(url, games, games_file, deals, args.queue_workers, each, pg_cpu))
    base, best = (max(legs[k], key=lambda leg: leg.rate) for k in ("one at a time", "batched"))
    top = max(procs, key=lambda leg: leg.rate)
    size = pg_bytes_per_game(url)
    pg = "?" if top.pg_cpu is None else f"{1000 * top.pg_cpu / top.games:.2f}"
    print(f"queue ceiling: {top.games} instant games, best of {QUEUE_ROUNDS}: {top.rate:.0f} games/s with "
          f"{args.queue_workers} worker processes ({each} at once each), as a competition's workers play them; "
          f"one database feeds about {top.rate / 5:.0f} workers at 5 games/s each")
    print(f"  worker processes: {1000 / top.rate:.2f} ms a game; CPU a game: the workers {1000 * top.workers_cpu / top.games:.2f}"
          f" ms, the coordinator {1000 * top.cpu / top.games:.2f} ms, PostgreSQL {pg} ms ({os.cpu_count()} cpus, "
          "shared by them all)")
    print(f"  in this one process ({args.queue_concurrency} at once, the coordinator and the worker on one core): "
          f"{best.rate:.0f} games/s batched, {base.rate:.0f} games/s with procrastinate taking a job per round "
          f"trip ({best.rate / base.rate:.2f}x)")
    for what, leg in (("batched", best), ("one at a time", base)):
        per = {m: 1000 * spent / leg.games for m, spent in leg.timer.spent.items()}
        pg = "?" if leg.pg_cpu is None else f"{1000 * leg.pg_cpu / leg.games:.2f}"
        print(f"  {what}: {1000 / leg.rate:.2f} ms a game; CPU a game: this process {1000 * leg.cpu / leg.games:.2f} "
              f"ms, PostgreSQL {pg} ms; waits a game (overlapping, {args.queue_concurrency} "
              f"at once): taking the job {per['fetch_job']:.2f} ms, reading its slot {per['_read_slot']:.2f} ms, "
              f"recording it {per['_record']:.2f} ms, finishing the job {per['finish_job']:.2f} ms")
    print(f"postgresql holds {size:,.0f} B per game recorded (results, seats, hands, the replay compressed)")
    real = asyncio.run(queue_run(url, games, deals, args.concurrency, pg_cpu))
    waits = {what: sum(1000 * spent / leg.games for spent in leg.timer.spent.values())
             for what, leg in (("real", real), ("ceiling", best))}
    print(f"waits a game on the queue and the store (taking the job, reading its slot, recording it, finishing the "
          f"job): {waits['real']:.2f} ms with {args.concurrency} instant games at once, as a worker plays real ones "
          f"({real.rate:.0f} games/s); {waits['ceiling']:.2f} ms at the ceiling, {args.queue_concurrency} at once")
    return top.rate, best.rate, base.rate, size, waits["real"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer games")
    parser.add_argument("--deals", type=int,
                        help="deals (each in 4 rotations); default grpc 6, local 40; --quick grpc 2, local 10")
    parser.add_argument("--runner", choices=("auto", "grpc", "local"), default="auto",
                        help="grpc: the referee and the Python kit's bots as processes (auto, when the kit is "
                        "installed); local: builtin bots in threads (a game is tens of ms: the worst case for "
                        "the coordination's share)")
    parser.add_argument("--concurrency", type=int, default=2, help="games at once in each process (default 2)")
    parser.add_argument("--store", metavar="URL", help="an empty PostgreSQL database (default: start a server)")
    parser.add_argument("--queue-concurrency", type=int, default=16,
                        help="instant games at once for the queue's ceiling (default 16)")
    parser.add_argument("--queue-workers", type=int, default=2,
                        help="worker processes for the queue's ceiling, sharing --queue-concurrency (default 2)")
    parser.add_argument("--instant-worker", metavar="URL", help=argparse.SUPPRESS)  # (the ceiling's worker processes)
    parser.add_argument("--games-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--name", default="bench-instant", help=argparse.SUPPRESS)
    parser.add_argument("--queue-only", action="store_true",
                        help="only the queue's ceiling (instant games: 100 deals, --quick 25), not the workers")
    args = parser.parse_args(argv)
    if args.instant_worker:
        return instant_worker(args.instant_worker, args.games_file, args.concurrency, args.name)
    runner = args.runner if args.runner != "auto" else ("grpc" if grpc_available() else "local")
    deals = args.deals or {("grpc", True): 2, ("grpc", False): 6, ("local", True): 10, ("local", False): 40}[
        (runner, args.quick)]
    configure_logging(None, console=False)
    bots = bots_sandboxed() if runner == "grpc" else "builtin bots, in-process"  # (no figures where they cannot run)
    server = None
    url = args.store
    if url is None:
        bin_dir = find_pg_bin()
        if bin_dir is None:
            raise SystemExit("bench: PostgreSQL is not installed (apt-get install postgresql), or give --store URL")
        server = PostgresServer(bin_dir)
        server.start()
        url = server.new_database()
    try:
        migrate(url)
        if args.queue_only:
            queue_rate, queue_one, queue_base, pg_size, _ = queue_ceiling(url, args, server)
            print(f"queue_games_per_s={queue_rate:.0f} queue_games_per_s_one_process={queue_one:.0f} "
                  f"queue_games_per_s_one_job_per_trip={queue_base:.0f} pg_bytes_per_game={pg_size:.0f}")
            return 0
        print(f"distributed bench: 4 bots ({runner} runner, {bots}), tables of 4, {deals} deals x 4 rotations = "
              f"{deals * 4} games per leg, concurrency {args.concurrency} in every process, {os.cpu_count()} cpus")
        games, elapsed = asyncio.run(sqlite_run(deals, args.concurrency, runner))
        sqlite_rate = games / elapsed
        print(f"sqlite, one process: {games} games in {elapsed:.2f} s = {sqlite_rate:.1f} games/s")
        rates = {}
        with tempfile.TemporaryDirectory(prefix="craits-bench-logs-") as logs:
            for k in (1, 2, 3):
                games, elapsed = asyncio.run(workers_run(url, k, deals, args.concurrency, runner, Path(logs)))
                rates[k] = games / elapsed
                print(f"postgresql, {k} worker(s): {games} games in {elapsed:.2f} s = {rates[k]:.1f} games/s "
                      f"({rates[k] / sqlite_rate:.2f}x sqlite)")
        queue_rate, queue_one, queue_base, pg_size, queue_ms = queue_ceiling(url, args, server)
    finally:
        if server is not None:
            server.cleanup()
    overhead_ms = 1000 * (1 / rates[1] - 1 / sqlite_rate)
    game_ms = 1000 / sqlite_rate
    print(f"coordination per game: {overhead_ms:.1f} ms more than SQLite's {game_ms:.1f} ms a game "
          f"({100 * overhead_ms / game_ms:.1f}%); 2 workers / 1: {rates[2] / rates[1]:.2f}x, "
          f"3 / 1: {rates[3] / rates[1]:.2f}x (each worker needs a free core to add its own)")
    share = 100 * queue_ms / game_ms
    print(f"the queue's share of a game: {queue_ms:.1f} ms a game waits on the queue and the store (taking the job, "
          f"reading its slot, recording it, finishing the job: instant games, {args.concurrency} at once as the real "
          f"ones) over SQLite's {game_ms:.1f} ms a game = {share:.1f}% at most (a game's own slot lasts "
          f"{args.concurrency}x that)")
    print(f"workers_speedup_2_vs_1={rates[2] / rates[1]:.2f} pg_overhead_ms_per_game={overhead_ms:.1f} "
          f"queue_games_per_s={queue_rate:.0f} queue_games_per_s_one_process={queue_one:.0f} "
          f"queue_games_per_s_one_job_per_trip={queue_base:.0f} pg_bytes_per_game={pg_size:.0f} "
          f"queue_share_pct={share:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
