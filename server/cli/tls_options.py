"""``--tls``, ``--tls-cert`` and ``--tls-key``: the referee's bot port over TLS, for every
command that listens for bots (``serve``, ``tournament run/resume``, ``ladder run``; ``worker``
refuses them, saying why)."""

from __future__ import annotations

import argparse

from server.transport.tls import MODES, SELF_SIGNED, TLSRequest, request


def add_tls_options(parser: argparse.ArgumentParser, *, folder: str = "the output folder") -> None:
    group = parser.add_argument_group("TLS", "encrypt the bots' connections: their tokens and hands (docs/tls.md)")
    group.add_argument("--tls", choices=MODES, metavar="|".join(MODES),
                       help=f"{SELF_SIGNED}: make a certificate for the names and addresses listened on (kept in "
                       f"{folder}'s tls/ and reused; bots get CRAITS_TLS_CA=<its cert>); off: plain text")
    group.add_argument("--tls-cert", metavar="FILE", help="serve the bots' port with this PEM certificate (chain)")
    group.add_argument("--tls-key", metavar="FILE", help="... and this PEM private key")


def tls_request(args: argparse.Namespace) -> TLSRequest | None:
    """What the command line asks for, or None when it says nothing (a tournament file's stands)."""
    return request(getattr(args, "tls", None), getattr(args, "tls_cert", None), getattr(args, "tls_key", None),
                   names=("--tls", "--tls-cert", "--tls-key"))
