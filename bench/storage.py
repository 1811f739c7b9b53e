"""Storage per game: every byte a recorded game leaves, in replay format 2 against format 1,
and the time to write and to verify a replay in each.

A seeded tournament (four of the kit's random bots, launched as processes by the referee, at
a table of four, full Craits games, every deal in four seat rotations; builtin random bots
when the kit is not installed) is played into a folder as ``craits tournament run`` does.
Then, per game:

* format 2, what the run left: ``replays/<game>.jsonl.gz``, the game's page
  ``viewer/<game>.html`` and its data ``viewer/<game>.js``, the store's rows (the SQLite
  file's size over the games), and its share of the shared files (``viewer/viewer.js``,
  ``viewer.css``, ``index.html``);
* format 1, what the same game left before: the replay converted to format 1 (the same
  game, timings and all, byte for byte what the referee wrote), its self-contained page
  (viewer and data inlined), and the same store rows;
* the writer's cost: each game's decisions fed again to a ``ReplayWriter`` of each format,
  in CPU time, less the engine's own for the same moves (the same loop without a writer);
  verify: ``verify_replay`` of each file, wall time; each the best of three.

With ``--postgres`` (Debian's PostgreSQL, started in a temporary folder) it also stores each
game's replay both ways in a table made like ``craits_replays`` (lz4 where the server has
it) and gives the table's size per game.

    python bench/storage.py             # 4 deals = 16 games
    python bench/storage.py --quick     # 1 deal = 4 games

The last line is machine-readable: ``bytes_per_game=X v1_bytes_per_game=Y write_ms=W
verify_ms=V`` (format 2's bytes, format 1's, and format 2's writer CPU and verify wall
milliseconds per game; format 1's are on the line before, and the ratios above it).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # allow `python bench/storage.py` as well as `-m`
    sys.path.insert(0, str(ROOT))

from bench.tournament import KIT_BOTS, LOCAL_BOTS, factory_for, grpc_available, tournament_text  # noqa: E402
from server.engine import GameState  # noqa: E402
from server.logging import configure_logging  # noqa: E402
from server.storage.replay import ReplayWriter, convert_replay, read_replay, verify_replay  # noqa: E402
from server.viewer.pages import render_html  # noqa: E402
from tournaments.config import parse_config  # noqa: E402
from tournaments.pages import write_viewer_pages  # noqa: E402
from tournaments.runner import TournamentRunner, start_tournament  # noqa: E402

SHARED = ("viewer/viewer.js", "viewer/viewer.css", "viewer/index.html")


async def play(deals: int, runner: str, out: Path) -> int:
    """Play the tournament into ``out`` as ``craits tournament run`` does; the games played."""
    text = tournament_text(deals, KIT_BOTS if runner == "grpc" else LOCAL_BOTS.replace('"first"', '"random"')
                           .replace('"greedy"', '"random"'))
    config = parse_config(text, source="bench", base_dir=ROOT)
    store = start_tournament(config, text, str(out / "bench.toml"), out)
    async with factory_for(runner, 2)(config, out) as run_game:
        summary = await TournamentRunner(config, store, run_game, out, concurrency=2, progress=False,
                                         handle_signals=False, pages=True).run()
    write_viewer_pages(store, out, title="bench")
    store.close()
    if not summary.complete:
        raise SystemExit("bench: the tournament did not finish")
    return summary.played


def writer_ms(replay: Any, tmp: Path, version: int | None) -> float:
    """CPU milliseconds to play the game's moves again with a writer of ``version`` (None: none).
    CPU, not wall time: the fsync that ends both formats' files waits on the disk, not the
    writer, and on a shared machine it swings by tens of ms."""
    state = GameState(replay.config, replay.seed)
    seats = [s.get("bot", "") for s in replay.header["seats"]]
    started = time.process_time()
    writer = None if version is None else ReplayWriter(
        tmp / f"w.{version}", state, seats=seats, game_id=replay.game_id, started_at="", format=version)
    for rec in replay.decisions:
        state.apply(rec["action"])
        if writer is not None:
            writer.decision(rec["seat"], None, rec.get("sent", rec["action"]), rec["status"],
                            None if rec["think_us"] is None else rec["think_us"] / 1000,
                            None if rec["transport_us"] is None else rec["transport_us"] / 1000, rec.get("note", ""))
    if writer is not None:
        writer.finish(replay.result.get("seat_reports"))
    return (time.process_time() - started) * 1000


def store_rows(out: Path) -> float:
    """The bytes of the SQLite store's rows (their payload, from ``dbstat``; the file's size
    where SQLite lacks it): what the games wrote, without the file's empty pages."""
    import sqlite3

    (db,) = out.glob("*.db")
    with sqlite3.connect(db) as conn:
        try:
            return float(conn.execute("SELECT sum(payload) FROM dbstat").fetchone()[0])
        except sqlite3.OperationalError:
            return float(db.stat().st_size)


def best(runs: int, measure: Any) -> float:
    return min(measure() for _ in range(runs))


def postgres_sizes(bodies: dict[int, list[bytes]]) -> dict[int, float] | None:
    """Bytes per game of a table like ``craits_replays`` holding each format's replays."""
    import psycopg

    from tests.postgres_server import PostgresServer, find_pg_bin

    bin_dir = find_pg_bin()
    if bin_dir is None:
        print("postgresql: not installed (apt-get install postgresql): skipped")
        return None
    server = PostgresServer(bin_dir)
    server.start()
    sizes = {}
    try:
        with psycopg.connect(server.new_database(), autocommit=True) as conn:
            for version, items in bodies.items():
                table = f"replays_v{version}"
                conn.execute(f"CREATE TABLE {table} (game_id TEXT PRIMARY KEY, body BYTEA NOT NULL)")
                with contextlib.suppress(psycopg.Error):
                    conn.execute(f"ALTER TABLE {table} ALTER COLUMN body SET COMPRESSION lz4")
                empty = conn.execute(f"SELECT pg_total_relation_size('{table}')").fetchone()[0]
                for i, body in enumerate(items):
                    conn.execute(f"INSERT INTO {table} VALUES (%s, %s)", (f"g{i}", body))
                conn.execute(f"VACUUM ANALYZE {table}")
                full = conn.execute(f"SELECT pg_total_relation_size('{table}')").fetchone()[0]
                sizes[version] = (full - empty) / len(items)
    finally:
        server.stop()
        server.cleanup()
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 deal (4 games)")
    parser.add_argument("--deals", type=int, help="deals, each played in 4 rotations (default 4)")
    parser.add_argument("--runner", choices=("auto", "grpc", "local"), default="auto")
    parser.add_argument("--postgres", action="store_true", help="also measure a PostgreSQL table of the replays")
    args = parser.parse_args(argv)
    runner = args.runner if args.runner != "auto" else ("grpc" if grpc_available() else "local")
    deals = args.deals or (1 if args.quick else 4)
    configure_logging(None, console=False)
    print(f"storage bench: 4 random bots ({runner} runner), full Craits games at a table of 4, "
          f"{deals} deals x 4 rotations = {deals * 4} games")
    with tempfile.TemporaryDirectory(prefix="craits-bench-storage-") as tmp_name:
        tmp = Path(tmp_name)
        out = tmp / "cup"
        games = asyncio.run(play(deals, runner, out))
        replays = sorted((out / "replays").glob("*.jsonl.gz"))
        if len(replays) != games:
            raise SystemExit(f"bench: {games} games but {len(replays)} format 2 replays")
        store_bytes = store_rows(out) / games
        shared = sum((out / name).stat().st_size for name in SHARED) / games
        v1_dir = tmp / "v1"
        v1_dir.mkdir()
        rows: dict[str, list[float]] = {k: [] for k in (
            "replay2", "page2", "replay1", "page1", "decisions", "write2", "write1", "verify2", "verify1")}
        bodies: dict[int, list[bytes]] = {1: [], 2: []}
        for path in replays:
            game = path.name[: -len(".jsonl.gz")]
            v1 = v1_dir / f"{game}.jsonl"
            convert_replay(path, v1)
            replay = read_replay(path)
            rows["replay2"].append(path.stat().st_size)
            rows["page2"].append(sum((out / "viewer" / f"{game}.{ext}").stat().st_size for ext in ("html", "js")))
            rows["replay1"].append(v1.stat().st_size)
            rows["page1"].append(len(render_html(read_replay(v1), index_href="index.html").encode()))
            rows["decisions"].append(len(replay.decisions))
            bare = best(3, lambda replay=replay: writer_ms(replay, tmp, None))
            rows["write2"].append(max(0.0, best(3, lambda replay=replay: writer_ms(replay, tmp, 2)) - bare))
            rows["write1"].append(max(0.0, best(3, lambda replay=replay: writer_ms(replay, tmp, 1)) - bare))
            rows["verify2"].append(best(3, lambda path=path: _timed(verify_replay, path)))
            rows["verify1"].append(best(3, lambda v1=v1: _timed(verify_replay, v1)))
            bodies[1].append(v1.read_bytes())
            bodies[2].append(path.read_bytes())
    mean = {k: statistics.fmean(v) for k, v in rows.items()}
    v2_total = mean["replay2"] + mean["page2"] + store_bytes + shared
    v1_total = mean["replay1"] + mean["page1"] + store_bytes
    print(f"per game ({mean['decisions']:.0f} decisions on average):")
    print(f"  format 2: replay {mean['replay2']:,.0f} B + page and its data {mean['page2']:,.0f} B + store rows "
          f"{store_bytes:,.0f} B + shared viewer and index {shared:,.0f} B = {v2_total:,.0f} B")
    print(f"  format 1: replay {mean['replay1']:,.0f} B + self-contained page {mean['page1']:,.0f} B + store rows "
          f"{store_bytes:,.0f} B = {v1_total:,.0f} B  ({v1_total / v2_total:.0f}x format 2)")
    print(f"  store rows: the SQLite store's rows over the {games} games (the schedule, results, seats, hands)")
    if args.postgres:
        sizes = postgres_sizes(bodies)
        if sizes:
            print(f"postgresql, a replays table (lz4 where available): format 2 {sizes[2]:,.0f} B per game, "
                  f"format 1 {sizes[1]:,.0f} B per game")
    print(f"writer CPU per game (beyond the engine's moves; not the disk's fsync): format 2 {mean['write2']:.2f} ms, format 1 "
          f"{mean['write1']:.2f} ms (ratio 2/1 {mean['write2'] / max(mean['write1'], 1e-9):.2f})")
    print(f"verify per game: format 2 {mean['verify2']:.2f} ms, format 1 {mean['verify1']:.2f} ms "
          f"(ratio 2/1 {mean['verify2'] / mean['verify1']:.2f})")
    print(f"v1_write_ms={mean['write1']:.2f} v1_verify_ms={mean['verify1']:.2f}")
    print(f"bytes_per_game={v2_total:.0f} v1_bytes_per_game={v1_total:.0f} write_ms={mean['write2']:.2f} "
          f"verify_ms={mean['verify2']:.2f}")
    return 0


def _timed(function: Any, *args: Any) -> float:
    started = time.perf_counter()
    function(*args)
    return (time.perf_counter() - started) * 1000


if __name__ == "__main__":
    raise SystemExit(main())
