"""Typed single-table mode (``typed=true``): ``before``/``after`` as structs.

No pyspark import. For the one table named by ``tables``, the row images are
Arrow struct columns whose fields are the table's columns, typed from the
column types the decoder reports (:class:`~replica_client.binlog.events.ColumnInfo`
of the TABLE_MAP) and holding the values the decoder produces
(:mod:`replica_client.binlog.columns`). The mapping, the one place that says
which Spark type a column gets (:func:`typed_column`):

=============================  ======================  ================================
column                         Spark type              decoded value -> Spark value
=============================  ======================  ================================
TINYINT, SMALLINT, MEDIUMINT   int                     int
(signed or not), INT, YEAR
INT UNSIGNED, BIGINT           bigint                  int
BIGINT UNSIGNED                decimal(20,0)           int
BIT(n)                         int (n <= 31), bigint   int
                               (n <= 63), else
                               decimal(20,0)
DECIMAL(p,s)                   decimal(p,s) (p <= 38)  Decimal
                               else string             its exact text (``format(v, "f")``)
FLOAT / DOUBLE                 float / double          float (FLOAT: the exact float32)
DATE                           date                    date
DATETIME                       timestamp_ntz           naive datetime (wall clock)
TIMESTAMP                      timestamp               aware UTC datetime
TIME                           interval day to second  timedelta (-838:59:59 .. 838:59:59,
                                                       exact to the microsecond)
CHAR, VARCHAR, TEXT (a         string                  str
charset), MariaDB JSON
BINARY, VARBINARY, BLOB        binary                  bytes (BINARY(n) padded to n)
ENUM                           string                  its label
SET                            string                  labels in definition order, ``,``
                                                       between them (as SELECT shows it)
JSON (MySQL)                   string                  the document as JSON text
                                                       (DECIMALs inside as numbers)
GEOMETRY (any spatial type)    binary                  SRID (4 bytes LE) + WKB, as SELECT
MariaDB UUID, INET4, INET6     string                  its text, as SELECT shows it
(known from a schema history)
=============================  ======================  ================================

TIME is a day-time interval rather than a string: it is a signed duration, not
a time of day (up to 838 hours), and the interval holds every value exactly.
Every struct field is nullable. VECTOR and other types raise
:class:`~replica_client.errors.UnsupportedError` when the schema is made.

Values Spark cannot hold are never changed silently: a zero or partly-zero
DATE/DATETIME/TIMESTAMP (``0000-00-00``), text bytes that are not valid in
the column's character set, an ENUM/SET value outside its labels raise
:class:`~replica_client.errors.UnrepresentableValueError` naming the table,
column and binlog position, unless ``invalidValues=null`` (then they are
NULL). A row image without every column (``binlog_row_image`` MINIMAL or
NOBLOB) always raises it. A TABLE_MAP whose columns map to other names or
types than the query's schema (an ALTER TABLE) raises
:class:`~replica_client.errors.SchemaChangedError`.

The struct layout, and how it is known before reading, is
:mod:`replica_client.spark.typed_layout`'s; this module turns rows events
into struct columns on the executors (:class:`TypedChangelogBuilder`).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import uuid
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any, Final

import pyarrow as pa

from ..binlog.events import (
    ColumnInfo,
    DeleteRowsEvent,
    Geometry,
    Row,
    RowsEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)
from ..binlog.json_binary import JSON_NULL
from ..errors import ConfigError, SchemaChangedError, UnrepresentableValueError
from ..jsonvalues import decimal_text, json_value
from .changelog import ChangelogBuilder
from .typed_layout import (
    COLUMNS_SQL,
    TypedColumn,
    check_row_image,
    columns_from_information_schema,
    definition_layout,
    file_layout,
    history_layout,
    stream_layout,
    typed_column,
    typed_columns,
)

__all__ = [
    "COLUMNS_SQL",
    "TypedChangelogBuilder",
    "TypedColumn",
    "columns_from_information_schema",
    "definition_layout",
    "file_layout",
    "history_layout",
    "stream_layout",
    "typed_column",
    "typed_columns",
    # also public, from typed_layout
    "check_row_image",
]

# -- executors: rows events -> struct columns -------------------------------------------

_ACCEPTS: Final[dict[str, frozenset[type] | None]] = {
    "int": frozenset({int}),
    "float": frozenset({float}),
    "decimal": frozenset({Decimal}),
    "decimal_text": frozenset({Decimal}),
    "date": frozenset({dt.date}),
    "time": frozenset({dt.timedelta}),
    "datetime": frozenset({dt.datetime}),
    "timestamp": frozenset({dt.datetime}),
    "text": frozenset({str}),
    "binary": frozenset({bytes}),
    "enum": frozenset({str}),
    "set": frozenset({frozenset}),
    "json": None,  # every decoded document
    "geometry": frozenset({Geometry, bytes}),
    "text_value": frozenset({uuid.UUID, ipaddress.IPv4Address, ipaddress.IPv6Address}),
}

#: Why a value of a kind is not accepted (what the decoder gives instead).
_WHY: Final = {
    "date": "a zero or partly-zero date",
    "datetime": "a zero or partly-zero datetime",
    "timestamp": "a zero timestamp",
    "text": "bytes that are not valid in the column's character set",
    "enum": "an index outside the ENUM's labels",
    "set": "bits outside the SET's labels",
}


def _set_text(value: frozenset[str], col: TypedColumn) -> str:
    return ",".join(label for label in col.labels if label in value)


def _json_text(value: Any, col: TypedColumn) -> str:
    return "null" if value is JSON_NULL else _json_document(value)


def _json_document(value: Any) -> str:
    """A decoded MySQL JSON document as JSON text (``", "`` and ``": "`` as MySQL prints).

    A DECIMAL inside stays a number with all its digits; dates and times
    inside (opaque values) are strings in their ``jsonvalues`` form.
    """
    if isinstance(value, dict):
        items = (f"{_json_document(str(k))}: {_json_document(v)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_json_document(v) for v in value) + "]"
    if isinstance(value, Decimal):
        return decimal_text(value)
    return json.dumps(json_value(value), ensure_ascii=False)


def _geometry_bytes(value: Geometry | bytes, col: TypedColumn) -> bytes:
    if isinstance(value, Geometry):
        return value.srid.to_bytes(4, "little") + value.wkb
    return value  # MariaDB's empty value in a NOT NULL column


def _decimal_text(value: Decimal, col: TypedColumn) -> str:
    return decimal_text(value)


def _text_value(value: Any, col: TypedColumn) -> str:
    return str(value)


_CONVERT: Final[dict[str, Callable[[Any, TypedColumn], Any]]] = {
    "text_value": _text_value,
    "set": _set_text,
    "json": _json_text,
    "geometry": _geometry_bytes,
    "decimal_text": _decimal_text,
}

_NONE_TYPE: Final = type(None)


class TypedChangelogBuilder(ChangelogBuilder):
    """A :class:`ChangelogBuilder` whose ``before``/``after`` are structs of one table.

    ``schema`` is the Arrow schema Spark expects (``before``/``after`` struct
    types included); ``expected`` the (name, Spark type) of every struct field.
    Rows of other tables are skipped.
    """

    __slots__ = ("_after", "_before", "_expected", "_invalid", "_plans", "_schema", "_table")

    def __init__(
        self,
        table: tuple[str, str],
        expected: tuple[tuple[str, str], ...],
        schema: pa.Schema,
        invalid_values: str = "error",
    ) -> None:
        super().__init__()
        self._table = table
        self._expected = expected
        self._schema = schema
        self._invalid = invalid_values
        self._plans: dict[tuple[ColumnInfo, ...], tuple[TypedColumn, ...]] = {}
        self._before: tuple[list[list[Any]], list[bool]] = self._empty()
        self._after: tuple[list[list[Any]], list[bool]] = self._empty()

    def _empty(self) -> tuple[list[list[Any]], list[bool]]:
        return [[] for _ in self._expected], []

    def _plan(self, event: RowsEvent, where: str) -> tuple[TypedColumn, ...]:
        """The fields of this event's TABLE_MAP; they must be the query's."""
        table = event.table
        plan = self._plans.get(table.columns)
        if plan is None:
            plan = typed_columns(table)
            found = tuple((c.name, c.spark) for c in plan)
            if found != self._expected:
                name = f"{table.schema}.{table.table}"
                raise SchemaChangedError(
                    f"the layout of {name} changed at {where} (ALTER TABLE): the query's "
                    f"struct is {_layout_text(self._expected)}, the binlog's now "
                    f"{_layout_text(found)}. A running query's schema cannot change: start "
                    "a new query (a new checkpoint) from the transaction at this position",
                    table=name,
                    position=where,
                )
            if len(self._plans) > 64:
                self._plans.clear()
            self._plans[table.columns] = plan
        return plan

    def add(self, event: RowsEvent, file: str, pos: int, gtid: str | None) -> None:
        """Add the rows of one rows event of the typed table that starts at ``file:pos``."""
        table = event.table
        if (table.schema, table.table) != self._table:
            return
        where = f"{file}:{pos}"
        plan = self._plan(event, where)
        names = table.column_names
        pk = table.primary_key
        c_pk = self._cols[2]
        if isinstance(event, UpdateRowsEvent):
            self._check_full(event, event.columns_present_after, where)
            befores = [b for b, _ in event.rows]
            afters = [a for _, a in event.rows]
            c_pk.keys(pk, names, event.rows, 1)
            op = "u"
        elif isinstance(event, WriteRowsEvent):
            befores, afters = [], list(event.rows)
            c_pk.keys(pk, names, event.rows, -1)
            op = "c"
        elif isinstance(event, DeleteRowsEvent):
            befores, afters = list(event.rows), []
            c_pk.keys(pk, names, event.rows, -1)
            op = "d"
        else:  # pragma: no cover - every rows event is one of the three
            return
        self._check_full(event, event.columns_present, where)
        n = len(event.rows)
        self._images(self._before, befores, n, plan, where)
        self._images(self._after, afters, n, plan, where)
        self._add_position(event, n, file, pos, gtid, op)

    def add_reads(self, *args: Any, **kwargs: Any) -> None:
        raise ConfigError("typed=true does not support startingPosition=snapshot")

    def _check_full(self, event: RowsEvent, present: int, where: str) -> None:
        every = (1 << len(event.table.columns)) - 1
        if present & every != every:
            name = f"{event.table.schema}.{event.table.table}"
            absent = [c for i, c in enumerate(event.table.column_names) if not present >> i & 1]
            raise UnrepresentableValueError(
                f"the row image of {name} at {where} lacks the columns {absent} "
                "(binlog_row_image MINIMAL or NOBLOB): typed=true needs every column, "
                "binlog_row_image=FULL",
                table=name,
                column=absent[0],
                position=where,
            )

    def _images(
        self,
        into: tuple[list[list[Any]], list[bool]],
        rows: Sequence[Row],
        n: int,
        plan: tuple[TypedColumn, ...],
        where: str,
    ) -> None:
        """Append ``rows`` column by column (or ``n`` NULL structs when there are none)."""
        columns, nulls = into
        if not rows:
            nones = [None] * n
            for column in columns:
                column.extend(nones)
            nulls.extend([True] * n)
            return
        for col, decoded, target in zip(plan, zip(*rows, strict=True), columns, strict=True):
            values: tuple[Any, ...] = decoded
            accepts = _ACCEPTS[col.kind]
            if accepts is not None:
                found = set(map(type, values))
                found.discard(_NONE_TYPE)
                if not found <= accepts:
                    values = self._invalid_values(values, col, accepts, where)
            convert = _CONVERT.get(col.kind)
            if convert is None:
                target.extend(values)
            else:
                target.extend(None if v is None else convert(v, col) for v in values)
        nulls.extend([False] * n)

    def _invalid_values(
        self, values: tuple[Any, ...], col: TypedColumn, accepts: frozenset[type], where: str
    ) -> tuple[Any, ...]:
        """Values Spark cannot hold: an error, or NULL with ``invalidValues=null``."""
        if self._invalid == "null":
            return tuple(None if type(v) not in accepts else v for v in values)
        index, value = next(
            (i, v) for i, v in enumerate(values) if v is not None and type(v) not in accepts
        )
        name = f"{self._table[0]}.{self._table[1]}"
        shown = str(value) if isinstance(value, tuple | int) else repr(value)[:80]
        why = _WHY.get(col.kind, f"a {type(value).__name__}")
        raise UnrepresentableValueError(
            f"{name} column {col.name!r} at {where} row {index}: {shown} ({why}) has no "
            f"Spark {col.spark} value; it is not changed silently. Option invalidValues=null "
            "reads such values as NULL",
            table=name,
            column=col.name,
            position=f"{where}#{index}",
        )

    def take_batch(self) -> pa.RecordBatch:
        """The rows collected so far as one record batch; the builder starts empty."""
        arrays = self._take_arrays()
        for index, name in ((3, "before"), (4, "after")):
            columns, nulls = self._before if name == "before" else self._after
            struct_type = self._schema.field(name).type
            fields = [struct_type.field(i) for i in range(struct_type.num_fields)]
            children = [
                pa.array(values, type=field.type)
                for values, field in zip(columns, fields, strict=True)
            ]
            arrays[index] = pa.StructArray.from_arrays(
                children, fields=fields, mask=pa.array(nulls, type=pa.bool_())
            )
        self._before, self._after = self._empty(), self._empty()
        return pa.RecordBatch.from_arrays(arrays, schema=self._schema)


def _layout_text(layout: tuple[tuple[str, str], ...]) -> str:
    return "(" + ", ".join(f"{n} {t}" for n, t in layout) + ")"
