"""Does a continuous ladder keep its size as it plays, and what does stopping it cost?

A ladder runs for weeks: what its referee keeps must not grow with the games it played. This
bench plays a ladder through the referee (gRPC) in this process, one game at a time: builtin
bots and two bots of the Python kit launched once and kept between games, at tables of 3,
``short_game``. After a first half of its rounds (the baseline) and again at the end it
counts, after a garbage collection, what this process holds: Python objects, cancelled
futures (asyncio used to keep one per kept bot and game), open files, threads, and its RSS
(shown, not compared: the allocator keeps what it freed). Then it times the listing a stopped
ladder writes (``viewer/index.html``, every game's page current, as the ladder leaves them)
against writing every page afresh (what stopping cost before the ladder wrote each round's
pages after the round).

    python bench/soak.py            # 2 x 100 rounds (600 games)
    python bench/soak.py --quick    # 2 x 10 rounds

Last line: ``objects_per_game=X futures_growth=F fds_growth=D threads_growth=T
pages_written_vs_listed=P games=N`` (growths: at the end less at the baseline; objects per
game over the second half's games).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import bots_output, played_by_their_bots  # noqa: E402
from server.logging import configure_logging  # noqa: E402
from server.storage.store import Store  # noqa: E402
from tournaments.config import parse_config  # noqa: E402
from tournaments.grpc_runner import tournament_runner  # noqa: E402
from tournaments.ladder import open_ladder, run_ladder  # noqa: E402
from tournaments.pages import write_viewer_pages  # noqa: E402


def ladder_text() -> str:
    builtins = {"house-a": "random", "house-b": "random", "first": "first", "default": "default"}
    bots = "".join(f'\n[[bots]]\nname = "{name}"\nbuiltin = "{kind}"\n' for name, kind in builtins.items())
    bots += "".join(
        f'\n[[bots]]\nname = "{name}"\ncommand = ["python", "-m", "craits_bot.examples.random_bot"]\n'
        f'cwd = "{ROOT / "clients" / "python"}"\n'
        for name in ("kit-a", "kit-b")
    )
    return (f'name = "soak"\ntable_size = 3\ndeals = 1\nseed = 3\nconcurrency = 1\nsandbox = "none"\n'
            f"[flags]\nshort_game = true\n{bots}")


def held() -> dict[str, int]:
    gc.collect()
    objects = gc.get_objects()
    rss = 0
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
    return {
        "objects": len(objects),
        "futures": sum(1 for o in objects if isinstance(o, asyncio.Future) and o.cancelled()),
        "fds": len(os.listdir("/proc/self/fd")),
        "threads": threading.active_count(),
        "rss_kb": rss,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 x 10 rounds")
    parser.add_argument("--rounds", type=int, default=None, help="rounds in each half (default 100, quick 10)")
    args = parser.parse_args()
    half = args.rounds or (10 if args.quick else 100)
    configure_logging(None, console=False)  # (the referee's events would fill the terminal)
    folder = Path(tempfile.mkdtemp(prefix="craits-soak-"))
    try:
        text = ladder_text()
        source = folder / "soak.toml"
        source.write_text(text)
        config = parse_config(text, source=str(source))
        out = folder / "out"
        seen: dict[int, tuple[dict[str, int], int]] = {}

        def on_round(played: Any, standings: Any) -> None:
            if played.number in (half, 2 * half):
                seen[played.number] = (held(), standings.games_recorded)

        print(f"soak bench: a ladder of 2 x {half} rounds at tables of 3, 4 builtin bots and 2 of the kit's bots "
              'launched unsandboxed (sandbox = "none": it counts what the referee holds, not the sandbox\'s price)')
        with open_ladder(config, text, str(source), out) as store:
            asyncio.run(run_ladder(config, store, out, tournament_runner, rounds=2 * half, concurrency=1,
                                   on_round=on_round, handle_signals=False))
            played_by_their_bots(store.results(), bots_output(out / "bots"))
        (base, games_base), (end, games_end) = seen[half], seen[2 * half]
        with Store.in_dir(out) as store:
            started = time.perf_counter()
            write_viewer_pages(store, out, title="soak")
            listed = time.perf_counter() - started
            shutil.rmtree(out / "viewer")
            started = time.perf_counter()
            write_viewer_pages(store, out, title="soak")
            written = time.perf_counter() - started
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    print(f"{'held by the referee':<24}{'round ' + str(half):>14}{'round ' + str(2 * half):>14}{'growth':>10}")
    for key in ("objects", "futures", "fds", "threads", "rss_kb"):
        print(f"{key:<24}{base[key]:>14}{end[key]:>14}{end[key] - base[key]:>+10}")
    print(f"games recorded: {games_base} at round {half}, {games_end} at round {2 * half}")
    print(f"stopping: listing {games_end} games with their pages {listed * 1000:.0f} ms, "
          f"writing every page {written * 1000:.0f} ms")
    per_game = (end["objects"] - base["objects"]) / max(1, games_end - games_base)
    print(f"objects_per_game={per_game:.2f} futures_growth={end['futures'] - base['futures']} "
          f"fds_growth={end['fds'] - base['fds']} threads_growth={end['threads'] - base['threads']} "
          f"pages_written_vs_listed={written / max(listed, 1e-9):.1f} games={games_end}")


if __name__ == "__main__":
    main()
