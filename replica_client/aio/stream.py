"""``connect()`` and ``BinlogStream``: the public asyncio API of the network replica.

Driver layer: opens the connection, runs :class:`~replica_client.session.ReplicaSession`
through :class:`ReplicaProtocol`, hands events to the consumer, sends semi-sync
ACKs, tracks the resume point, and reconnects.

Delivery and resume policy (exactly once per event, per transaction):

* ``stream.position`` / ``stream.gtid_state`` advance only when the consumer
  has been handed the event that ends a transaction (XID, COMMIT, XA PREPARE,
  a standalone DDL) or an event outside any transaction (ROTATE, ...).
* When the connection is lost, stalls (no byte for twice the heartbeat
  period) or the primary ends a blocking dump (it is shutting down), the
  events already received are still delivered; then the stream reconnects
  with backoff and restarts the dump from ``stream.position`` (the
  last transaction boundary handed out). Events of a transaction that was
  only partly handed out are re-sent by the primary; the stream drops exactly
  as many as were already delivered (and checks the GTID matches), so the
  consumer sees every event once and every transaction once, in order.
* After a reconnect the primary's artificial events (the fake ROTATE that
  names the file, a re-sent FORMAT_DESCRIPTION with ``log_pos`` 0) are
  delivered again: they carry no data and tell where the new dump starts.
* Registration errors (wrong password, purged position, ...) are never
  retried: they raise their typed :class:`~replica_client.errors.ServerError`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections import deque
from collections.abc import Generator
from types import TracebackType
from typing import Any

from ..binlog.events import (
    Event,
    GtidEvent,
    HeartbeatEvent,
    HeartbeatV2Event,
    RowsEvent,
    TableMapEvent,
)
from ..changes import Change, ChangeBuilder
from ..errors import ConnectionLostError, ReplicaTimeoutError, StateError
from ..position import FilePos, Gtid
from ..session import Checkpoint, ReplicaSession, StreamItem
from ..wire.registration import Flavor
from .config import ReplicaConfig
from .protocol import ReplicaProtocol

__all__ = ["BinlogStream", "ChangeStream", "StreamMetrics", "connect"]

_log = logging.getLogger("replica_client.aio")
# A tuple, not ``A | B``: the union object would be built again on every event.
_HEARTBEAT_CLASSES = (HeartbeatEvent, HeartbeatV2Event)
_now = time.time


@dataclasses.dataclass(slots=True)
class StreamMetrics:
    """Counters of one :class:`BinlogStream` (``stream.metrics``), since it was opened.

    Attributes:
        events: events received from the primary (filtered ones included,
            artificial events and heartbeats not).
        rows: row images in the rows events handed to the consumer.
        bytes: bytes of the event packets received.
        transactions: transactions (GTID groups) completed.
        reconnects: reconnections after a lost or stalled connection.
        heartbeats: heartbeats received (the primary had nothing to send).
        last_event_timestamp: the primary's clock (Unix seconds) in the last event.
        seconds_behind_primary: how far the last event lags this machine's clock;
            0 once a heartbeat says the stream is caught up; None before any event.
    """

    events: int = 0
    rows: int = 0
    bytes: int = 0
    transactions: int = 0
    reconnects: int = 0
    heartbeats: int = 0
    last_event_timestamp: int | None = None
    seconds_behind_primary: float | None = None

    def as_dict(self) -> dict[str, int | float | None]:
        """The counters as a plain dict (for logs and metric exporters)."""
        return dataclasses.asdict(self)


class BinlogStream:
    """The binlog of a primary as an async iterator of typed events.

    Use ``async with connect(...) as stream: async for event in stream: ...``.
    ``aclose()`` (or leaving the ``async with``) closes the connection.
    """

    def __init__(self, config: ReplicaConfig) -> None:
        self._config = config
        self._protocol: ReplicaProtocol | None = None
        self._session: ReplicaSession | None = None
        # Where the stream resumes: the last checkpoint passed, else the start.
        self._cp: Checkpoint | None = None
        start = config.start
        self._start_pos: FilePos | None = start if isinstance(start, FilePos) else None
        self._start_gtid: Gtid = start if isinstance(start, Gtid) else Gtid("")
        self._since_checkpoint = 0
        # The GTID event of the transaction being delivered (its triple is only
        # needed to check the re-sent transaction after a reconnect).
        self._group_event: GtidEvent | None = None
        self._resolved_start: FilePos | Gtid | Any = None
        self._unacked: list[StreamItem] = []
        self._names: dict[tuple[str, str, int], tuple[str, ...] | None] = {}
        self._closed = False
        self._ended = False
        # No schema provider: buffered items can be handed out without awaiting.
        self._plain = config.schema_provider is None
        self.reconnects = 0
        #: Counters: events, rows, bytes, transactions, reconnects, seconds behind.
        self.metrics = StreamMetrics()

    def __repr__(self) -> str:
        return f"<BinlogStream {self._config.address} position={self._position}>"

    # -- public API -------------------------------------------------------------------------

    @property
    def config(self) -> ReplicaConfig:
        return self._config

    @property
    def position(self) -> FilePos | None:
        """Where the next event starts, after the last transaction fully delivered."""
        return self._position

    @property
    def gtid_state(self) -> Gtid:
        """MariaDB GTID state after the last transaction fully delivered (e.g. ``0-1-123``)."""
        return self._gtid_state

    @property
    def flavor(self) -> Flavor | None:
        return self._session.flavor if self._session is not None else None

    @property
    def semi_sync(self) -> bool:
        """True when semi-sync was negotiated with the primary."""
        return self._session is not None and self._session.semi_sync

    @property
    def session(self) -> ReplicaSession | None:
        """The sans-I/O session of the current connection (for diagnostics)."""
        return self._session

    @property
    def protocol(self) -> ReplicaProtocol | None:
        return self._protocol

    async def open(self) -> BinlogStream:
        """Connect, log in and register; called by :func:`connect`."""
        if self._protocol is None:
            await self._open(resume=False)
        return self

    async def __aenter__(self) -> BinlogStream:
        return await self.open()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __aiter__(self) -> BinlogStream:
        return self

    async def __anext__(self) -> Event:
        protocol = self._protocol
        if protocol is not None and self._plain and not self._closed and not self._ended:
            # Fast path: items already buffered are handed out without awaiting.
            while (item := protocol.take()) is not None:
                self._pass(item)
                event = item.event
                if event is not None and item.deliver and not item.skipped:
                    return event
        while True:
            item = await self._next_passed()
            if item.for_consumer:
                assert item.event is not None
                return item.event

    def changes(self) -> ChangeStream:
        """Row changes instead of events: ``async for change in stream.changes()``."""
        return ChangeStream(self)

    async def ack(self) -> None:
        """Manual ACK mode: acknowledge every flagged event handed out so far.

        Raises:
            StateError: the stream is not in manual ACK mode.
        """
        if self._config.ack_mode != "manual":
            raise StateError(
                "ack() is only for ack_mode='manual'; 'auto' and 'receipt' ACK by themselves"
            )
        self._send_acks()

    async def aclose(self) -> None:
        """Close the connection; further iteration ends."""
        self._closed = True
        if self._protocol is not None:
            self._protocol.close()
            await asyncio.sleep(0)

    # -- delivery ---------------------------------------------------------------------------

    async def _next_passed(self) -> StreamItem:
        """The next item the consumer passes (events for it, or filtered ones)."""
        if self._closed:
            raise StopAsyncIteration
        while True:
            if self._ended:
                raise StopAsyncIteration
            protocol = self._protocol
            assert protocol is not None, "call open() (or use connect()) first"
            try:
                item = await protocol.next_item()
                if item == "end" and self._config.blocking:
                    # A blocking dump never ends by itself: the primary is shutting down.
                    raise ConnectionLostError(
                        f"the primary at {self._config.address} ended the binlog dump "
                        "(shutting down?)"
                    )
            except (ConnectionLostError, ReplicaTimeoutError) as exc:
                if self._closed:
                    raise StopAsyncIteration from None
                if not self._config.reconnect.enabled:
                    raise
                await self._reconnect(exc)
                continue
            if item == "end":
                self._ended = True
                raise StopAsyncIteration
            assert isinstance(item, StreamItem)
            if item.event is not None and not item.skipped:
                item = await self._with_names(item)
            self._pass(item)
            if item.event is not None and not item.skipped:
                return item

    def _pass(self, item: StreamItem) -> None:
        """Bookkeeping for an item the consumer is handed (or that is filtered out)."""
        event = item.event
        cp = item.checkpoint
        # metrics (StreamMetrics._observe, inlined: this runs for every event)
        m = self.metrics
        m.bytes += item.size
        if item.countable:  # never a heartbeat
            m.events += 1
            if event is not None:
                timestamp = event.header[0]
                if timestamp:
                    m.last_event_timestamp = timestamp
                    lag = _now() - timestamp
                    m.seconds_behind_primary = lag if lag > 0.0 else 0.0
        elif isinstance(event, _HEARTBEAT_CLASSES):
            m.heartbeats += 1
            m.seconds_behind_primary = 0.0
        if isinstance(event, RowsEvent) and not item.skipped:
            m.rows += len(getattr(event, "rows", ()))
        if (
            cp is not None
            and self._group_event is not None
            and not isinstance(event, _HEARTBEAT_CLASSES)
        ):
            m.transactions += 1
        if cp is not None:
            if cp is not self._cp:
                self._apply(cp)
        elif item.countable and not item.skipped:  # skipped ones were counted before
            self._since_checkpoint += 1
        if type(event) is GtidEvent:  # after the checkpoint before it was applied
            self._group_event = event
        if item.needs_ack:
            mode = self._config.ack_mode
            if mode == "receipt":
                return  # the session ACKed it when it was decoded
            self._unacked.append(item)
            if mode == "auto" or item.skipped:
                self._send_acks()

    @property
    def _position(self) -> FilePos | None:
        cp = self._cp
        return cp.position if cp is not None else self._start_pos

    @property
    def _gtid_state(self) -> Gtid:
        cp = self._cp
        return cp.gtid_state if cp is not None else self._start_gtid

    def _apply(self, cp: Checkpoint) -> None:
        last = self._cp
        if (
            cp is last
            or (last is not None and cp.same_as(last))
            or (
                last is None
                and cp.position == self._start_pos
                and cp.gtid_state == self._start_gtid
            )
        ):
            # No progress (the artificial ROTATE/FDE of a resumed dump, a heartbeat):
            # keep counting, or a second cut while the resumed dump is still
            # skipping would resume with too small a skip and repeat events.
            return
        self._cp = cp
        self._since_checkpoint = 0
        self._group_event = None

    def _send_acks(self) -> None:
        if not self._unacked or self._session is None or self._protocol is None:
            return
        for item in self._unacked:
            self._session.ack(item)
        self._unacked.clear()
        self._protocol.flush()

    async def _with_names(self, item: StreamItem) -> StreamItem:
        """Fill in column names from the schema provider when the binlog lacks them."""
        provider = self._config.schema_provider
        event = item.event
        if provider is None:
            return item
        table = event.table if isinstance(event, RowsEvent) else event
        if not isinstance(table, TableMapEvent) or table.has_column_names:
            return item
        key = (table.schema, table.table, len(table.columns))
        if key not in self._names:
            names = await provider(table.schema, table.table)
            self._names[key] = tuple(names) if names and len(names) == key[2] else None
        names = self._names[key]
        if names is None:
            return item
        named = dataclasses.replace(
            table,
            columns=tuple(
                dataclasses.replace(c, name=n) for c, n in zip(table.columns, names, strict=True)
            ),
        )
        new_event = (
            dataclasses.replace(event, table=named) if isinstance(event, RowsEvent) else named
        )
        return dataclasses.replace(item, event=new_event)

    # -- connection ---------------------------------------------------------------------------

    async def _open(self, *, resume: bool) -> None:
        cfg = self._config
        loop = asyncio.get_running_loop()
        start: Any
        skip = 0
        if resume and self._position is not None:
            start = self._position
            skip = self._since_checkpoint
        elif resume and self._resolved_start is not None:
            start = self._resolved_start
            skip = self._since_checkpoint
        else:
            start = None if cfg.start == "earliest" else cfg.start
        settings = cfg.registration_settings(start)
        session = ReplicaSession(
            settings,
            decoder_options=cfg.decoder,
            event_types=cfg.event_types,
            gtid_state=self._gtid_state,
            resume_skip=skip,
            resume_gtid=(
                self._group_event.triple if skip and self._group_event is not None else None
            ),
            ack_on_receipt=cfg.ack_mode == "receipt",
        )
        ctx = cfg.ssl_context()
        protocol = ReplicaProtocol(
            session,
            address=cfg.address,
            ssl_context=ctx,
            server_hostname=cfg.host if ctx is not None and ctx.check_hostname else None,
            high_events=cfg.max_buffered_events,
            high_bytes=cfg.max_buffered_bytes,
            stall_timeout=2 * cfg.heartbeat_period if cfg.heartbeat_period > 0 else None,
            eager=cfg.ack_mode == "receipt",
        )
        try:
            async with asyncio.timeout(cfg.connect_timeout):
                if cfg.unix_socket:
                    await loop.create_unix_connection(lambda: protocol, cfg.unix_socket)
                else:
                    await loop.create_connection(lambda: protocol, cfg.host, cfg.port)
                await protocol.registered
        except TimeoutError as exc:
            protocol.close()
            raise ReplicaTimeoutError(
                f"connecting to the primary at {cfg.address} took longer than "
                f"{cfg.connect_timeout} s"
            ) from exc
        except OSError as exc:
            protocol.close()
            raise ConnectionLostError(
                f"cannot connect to the primary at {cfg.address}: {exc}"
            ) from exc
        except BaseException:
            protocol.close()
            raise
        self._protocol = protocol
        self._session = session
        if self._resolved_start is None:
            self._resolved_start = session.machine.start
        if (
            not resume
            and self._cp is None
            and self._start_gtid == Gtid("")
            and isinstance(session.machine.start, Gtid)
        ):
            self._start_gtid = session.machine.start
        _log.debug("streaming from %s (%s)", cfg.address, session.machine.start)

    async def _reconnect(self, cause: BaseException) -> None:
        policy = self._config.reconnect
        _log.info("connection to %s lost (%s); reconnecting", self._config.address, cause)
        if self._protocol is not None:
            self._protocol.close()
        self._unacked.clear()  # ACKs cannot go to a closed connection
        attempt = 0
        cfg_addr = self._config.address
        while True:
            await asyncio.sleep(policy.delay(attempt))
            if self._closed:
                raise StopAsyncIteration
            try:
                await self._open(resume=True)
            except (ConnectionLostError, ReplicaTimeoutError) as exc:
                attempt += 1
                _log.info("reconnect attempt %d to %s failed: %s", attempt, cfg_addr, exc)
                if policy.max_attempts is not None and attempt >= policy.max_attempts:
                    raise ConnectionLostError(
                        f"gave up reconnecting to {self._config.address} after {attempt} "
                        f"attempts; resume from position {self._position} / GTID "
                        f"{self._gtid_state or '-'}"
                    ) from cause
                continue
            self.reconnects += 1
            self.metrics.reconnects = self.reconnects
            _log.info(
                "reconnected to %s at %s (skipping %d events already delivered)",
                self._config.address,
                self._position,
                self._since_checkpoint,
            )
            return


class ChangeStream:
    """Row changes of a :class:`BinlogStream` (``stream.changes()``)."""

    def __init__(self, stream: BinlogStream) -> None:
        self._stream = stream
        self._builder = ChangeBuilder()
        self._pending: deque[Change] = deque()

    def __aiter__(self) -> ChangeStream:
        return self

    async def __anext__(self) -> Change:
        while not self._pending:
            item = await self._stream._next_passed()
            assert item.event is not None
            # The first (artificial) ROTATE of a GTID start precedes any file name.
            where = FilePos(item.file, item.start) if item.file else None
            self._pending.extend(self._builder.feed(item.event, where))
        return self._pending.popleft()

    async def aclose(self) -> None:
        await self._stream.aclose()


class _Connector:
    """What :func:`connect` returns: ``await`` it or use it with ``async with``."""

    def __init__(self, config: ReplicaConfig) -> None:
        self._stream = BinlogStream(config)

    def __await__(self) -> Generator[Any, None, BinlogStream]:
        return self._stream.open().__await__()

    async def __aenter__(self) -> BinlogStream:
        return await self._stream.open()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._stream.aclose()


def connect(config: ReplicaConfig | None = None, /, **options: Any) -> _Connector:
    """Connect to a primary as a replica and stream its binlog.

    ``connect(ReplicaConfig(...))`` or ``connect(host=..., user=..., ...)`` with
    the fields of :class:`ReplicaConfig` (plus the shortcuts ``tables``,
    ``verify_checksum``, ``max_event_size``, and ``tls=True``/an SSLContext).

    Returns an object to use with ``async with`` (closes the stream on exit) or
    to ``await`` (then call ``aclose()`` yourself).

    Raises (when opened):
        AuthenticationError: wrong user or password.
        BinlogPositionError: the start position is not available on the primary.
        ConfigError: invalid options, or server_id equal to the primary's.
        ConnectionLostError / ReplicaTimeoutError: the primary is unreachable.
    """
    if config is None:
        config = ReplicaConfig.from_kwargs(**options)
    elif options:
        config = dataclasses.replace(config, **options)
    return _Connector(config)
