"""``connect()`` and ``BinlogStream``: the public asyncio API of the network replica.

Driver layer: opens the connection, runs :class:`~replica_client.session.ReplicaSession`
through :class:`ReplicaProtocol`, hands events to the consumer, sends semi-sync
ACKs, tracks the resume point, and reconnects. Opening, reconnecting and failing
over are :class:`~replica_client.aio.connection.ConnectionKeeper`'s (a base of
``BinlogStream``), ``stream.changes()`` is
:class:`~replica_client.aio.changes.ChangeStream` and ``stream.metrics`` a
:class:`~replica_client.aio.metrics.StreamMetrics`; both are re-exported here.

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
import time
from collections.abc import Generator
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..binlog.constants import HEARTBEAT_TYPES
from ..binlog.events import Event, QueryEvent, RowsEvent, TableMapEvent
from ..checkpoint import Checkpoint
from ..delivery import AckPolicy
from ..errors import ConnectionLostError, ReplicaTimeoutError, SnapshotError, StateError
from ..position import FilePos, Gtid, MysqlGtidSet
from ..schema import SchemaHistory, apply_schema, needs_schema, retype_rows
from ..session import Delivery, ReplicaSession, StreamItem
from ..snapshot import ReadPoint, SnapshotProgress, SnapshotState
from ..wire.registration import Flavor
from .changes import ChangeStream
from .config import ReplicaConfig
from .connection import ConnectionKeeper
from .metrics import StreamMetrics
from .protocol import ReplicaProtocol

if TYPE_CHECKING:
    from .snapshot import SnapshotReader

__all__ = ["BinlogStream", "ChangeStream", "StreamMetrics", "connect"]

_now = time.time


class BinlogStream(ConnectionKeeper):
    """The binlog of a primary as an async iterator of typed events.

    Use ``async with connect(...) as stream: async for event in stream: ...``.
    ``aclose()`` (or leaving the ``async with``) closes the connection.
    """

    def __init__(self, config: ReplicaConfig) -> None:
        self._config = config
        #: The config of the primary streamed from now (one of ``config.hosts``).
        self._target = config.for_address(config.address) if config.hosts else config
        self._protocol: ReplicaProtocol | None = None
        self._session: ReplicaSession | None = None
        # Where the stream resumes: the last checkpoint passed, else the start.
        start = config.start
        history = config.schema_history
        #: What the consumer was handed: the resume point.
        self._delivery = Delivery(
            None if isinstance(start, str) else start,
            schema=history if isinstance(history, SchemaHistory) else None,
        )
        #: The primary's global binlog_format, when it was read (for error messages).
        self._binlog_format: str | None = None
        #: When semi-sync ACKs go out (ack_mode).
        self._acks = AckPolicy(config.ack_mode)
        self._consumer: ChangeStream | None = None  # the changes() consumer
        self._schemas: dict[tuple[str, str, tuple[tuple[int, int], ...]], TableMapEvent | None] = {}
        self._closed = False
        self._ended = False
        self._snapshot: SnapshotReader | None = None  # reading a snapshot's rows
        # No schema provider: buffered items can be handed out without awaiting.
        self._plain = config.schema_provider is None
        self.reconnects = 0
        #: Counters: events, rows, bytes, transactions, reconnects, seconds behind.
        self.metrics = StreamMetrics()

    def __repr__(self) -> str:
        return f"<BinlogStream {self._target.address} position={self.position}>"

    # -- public API -------------------------------------------------------------------------

    @property
    def config(self) -> ReplicaConfig:
        return self._config

    @property
    def primary(self) -> str:
        """The address of the primary the stream reads from now."""
        return self._target.address

    @property
    def position(self) -> FilePos | None:
        """Where the next event starts, after the last transaction fully delivered."""
        return self._delivery.position

    @property
    def gtid_state(self) -> Gtid | MysqlGtidSet:
        """The GTID state after the last transaction fully delivered.

        MariaDB: a ``Gtid`` (``0-1-123``). MySQL: the executed ``MysqlGtidSet`` when
        it is known (the stream started from a GTID set, "now" or "earliest"),
        else an empty ``Gtid`` (resume by ``position``). Pass it as ``start=``.
        """
        return self._delivery.gtid_state

    @property
    def binlog_format(self) -> str | None:
        """The primary's global ``binlog_format`` (ROW, MIXED, STATEMENT) as read when the
        stream opened (None when it read nothing from the primary: ``schema_history``
        "off" or given)."""
        return self._binlog_format

    @property
    def checkpoint(self) -> Checkpoint:
        """Where the stream stands after the last transaction fully delivered: position,
        GTID state and schema history in one value (``to_json()``); ``connect(start=cp)``
        continues from it, decoding names and types as they were there."""
        return Checkpoint(self.position, self.gtid_state, self.schema_history)

    @property
    def schema_history(self) -> SchemaHistory | None:
        """The table definitions after the last transaction fully delivered: store it
        with ``gtid_state`` / ``position`` (``to_json()``) and pass it back as
        ``schema_history=`` with that start, so a restarted stream reads names and
        types as they were there. None when the stream keeps none."""
        schema = self._delivery.schema
        return schema if isinstance(schema, SchemaHistory) else None

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

    @property
    def snapshot_state(self) -> SnapshotState | None:
        """Where the snapshot stands, to save as a checkpoint; None once it is over.

        While it is not None, save it (``.to_json()``) instead of ``gtid_state``
        and resume with ``connect(snapshot=SnapshotState.from_json(text))``; once
        it is None, the stream's ``gtid_state`` / ``position`` are the checkpoint.
        """
        reader = self._snapshot
        if reader is None or reader.state is None:
            return None
        # the rows of the last batch not handed out yet are not read, for a resume
        reader.settle(self._consumer.pending if self._consumer is not None else 0)
        start = reader.state.start
        return reader.state.resumed_at(
            ReadPoint(self.position or start.position, reader.stream_gtid(self))
        )

    @property
    def snapshot_progress(self) -> list[SnapshotProgress] | None:
        """How far the snapshot has read each of its tables (rows read, the server's
        estimate of the table's rows); None when no snapshot runs."""
        reader = self._snapshot
        return reader.progress() if reader is not None else None

    async def open(self) -> BinlogStream:
        """Connect, log in and register; called by :func:`connect`."""
        if self._protocol is None:
            if self._config.snapshot_mode is not None and self._snapshot is None:
                await self._begin_snapshot()
            await self._prepare_schema()
            await self._open(resume=False)
        return self

    async def _begin_snapshot(self) -> None:
        """Take the snapshot's first read point: the stream starts there."""
        from .control import InformationSchemaProvider
        from .snapshot import SnapshotReader

        config = self._config
        mode = config.snapshot_mode
        assert mode is not None
        saved = config.snapshot if isinstance(config.snapshot, SnapshotState) else None
        reader = SnapshotReader(config, mode, saved, metrics=self.metrics)
        try:
            point = await reader.begin()
        except BaseException:
            await reader.aclose()
            raise
        start: FilePos | Gtid | MysqlGtidSet = point.gtid if point.gtid else point.position
        changes: dict[str, Any] = {"start": start}
        if config.schema_provider is None and config.schema_history == "off":
            # Names and types as the snapshot reads them (the binlog may lack them).
            changes["schema_provider"] = InformationSchemaProvider(config)
        self._config = dataclasses.replace(config, **changes)
        self._target = dataclasses.replace(self._target, **changes)
        self._delivery = Delivery(start)
        self._plain = False
        self._snapshot = reader

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
        if self._snapshot is not None:
            raise StateError(
                "a snapshot's rows come as changes: iterate stream.changes(), not the stream"
            )
        while True:
            # items already received are handed out without awaiting
            item = self.take_buffered()
            if item is None:
                item = await self.next_passed()
            if item.deliver:
                acks = self._acks
                if acks.settling and acks.handed_over():
                    self._settle()
                return item.event  # type: ignore[return-value]  # (passed: not None)

    def changes(self) -> ChangeStream:
        """Row changes instead of events: ``async for change in stream.changes()``."""
        return ChangeStream(self)

    async def snapshot_table(self, name: str) -> None:
        """Read table ``name``'s rows now, while the stream runs (chunked mode).

        The next changes of ``stream.changes()`` are its rows (``op="read"``),
        merged with the stream by the same per-key rule as a chunked snapshot:
        nothing of that table is lost or repeated. For a table added to the
        ``tables`` filter after the stream's first start. A stream without a
        ``schema_provider`` gets the ``information_schema`` one from here on (the
        seam needs column names; MariaDB's UUID/INET/VECTOR columns then come
        typed, as the snapshot reads them).

        Raises:
            StateError: a snapshot is running already.
            SnapshotError: the table is not in the ``tables`` filter, does not
                exist, or has no primary key in Python's order.
        """
        from .control import InformationSchemaProvider
        from .snapshot import SnapshotReader

        if self._snapshot is not None:
            raise StateError("a snapshot is running already")
        config = self._config
        schema, _, table = name.partition(".")
        match = config.decoder.tables
        if not table or (match is not None and not match(schema, table)):
            raise SnapshotError(f"table {name} is not in the stream's tables filter")
        reader = SnapshotReader(config, "chunked", None, tables=(name,), metrics=self.metrics)
        try:
            await reader.begin()
        except BaseException:
            await reader.aclose()
            raise
        if config.schema_provider is None and self.schema_history is None:
            # Names and types as the snapshot reads them (the binlog may lack them).
            self._config = dataclasses.replace(
                config, schema_provider=InformationSchemaProvider(config)
            )
        self._plain = False
        self._snapshot = reader
        if self._consumer is not None:
            self._consumer.snapshot_began(reader)

    async def ack(self) -> None:
        """Manual ACK mode: acknowledge every transaction handed out so far.

        That is every flagged event handed out, and the end of the transaction
        whose last event (or change) was handed out, if it has arrived.

        Raises:
            StateError: the stream is not in manual ACK mode.
        """
        if self._config.ack_mode != "manual":
            raise StateError(
                "ack() is only for ack_mode='manual'; 'auto' and 'receipt' ACK by themselves"
            )
        self._acks.acked()
        self._send_acks()
        self._settle()  # and a transaction end that follows what was handed out

    async def aclose(self) -> None:
        """Close the connection; further iteration ends.

        With semi-sync in ``ack_mode="auto"``, a transaction whose end has
        arrived and whose events (or changes) were all handed out is ACKed first.
        """
        if self._acks.early and not self._closed:
            self._settle()
        self._closed = True
        if self._snapshot is not None:
            await self._snapshot.aclose()
        if self._protocol is not None:
            self._protocol.close()
            await asyncio.sleep(0)

    # -- the one item source (BinlogStream.__anext__ and ChangeStream) ----------------------

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def current_gtid(self) -> str | None:
        """The GTID of the transaction the last passed item belongs to, if known."""
        return self._delivery.gtid

    def take_buffered(self, changes: bool = False) -> StreamItem | None:
        """The next passed item (an event, not skipped) among those already received,
        without awaiting; None when :meth:`next_passed` must be awaited (nothing
        buffered, a schema provider to ask, a snapshot, or the stream is over).

        ``changes``: for a ``changes()`` consumer, only an item that may give changes
        (a rows event, a statement); the others are passed on the way.
        """
        protocol = self._protocol
        if protocol is None or not self._plain or self._closed or self._ended:
            return None
        while (item := protocol.take()) is not None:
            self._pass_item(item)
            event = item.event
            if event is not None and not item.skipped:
                self._acks.caught_up = False
                if not changes or isinstance(event, RowsEvent) or type(event) is QueryEvent:
                    return item
        return None

    async def next_passed(self) -> StreamItem:
        """The next passed item: an event (for the consumer, or filtered out), not skipped.

        Raises:
            StopAsyncIteration: the stream ended (non-blocking) or was closed.
        """
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
                        f"the primary at {self._target.address} ended the binlog dump "
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
                item = await self._with_schema(item)
            self._pass_item(item)
            if item.event is not None and not item.skipped:
                self._acks.caught_up = False
                return item

    def serve_changes(self, consumer: ChangeStream) -> SnapshotReader | None:
        """Serve a ``changes()`` consumer (:class:`ChangeStream` calls it once): items
        without changes are then passed on the way (``_settle``). Returns the snapshot
        being read, if any (its rows come first)."""
        self._consumer = consumer
        self._acks.takes = consumer.takes
        return self._snapshot

    def snapshot_over(self) -> None:
        """The snapshot's seam is behind: plain streaming from here."""
        self._snapshot = None

    def _pass_item(self, item: StreamItem) -> None:
        """Bookkeeping for an item the consumer is handed (or that is filtered out)."""
        event = item.event
        # the metrics, counted here: this runs for every event
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
        elif event is not None and event.header[1] in HEARTBEAT_TYPES:
            m.heartbeats += 1
            m.seconds_behind_primary = 0.0
        if isinstance(event, RowsEvent) and not item.skipped:
            m.rows += len(getattr(event, "rows", ()))
        if self._delivery.passed(item):
            m.transactions += 1
        if item.needs_ack and self._acks.passed(item):
            self._send_acks()

    @property
    def received(self) -> bool:
        """An item has been received and waits to be taken (no await needed)."""
        protocol = self._protocol
        return protocol is not None and not self._closed and protocol.peek() is not None

    def passed_on(self, item: StreamItem) -> None:
        """The snapshot's merge passed ``item`` while the consumer holds every change
        before it: a flagged end the consumer's ack() covers is ACKed now (see
        ``AckPolicy.passed_on``)."""
        session, protocol = self._session, self._protocol
        if session is None or protocol is None or not item.needs_ack:
            return
        if self._acks.passed_on(item):
            session.ack(item)
            protocol.flush()

    def handed_over(self) -> None:
        """The consumer now holds everything taken so far: ACK an end that follows."""
        if self._acks.handed_over():
            self._settle()

    def _on_arrival(self) -> None:
        if self._acks.caught_up and not self._closed:
            self._settle()

    def _settle(self) -> None:
        """ACK the transaction end at the head of the queue once nothing before it is pending.

        Items the consumer need not be handed (filtered or skipped events, and for
        a ``changes()`` consumer every item without changes) are passed on the way;
        a flagged end is ACKed even when the consumer will still see its event.
        """
        protocol = self._protocol
        session = self._session
        if protocol is None or session is None or not self._acks.caught_up:
            return
        at_head = self._acks.at_head
        while (item := protocol.peek()) is not None:
            ack, stop = at_head(item)
            if ack:
                session.ack(item)
                protocol.flush()
            if stop:
                return  # the consumer is to be handed it (or its error)
            protocol.take()
            self._pass_item(item)  # (the delivery follows the transactions of changes())

    def _send_acks(self) -> None:
        session, protocol = self._session, self._protocol
        if session is None or protocol is None:
            return
        due = self._acks.due()
        if due:
            for item in due:
                session.ack(item)
            protocol.flush()

    async def _with_schema(self, item: StreamItem) -> StreamItem:
        """Apply the schema provider's names and types where the binlog lacks them."""
        provider = self._config.schema_provider
        event = item.event
        if provider is None:
            return item
        table = event.table if isinstance(event, RowsEvent) else event
        if not isinstance(table, TableMapEvent) or not needs_schema(table):
            return item
        key = (table.schema, table.table, tuple((c.type, c.meta) for c in table.columns))
        if key not in self._schemas:
            self._schemas[key] = apply_schema(table, await provider(table.schema, table.table))
        known = self._schemas[key]
        if known is None:
            return item
        known = dataclasses.replace(known, header=table.header, table_id=table.table_id)
        if isinstance(event, RowsEvent):
            return dataclasses.replace(item, event=retype_rows(event, known))
        return dataclasses.replace(item, event=known)


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
