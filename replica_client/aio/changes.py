"""``ChangeStream``: the row changes of a stream (``stream.changes()``).

Driver layer. :class:`ChangeStream` turns the items a
:class:`~replica_client.aio.stream.BinlogStream` passes into
:class:`~replica_client.changes.Change` values, merges a snapshot's rows in
while one runs, and takes items already buffered without awaiting (the fast
path). It sees the stream through :class:`ChangeFeed`, so this module does not
import ``stream`` (which imports it).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Protocol

from ..binlog.events import QueryEvent, RowsEvent
from ..changes import Change, ChangeBuilder

if TYPE_CHECKING:
    from ..position import FilePos, Gtid, MysqlGtidSet
    from ..session import StreamItem
    from .config import ReplicaConfig
    from .protocol import ReplicaProtocol
    from .snapshot import SnapshotReader

__all__ = ["ChangeFeed", "ChangeStream"]


class ChangeFeed(Protocol):
    """What :class:`ChangeStream` takes from the stream (``BinlogStream``).

    The fast path of :meth:`ChangeStream.__anext__` reads (and for
    ``_caught_up`` and ``_snapshot`` writes) the stream's state attributes
    below directly, once per change or per item: a property or method in their
    place would add a call there. The rest is the stream's public API.
    """

    _protocol: ReplicaProtocol | None
    #: No schema provider and no snapshot: buffered items can be taken without awaiting.
    _plain: bool
    _closed: bool
    _ended: bool
    #: Semi-sync with ack_mode "auto" or "manual": hand-overs may ACK.
    _settling: bool
    _caught_up: bool
    #: The snapshot being read (its rows come first), None once it is over.
    _snapshot: SnapshotReader | None

    @property
    def config(self) -> ReplicaConfig: ...

    @property
    def binlog_format(self) -> str | None: ...

    @property
    def position(self) -> FilePos | None: ...

    @property
    def gtid_state(self) -> Gtid | MysqlGtidSet: ...

    def set_change_builder(self, builder: ChangeBuilder) -> None: ...

    def pass_item(self, item: StreamItem) -> None: ...

    def row_changes(self, item: StreamItem, event: RowsEvent) -> list[Change]: ...

    def statement_changes(self, item: StreamItem, event: QueryEvent) -> list[Change]: ...

    def handed_over(self) -> None: ...

    async def next_changes(self) -> tuple[StreamItem, list[Change]]: ...

    async def aclose(self) -> None: ...


class ChangeStream:
    """Row changes of a :class:`BinlogStream` (``stream.changes()``)."""

    def __init__(self, stream: ChangeFeed) -> None:
        self._stream = stream
        config = stream.config
        self._builder = ChangeBuilder(
            statements=config.statements,
            tables=config.decoder.tables,
            binlog_format=stream.binlog_format,
        )
        self._pending: deque[Change] = deque()
        stream.set_change_builder(self._builder)

    def __aiter__(self) -> ChangeStream:
        return self

    async def __anext__(self) -> Change:
        stream = self._stream
        pending = self._pending
        reader = stream._snapshot
        if reader is not None:
            if stream._closed:
                raise StopAsyncIteration
            while pending:  # the rest of a rows event decoded before the snapshot began
                kept = reader.keep(pending.popleft())
                if kept is not None:
                    return kept
            if not reader.attached:
                reader.attach(stream)
            change = await reader.next_change()
            if change is not None:
                return change
            stream._snapshot = None  # the seam is behind: plain streaming
        while not pending:
            protocol = stream._protocol
            if protocol is not None and stream._plain and not stream._closed and not stream._ended:
                # Fast path (as BinlogStream.__anext__'s): items already buffered
                # are turned into changes without awaiting (also the ones that
                # arrived with the item awaited last).
                row_changes = stream.row_changes
                while (item := protocol.take()) is not None:
                    stream.pass_item(item)
                    event = item.event
                    if event is None or item.skipped:
                        continue
                    stream._caught_up = False
                    if isinstance(event, RowsEvent):
                        changes = row_changes(item, event)
                        if changes:
                            pending.extend(changes)
                            break
                    elif type(event) is QueryEvent:
                        changes = stream.statement_changes(item, event)
                        if changes:
                            pending.extend(changes)
                            break
                if pending:
                    break
            pending.extend((await stream.next_changes())[1])
        change = pending.popleft()
        if not pending and stream._settling:
            stream.handed_over()
        return change

    async def aclose(self) -> None:
        await self._stream.aclose()
