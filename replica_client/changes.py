"""Row changes: one :class:`Change` per inserted, updated or deleted row. No I/O.

``iter_changes(events)`` turns a stream of typed events (from files or the
network) into changes keyed by column name. The GTID of the enclosing
transaction comes from the GTID event that opened it.

Row images as dicts: keys are column names when the TABLE_MAP carries them
(``binlog_row_metadata=FULL``) or a schema provider supplied them, else
``"@1"``, ``"@2"``, ... A column absent from a MINIMAL/NOBLOB image is absent
from the dict (SQL NULL is present with value ``None``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from .binlog.events import (
    MISSING,
    DeleteRowsEvent,
    Event,
    RotateEvent,
    Row,
    RowsEvent,
    TableMapEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)
from .binlog.transactions import TransactionTracker
from .position import FilePos
from .schema import ProvidedColumns, apply_schema, needs_schema, retype_rows

__all__ = ["Change", "ChangeBuilder", "ColumnNames", "iter_changes"]

#: What the binlog lacks for a table, ``(schema, table) -> columns | None``: column
#: names, or ``ColumnSchema`` entries with the SQL data type (see ``replica_client.schema``).
ColumnNames = Callable[[str, str], "ProvidedColumns | None"]

Op = Literal["insert", "update", "delete"]


@dataclass(frozen=True, slots=True)
class Change:
    """One changed row."""

    op: Op
    schema: str
    table: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    #: The transaction's GTID ("domain-server-seq" on MariaDB, "uuid:gno" on
    #: MySQL), None if unknown.
    gtid: str | None
    #: Where the rows event starts in the primary's binlog.
    position: FilePos | None
    #: When the statement started on the primary (UTC).
    timestamp: dt.datetime
    #: Index of the row within its rows event.
    row_index: int = 0
    #: Primary-key column names (from the TABLE_MAP), empty if unknown.
    primary_key: tuple[str, ...] = ()
    server_id: int = 0


def _as_dict(names: tuple[str, ...], row: Row) -> dict[str, Any]:
    if MISSING in row:
        return {n: v for n, v in zip(names, row, strict=False) if v is not MISSING}
    return dict(zip(names, row, strict=False))


class ChangeBuilder:
    """Turns events into changes; tracks the current file and transaction GTID."""

    __slots__ = ("_column_names", "_file", "_names_cache", "_transactions")

    def __init__(self, column_names: ColumnNames | None = None) -> None:
        self._column_names = column_names
        self._transactions = TransactionTracker()
        self._file: str | None = None
        self._names_cache: dict[int, tuple[TableMapEvent, TableMapEvent]] = {}

    @property
    def gtid(self) -> str | None:
        """The GTID of the transaction being read (None without one)."""
        return self._transactions.gtid

    def _schema_for(self, table: TableMapEvent) -> TableMapEvent:
        """``table`` with what the provider adds (the same object when nothing)."""
        if self._column_names is None or not needs_schema(table):
            return table
        cached = self._names_cache.get(id(table))
        if cached is not None and cached[0] is table:
            return cached[1]
        known = apply_schema(table, self._column_names(table.schema, table.table)) or table
        if len(self._names_cache) > 1024:
            self._names_cache.clear()
        self._names_cache[id(table)] = (table, known)
        return known

    def feed(self, event: Event, position: FilePos | None = None) -> list[Change]:
        """Changes carried by ``event`` (empty for non-row events).

        Args:
            event: the next event of the stream.
            position: where ``event`` starts; when None it is derived from the
                event header and the last ROTATE.
        """
        if isinstance(event, RowsEvent):
            if position is None and self._file is not None and event.log_pos:
                position = FilePos(self._file, max(event.log_pos - event.header.event_size, 0))
            return self._changes(event, position)
        self._transactions.observe(event)
        if isinstance(event, RotateEvent):
            self._file = event.next_file
        return []

    def _changes(self, event: RowsEvent, position: FilePos | None) -> list[Change]:
        known = self._schema_for(event.table)
        if known is not event.table:
            event = retype_rows(event, known)
        table = event.table
        names = table.column_names
        pk = tuple(names[i] for i in table.primary_key)
        ts = dt.datetime.fromtimestamp(event.header.timestamp, dt.UTC)
        common = (table.schema, table.table)
        gtid = self._transactions.gtid
        out: list[Change] = []
        sid = event.header.server_id
        if isinstance(event, UpdateRowsEvent):
            for i, (before, after) in enumerate(event.rows):
                out.append(
                    Change(
                        "update",
                        *common,
                        _as_dict(names, before),
                        _as_dict(names, after),
                        gtid,
                        position,
                        ts,
                        i,
                        pk,
                        sid,
                    )
                )
        elif isinstance(event, WriteRowsEvent):
            for i, row in enumerate(event.rows):
                out.append(
                    Change(
                        "insert",
                        *common,
                        None,
                        _as_dict(names, row),
                        gtid,
                        position,
                        ts,
                        i,
                        pk,
                        sid,
                    )
                )
        elif isinstance(event, DeleteRowsEvent):
            for i, row in enumerate(event.rows):
                out.append(
                    Change(
                        "delete",
                        *common,
                        _as_dict(names, row),
                        None,
                        gtid,
                        position,
                        ts,
                        i,
                        pk,
                        sid,
                    )
                )
        return out




def iter_changes(
    events: Iterable[Event], *, column_names: ColumnNames | None = None
) -> Iterator[Change]:
    """Yield one :class:`Change` per row of the row events in ``events``.

    ``events`` is typically a file reader (``open_binlog``) or a list of
    events. When it exposes ``event_position`` (the file reader does), each
    change's ``position`` is exact; otherwise it is derived from the headers.
    """
    builder = ChangeBuilder(column_names)
    feed = builder.feed
    has_pos = hasattr(events, "event_position")
    for event in events:
        # Only row events need a position; other events cost no FilePos.
        if has_pos and isinstance(event, RowsEvent):
            yield from feed(event, getattr(events, "event_position", None))
        else:
            yield from feed(event)
