"""``ChangeStream``: the row changes of a stream (``stream.changes()``).

Driver layer. :class:`ChangeStream` takes the items a
:class:`~replica_client.aio.stream.BinlogStream` passes (its one item source:
:meth:`ItemSource.take_buffered` without awaiting, :meth:`ItemSource.next_passed`
awaiting), turns them into :class:`~replica_client.changes.Change` values with
its own :class:`~replica_client.changes.ChangeBuilder`, and while a snapshot
runs hands its reader the changes to merge (the reader sees this object as its
:class:`~replica_client.aio.snapshot.ChangeSource`). It sees the stream through
:class:`ItemSource` only, so this module does not import ``stream`` (which
imports it).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Final, Protocol

from ..binlog.events import QueryEvent, RowsEvent
from ..changes import Change, ChangeBuilder, changes_rows
from ..position import PositionMaker

if TYPE_CHECKING:
    from ..position import FilePos, Gtid, MysqlGtidSet
    from ..session import StreamItem
    from .config import ReplicaConfig
    from .snapshot import SnapshotReader

__all__ = ["ChangeStream", "ItemSource"]


#: Statements that only open or end a transaction: passed on the way while a
#: snapshot runs (its merge checks every other statement).
_TRANSACTION_BOUNDS: Final = frozenset({"BEGIN", "COMMIT"})


class ItemSource(Protocol):
    """What :class:`ChangeStream` takes from the stream (``BinlogStream``)."""

    @property
    def config(self) -> ReplicaConfig: ...

    @property
    def binlog_format(self) -> str | None: ...

    @property
    def position(self) -> FilePos | None: ...

    @property
    def gtid_state(self) -> Gtid | MysqlGtidSet: ...

    @property
    def current_gtid(self) -> str | None: ...

    @property
    def closed(self) -> bool: ...

    def serve_changes(self, consumer: ChangeStream) -> SnapshotReader | None: ...

    def take_buffered(self, changes: bool = False) -> StreamItem | None: ...

    async def next_passed(self) -> StreamItem: ...

    def handed_over(self) -> None: ...

    def passed_on(self, item: StreamItem) -> None: ...

    @property
    def received(self) -> bool: ...

    def snapshot_over(self) -> None: ...

    async def aclose(self) -> None: ...


class ChangeStream:
    """Row changes of a :class:`BinlogStream` (``stream.changes()``)."""

    def __init__(self, stream: ItemSource) -> None:
        self._stream = stream
        config = stream.config
        self._builder = ChangeBuilder(
            statements=config.statements,
            tables=config.decoder.tables,
            binlog_format=stream.binlog_format,
        )
        self._position = PositionMaker().make  # the changes' positions
        self._pending: deque[Change] = deque()
        #: The snapshot being read (its rows come first), None once it is over.
        self._reader = stream.serve_changes(self)

    def __aiter__(self) -> ChangeStream:
        return self

    async def __anext__(self) -> Change:
        pending = self._pending
        if not pending:
            stream = self._stream
            # (method calls, not bound methods kept in locals: making those costs
            # more than the calls save, once per change)
            while not pending:
                if self._reader is not None:
                    await self._from_snapshot(self._reader)
                    continue
                # items already received are turned into changes without awaiting
                item = stream.take_buffered(True)
                if item is None:
                    item = await stream.next_passed()
                pending.extend(self._changes_of(item))
        change = pending.popleft()
        if not pending:
            # (while a snapshot runs too: what the merge must see is never passed on
            # the way, see takes())
            self._stream.handed_over()
        return change

    async def aclose(self) -> None:
        await self._stream.aclose()

    def takes(self, item: StreamItem) -> bool:
        """Whether this consumer is handed ``item``: the others are passed on the way,
        so a semi-sync ACK ahead of the consumer need not wait for them.

        It takes what gives changes; while a snapshot runs, also every statement
        but a transaction's BEGIN and COMMIT, which the snapshot's merge checks
        (a DDL of a table half read).
        """
        event = item.event
        if isinstance(event, RowsEvent):
            return True
        if type(event) is not QueryEvent:
            return False
        if self._reader is not None and event.query not in _TRANSACTION_BOUNDS:
            return True
        return changes_rows(event)

    # -- the stream's side of the snapshot merge ----------------------------------------

    def snapshot_began(self, reader: SnapshotReader) -> None:
        """A snapshot of tables starts (``stream.snapshot_table``): its rows come next
        (the rest of a rows event decoded before it go as the seam keeps them)."""
        keep = reader.keep
        self._pending = deque(k for c in self._pending if (k := keep(c)) is not None)
        self._reader = reader

    @property
    def pending(self) -> int:
        """Changes taken (from the stream or the snapshot) and not handed out yet."""
        return len(self._pending)

    @property
    def config(self) -> ReplicaConfig:
        return self._stream.config

    @property
    def position(self) -> FilePos | None:
        return self._stream.position

    @property
    def gtid_state(self) -> Gtid | MysqlGtidSet:
        return self._stream.gtid_state

    async def next_changes(self) -> tuple[StreamItem, list[Change]]:
        """The stream's next passed item and its changes (none for an event that gives
        none): what the snapshot merge combines with the rows it reads.

        Raises:
            StopAsyncIteration: the stream ended (non-blocking) or was closed.
        """
        item = await self._stream.next_passed()
        return item, self._changes_of(item)

    @property
    def received(self) -> bool:
        """An item has been received and waits to be taken (no await needed)."""
        return self._stream.received

    def passed_on(self, item: StreamItem) -> None:
        """The merge passed ``item`` while this consumer holds every change before it:
        a flagged end its last ack() covers is ACKed now (see ``AckPolicy.passed_on``)."""
        self._stream.passed_on(item)

    # -- internals ----------------------------------------------------------------------

    async def _from_snapshot(self, reader: SnapshotReader) -> None:
        """The next batch of changes while a snapshot runs (maybe none), into the
        pending ones; the reader is dropped once its seam is behind."""
        stream = self._stream
        if stream.closed:
            raise StopAsyncIteration
        if not reader.attached:
            reader.attach(self)
        batch = await reader.next_batch()
        if batch is None:
            self._reader = None  # the seam is behind: plain streaming
            stream.snapshot_over()
        else:
            self._pending.extend(batch)

    def _changes_of(self, item: StreamItem) -> list[Change]:
        """The changes of a passed item: a rows event's rows, a statement's (see
        :class:`ChangeBuilder`), none for other events.

        Only row events need a position; the first (artificial) ROTATE of a GTID
        start precedes any file name.
        """
        event = item.event
        if isinstance(event, RowsEvent):
            where = self._position(item.file, item.start) if item.file else None
            return self._builder.rows(event, where, self._stream.current_gtid)
        if type(event) is QueryEvent:
            where = self._position(item.file, item.start) if item.file else None
            return self._builder.statement(event, where, self._stream.current_gtid)
        return []
