"""The ``--web HOST:PORT``, ``--reveal-after S`` and ``--trusted-proxy ADDRESS`` options of the commands that play (tournament,
ladder, serve, worker), turned into the web room's plain :class:`~server.web.app.WebOptions`.

The web room (aiohttp and all it serves) is imported only when one of these options is given: declaring
them is what every ``--help`` and every mistyped command of those groups does."""

from __future__ import annotations

import argparse
import errno
import socket
from typing import TYPE_CHECKING

from server.errors import UserError

if TYPE_CHECKING:
    from server.web.app import WebOptions


def add_web_options(parser: argparse.ArgumentParser) -> None:
    """``--web HOST:PORT`` and ``--reveal-after S``."""
    parser.add_argument(
        "--web", metavar="HOST:PORT", type=web_address,
        help="serve the live board and games to browsers here while it plays (e.g. 127.0.0.1:8080; "
        "0.0.0.0:8080 opens it to other machines; port 0: any free port); see docs/web.md",
    )
    parser.add_argument(
        "--reveal-after", type=_seconds, metavar="S",
        help="with --web: spectators may also watch a game with every hand shown, S seconds behind it "
        "(default: hands stay hidden until the game is over)",
    )
    add_trusted_proxy(parser)


def add_trusted_proxy(parser: argparse.ArgumentParser) -> None:
    """``--trusted-proxy ADDRESS`` (repeatable): the reverse proxies whose X-Forwarded-For counts."""
    parser.add_argument(
        "--trusted-proxy", action="append", type=proxy_address, metavar="ADDRESS", default=[],
        help="with a roster's pages behind a reverse proxy: its address or network (e.g. 127.0.0.1 or "
        "10.0.0.0/24; repeat for several). Only from it is X-Forwarded-For believed, to lock out an address "
        "that guesses tokens; from any other peer the header is ignored (default: none is trusted)",
    )


def proxy_address(text: str) -> str:
    """An IP address or network for argparse (a host name is refused: the peer is an address)."""
    from server.web.participants import proxy_network

    try:
        return str(proxy_network(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give an IP address or network, e.g. 127.0.0.1 or "
                                         "10.0.0.0/24") from None


def web_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` for argparse: a bad address, or a port already taken, is refused at once
    (before a tournament is created or a game played)."""
    from server.web.app import parse_address

    try:
        host, port = parse_address(text)
    except UserError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix(f"--web {text!r}: ")) from None
    if port:
        problem = _bind_problem(host, port)
        if problem:
            raise argparse.ArgumentTypeError(f"{text}: {problem}")
    return host, port


def _bind_problem(host: str, port: int) -> str:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as err:
        return f"unknown host ({err.strerror})"
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as err:
            if err.errno == errno.EADDRINUSE:
                return "the port is in use; choose another (port 0: any free port)"
            return f"cannot listen there ({err.strerror or err})"
    return ""


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError("must be 0 or more seconds")
    return value


def web_options(args: argparse.Namespace) -> WebOptions | None:
    """The options asked for on the command line (None: no --web)."""
    address = getattr(args, "web", None)
    reveal = getattr(args, "reveal_after", None)
    proxies = tuple(getattr(args, "trusted_proxy", None) or ())
    if address is None:
        if reveal is not None:
            raise UserError("--reveal-after goes with --web HOST:PORT")
        if proxies:
            raise UserError("--trusted-proxy goes with --web HOST:PORT")
        return None
    from server.web.app import WebOptions

    host, port = address
    return WebOptions(host=host, port=port, reveal_after=reveal, roster=getattr(args, "roster_dir", None),
                      trusted_proxies=proxies)
