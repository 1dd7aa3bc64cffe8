"""What a table's rows are read as: table plans, value conversion, the SQL texts.

A :class:`TablePlan` (from ``information_schema``, :func:`plan_table`) says how
one table is selected and how each column's text becomes the value the binlog
decoder gives for it; :func:`select_sql` reads a key range in key order;
:func:`~replica_client.snapshot.reads.read_changes` makes the ``op="read"``
changes of a batch. The SQL texts
ask the server for its tables, columns and keys and set the session a
snapshot reads in. No I/O.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import struct
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from ..binlog.charsets import encoding_for_collation
from ..binlog.columns import geometry_value, make_date, make_datetime, text_reader
from ..binlog.events import JSON_NULL, InvalidDatetime
from ..errors import SnapshotError
from ..schema.model import GEOMETRY_TYPES
from .state import Key
from .textrows import TextCode, TextColumn, TextRowPlan, text_row_plan

__all__ = [
    "COLUMNS_SQL",
    "GEOMETRY_TYPES",
    "KEY_SQL",
    "NO_LOG_MESSAGE",
    "SESSION_SQL",
    "SYSTEM_SCHEMAS",
    "TABLES_SQL",
    "ColumnPlan",
    "TablePlan",
    "key_converters",
    "plan_table",
    "select_sql",
]

_INTEGERS: Final = frozenset({"tinyint", "smallint", "mediumint", "int", "integer", "bigint"})
_TEXT: Final = frozenset(
    {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set"}
)
_BYTES: Final = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"})
#: Key types whose Python order is the server's index order (chunking needs it).
_ORDERED_KEYS: Final = _INTEGERS | frozenset(
    {"decimal", "year", "date", "datetime", "timestamp", "binary", "varbinary"}
)
_UTC: Final = dt.UTC

#: Schemas never snapshotted unless named.
SYSTEM_SCHEMAS: Final = ("mysql", "information_schema", "performance_schema", "sys")
#: The base tables (schema, name) of the server.
TABLES_SQL: Final = (
    "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
    "WHERE TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_SCHEMA, TABLE_NAME"
)
#: (name, DATA_TYPE, COLUMN_TYPE) of a table's columns in order (schema, table as arguments).
COLUMNS_SQL: Final = (
    "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE FROM information_schema.COLUMNS "
    "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION"
)
#: A table's primary-key column names in key order (schema, table as arguments).
KEY_SQL: Final = (
    "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE "
    "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND CONSTRAINT_NAME = 'PRIMARY' "
    "ORDER BY ORDINAL_POSITION"
)
#: The session a snapshot reads in: TIMESTAMP in UTC, raw column bytes, repeatable reads.
SESSION_SQL: Final = (
    "SET SESSION time_zone = '+00:00'",
    "SET SESSION character_set_results = NULL",
    "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ",
)
NO_LOG_MESSAGE: Final = (
    "the primary has binlog_row_metadata=NO_LOG and the stream keeps no schema "
    "history (schema_history='off'): its binlog does not say signedness or "
    "character sets, so streamed values could not equal the snapshot's; keep the "
    "history (the default) or set binlog_row_metadata=MINIMAL or FULL"
)


# -- what a table's rows are read as ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ColumnPlan:
    """One column: its name, ``information_schema`` data type and how it is selected."""

    name: str
    data_type: str
    column_type: str
    select: str


@dataclass(frozen=True, slots=True)
class TablePlan:
    """How one table is read: the SELECT list, the key, and the value conversions."""

    schema: str
    table: str
    columns: tuple[ColumnPlan, ...]
    key: tuple[str, ...]
    #: Whether the key's Python order is the server's (reading in chunks needs it).
    ordered_key: bool
    #: ENUM/SET as labels (FULL row metadata) or as index / bit mask.
    labels: bool
    mariadb: bool

    @property
    def name(self) -> str:
        return f"{self.schema}.{self.table}"

    @property
    def quoted(self) -> str:
        return f"{_quote(self.schema)}.{_quote(self.table)}"

    def key_of(self, image: Mapping[str, Any]) -> Key:
        return tuple(image[k] for k in self.key)

    def converters(self, collations: Sequence[int | None]) -> list[Callable[[bytes], Any]]:
        """One conversion per column, given the collation id the server sent each with."""
        return [c.convert for c in self.text_columns(collations)]

    def text_columns(self, collations: Sequence[int | None]) -> list[TextColumn]:
        """Each column's :class:`TextColumn` (code and conversion), given its collation id."""
        return [
            _text_column(c, collation, self.labels, self.mariadb)
            for c, collation in zip(self.columns, collations, strict=True)
        ]

    def text_plan(self, collations: Sequence[int | None]) -> TextRowPlan:
        """The parser of this table's text row packets (``plan.parse(payloads)``), given
        the collation id the server sent each column with; compiled when the accelerator
        is loaded (see ``textrows.py``)."""
        return text_row_plan(self.text_columns(collations))


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def plan_table(
    schema: str,
    table: str,
    columns: Iterable[tuple[str, str, str]],
    key: Sequence[str],
    *,
    labels: bool,
    mariadb: bool,
) -> TablePlan:
    """A :class:`TablePlan` from ``information_schema``: (name, DATA_TYPE, COLUMN_TYPE) per
    column in table order, and the primary-key column names in key order."""
    plans = []
    types: dict[str, str] = {}
    for name, spelled, column_type in columns:
        data_type = spelled.lower()
        types[name] = data_type
        plans.append(
            ColumnPlan(name, data_type, column_type.lower(), _select(name, data_type, labels))
        )
    if not plans:
        raise SnapshotError(f"table {schema}.{table} does not exist or has no columns")
    ordered = bool(key) and all(types.get(k) in _ORDERED_KEYS for k in key)
    return TablePlan(schema, table, tuple(plans), tuple(key), ordered, labels, mariadb)


def _select(name: str, data_type: str, labels: bool) -> str:
    n = _quote(name)
    if data_type == "float":
        return f"{n} + 0e0"  # the float32 value in full (its own text has 6 digits)
    if data_type in ("enum", "set") and not labels:
        return f"CAST({n} AS UNSIGNED)"  # the index / bit mask, as the binlog has it
    return n


def _converter(
    c: ColumnPlan, collation: int | None, labels: bool, mariadb: bool
) -> Callable[[bytes], Any]:
    return _text_column(c, collation, labels, mariadb).convert


#: Text encodings (``encoding_for_collation``) the compiled plan decodes itself.
_TEXT_CODES: Final = {
    None: TextCode.BYTES,
    "utf-8": TextCode.UTF8,
    "utf8mb3": TextCode.UTF8MB3,
    "latin1-mysql": TextCode.LATIN1,
}
_FALLBACK: Final = TextCode.FALLBACK


def _text_column(c: ColumnPlan, collation: int | None, labels: bool, mariadb: bool) -> TextColumn:
    t = c.data_type
    if t in _INTEGERS or t == "year":
        return TextColumn(TextCode.INT, int)
    if t in ("enum", "set") and not labels:
        return TextColumn(TextCode.INT, int)
    if t == "bit":
        return TextColumn(_FALLBACK, _bit)
    if t == "decimal":
        return TextColumn(TextCode.DECIMAL, _decimal)
    if t == "float":
        return TextColumn(TextCode.FLOAT32, _float32)
    if t == "double":
        return TextColumn(TextCode.DOUBLE, float)
    if t == "date":
        return TextColumn(TextCode.DATE, _date)
    if t == "time":
        return TextColumn(TextCode.TIME, _time)
    if t == "datetime":
        return TextColumn(TextCode.DATETIME, _datetime)
    if t == "timestamp":
        return TextColumn(TextCode.TIMESTAMP, _timestamp)
    if t == "json" and not mariadb:
        return TextColumn(_FALLBACK, _mysql_json)
    if t == "vector":
        return TextColumn(_FALLBACK, _vector)
    if t in GEOMETRY_TYPES:
        return TextColumn(_FALLBACK, _geometry)
    if t in _TYPED:
        return TextColumn(_FALLBACK, _TYPED[t])
    if t in _BYTES:
        return TextColumn(TextCode.BYTES, bytes)
    text = text_reader(collation, mariadb)
    if t == "set":
        return TextColumn(_FALLBACK, lambda raw: _set_labels(text(memoryview(raw))))
    if t in _TEXT or t == "json":
        code = _TEXT_CODES.get(encoding_for_collation(collation, mariadb), _FALLBACK)
        return TextColumn(code, lambda raw: text(memoryview(raw)))
    raise SnapshotError(f"column {c.name} has a type the snapshot cannot read: {c.column_type}")


def _bit(raw: bytes) -> int:
    return int.from_bytes(raw, "big")


def _decimal(raw: bytes) -> Decimal:
    return Decimal(raw.decode("ascii"))


def _float32(raw: bytes) -> float:
    value: float = struct.unpack("<f", struct.pack("<f", float(raw)))[0]
    return value


def _date(raw: bytes) -> dt.date | Any:
    y, m, d = raw.decode("ascii").split("-")
    return make_date(int(y), int(m), int(d))


def _time(raw: bytes) -> dt.timedelta:
    text = raw.decode("ascii")
    sign = -1 if text.startswith("-") else 1
    hms, _, frac = text.lstrip("-").partition(".")
    h, m, s = (int(p) for p in hms.split(":"))
    us = int((frac + "000000")[:6]) if frac else 0
    return sign * dt.timedelta(hours=h, minutes=m, seconds=s, microseconds=us)


def _datetime_parts(raw: bytes) -> tuple[int, int, int, int, int, int, int]:
    date, _, time = raw.decode("ascii").partition(" ")
    y, mo, d = date.split("-")
    hms, _, frac = time.partition(".")
    h, mi, s = hms.split(":")
    us = int((frac + "000000")[:6]) if frac else 0
    return int(y), int(mo), int(d), int(h), int(mi), int(s), us


def _datetime(raw: bytes) -> Any:
    try:
        return dt.datetime.fromisoformat(raw.decode("ascii"))  # 1.7x the parts' way
    except ValueError:  # a zero or invalid date: the decoder's InvalidDatetime
        return make_datetime(*_datetime_parts(raw))


def _timestamp(raw: bytes) -> Any:
    """A TIMESTAMP read with the session time zone at UTC: aware UTC, or the zero value."""
    try:
        return dt.datetime.fromisoformat(raw.decode("ascii")).replace(tzinfo=_UTC)
    except ValueError:
        pass
    parts = _datetime_parts(raw)
    if not any(parts):
        return InvalidDatetime(0, 0, 0, 0, 0, 0, 0)
    return dt.datetime(*parts, tzinfo=_UTC)


def _mysql_json(raw: bytes) -> Any:
    value = json.loads(raw)
    return JSON_NULL if value is None else value


def _vector(raw: bytes) -> list[float]:
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


def _geometry(raw: bytes) -> Any:
    return geometry_value(memoryview(raw))


def _set_labels(text: str | bytes) -> frozenset[Any] | bytes:
    if isinstance(text, bytes):
        return text
    return frozenset(text.split(",")) if text else frozenset()


#: MariaDB types the binlog writes as their storage (typed by a schema provider,
#: see ``replica_client.schema``); SELECT gives their text form.
_TYPED: Final[dict[str, Callable[[bytes], Any]]] = {
    "uuid": lambda raw: uuid.UUID(raw.decode("ascii")),
    "inet4": lambda raw: ipaddress.IPv4Address(raw.decode("ascii")),
    "inet6": lambda raw: ipaddress.IPv6Address(raw.decode("ascii")),
}


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        raise SnapshotError(f"cannot use {value!r} as a key")
    if isinstance(value, int | Decimal):
        return str(value)
    if isinstance(value, dt.datetime):
        return "'" + value.replace(tzinfo=None).isoformat(" ") + "'"
    if isinstance(value, dt.date):
        return "'" + value.isoformat() + "'"
    if isinstance(value, bytes):
        return "X'" + value.hex() + "'" if value else "''"
    raise SnapshotError(f"cannot use {value!r} as a key")


def select_sql(
    plan: TablePlan,
    after: Key | None,
    upto: Key | None,
    limit: int | None,
    *,
    key_only: bool = False,
    offset: int = 0,
) -> str:
    """The SELECT of the table's rows with ``after < key <= upto`` in key order
    (``key_only``: the key columns only, from the ``offset``-th row)."""
    keys = [_quote(k) for k in plan.key]
    listed = keys if key_only else [c.select for c in plan.columns]
    sql = f"SELECT {', '.join(listed)} FROM {plan.quoted}"
    where = []
    if after is not None:
        where.append(f"({', '.join(keys)}) > ({', '.join(_literal(v) for v in after)})")
    if upto is not None:
        where.append(f"({', '.join(keys)}) <= ({', '.join(_literal(v) for v in upto)})")
    if where:
        sql += " WHERE " + " AND ".join(where)
    if keys:
        sql += f" ORDER BY {', '.join(keys)}"
    if limit is not None:
        sql += f" LIMIT {limit}"
        if offset:
            sql += f" OFFSET {offset}"
    return sql


def key_converters(plan: TablePlan) -> list[Callable[[bytes], Any]]:
    """The value conversion of each key column (keys in server order need no collation)."""
    by_name = {c.name: c for c in plan.columns}
    return [_converter(by_name[k], None, plan.labels, plan.mariadb) for k in plan.key]
