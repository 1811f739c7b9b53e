"""What a ladder's round costs in bookkeeping as the ladder grows: read afresh, or kept.
Its web board too.

Between two rounds a ladder needs its standings (the ratings pick the next table) and its
history (who played how often, who met whom). Read afresh, that is every recorded game read
and rated again: a cost that grows with the ladder, at every round. ``LadderBook`` reads the
store once, then adds each round and each newly recorded game to what it keeps.

This bench builds a ladder store (SQLite, in a temporary folder) of 30 bots at tables of 4
and fills it with recorded games (made-up totals: the arithmetic is what is measured, not
the games), then, at each size, times one round's bookkeeping both ways in the same
process: **afresh** (``ladder_standings`` and a new ``LadderBook``: what each round cost
before) and **kept** (one more round stored and recorded, then ``LadderBook.standings`` and
``LadderBook.new_round``). The web board (``server.web.board``) the same way: a board that
reads the store for the first time (what each of its refreshes cost before), and a board
kept since the start, refreshed after the round. Printed: milliseconds per round at each
size, the ratios, and how each grew from the smallest size to the largest.

    python bench/ladder.py            # 1,000 to 32,000 recorded games
    python bench/ladder.py --quick    # 500 to 4,000
    python bench/ladder.py --sizes 100,200,400,800   # any sizes (the tests' quick look)

Last line: ``afresh_vs_kept_at_largest=X afresh_growth=G kept_growth=K games_largest=N
board_afresh_vs_kept_at_largest=B``
(growth: the largest size's time over the smallest's; sizes grow 8x quick, 32x in full).
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from server.storage.store import Store
from server.web.board import Board, folder_source
from tournaments.config import parse_config
from tournaments.ladder import LadderBook, ladder_standings, open_ladder

BOTS = 30
TABLE = 4


def ladder_file(folder: Path) -> Path:
    bots = "".join(f'\n[[bots]]\nname = "bot{i:02d}"\nbuiltin = "random"\n' for i in range(BOTS))
    path = folder / "ladder.toml"
    path.write_text(f'name = "bench"\ntable_size = {TABLE}\ndeals = 1\nseed = 1\nconcurrency = 4\n{bots}')
    return path


def record_made_up(db: sqlite3.Connection, games: list[tuple[str, tuple[str, ...]]], rng: random.Random) -> None:
    """Results for stored games, as ``Store.record_game`` writes them (made-up totals)."""
    for game_id, seats in games:
        totals = [rng.randrange(0, 400) for _ in seats]
        placings = [sorted(totals).index(t) + 1 for t in totals]
        db.execute("INSERT INTO results (game_id, recorded_at, digest, replay_path, lower_wins, team_placings, aborted)"
                   " VALUES (?, ?, 'bench', NULL, 1, NULL, '')", (game_id, time.time()))
        db.executemany(
            "INSERT INTO seats (game_id, seat, bot, total, placing, status, decisions, timeouts, strikes, illegal,"
            " malformed, disconnects, default_actions, think_s, transport_s)"
            " VALUES (?, ?, ?, ?, ?, 'ok', 50, 0, 0, 0, 0, 0, 0, 0.1, 0.01)",
            [(game_id, s, bot, str(t), p) for s, (bot, t, p) in enumerate(zip(seats, totals, placings, strict=True))],
        )
    db.commit()


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(size) for size in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"sizes are whole numbers separated by commas, got {text!r}") from None
    if len(sizes) < 2 or sizes != sorted(set(sizes)) or sizes[0] < 1:
        raise argparse.ArgumentTypeError(f"at least two growing sizes of 1 or more, got {text!r}")
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="500 to 4,000 recorded games")
    parser.add_argument("--sizes", type=_sizes, metavar="N,N,...",
                        help="recorded games to time at instead, growing (the tests run small ones)")
    parser.add_argument("--repeat", type=int, default=5, help="rounds timed each way at each size (median)")
    args = parser.parse_args()
    sizes = args.sizes or ([500, 1000, 2000, 4000] if args.quick else [1000, 4000, 16000, 32000])
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="craits-bench-ladder-") as tmp:
        folder = Path(tmp)
        file = ladder_file(folder)
        config = parse_config(file.read_text())
        out = folder / "out"
        with open_ladder(config, file.read_text(), str(file), out) as store:
            db = sqlite3.connect(out / Store.FILENAME)
            book = LadderBook(config, store)
            standings = book.standings()
            board = Board(folder_source(out))
            rows = []
            print(f"{'recorded games':>15} {'afresh ms/round':>16} {'kept ms/round':>14} {'ratio':>7}"
                  f" {'board afresh ms':>16} {'board kept ms':>14} {'ratio':>7}")
            for size in sizes:
                while store.counts()[0] < size:  # fill: rounds stored, recorded with made-up totals
                    rounds = book.new_rounds(standings, None, 50)
                    record_made_up(db, [(g.game_id, g.seats) for r in rounds for g in r.games], rng)
                    standings = book.standings()
                board.refresh()
                afresh, kept, board_afresh, board_kept = [], [], [], []
                for _ in range(args.repeat):
                    began = time.perf_counter()
                    ladder_standings(config, store)
                    LadderBook(config, store)
                    afresh.append(time.perf_counter() - began)
                    new = book.new_round(standings)
                    record_made_up(db, [(g.game_id, g.seats) for g in new.games], rng)
                    began = time.perf_counter()
                    standings = book.standings()
                    book.new_round(standings)
                    kept.append(time.perf_counter() - began)
                    record_made_up(db, [(g.game_id, g.seats) for g in store.pending_games()], rng)
                    standings = book.standings()
                    began = time.perf_counter()
                    first_look = Board(folder_source(out))
                    first_look.refresh()
                    board_afresh.append(time.perf_counter() - began)
                    first_look.close()
                    began = time.perf_counter()
                    board.refresh()
                    board_kept.append(time.perf_counter() - began)
                a, k = statistics.median(afresh) * 1000, statistics.median(kept) * 1000
                ba, bk = statistics.median(board_afresh) * 1000, statistics.median(board_kept) * 1000
                recorded = store.counts()[0]
                rows.append((recorded, a, k, ba, bk))
                print(f"{recorded:>15} {a:>16.1f} {k:>14.2f} {a / k:>7.1f} {ba:>16.1f} {bk:>14.2f} {ba / bk:>7.1f}")
            board.close()
            db.close()
    (_, a0, k0, _, _), (n1, a1, k1, ba1, bk1) = rows[0], rows[-1]
    print(f"afresh_vs_kept_at_largest={a1 / k1:.1f} afresh_growth={a1 / a0:.1f} kept_growth={k1 / k0:.2f} "
          f"games_largest={n1} board_afresh_vs_kept_at_largest={ba1 / bk1:.1f}")


if __name__ == "__main__":
    main()
