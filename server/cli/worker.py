"""`craits worker --store URL` and `craits store migrate|list URL`: workers on any machine.

    craits worker --store URL [--concurrency N] [--runner auto|local|grpc] [--name NAME] [--web HOST:PORT]
                  [--cache DIR] [--cache-max SIZE]
    craits store migrate URL
    craits store list URL

A worker takes games from the queue in the PostgreSQL store (procrastinate), launches
their bots here (the tournament file's paths resolved on this machine), plays them
through its own referee and records each with its replay in one transaction (a roster's
versions are fetched from the store by their hash, checked, and kept unpacked in ``--cache``
for later games, up to ``--cache-max``: ``server.storage.bot_files``). SIGTERM or
Ctrl-C: it takes no new game and stops once the games in hand are recorded; a second
signal stops it at once (its games are then played again by another worker). With
``--web`` it serves the games it plays, live, to browsers (the board of a whole tournament
is the coordinator's or ``craits web``'s). See ``tournaments.distributed`` for what happens
when a worker dies or the database goes away.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

from craits import grpc_io

from server.cli.tls_options import add_tls_options, tls_request
from server.cli.tournament import RUNNERS, _positive
from server.cli.web_options import add_web_options, web_options
from server.errors import UserError
from server.logging import get_logger
from server.storage.settings import CACHE_ENV, CACHE_MAX, DATABASE_WAIT_ENV, STORE_ENV
from server.transport.sandbox import size_text

log = get_logger(component="worker")

TLS_REFUSED = (
    "--tls, --tls-cert and --tls-key have nothing to protect on a worker: its referee serves only the bots "
    "it launches itself, on this machine (a Unix socket or 127.0.0.1), and it reaches the database through "
    "the URL (add ?sslmode=verify-full to it for an encrypted connection). Bots that connect on their own "
    "connect to the organizer's command: give it --tls (or tls = ... in the tournament file)"
)
"""Why ``craits worker --tls`` is refused (it was accepted, and did nothing a bot could use)."""


def register_cli(subparsers: Any) -> None:
    worker = subparsers.add_parser(
        "worker",
        help="play the queued games of tournaments and ladders kept in PostgreSQL (one per machine)",
        description="Take games from the queue in a PostgreSQL store, play them here with their bots, and "
        "record each result with its replay. Run one on every machine that should play; stop with SIGTERM "
        "or Ctrl-C (the games in hand are finished first). A lost database is waited for: a played game's "
        f"result is kept up to a day (or ${DATABASE_WAIT_ENV} seconds) until it can be recorded.",
    )
    worker.add_argument("--store", metavar="URL", help=f"the PostgreSQL database (default: ${STORE_ENV})")
    worker.add_argument("--concurrency", type=_positive, default=os.cpu_count() or 1,
                        help="games at once (default: the machine's cores)")
    worker.add_argument("--runner", choices=RUNNERS, default="auto",
                        help="local: in-process builtin bots only; grpc: the referee; auto (default): local when "
                        "every bot of a tournament is builtin, else grpc")
    worker.add_argument("--name", help="this worker's name in the logs (default: host:pid)")
    worker.add_argument("--files", metavar="DIR",
                        help="where the tournament files' relative bot paths are found on this machine "
                        "(default: the folder the file was in where the tournament was started)")
    worker.add_argument("--heartbeat", type=float, default=2.0, metavar="S",
                        help="seconds between the heartbeats that say this worker is alive (default 2)")
    worker.add_argument("--stalled-after", type=float, default=30.0, metavar="S",
                        help="a worker silent this long is dead: its games go to another (default 30)")
    worker.add_argument("--log-dir", default="logs", help="where worker.jsonl goes (default logs/)")
    worker.add_argument("--cache", metavar="DIR", type=Path,
                        help="where the roster versions it fetches by their hash are kept for later games (default: "
                        f"${CACHE_ENV}, else ~/.cache/craits/bots; safe to delete while no worker runs; several "
                        "workers on one machine may share it)")
    worker.add_argument("--cache-max", metavar="SIZE", type=_cache_size, default=CACHE_MAX,
                        help=f"how much the cache keeps, like 500MiB or 10GiB (default {size_text(CACHE_MAX)}): past "
                        "that the versions used least recently are deleted, never one a game in progress uses")
    add_tls_options(worker, folder="--log-dir")  # (refused, with why: kept so that the reason is said, not 'unrecognized')
    add_web_options(worker)
    worker.set_defaults(func=cmd_worker)

    store = subparsers.add_parser("store", help="set up, migrate and list a PostgreSQL store")
    actions = store.add_subparsers(dest="store_command", metavar="ACTION", required=True)
    mig = actions.add_parser("migrate", help="create or migrate the craits tables (and the queue's) in a database")
    mig.add_argument("url", metavar="URL", help="postgresql://user@host:port/database")
    mig.set_defaults(func=cmd_migrate)
    listing = actions.add_parser("list", help="the tournaments and ladders a database holds")
    listing.add_argument("url", metavar="URL")
    listing.set_defaults(func=cmd_list)


def cmd_worker(args: argparse.Namespace) -> int:
    from server.cli.tournament import store_url
    from server.cli.tournament_pg import runner_for
    from server.logging import configure_logging
    from server.storage.postgres import PostgresStore, redact, wait_until_reachable
    from server.storage.store import StoreError
    from server.web.serve import watching
    from tournaments.distributed import (
        WorkerService,
        WorkerSettings,
        adopt_queue_logs,
        database_wait_s,
    )
    from tournaments.runner import install_stop_handlers

    url = store_url(args)
    if url is None:
        raise UserError(f"a worker needs the PostgreSQL store: give --store postgresql://... (or set {STORE_ENV})")
    if tls_request(args) is not None:
        raise UserError(TLS_REFUSED)
    if args.heartbeat <= 0 or args.stalled_after <= 2 * args.heartbeat:
        raise UserError("--stalled-after must be more than twice --heartbeat, both positive")
    files_dir = Path(args.files).resolve() if args.files else None
    if files_dir is not None and not files_dir.is_dir():
        raise UserError(f"--files {args.files}: no such folder (the bots' files, at their paths relative to "
                        "the tournament file)")
    web = web_options(args)
    try:
        configure_logging(args.log_dir, name="worker")
    except OSError as err:
        raise UserError(f"--log-dir {args.log_dir}: cannot write the log there: {err.strerror or err}"
                        + (f": {err.filename}" if err.filename else "")) from None
    adopt_queue_logs()

    def waiting(why: str) -> None:  # (a worker may start before its database: at boot, in a compose file)
        print(f"craits worker: the database at {redact(url)} is not reachable yet ({why}); waiting for it "
              f"(up to {wait_s:g} s, ${DATABASE_WAIT_ENV}; Ctrl-C stops)", file=sys.stderr, flush=True)

    wait_s = database_wait_s()
    try:
        wait_until_reachable(url, wait_s, waiting)
        PostgresStore(url, "-").close()  # (an empty database is set up, an old one refused, before any game)
    except StoreError as err:
        raise UserError(str(err)) from None
    settings = WorkerSettings(
        concurrency=args.concurrency, heartbeat_s=args.heartbeat, stalled_s=args.stalled_after,
        files_dir=files_dir, cache_dir=args.cache, cache_max=args.cache_max,
        **({"name": args.name} if args.name else {}),
    )
    service = WorkerService(url, settings, runner_for(args.runner))
    print(sandbox_line(settings.name), file=sys.stderr, flush=True)
    print(f"craits worker {settings.name}: playing the games queued in {redact(url)}, {settings.concurrency} at "
          f"once; stop with Ctrl-C or SIGTERM", file=sys.stderr, flush=True)

    def stopped() -> None:
        print(f"craits worker {settings.name}: stopped; {service.game_worker.played} game(s) recorded",
              file=sys.stderr, flush=True)

    async def serve() -> None:
        restore = install_stop_handlers(service.stop)
        try:
            async with watching(web, title=f"Craits worker {settings.name}"):  # (nothing without --web)
                clean = await service.run_until_stopped()
        finally:
            restore()
        if not clean:  # the queue library's shutdown is stuck (logged): its tasks cannot be awaited
            stopped()
            logging.shutdown()
            os._exit(0)

    grpc_io.run(serve())
    stopped()
    return 0


def _cache_size(text: str) -> int:
    from server.transport.sandbox import parse_size

    try:
        return parse_size(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def sandbox_line(name: str) -> str:
    """What a worker says of the sandbox before it takes a game: one that cannot sandbox bots
    here refuses every game whose bots are to be sandboxed, and the organizer hears why."""
    from server.transport import sandbox

    why = sandbox.problem()
    if why is None:
        return f"craits worker {name}: the bots it launches run sandboxed (bwrap works here)"
    log.warning("worker_cannot_sandbox", worker=name, reason=why)
    return (f"craits worker {name}: warning: cannot sandbox launched bots here: {why}; it will refuse every game "
            'whose bots are to be sandboxed (tournaments with sandbox = "none" and builtin bots it plays); '
            "`craits doctor` says how to fix it")


def _postgres_url(url: str) -> str:
    from server.storage.postgres import is_store_url, redact

    if not is_store_url(url):
        raise UserError(f"{redact(url)!r} is not a PostgreSQL URL (postgresql://user:password@host:port/database)")
    return url


def cmd_migrate(args: argparse.Namespace) -> int:
    from server.storage.postgres import migrate, redact
    from server.storage.store import StoreError

    _postgres_url(args.url)
    try:
        before, after = migrate(args.url)
    except StoreError as err:
        raise UserError(str(err)) from None
    if before == after:
        print(f"{redact(args.url)}: already at layout version {after}", file=sys.stderr)
    else:
        print(f"{redact(args.url)}: layout version {before or 'none'} -> {after}", file=sys.stderr)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from server.storage.postgres import redact, tournaments_in
    from server.storage.store import StoreError

    _postgres_url(args.url)
    try:
        held = tournaments_in(args.url)
    except StoreError as err:
        raise UserError(str(err)) from None
    for name, kind in held:
        print(f"{name}\t{kind}")
    if not held:  # (on standard error: the list itself stays empty for a script)
        print(f"{redact(args.url)}: no tournament or ladder yet", file=sys.stderr)
    return 0
