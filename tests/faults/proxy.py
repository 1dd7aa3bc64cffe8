"""A fault-injecting TCP proxy for the reliability tests (loopback only).

Sits between the replica client and the private primary. Each accepted
connection gets a :class:`ConnectionPlan` from the ``plan`` callback, which
decides what goes wrong on the primary-to-client direction:

* ``cut_after``: forward exactly this many bytes, then abort both sides (the
  cut lands anywhere: inside the handshake, a packet header, an event body);
* ``stall_at`` / ``stall_for``: after this many bytes forward nothing for a
  while (longer than the heartbeat period, so the client must notice by itself);
* ``one_byte``: the first this many bytes go out one byte per write;
* ``split``: every chunk is cut into random pieces;
* ``delay``: sleep up to this long before every piece.

``cut_all()`` and ``pause()``/``resume()`` act on the live connections. The
client-to-primary direction (commands, semi-sync ACKs) is copied unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["ConnectionPlan", "FaultProxy", "ProxyStats"]

_CHUNK = 65536


@dataclass(frozen=True, slots=True)
class ConnectionPlan:
    """What the proxy does to one connection's primary-to-client bytes."""

    cut_after: int | None = None
    stall_at: int | None = None
    stall_for: float = 0.0
    one_byte: int = 0
    split: bool = False
    delay: float = 0.0


@dataclass(slots=True)
class ProxyStats:
    """What the proxy did, for the test's assertions and report."""

    connections: int = 0
    cuts: int = 0
    stalls: int = 0
    one_byte_writes: int = 0
    delayed_pieces: int = 0
    bytes_down: int = 0
    bytes_up: int = 0


class _Link:
    __slots__ = ("client", "plan", "upstream")

    def __init__(
        self, client: asyncio.StreamWriter, upstream: asyncio.StreamWriter, plan: ConnectionPlan
    ) -> None:
        self.client = client
        self.upstream = upstream
        self.plan = plan

    def abort(self) -> None:
        for writer in (self.client, self.upstream):
            transport = writer.transport
            if not transport.is_closing():
                transport.abort()


class FaultProxy:
    """``async with FaultProxy(port, plan=...) as proxy``: listen on ``proxy.port``.

    Args:
        target_port: the primary's port on 127.0.0.1.
        plan: ``plan(connection_index) -> ConnectionPlan`` (default: no faults).
        seed: seed of the proxy's own randomness (split points, delays).
    """

    def __init__(
        self,
        target_port: int,
        *,
        plan: Callable[[int], ConnectionPlan] | None = None,
        seed: int = 0,
    ) -> None:
        self.target_port = target_port
        self.plan = plan or (lambda _index: ConnectionPlan())
        self.stats = ProxyStats()
        self.host = "127.0.0.1"
        self._rng = random.Random(seed)
        self._server: asyncio.Server | None = None
        self._links: set[_Link] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._flowing = asyncio.Event()
        self._flowing.set()

    @property
    def port(self) -> int:
        assert self._server is not None, "start() the proxy first"
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def start(self) -> FaultProxy:
        self._server = await asyncio.start_server(self._accept, self.host, 0)
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for link in list(self._links):
            link.abort()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, ConnectionError, OSError):
                await task

    async def __aenter__(self) -> FaultProxy:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def cut_all(self) -> int:
        """Abort every live connection; returns how many."""
        links = list(self._links)
        for link in links:
            link.abort()
        self.stats.cuts += len(links)
        return len(links)

    def pause(self) -> None:
        """Stop forwarding primary-to-client bytes on every connection."""
        self._flowing.clear()

    def resume(self) -> None:
        self._flowing.set()

    @property
    def live_connections(self) -> int:
        return len(self._links)

    # -- internals ------------------------------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        index = self.stats.connections
        self.stats.connections += 1
        plan = self.plan(index)
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            return
        link = _Link(writer, up_writer, plan)
        self._links.add(link)
        down = asyncio.create_task(self._down(link, up_reader))
        up = asyncio.create_task(self._up(link, reader))
        self._tasks.update((down, up))
        try:
            await asyncio.wait({down, up}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            link.abort()
            self._links.discard(link)
            for task in (down, up):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, ConnectionError, OSError):
                    await task
                self._tasks.discard(task)

    async def _up(self, link: _Link, reader: asyncio.StreamReader) -> None:
        while data := await reader.read(_CHUNK):
            self.stats.bytes_up += len(data)
            link.upstream.write(data)
            await link.upstream.drain()

    async def _down(self, link: _Link, reader: asyncio.StreamReader) -> None:
        plan = link.plan
        rng = self._rng
        sent = 0
        stalled = plan.stall_at is None
        while data := await reader.read(_CHUNK):
            view = memoryview(data)
            while view:
                if not stalled and plan.stall_at is not None and sent >= plan.stall_at:
                    stalled = True
                    self.stats.stalls += 1
                    await asyncio.sleep(plan.stall_for)
                await self._flowing.wait()
                n = len(view)
                if plan.cut_after is not None:
                    n = min(n, plan.cut_after - sent)
                if not stalled and plan.stall_at is not None:
                    n = min(n, plan.stall_at - sent)
                if sent < plan.one_byte:
                    n = min(n, 1)
                    self.stats.one_byte_writes += 1
                elif plan.split and n > 1:
                    n = rng.randint(1, n)
                if plan.delay:
                    self.stats.delayed_pieces += 1
                    await asyncio.sleep(rng.uniform(0, plan.delay))
                if n > 0:
                    link.client.write(view[:n])
                    await link.client.drain()
                    sent += n
                    self.stats.bytes_down += n
                    view = view[n:]
                if plan.cut_after is not None and sent >= plan.cut_after:
                    self.stats.cuts += 1
                    link.abort()
                    return
