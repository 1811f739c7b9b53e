"""`craits doctor`: what this machine has for each feature, and the command that fixes what it lacks.

    craits doctor [--logs DIR]

One line per item (the sandbox, Node.js, PostgreSQL, chromium, the default ports, gRPC's I/O
layer, the disk under logs/), then whether the README's two commands, `make demo` and `make
test`, can run here. Exit status 0 when both can; 1 when one lacks something (each such item
with its fix). See docs/doctor.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path
from typing import Any

MARKS = {"ok": "ok", "missing": "MISSING", "broken": "BROKEN", "warn": "warn"}


def register_cli(sub: Any) -> None:
    p = sub.add_parser("doctor", help="check what this machine has for each feature, with the fix for what it lacks",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--logs", default="logs", metavar="DIR", help="the folder whose disk is checked (default logs/)")
    p.set_defaults(func=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    from server.doctor import diagnose, ready_for

    findings = diagnose(Path(args.logs))
    width = max(len(f.item) for f in findings)
    for f in findings:
        print(f"{MARKS[f.status]:<8}{f.item:<{width + 2}}{f.detail}" + (f"  [{f.used_for}]" if f.used_for else ""))
        if f.status != "ok":
            print(f"{'':<{width + 10}}fix: {f.fix}")
    lacking = ready_for(findings)
    print()
    for command, items in lacking.items():
        print(f"{command}: " + ("can run here" if not items else f"cannot run here: needs {', '.join(items)} (fix above)"))
    if lacking["make test"] and os.geteuid() == 0 and shutil.which("apt-get"):
        print("(as root, `make test` installs the missing Debian packages itself first: `make test-deps`)")
    return 0 if not any(lacking.values()) else 1
