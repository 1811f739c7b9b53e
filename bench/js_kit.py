"""What frames buy the JavaScript kit: CPU per decision of sandboxed JS bots, frames against gRPC.

Four-player Craits games between four JavaScript kit random bots (``clients/js/bot.js
--strategy random``), launched in the real sandbox and kept between games, through the real
referee (``server.transport.service.Arena``): in one mode the referee offers the frames socket
(``CRAITS_FRAMED_SOCKET``, which the kit takes), in the other gRPC alone (``ArenaOptions.frames``
False, as ``CRAITS_FRAMES=0``). Rounds of the two modes alternate, so a busy machine slows both
alike. Measured per decision put to a bot, after a warm-up game (start-up excluded): the CPU of
the referee's process, and of the four node processes (read in ``/proc``, 10 ms ticks).

    python bench/js_kit.py            # 3 rounds of 6 games per mode
    python bench/js_kit.py --quick    # 2 rounds of 3 games; about a minute

The last line: ``bots_ratio_frames_vs_grpc=B referee_ratio_frames_vs_grpc=R bots_ms_grpc=A
bots_ms_frames=C referee_ms_grpc=D referee_ms_frames=E`` (ratios of the medians).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # allow `python bench/js_kit.py` as well as `-m`
    sys.path.insert(0, str(ROOT))

from bench import bots_sandboxed, played_by_their_bots  # noqa: E402
from server.engine import make_config  # noqa: E402
from server.logging import configure_logging  # noqa: E402
from server.spec import BotSpec, Clocks, GameSpec  # noqa: E402
from server.transport.pool import RestartPolicy  # noqa: E402
from server.transport.service import Arena, ArenaOptions  # noqa: E402

JS_BOT = ROOT / "clients" / "js" / "bot.js"
CLOCKS = Clocks(decision_s=5.0, bank_s=60.0, max_strikes=3, reconnect_grace_s=5.0, connect_timeout_s=30.0)
TICK = os.sysconf("SC_CLK_TCK")


def node_cpu_s() -> float:
    """CPU seconds of the node processes descended from this one (the sandboxed bots)."""
    procs: dict[int, tuple[str, int, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:  # (gone meanwhile)
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        procs[int(entry)] = (stat[stat.index("(") + 1:stat.rindex(")")], int(fields[1]),
                             (int(fields[11]) + int(fields[12])) / TICK)
    me, total = os.getpid(), 0.0
    for comm, parent, cpu in procs.values():
        while parent and parent != me and parent in procs:
            parent = procs[parent][1]
        if parent == me and comm.startswith("node"):
            total += cpu
    return total


async def one_round(frames: bool, games: int, seed: int, logs: Path) -> tuple[float, float, int]:
    """(referee ms, bots ms, framed streams) per decision over ``games`` games after a warm-up."""
    arena = await Arena.start("127.0.0.1:0", ArenaOptions(bot_log_dir=logs, sandbox="bwrap", frames=frames))
    seats = tuple(BotSpec(name=f"js{i}", token="", command=("node", str(JS_BOT), "--strategy", "random", "-q"),
                          cwd=str(JS_BOT.parent)) for i in range(4))
    config = make_config("craits", 4)

    def game(n: int) -> GameSpec:
        return GameSpec(game_id=f"{'f' if frames else 'g'}{seed}-{n}", config=config, seed=seed + n, seats=seats,
                        clocks=CLOCKS)

    try:
        arena.keep_bots(RestartPolicy())
        await arena.run_game(game(games))  # warm-up: the bots start and their code warms up
        referee, bots, decisions, records = os.times(), node_cpu_s(), 0, []
        for n in range(games):
            record = await arena.run_game(game(n))
            records.append(record)
            decisions += sum(seat.decisions for seat in record.seats)
        played_by_their_bots(records, str(logs))  # (no figures from games the default policy played)
        after = os.times()
        bots = node_cpu_s() - bots
        framed = arena.framed_streams
    finally:
        await arena.shutdown(grace_s=1)
    referee_s = after.user + after.system - referee.user - referee.system
    return referee_s * 1000 / decisions, bots * 1000 / decisions, framed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds of 3 games per mode")
    args = parser.parse_args(argv)
    rounds, games = (2, 3) if args.quick else (3, 6)
    configure_logging(None, console=False)
    print(f"bench/js_kit.py: four JS random bots, {bots_sandboxed()}", flush=True)
    figures: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)  # (bots run as another user in the sandbox)
        for r in range(rounds):
            for frames in (r % 2 == 0, r % 2 != 0):
                referee, bots, framed = asyncio.run(one_round(frames, games, 100 * r, Path(tmp) / "bots"))
                if framed != (4 if frames else 0):
                    print(f"the bots used frames on {framed} streams, not {4 if frames else 0}", file=sys.stderr)
                    return 1
                figures[frames].append((referee, bots))
                print(f"round {r + 1} {'frames' if frames else 'grpc  '}: referee {referee:.3f} ms, "
                      f"js bots {bots:.3f} ms per decision", flush=True)
    median = {mode: [statistics.median(f[i] for f in figures[mode]) for i in (0, 1)] for mode in figures}
    (ref_g, bots_g), (ref_f, bots_f) = median[False], median[True]
    print(f"bots_ratio_frames_vs_grpc={bots_f / bots_g:.2f} referee_ratio_frames_vs_grpc={ref_f / ref_g:.2f} "
          f"bots_ms_grpc={bots_g:.3f} bots_ms_frames={bots_f:.3f} referee_ms_grpc={ref_g:.3f} referee_ms_frames={ref_f:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
