"""A machine as a new user's may be: the commands of this one, less those it was not given.

``fresh_path`` makes a folder of links to every program of /usr/bin and /usr/local/bin
except the named ones (by default bubblewrap, chromium and PostgreSQL's server, which only
``make test`` installs) and returns it as a PATH of its own, so that a command run with it
finds what a fresh Debian with Python, make and Node.js would have, whatever this one has.
``fake_program`` puts a script of ours on such a PATH (a bwrap that fails, an apt-get that
records its arguments).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

FRESH_MACHINE_LACKS = ("bwrap", "chromium", "initdb", "pg_ctl", "postgres", "caddy")


def fresh_path(folder: Path, lacking: Iterable[str] = FRESH_MACHINE_LACKS) -> str:
    """A PATH of one folder: links to this machine's programs, less ``lacking``."""
    folder.mkdir(parents=True, exist_ok=True)
    hidden = set(lacking)
    for source in (Path("/usr/local/bin"), Path("/usr/bin")):
        if not source.is_dir():
            continue
        for program in source.iterdir():
            link = folder / program.name
            if program.name not in hidden and not link.exists() and os.access(program, os.X_OK):
                link.symlink_to(program)
    return str(folder)


def fake_program(folder: Path, name: str, script: str) -> Path:
    """A shell script named ``name`` in ``folder`` (replacing any link of that name)."""
    path = folder / name
    path.unlink(missing_ok=True)
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)
    return path
