"""Where a decision's CPU goes, per process: ``python bench/tournament.py --breakdown``.

One tournament at concurrency 1 (the referee plays every game in this process, the kit's
random bots sandboxed and kept between games, as the product runs them) with:

* **the referee** (this process): every thread's CPU from ``/proc/self/task`` (the event
  loop's thread, where all the referee's Python runs, against gRPC's own threads), and in
  the loop's thread the CPU of the referee's own steps, each timed with ``time.thread_time``
  around the function that does it: building the DecisionRequest (``server.protocol.wire``),
  the replay's record and its hash (``ReplayWriter.decision``), the engine (``GameState.apply``
  and ``legal_action_ids``); what is left of the loop's thread is gRPC's asyncio layer, the
  event loop and the referee's glue (tasks, mailboxes, routing). Log events are counted.
  Wake-ups: the loop's turns (``select`` calls) and each thread's voluntary context switches.
* **the bots**: each bot process's threads (found in the bench's cgroup, which holds the
  sandboxes' cgroups), read just before the bots are stopped, and the kit's own work timed
  apart in this process: the recorded requests parsed (``RefereeMessage.FromString``),
  dispatched to the same random bot (``Dispatcher.handle``, the kit's per-decision path) and
  the answer serialised, per decision.

The figures are CPU milliseconds per decision put to a bot. The timers' own cost (``thread_time``
is a system call: about 1-2 us a read, 10-30 us per decision in all) is measured on a function
that does nothing and left out of every figure, so the steps and the glue add up to the
referee's CPU in a run without them; the tournament's figures come from runs without them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

TICK = os.sysconf("SC_CLK_TCK")
STREAM = "gRPC" if os.environ.get("CRAITS_FRAMES", "1") == "0" else "frames"
"""How the sandboxed kit bots talk to the referee (``CRAITS_FRAMES=0``: gRPC, as before issue 32)."""


def thread_times(pid: int | str = "self") -> dict[str, tuple[float, int]]:
    """CPU seconds and voluntary context switches of each thread of ``pid``, by thread name
    (threads of the same name summed; the main thread is ``main``)."""
    out: dict[str, tuple[float, int]] = {}
    task = Path(f"/proc/{pid}/task")
    main = str(os.getpid()) if pid == "self" else str(pid)
    for tid in os.listdir(task):
        try:
            stat = (task / tid / "stat").read_text()
            status = (task / tid / "status").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        cpu = (int(fields[11]) + int(fields[12])) / TICK
        name = "main" if tid == main else stat[stat.index("(") + 1:stat.rindex(")")]
        switches = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("voluntary_ctxt"))
        old = out.get(name, (0.0, 0))
        out[name] = (old[0] + cpu, old[1] + switches)
    return out


def minus(after: dict[str, tuple[float, int]], before: dict[str, tuple[float, int]]) -> dict[str, tuple[float, int]]:
    return {k: (v[0] - before.get(k, (0.0, 0))[0], v[1] - before.get(k, (0.0, 0))[1]) for k, v in after.items()}


class Steps:
    """``time.thread_time`` around the referee's own steps, summed by name."""

    def __init__(self) -> None:
        self.seconds: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self.selects = 0
        self.logs = 0
        self._undo: list[Callable[[], None]] = []

    def wrap(self, owner: Any, attr: str, name: str) -> None:
        original = getattr(owner, attr)
        clock, seconds, calls = time.thread_time, self.seconds, self.calls

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = clock()
            try:
                return original(*args, **kwargs)
            finally:
                seconds[name] += clock() - started
                calls[name] += 1

        setattr(owner, attr, timed)
        self._undo.append(lambda: setattr(owner, attr, original))

    @staticmethod
    def calibrate(n: int = 20000) -> tuple[float, float]:
        """What one timed call adds, in CPU seconds: inside its step's figure (the clock's own
        reads: ``thread_time`` is a system call, about 1-2 us each here) and in all (the wrapper
        too), measured on a function that does nothing. Subtracted from the figures below: the
        timers add 10-30 us per decision, as much as a step."""
        steps = Steps()

        class Nothing:
            def nothing(self) -> None:
                pass

        thing = Nothing()
        clock = time.thread_time
        started = clock()
        for _ in range(n):
            thing.nothing()
        bare = clock() - started
        steps.wrap(Nothing, "nothing", "nothing")
        started = clock()
        for _ in range(n):
            thing.nothing()
        timed = clock() - started
        for undo in steps._undo:
            undo()
        return steps.seconds["nothing"] / n, max(0.0, timed - bare) / n

    @contextlib.contextmanager
    def installed(self) -> Iterator[Steps]:
        import selectors

        import structlog

        from server.engine.state import GameState
        from server.protocol import wire
        from server.storage.replay import ReplayWriter

        self.wrap(wire.GameEncoder, "decision_request", "build the request (wire)")
        self.wrap(ReplayWriter, "decision", "replay record and hash")
        self.wrap(GameState, "apply", "engine")
        self.wrap(GameState, "legal_action_ids", "engine")
        import gc

        collecting = [0.0]

        def on_gc(phase: str, _info: dict[str, int]) -> None:
            if phase == "start":
                collecting[0] = time.thread_time()
            elif threading.get_ident() == main:
                self.seconds["garbage collection"] += time.thread_time() - collecting[0]

        main = threading.get_ident()
        gc.callbacks.append(on_gc)
        self._undo.append(lambda: gc.callbacks.remove(on_gc))
        select = selectors.EpollSelector.select

        def counted_select(selector: Any, timeout: Any = None) -> Any:
            self.selects += 1
            return select(selector, timeout)

        selectors.EpollSelector.select = counted_select  # type: ignore[method-assign]
        self._undo.append(lambda: setattr(selectors.EpollSelector, "select", select))

        def count_logs(_logger: Any, _name: str, event: Any) -> Any:
            self.logs += 1
            return event

        config = structlog.get_config()
        processors = config["processors"]
        structlog.configure(processors=[count_logs, *processors])
        self._undo.append(lambda: structlog.configure(processors=processors))
        try:
            yield self
        finally:
            for undo in reversed(self._undo):
                undo()
            self._undo.clear()


def bot_processes(group: Path | None) -> list[int]:
    """The pids of the kit's bot processes in the bench's cgroup (sandboxed or not; not bwrap's own)."""
    pids = []
    if group is None:
        return pids
    for procs in group.rglob("cgroup.procs"):
        for pid in procs.read_text().split():
            with contextlib.suppress(OSError):
                if (b"craits_bot" in Path(f"/proc/{pid}/cmdline").read_bytes()
                        and Path(f"/proc/{pid}/comm").read_text().strip() != "bwrap"):
                    pids.append(int(pid))
    return pids


def kit_costs(requests: list[tuple[int, bytes]], repeat: int = 3) -> dict[str, float]:
    """CPU seconds per decision of the kit's own work, by step, on recorded requests:
    parse, dispatch to the random bot (the Request, choose(), the Answer), serialise."""
    import logging

    from craits.v1 import referee_pb2 as pb
    from craits_bot import Dispatcher
    from craits_bot.examples.random_bot import RandomBot

    logging.getLogger("craits_bot").setLevel(logging.ERROR)  # recorded requests skip other seats' news
    by_seat: dict[int, list[bytes]] = {}
    for seat, data in requests:
        by_seat.setdefault(seat, []).append(data)
    clock = time.process_time
    parse = dispatch = serialise = 0.0
    count = 0
    for _ in range(repeat):
        for datas in by_seat.values():
            dispatcher = Dispatcher(RandomBot())
            t0 = clock()
            messages = [pb.RefereeMessage.FromString(d) for d in datas]
            t1 = clock()
            replies = [dispatcher.handle(m) for m in messages]
            t2 = clock()
            for reply in replies:
                reply.SerializeToString()
            t3 = clock()
            parse, dispatch, serialise = parse + t1 - t0, dispatch + t2 - t1, serialise + t3 - t2
            count += len(datas)
    return {"parse the request": parse / count, "the kit's dispatch and choose()": dispatch / count,
            "serialise the answer": serialise / count}


def answer_parse_cost(n: int = 20000) -> float:
    """CPU seconds to parse one bot's Answer in the referee (gRPC calls the deserializer)."""
    from craits.v1 import referee_pb2 as pb

    data = pb.BotMessage(answer=pb.Answer(game_id="bench-1-2", decision_id=123456, action_id=7,
                                          think_us=40)).SerializeToString()
    parse = pb.BotMessage.FromString
    t0 = time.process_time()
    for _ in range(n):
        parse(data)
    return (time.process_time() - t0) / n


def run(config: Any, text: str, factory: Any, meter: Any) -> None:
    """Play the tournament once at concurrency 1 and print where each process's CPU went."""
    from craits import grpc_io

    from server.game.seats import framed
    from server.protocol import wire
    from tournaments.runner import TournamentRunner, start_tournament

    requests: list[tuple[int, bytes]] = []
    original = wire.GameEncoder.decision_request

    def recorded(encoder: Any, seat: int, *args: Any, **kwargs: Any) -> Any:
        message = original(encoder, seat, *args, **kwargs)
        requests.append((seat, framed("decision", message)))
        return message

    bots_before: dict[int, dict[str, tuple[float, int]]] = {}
    bots_after: dict[int, dict[str, tuple[float, int]]] = {}
    result: dict[str, Any] = {}

    async def play(out: Path) -> None:
        store = start_tournament(config, text, str(out / "bench.toml"), out)
        async with factory(config, out) as run_game:
            steps = Steps()
            wire.GameEncoder.decision_request = recorded  # type: ignore[method-assign]
            with steps.installed():
                try:
                    # the first game launches the bots: its requests and CPU are left out
                    runner = TournamentRunner(config, store, run_game, out, concurrency=1, progress=False,
                                              handle_signals=False)
                    first = asyncio.Event()
                    original_game = run_game

                    async def observed(*args: Any, **kwargs: Any) -> Any:
                        record = await original_game(*args, **kwargs)
                        if not first.is_set():
                            first.set()
                            for pid in bot_processes(meter.group):
                                bots_before[pid] = thread_times(pid)
                            result["threads0"] = thread_times()
                            result["steps0"] = (Counter(steps.seconds), steps.selects, steps.logs, len(requests))
                            result["calls0"] = Counter(steps.calls)
                            result["cpu0"] = time.process_time()
                        return record

                    runner.run_game = observed
                    summary = await runner.run()
                    for pid in bot_processes(meter.group):
                        bots_after[pid] = thread_times(pid)
                    result["threads1"] = thread_times()
                    result["cpu1"] = time.process_time()
                finally:
                    wire.GameEncoder.decision_request = original  # type: ignore[method-assign]
            result["steps"], result["summary"] = steps, summary
        store.close()

    with tempfile.TemporaryDirectory(prefix="craits-bench-") as tmp:
        grpc_io.run(play(Path(tmp)))
    steps: Steps = result["steps"]
    seconds0, selects0, logs0, asked0 = result["steps0"]
    decisions = len(requests) - asked0
    per = 1e3 / decisions
    threads = minus(result["threads1"], result["threads0"])
    inside, outside = Steps.calibrate()
    timed_calls = sum(steps.calls.values()) - sum(result["calls0"].values())
    loop_cpu = threads.get("main", (0.0, 0))[0] - outside * timed_calls
    print(f"\nwhere a decision's CPU goes on {grpc_io.loop_name()}'s event loop "
          f"(ms per decision put to a bot; {decisions} decisions in "
          f"{result['summary'].played - 1} games after the first, which launches the bots):")
    print(f"referee (this process): {(result['cpu1'] - result['cpu0'] - outside * timed_calls) * per:.3f} ms in all "
          f"(the bench's timers, {outside * timed_calls * per:.3f} ms per decision, left out)")
    for name, (cpu, switches) in sorted(threads.items(), key=lambda kv: -kv[1][0]):
        if cpu > 0 or switches:
            label = "event loop thread" if name == "main" else f"thread {name!r}"
            if name == "main":
                cpu = loop_cpu
            print(f"  {label:40} {cpu * per:7.3f}   {switches / decisions:5.2f} sleeps per decision")
    mine = 0.0
    for name in dict.fromkeys(["build the request (wire)", "replay record and hash", "engine", "garbage collection"]):
        cpu = steps.seconds[name] - seconds0[name]
        if name != "garbage collection":
            cpu -= inside * (steps.calls[name] - result["calls0"][name])
        mine += cpu
        print(f"    {name:38} {cpu * per:7.3f}")
    parse = answer_parse_cost()
    print(f"    {'parse the answer (protobuf, measured apart)':38} {parse * 1e3:7.3f}")
    turns = steps.selects - selects0
    print(f"    {'the stream (' + STREAM + '), event loop, glue':38} {(loop_cpu - mine) * per - parse * 1e3:7.3f}   "
          + (f"{turns / decisions:.2f} loop turns per decision" if turns else "(uvloop's turns are not counted)"))
    print(f"    {'log events':38} {(steps.logs - logs0) / decisions:7.3f} per decision")
    bots = {pid: minus(bots_after[pid], bots_before[pid]) for pid in bots_after if pid in bots_before}
    total: Counter[str] = Counter()
    sleeps: Counter[str] = Counter()
    for per_thread in bots.values():
        for name, (cpu, switches) in per_thread.items():
            key = "main" if name == "main" else name
            total[key] += cpu
            sleeps[key] += switches
    bot_cpu = sum(total.values())
    print(f"bots ({len(bots)} processes, summed; each decision is one bot's): {bot_cpu * per:.3f} ms in all")
    for name, cpu in total.most_common():
        label = "event loop thread" if name == "main" else f"thread {name!r}"
        print(f"  {label:40} {cpu * per:7.3f}   {sleeps[name] / decisions:5.2f} sleeps per decision")
    kit = kit_costs(requests[asked0:asked0 + 4000])
    for name, cpu in kit.items():
        print(f"    {name:38} {cpu * 1e3:7.3f}")
    print(f"    {'the stream (' + STREAM + ') and event loop':38} {total['main'] * per - sum(kit.values()) * 1e3:7.3f}")
