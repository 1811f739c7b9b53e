"""How long does ``craits`` take to start: a group's ``--help``, and a command that ends in the
user's mistake, against another checkout's ``craits`` in the same run?

Organizers, teachers and bot authors type these all day, and the tests start ``craits`` as a
subprocess a few hundred times: a command that only prints its help or a one-line error should
not import the web app, the database drivers or gRPC. Each command below is run ``--repeat``
times from this checkout's ``.venv/bin/craits`` and, alternating with it (each round in the
other order), from the ``--baseline`` checkout's; each run's exit code and first line of output
are checked (a command that did not do what it should gives no figure: the bench stops), and
the two checkouts' outputs compared.

    python bench/cli_start.py --quick --baseline ../wt-cli-base

The table: per command, the median wall time of each checkout, their ratio (this checkout's over
the baseline's) and each one's peak memory (the child's max RSS). The last line:
``help_ratio=A tournament_help_ratio=B worker_help_ratio=C web_help_ratio=D user_error_ratio=E
help_ms=F tournament_help_ms=G worker_help_ms=H web_help_ms=I user_error_ms=J`` (ratios only with
``--baseline``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MISSING = "/nonexistent/craits-bench.toml"


@dataclass(frozen=True)
class Case:
    key: str
    """Its name in the last line."""
    args: tuple[str, ...]
    code: int
    """The exit code it must end with."""
    first_line: str
    """How its first line of output (stdout, else stderr) begins."""


CASES = (
    Case("help", ("--help",), 0, "usage: craits"),
    Case("tournament_help", ("tournament", "--help"), 0, "usage: craits tournament"),
    Case("worker_help", ("worker", "--help"), 0, "usage: craits worker"),
    Case("web_help", ("web", "--help"), 0, "usage: craits web"),
    Case("user_error", ("tournament", "run", MISSING), 2, f"craits: error: {MISSING}: no such tournament file"),
)


@dataclass
class Runs:
    seconds: list[float] = field(default_factory=list)
    rss_kb: list[int] = field(default_factory=list)
    output: str = ""


def craits_of(checkout: Path) -> Path:
    """The checkout's own ``craits``, refused unless it runs that checkout's code (an editable
    install of another checkout would measure the wrong code)."""
    craits = checkout / ".venv" / "bin" / "craits"
    if not craits.is_file():
        raise SystemExit(f"bench: {craits} not found: run `make setup proto` in {checkout}")
    python = checkout / ".venv" / "bin" / "python"
    found = subprocess.run([str(python), "-c", "import server; print(server.__file__)"], capture_output=True,
                           text=True, cwd=tempfile.gettempdir(), check=False).stdout.strip()
    if not found or not Path(found).resolve().is_relative_to(checkout.resolve()):
        raise SystemExit(f"bench: {craits} runs the code in {found or '(nothing importable)'}, not {checkout}")
    return craits


def run_once(craits: Path, case: Case, into: Runs) -> None:
    """One start of ``craits``: its wall time and peak memory, once its exit code and first line are right."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        child = subprocess.Popen([str(craits), *case.args], stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                 cwd=tempfile.gettempdir())
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)  # (so Popen does not wait for it again)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    first = (stdout or stderr).split("\n", 1)[0]
    if child.returncode != case.code or not first.startswith(case.first_line):
        raise SystemExit(f"bench: `{craits} {' '.join(case.args)}` exited {child.returncode} (expected {case.code}) "
                         f"and printed {first!r} first (expected {case.first_line!r}...): no figures\n"
                         f"{stderr[-2000:]}")
    into.seconds.append(elapsed)
    into.rss_kb.append(usage.ru_maxrss)
    into.output = stdout + stderr


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help="another checkout (with its own .venv, `make setup proto`) to run alternately")
    parser.add_argument("--repeat", type=int, default=15, metavar="N", help="starts of each command per checkout "
                        "(default 15)")
    parser.add_argument("--quick", action="store_true", help="5 starts of each command per checkout")
    args = parser.parse_args(argv)
    repeat = 5 if args.quick else args.repeat
    if repeat < 1:
        parser.error("--repeat must be 1 or more")
    checkouts = {"new": craits_of(ROOT)}
    if args.baseline:
        checkouts["baseline"] = craits_of(args.baseline)
    runs = {(case.key, name): Runs() for case in CASES for name in checkouts}
    print(f"craits start: {repeat} starts of each command per checkout, alternating; this checkout {ROOT}"
          + (f", baseline {args.baseline.resolve()}" if args.baseline else ""), file=sys.stderr)
    for round_ in range(repeat):
        order = list(checkouts) if round_ % 2 == 0 else list(reversed(checkouts))
        for case in CASES:
            for name in order:
                run_once(checkouts[name], case, runs[case.key, name])

    print(f"{'command':52} {'new ms':>8} {'base ms':>8} {'ratio':>6} {'new MB':>7} {'base MB':>7}  same output")
    figures: dict[str, float] = {}
    for case in CASES:
        new = runs[case.key, "new"]
        new_ms = statistics.median(new.seconds) * 1000
        figures[f"{case.key}_ms"] = new_ms
        line = f"{'craits ' + ' '.join(case.args):52} {new_ms:8.0f}"
        if args.baseline:
            base = runs[case.key, "baseline"]
            base_ms = statistics.median(base.seconds) * 1000
            figures[f"{case.key}_ratio"] = new_ms / base_ms
            line += (f" {base_ms:8.0f} {new_ms / base_ms:6.2f} {max(new.rss_kb) / 1024:7.0f} {max(base.rss_kb) / 1024:7.0f}"
                     f"  {'yes' if new.output == base.output else 'NO'}")
        else:
            line += f" {'':8} {'':6} {max(new.rss_kb) / 1024:7.0f}"
        print(line)
    ratios = [f"{key}={value:.2f}" for key, value in figures.items() if key.endswith("_ratio")]
    print(" ".join(ratios + [f"{key}={value:.0f}" for key, value in figures.items() if key.endswith("_ms")]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
