"""One write per tick for all the readers of a stream: the web server's fan-out.

A :class:`Fanout` holds the connections (transports) reading one stream. :meth:`Fanout.send`
frames what is new once and hands the same bytes to every transport: no task per reader, no
copy per reader, no wait. A reader's headers go out with its first bytes, and its last bytes
with the end of the response, each in one write (:func:`open_stream`, :func:`finish`): on
loopback or a LAN, what a spectator costs is mostly the number of writes. A reader's queue is its transport's write buffer; one that holds
more than ``max_buffer`` bytes (the reader does not read) is disconnected at once, so a
spectator that never reads costs a bounded amount of memory and never slows the game.
"""

from __future__ import annotations

import asyncio
import contextlib
import zlib
from typing import Any

from aiohttp import web

MAX_BUFFER = 1 << 20
"""Bytes a reader may have waiting in its transport before it is dropped."""


class Reader:
    """One connection following a stream; ``done`` resolves when it leaves or is dropped."""

    __slots__ = ("adler", "chunked", "done", "last", "transport")

    def __init__(self, transport: asyncio.Transport, chunked: bool) -> None:
        self.transport = transport
        self.chunked = chunked
        self.done: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.last = b""
        """What ends the response when ``done`` is "end" (written by :func:`finish`)."""
        self.adler = 1
        """The checksum of what this reader got so far, uncompressed (a deflated stream's trailer)."""


class _EventStream(web.StreamResponse):
    """A response whose headers wait for its first bytes (one write, not two)."""

    _send_headers_immediately = False


async def open_stream(request: web.Request, headers: dict[str, str]) -> tuple[web.StreamResponse, Reader | None]:
    """Start an event stream (its headers leave with the first bytes written through the
    response); the reader then gets bytes through a :class:`Fanout`."""
    response = _EventStream(headers=headers)
    chunked = request.version >= (1, 1)
    if chunked:
        response.enable_chunked_encoding()
    await response.prepare(request)
    transport = request.transport
    if transport is None or transport.is_closing():
        return response, None
    return response, Reader(transport, chunked)


async def finish(response: web.StreamResponse, reader: Reader) -> None:
    """End the response once the reader is done: with its last bytes in the same write when
    the stream ended; nothing more when it left or was dropped."""
    why = await reader.done
    if why == "end":
        with contextlib.suppress(ConnectionError):
            await response.write_eof(reader.last)


def accepts_deflate(request: web.Request) -> bool:
    """The client takes ``Content-Encoding: deflate`` (every browser's EventSource does)."""
    for part in request.headers.get("Accept-Encoding", "").lower().split(","):
        name, _, params = part.strip().partition(";")
        if name == "deflate":
            return params.replace(" ", "") not in ("q=0", "q=0.0", "q=0.00", "q=0.000")
    return False


class SharedDeflate:
    """Bytes compressed once for all the readers of a stream, each reader's response a complete
    zlib stream (``Content-Encoding: deflate``) however late it joined: every piece ends with a
    full flush, which makes it independent of what came before; a reader's own part is two
    bytes of header, and at the end the checksum of what it got (readers who joined together
    share it). Records compress about six times: six times fewer bytes for the kernel to copy
    to each spectator, on loopback as on a classroom's network."""

    HEADER = b"\x78\x01"
    """A zlib header (deflate, 32 KiB window, fastest level)."""
    FINAL = b"\x03\x00"
    """An empty last block: the deflate data ends here."""

    def __init__(self) -> None:
        self._z = zlib.compressobj(1, zlib.DEFLATED, -15)

    def pack(self, data: bytes) -> bytes:
        """``data`` as deflate blocks that any reader's stream may take next."""
        return self._z.compress(data) + self._z.flush(zlib.Z_FULL_FLUSH)

    @staticmethod
    def follow(readers: set[Reader], data: bytes) -> None:
        """The readers got ``data``: their checksums move on (once per distinct checksum)."""
        moved: dict[int, int] = {}
        for reader in readers:
            adler = moved.get(reader.adler)
            if adler is None:
                adler = moved[reader.adler] = zlib.adler32(data, reader.adler)
            reader.adler = adler

    @classmethod
    def ending(cls, reader: Reader) -> bytes:
        return cls.FINAL + reader.adler.to_bytes(4, "big")


def _frame(data: bytes) -> bytes:
    """A chunk of chunked transfer encoding (what aiohttp would write for response.write)."""
    return b"%x\r\n%b\r\n" % (len(data), data)


class Fanout:
    """The readers of one stream (see the module docstring)."""

    def __init__(self, max_buffer: int = MAX_BUFFER, on_drop: Any = None) -> None:
        self.readers: set[Reader] = set()
        self.max_buffer = max_buffer
        self.dropped = 0
        self._on_drop = on_drop

    def __len__(self) -> int:
        return len(self.readers)

    def add(self, reader: Reader) -> None:
        """``reader`` gets every message from now on."""
        if not reader.transport.is_closing():
            self.readers.add(reader)
        else:
            self.remove(reader, "gone")

    def send(self, data: bytes) -> None:
        """One message to every reader, framed once."""
        if not data or not self.readers:
            return
        framed = _frame(data)
        for reader in list(self.readers):
            self.write(reader, data, framed)

    def write(self, reader: Reader, data: bytes, framed: bytes) -> bool:
        if not self._keeps(reader):
            return False
        reader.transport.write(framed if reader.chunked else data)
        return True

    def _keeps(self, reader: Reader) -> bool:
        """False (and the reader removed) when it has gone, or left too much unread (dropped)."""
        transport = reader.transport
        if transport.is_closing():
            self.remove(reader, "gone")
            return False
        if transport.get_write_buffer_size() > self.max_buffer:
            transport.abort()
            self.dropped += 1
            if self._on_drop is not None:
                self._on_drop()
            self.remove(reader, "dropped: not reading")
            return False
        return True

    def remove(self, reader: Reader, why: str) -> None:
        self.readers.discard(reader)
        if not reader.done.done():
            reader.done.set_result(why)

    def close(self, last: bytes = b"", ending: Any = None) -> None:
        """Let every reader go: each response ends with ``last`` (:func:`finish`), and
        ``ending(reader)`` when given."""
        for reader in list(self.readers):
            if self._keeps(reader):
                reader.last = last + ending(reader) if ending is not None else last
                self.remove(reader, "end")
