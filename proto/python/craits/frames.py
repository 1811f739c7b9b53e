"""The Play stream as length-prefixed frames on the sandbox's Unix socket (docs/protocol.md,
"Frames on the sandbox's socket").

gRPC is the protocol's contract and stays served for every bot; a bot the referee launches in
its sandbox may instead speak the same messages (``BotMessage`` up, ``RefereeMessage`` down) as
frames on a second Unix socket named by :data:`ENV`: no HTTP/2, no gRPC threads, so each
decision costs the referee and the bot about a third of their gRPC figure (``bench/framing.py``).

A frame is one byte of kind, four bytes of length (big-endian) and that many bytes:
:data:`MESSAGE` (a serialised message) or :data:`END` (the end of the sender's side: from the
referee, its gRPC status name, a line feed, and the details; from a bot, empty: a clean leave).
A connection that ends without an END frame was lost, as a gRPC call that is cancelled.
Shared by the referee and the Python kit (both import this package)."""

from __future__ import annotations

import struct

ENV = "CRAITS_FRAMED_SOCKET"
"""The environment variable the referee sets for a sandboxed bot: the frames socket's path."""

HEADER = struct.Struct(">BI")
MESSAGE = 0
END = 1
KINDS = (MESSAGE, END)
MAX_FROM_REFEREE = 4 * 1024 * 1024
"""The most a bot reads in one frame (gRPC's default for a message received)."""


def frame(payload: bytes, kind: int = MESSAGE) -> bytes:
    return HEADER.pack(kind, len(payload)) + payload


def end_frame(status: str = "OK", details: str = "") -> bytes:
    """The END frame of the referee's side: the call's status and details, as gRPC gives them."""
    return frame(f"{status}\n{details}".encode(), END)


def parse_end(payload: bytes) -> tuple[str, str]:
    """(status name, details) of an END frame from the referee."""
    status, _, details = payload.decode("utf-8", "replace").partition("\n")
    return status or "OK", details
