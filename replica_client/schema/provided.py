"""What a schema provider adds to a TABLE_MAP: column names and SQL data types. No I/O.

The binlog alone cannot say everything about a table: without
``binlog_row_metadata=FULL`` it has no column names, and some types are
written as the storage type underneath. MariaDB's UUID, INET6 and INET4 are
``BINARY(16)`` / ``BINARY(4)`` in the TABLE_MAP, its VECTOR is a binary
``VARCHAR``. A schema provider (``ReplicaConfig.schema_provider`` for streams,
``iter_changes(column_names=...)`` for files) supplies per table either the
column names, or :class:`ColumnSchema` entries with the SQL data type as
``information_schema.COLUMNS.DATA_TYPE`` spells it; this module applies them:

- :func:`needs_schema`: whether a provider has anything to add for a table
  (names missing, or a binary column that may be one of those types);
- :func:`apply_schema`: the TABLE_MAP with names and ``ColumnInfo.data_type``
  filled in, or None when what was provided does not fit the table (another
  column count: the table changed since);
- :func:`retype_rows`: a rows event whose values of typed columns are
  converted (``uuid.UUID``, ``ipaddress.IPv4Address`` / ``IPv6Address``, a
  list of floats), equal to what ``SELECT`` shows.

Without a provider such columns decode to ``bytes``, as the binlog says.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..binlog.columns import may_be_typed_binary, typed_binary_converter
from ..binlog.events import (
    ColumnInfo,
    DeleteRowsEvent,
    Row,
    RowsEvent,
    TableMapEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)

__all__ = [
    "ColumnSchema",
    "ProvidedColumns",
    "apply_schema",
    "converter_for",
    "needs_schema",
    "retype_rows",
]


@dataclass(frozen=True, slots=True)
class ColumnSchema:
    """One column as a schema provider knows it."""

    name: str
    #: ``information_schema.COLUMNS.DATA_TYPE`` (``"int"``, ``"uuid"``, ``"inet6"``, ...).
    data_type: str | None = None


#: What a provider returns for a table: names, or ColumnSchema entries, in column order.
ProvidedColumns = Sequence[str | ColumnSchema]


def needs_schema(table: TableMapEvent) -> bool:
    """True when a provider could add names or types to ``table``."""
    return not table.has_column_names or any(may_be_typed_binary(c) for c in table.columns)


def converter_for(col: ColumnInfo) -> Callable[[bytes], Any] | None:
    """The conversion of ``col``'s decoded bytes for its ``data_type``, if any."""
    return typed_binary_converter(col)


def apply_schema(table: TableMapEvent, provided: ProvidedColumns | None) -> TableMapEvent | None:
    """``table`` with the provided names and data types, or None if they do not fit."""
    if not provided or len(provided) != len(table.columns):
        return None
    columns = []
    for col, entry in zip(table.columns, provided, strict=True):
        if isinstance(entry, ColumnSchema):
            name, data_type = entry.name, entry.data_type
        else:
            name, data_type = str(entry), None
        columns.append(
            dataclasses.replace(
                col,
                name=col.name if col.name is not None else name,
                data_type=data_type.lower() if data_type else col.data_type,
            )
        )
    return dataclasses.replace(table, columns=tuple(columns))


def _convert_row(row: Row, converters: tuple[tuple[int, Callable[[bytes], Any]], ...]) -> Row:
    values = list(row)
    for i, convert in converters:
        value = values[i]
        if isinstance(value, bytes):  # not None (NULL) nor MISSING
            values[i] = convert(value)
    return tuple(values)


def retype_rows(event: RowsEvent, table: TableMapEvent) -> RowsEvent:
    """``event`` bound to ``table`` (from :func:`apply_schema`), typed columns converted."""
    converters = tuple(
        (c.index, convert) for c in table.columns if (convert := converter_for(c)) is not None
    )
    if not converters:
        return dataclasses.replace(event, table=table)
    if isinstance(event, UpdateRowsEvent):
        pairs = tuple(
            (_convert_row(b, converters), _convert_row(a, converters)) for b, a in event.rows
        )
        return dataclasses.replace(event, table=table, rows=pairs)
    if isinstance(event, (WriteRowsEvent, DeleteRowsEvent)):
        rows = tuple(_convert_row(r, converters) for r in event.rows)
        return dataclasses.replace(event, table=table, rows=rows)
    return dataclasses.replace(event, table=table)
