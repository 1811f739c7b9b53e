"""``craits web DIR``: a tournament's or a ladder's board in the browser, read-only."""

from __future__ import annotations

import argparse
import asyncio
import signal
from pathlib import Path
from typing import Any

from server.errors import UserError
from server.web.app import WebOptions
from server.web.board import folder_source
from server.web.serve import serve_folder, web_address


def register_cli(subparsers: Any) -> None:
    """Add ``craits web``."""
    parser = subparsers.add_parser(
        "web",
        help="serve a tournament's or a ladder's board, games and replays to browsers (read-only)",
        description=(
            "Serve the standings, progress, bots and recorded games of a tournament's or a ladder's output "
            "folder, finished or still running in another process (its store is read again as it changes), "
            "until Ctrl-C or SIGTERM. Live games are shown by the process that plays them: "
            "--web on `craits tournament run|resume`, `craits ladder run` and `craits serve`. See docs/web.md."
        ),
    )
    parser.add_argument("folder", help="the output folder (the one holding tournament.db)")
    parser.add_argument(
        "--address", default=("127.0.0.1", 8080), type=web_address, metavar="HOST:PORT",
        help="where to listen (default 127.0.0.1:8080; 0.0.0.0:8080 opens it to other machines)",
    )
    parser.set_defaults(func=_cmd_web)


def _cmd_web(args: argparse.Namespace) -> int:
    out_dir = Path(args.folder)
    if not out_dir.is_dir():
        raise UserError(f"{args.folder}: no such folder")
    folder_source(out_dir)  # one line now if it holds no tournament
    host, port = args.address
    asyncio.run(serve_folder(out_dir, WebOptions(host=host, port=port), _until_stopped))
    return 0


async def _until_stopped() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
