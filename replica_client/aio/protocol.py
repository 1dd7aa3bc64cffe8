"""asyncio glue for one replication connection: bytes -> ReplicaSession -> item queue.

No parsing here. Received event packets are framed right away (bytes only)
and decoded in small batches when the consumer asks for them or is waiting:
the event objects live only briefly, which keeps the cyclic garbage
collector's work small. Backpressure: above ``high_events`` undelivered
events (framed or decoded) or ``high_bytes`` undelivered event bytes the
transport stops reading (so TCP flow control slows the primary) and resumes
below a quarter of each. A watchdog turns "no byte for ``stall_timeout``
seconds" into :class:`ReplicaTimeoutError` (not counted while reading is
paused).
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import Callable
from typing import Literal, cast

from ..errors import ConnectionLostError, ReplicaError, ReplicaTimeoutError
from ..session import ReplicaSession, StreamItem

__all__ = ["ReplicaProtocol"]

#: Events decoded per step, ahead of the consumer.
_BATCH = 32


class ReplicaProtocol(asyncio.Protocol):
    """Feeds received bytes to the session and queues the stream items."""

    def __init__(
        self,
        session: ReplicaSession,
        *,
        address: str,
        ssl_context: ssl.SSLContext | None = None,
        server_hostname: str | None = None,
        high_events: int = 1024,
        high_bytes: int = 64 << 20,
        stall_timeout: float | None = None,
        eager: bool = False,
    ) -> None:
        self._session = session
        # Decode everything as it arrives (ACK on receipt), not when the consumer asks.
        self._eager = eager
        self._address = address
        self._ssl_context = ssl_context
        self._server_hostname = server_hostname
        self._high_events = high_events
        self._low_events = high_events // 4
        self._high_bytes = high_bytes
        self._low_bytes = high_bytes // 4
        self._stall_timeout = stall_timeout
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._items: deque[StreamItem] = deque()
        self._bytes = 0
        # The consumer's future while it waits for an item (one per wait, not per item).
        self._waiter: asyncio.Future[None] | None = None
        self._error: BaseException | None = None
        self._ended = False
        self._paused = False
        self._session_failed = False  # the session raised: decode nothing more
        self._closing = False
        self._tls_task: asyncio.Task[None] | None = None
        self._watchdog: asyncio.TimerHandle | None = None
        self._last_rx = self._loop.time()
        self.registered: asyncio.Future[None] = self._loop.create_future()
        self.max_buffered = 0  # high-water mark of undelivered items seen (for tests)
        #: Called after bytes arrive while no consumer waits (the stream's early ACKs).
        self.on_arrival: Callable[[], None] | None = None

    # -- asyncio callbacks --------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (not an isinstance check: uvloop's transports do not derive from asyncio's)
        self._transport = cast(asyncio.Transport, transport)
        self._last_rx = self._loop.time()
        self._arm_watchdog()

    def data_received(self, data: bytes) -> None:
        self._last_rx = self._loop.time()
        session = self._session
        session.receive_data(data)
        if self._eager:
            self._pump(self._high_events)  # ACKs go out as events are decoded
        elif self._waiter is not None or not session.streaming or not self.registered.done():
            self._pump()  # someone waits (or the handshake goes on): decode now
        else:
            session.frame_ahead(self._room())  # decoded when the consumer asks
            self._check_pause()
            if self.on_arrival is not None:
                self.on_arrival()

    def eof_received(self) -> bool | None:
        return None  # close the transport; connection_lost reports it

    def connection_lost(self, exc: Exception | None) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
        if self._closing:
            err: ReplicaError = ConnectionLostError("the replication connection was closed")
        else:
            err = ConnectionLostError(f"connection to the primary at {self._address} lost")
        err.__cause__ = exc
        self._fail(err)

    # -- used by BinlogStream -----------------------------------------------------------

    @property
    def buffered_items(self) -> int:
        """Undelivered events: decoded, or framed and not decoded yet."""
        return len(self._items) + self._session.buffered_events

    @property
    def paused(self) -> bool:
        return self._paused

    def flush(self) -> None:
        """Write whatever the session has to send (replies, ACKs)."""
        out = self._session.data_to_send()
        if out and self._transport is not None and not self._transport.is_closing():
            self._transport.write(out)

    async def next_item(self) -> StreamItem | Literal["end"]:
        """The next item; "end" after a non-blocking dump's EOF.

        Raises:
            ReplicaError: the connection failed (only once the queue is drained:
                items received before a failure are delivered first).
        """
        while True:
            item = self.take()
            if item is not None:
                return item
            if self._ended:
                return "end"
            if self._error is not None:
                raise self._error
            waiter = self._waiter = self._loop.create_future()
            try:
                await waiter
            finally:
                self._waiter = None

    def peek(self) -> StreamItem | None:
        """The next item without taking it (decoding received events as needed), or None."""
        items = self._items
        if not items and not self._ended and not self._session_failed:
            self._pump()
        return items[0] if items else None

    def take(self) -> StreamItem | None:
        """The next item without waiting (decoding received events as needed), or None."""
        items = self._items
        if not items:
            if self._ended or self._session_failed:
                return None
            self._pump()
            if not items:
                return None
        item = items.popleft()
        self._bytes -= item.size
        if self._paused and not items:
            # (checked once the decoded items are taken, not at every take: reading
            # resumes at most a batch of items later)
            session = self._session
            if (
                session.buffered_events <= self._low_events
                and self._bytes + session.buffered_bytes <= self._low_bytes
            ):
                self._paused = False
                self._last_rx = self._loop.time()
                if self._transport is not None and not self._transport.is_closing():
                    self._transport.resume_reading()
                    if self._eager:
                        self._pump(self._high_events)  # ACK what was held back
                    else:
                        session.frame_ahead(self._room())  # bytes may already be buffered
                        self._check_pause()
        return item

    def close(self) -> None:
        """Close the transport (no further items are read)."""
        self._closing = True
        if self._watchdog is not None:
            self._watchdog.cancel()
        if self._tls_task is not None:
            self._tls_task.cancel()
        if self._transport is not None:
            self._transport.close()

    def abort(self, exc: ReplicaError) -> None:
        """Fail with ``exc`` and drop the connection."""
        self._fail(exc)
        self._closing = True
        if self._transport is not None:
            self._transport.abort()

    # -- internals ----------------------------------------------------------------------

    def _room(self) -> int:
        """How many more events may be framed ahead before reading pauses."""
        return self._high_events - len(self._items) - self._session.buffered_events

    def _check_pause(self) -> None:
        session = self._session
        held = len(self._items) + session.buffered_events
        self.max_buffered = max(self.max_buffered, held)
        if held >= self._high_events or self._bytes + session.buffered_bytes >= self._high_bytes:
            self._pause()

    def _pump(self, limit: int = _BATCH) -> None:
        """Decode up to ``limit`` events (and handle what is not an event)."""
        session = self._session
        items = self._items
        try:
            session.frame_ahead(self._room())
            if self._eager:
                self.flush()  # ACKs of events received and checked go before decoding
            # the events framed, then packet by packet within the limit and
            # without holding more than high_events undelivered events
            limit = min(limit, session.buffered_events + max(self._room(), 0))
            self._bytes += session.next_items(items, limit)
            self._ended = session.ended
        except ReplicaError as exc:
            self._session_failed = True
            self._bytes = sum(item.size for item in items)  # what next_items added
            self.flush()
            self.abort(exc)
            return
        self.flush()
        self._check_pause()
        if session.tls_requested and self._tls_task is None:
            self._tls_task = self._loop.create_task(self._upgrade_tls())
        if session.streaming and not self.registered.done():
            self.registered.set_result(None)
        if self._ended and not self.registered.done():
            self.registered.set_result(None)
        self._wake()

    def _wake(self) -> None:
        # Only when there is something to see: a large event arrives in many
        # reads, and waking the consumer for each would cost a task switch per read.
        waiter = self._waiter
        if (
            waiter is not None
            and not waiter.done()
            and (self._items or self._ended or self._error is not None)
        ):
            waiter.set_result(None)

    def _pause(self) -> None:
        if not self._paused:
            self._paused = True
            if self._transport is not None:
                self._transport.pause_reading()

    async def _upgrade_tls(self) -> None:
        transport = self._transport
        assert transport is not None and self._ssl_context is not None
        try:
            new = await self._loop.start_tls(
                transport, self, self._ssl_context, server_hostname=self._server_hostname
            )
        except (OSError, ssl.SSLError, ConnectionError) as exc:
            err = ConnectionLostError(f"TLS handshake with {self._address} failed: {exc}")
            err.__cause__ = exc
            self.abort(err)
            return
        if new is None:
            self.abort(ConnectionLostError("the connection closed during the TLS handshake"))
            return
        self._transport = new
        self._session.tls_established()
        self.flush()
        self._pump()

    def _fail(self, exc: BaseException) -> None:
        if self._error is None:
            self._error = exc
        if not self.registered.done():
            self.registered.set_exception(exc)
            self.registered.exception()  # mark retrieved: the stream re-raises it itself
        self._wake()

    def _arm_watchdog(self) -> None:
        if self._stall_timeout:
            self._watchdog = self._loop.call_later(self._stall_timeout / 4, self._check_stall)

    def _check_stall(self) -> None:
        if self._closing or self._error is not None:
            return
        idle = self._loop.time() - self._last_rx
        if not self._paused and self._stall_timeout and idle > self._stall_timeout:
            self.abort(
                ReplicaTimeoutError(
                    f"no data from the primary at {self._address} for {idle:.1f} s "
                    f"(heartbeats expected every {self._stall_timeout / 2:.1f} s)"
                )
            )
            return
        self._arm_watchdog()
