"""Typed TABLE_MAP and rows events: the table definition and the row changes. No I/O.

Frozen, slotted dataclasses, decoded by :mod:`.table_bindings`: a
:class:`TableMapEvent` with one :class:`ColumnInfo` per column, and the
WRITE/UPDATE/DELETE rows events whose row values are plain tuples in column
order (column names live once on the :class:`TableMapEvent`). Re-exported by
:mod:`replica_client.binlog.events`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple

from .events_base import Event
from .json_binary import JsonDiff
from .values import Row

__all__ = [
    "ColumnInfo",
    "DeleteRowsEvent",
    "PartialJson",
    "PartialUpdateRowsEvent",
    "RawRowsEvent",
    "RowsEvent",
    "TableMapEvent",
    "UpdateRowsEvent",
    "WriteRowsEvent",
]


@dataclass(frozen=True, slots=True)
class ColumnInfo:
    """One column of a TABLE_MAP, with what the optional metadata told."""

    index: int
    #: The type code in the TABLE_MAP (ENUM/SET appear as STRING there).
    type: int
    #: The real type (ENUM/SET/STRING resolved from the metadata).
    real_type: int
    #: The raw type metadata (meaning depends on the type).
    meta: int
    nullable: bool
    name: str | None = None
    #: None when the server did not send SIGNEDNESS (binlog_row_metadata=MINIMAL
    #: on MySQL sends it; MariaDB MINIMAL does too; without it ints are signed).
    unsigned: bool | None = None
    #: Collation id of a character column (None when unknown).
    collation: int | None = None
    enum_values: tuple[str, ...] | None = None
    set_values: tuple[str, ...] | None = None
    geometry_type: int | None = None
    visible: bool = True
    #: VECTOR dimensionality (MySQL 9).
    dimensions: int | None = None
    #: The SQL data type from a schema provider (``information_schema.COLUMNS.DATA_TYPE``,
    #: e.g. ``"uuid"``), None when no provider was asked; see ``replica_client.schema``.
    data_type: str | None = None


@dataclass(frozen=True, slots=True)
class TableMapEvent(Event):
    """TABLE_MAP_EVENT: maps ``table_id`` to a table definition for row events."""

    table_id: int
    table_flags: int
    schema: str
    table: str
    columns: tuple[ColumnInfo, ...]
    #: Column indexes of the primary key (SIMPLE_PRIMARY_KEY or PK_WITH_PREFIX).
    primary_key: tuple[int, ...] = ()
    #: (column index, prefix length) pairs; prefix 0 means the whole column.
    primary_key_prefixes: tuple[tuple[int, int], ...] = ()
    #: Optional-metadata fields this decoder does not know: (type, raw value).
    unknown_metadata: tuple[tuple[int, bytes], ...] = ()

    @property
    def column_names(self) -> tuple[str, ...]:
        """Names from the optional metadata; ``@1``, ``@2``, ... where unknown."""
        return tuple(c.name if c.name is not None else f"@{c.index + 1}" for c in self.columns)

    @property
    def has_column_names(self) -> bool:
        return all(c.name is not None for c in self.columns)


@dataclass(frozen=True, slots=True)
class RowsEvent(Event):
    """Base of WRITE/UPDATE/DELETE rows events (v1, v2, compressed and PRE_GA)."""

    table_id: int
    rows_flags: int
    table: TableMapEvent = field(repr=False)
    #: Columns-present bitmap of the (before) image, bit i = column i.
    columns_present: int
    #: v2 extra data (raw), empty for v1.
    extra_data: bytes

    @property
    def schema(self) -> str:
        return self.table.schema

    @property
    def table_name(self) -> str:
        return self.table.table

    @property
    def statement_end(self) -> bool:
        return bool(self.rows_flags & 1)


@dataclass(frozen=True, slots=True)
class RawRowsEvent(Event):
    """A rows event whose rows were left undecoded (``DecoderOptions(decode_rows=False)``).

    Its table is known (and passed the table filter); its bytes are in the
    stream item (``StreamItem.raw``) for a decoder elsewhere.
    """

    table_id: int
    rows_flags: int
    table: TableMapEvent = field(repr=False)


@dataclass(frozen=True, slots=True)
class WriteRowsEvent(RowsEvent):
    """WRITE_ROWS: inserted rows (after images)."""

    rows: tuple[Row, ...]

    op: ClassVar[str] = "insert"


@dataclass(frozen=True, slots=True)
class DeleteRowsEvent(RowsEvent):
    """DELETE_ROWS: deleted rows (before images)."""

    rows: tuple[Row, ...]

    op: ClassVar[str] = "delete"


@dataclass(frozen=True, slots=True)
class UpdateRowsEvent(RowsEvent):
    """UPDATE_ROWS: (before image, after image) pairs."""

    rows: tuple[tuple[Row, Row], ...]
    #: Columns-present bitmap of the after image.
    columns_present_after: int = 0

    op: ClassVar[str] = "update"


class PartialJson(NamedTuple):
    """A JSON after-image value sent as a diff whose base document is not in the event.

    PARTIAL_UPDATE_ROWS with a before image that lacks the column (MINIMAL row
    image): apply ``diffs`` (``json_binary.apply_json_diffs``) to the column's
    previous value to get the new document.
    """

    diffs: tuple[JsonDiff, ...]


@dataclass(frozen=True, slots=True)
class PartialUpdateRowsEvent(UpdateRowsEvent):
    """PARTIAL_UPDATE_ROWS_EVENT (39): UPDATE with JSON columns sent as diffs.

    ``rows`` holds full after images: each partially updated JSON column is
    the before-image document with the diffs applied (or a :class:`PartialJson`
    when the before image lacks that column). ``json_diffs`` gives, per row, the
    diffs by column index, exactly as logged.
    """

    json_diffs: tuple[dict[int, tuple[JsonDiff, ...]], ...] = ()
