"""One write per message for all the readers of a stream: the web server's fan-out.

A :class:`Fanout` holds the connections (transports) reading one stream. :meth:`Fanout.send`
frames a message once and hands the same bytes to every transport: no task per reader, no
copy per reader, no wait. A reader's queue is its transport's write buffer; one that holds
more than ``max_buffer`` bytes (the reader does not read) is disconnected at once, so a
spectator that never reads costs a bounded amount of memory and never slows the game.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

MAX_BUFFER = 1 << 20
"""Bytes a reader may have waiting in its transport before it is dropped."""


class Reader:
    """One connection following a stream; ``done`` resolves when it leaves or is dropped."""

    __slots__ = ("chunked", "done", "transport")

    def __init__(self, transport: asyncio.Transport, chunked: bool) -> None:
        self.transport = transport
        self.chunked = chunked
        self.done: asyncio.Future[str] = asyncio.get_running_loop().create_future()


async def open_stream(request: web.Request, headers: dict[str, str]) -> tuple[web.StreamResponse, Reader | None]:
    """Send the headers of an event stream; the reader then gets bytes through a :class:`Fanout`."""
    response = web.StreamResponse(headers=headers)
    chunked = request.version >= (1, 1)
    if chunked:
        response.enable_chunked_encoding()
    await response.prepare(request)
    transport = request.transport
    if transport is None or transport.is_closing():
        return response, None
    return response, Reader(transport, chunked)


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

    def add(self, reader: Reader, first: bytes = b"") -> None:
        """Start ``reader`` off with ``first`` (what it has to catch up on), then every message."""
        if first and not self.write(reader, first, _frame(first)):
            return
        self.readers.add(reader)

    def send(self, data: bytes) -> None:
        """One message to every reader, framed once."""
        if not data or not self.readers:
            return
        framed = _frame(data)
        for reader in list(self.readers):
            self.write(reader, data, framed)

    def write(self, reader: Reader, data: bytes, framed: bytes) -> bool:
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
        transport.write(framed if reader.chunked else data)
        return True

    def remove(self, reader: Reader, why: str) -> None:
        self.readers.discard(reader)
        if not reader.done.done():
            reader.done.set_result(why)

    def close(self, last: bytes = b"") -> None:
        """Send ``last`` and let every reader go (its response then ends)."""
        self.send(last)
        for reader in list(self.readers):
            self.remove(reader, "end")
