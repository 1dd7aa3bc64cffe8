"""How a column of a table definition appears in a TABLE_MAP, and what it adds there. No I/O.

:func:`expected_shapes` says which type code and type metadata the server
writes to the TABLE_MAP for a :class:`~.model.ColumnDef` (checked against
TABLE_MAPs written by MariaDB 10.11, 11.8 and MySQL 9.7 for every column type,
``tests/schema/test_sqltypes_live.py``); :func:`shape_matches` compares one
with a decoded :class:`~replica_client.binlog.events.ColumnInfo`, and
:func:`column_info` fills in what the TABLE_MAP lacks (name, signedness,
collation, ENUM/SET labels, SQL data type, visibility).

Shapes (``Field::binlog_type()`` / ``Field::save_field_metadata``; MariaDB
``sql/field.cc``, MySQL ``sql/field.cc``):

- integers, YEAR: the type code, no metadata; FLOAT 4, DOUBLE 8 (the size);
- DECIMAL(p,s): NEWDECIMAL, ``p << 8 | s``; BIT(n): ``(n % 8) << 8 | n // 8``;
- TIME/DATETIME/TIMESTAMP(fsp): TIME2/DATETIME2/TIMESTAMP2, ``fsp`` (a MariaDB
  with ``mysql56_temporal_format=OFF`` writes the old TIME/DATETIME/TIMESTAMP);
- CHAR(n)/BINARY(n): STRING of ``n * maxlen`` bytes, VARCHAR(n)/VARBINARY(n):
  VARCHAR with that byte length (``maxlen``: the character set's bytes per
  character at most); MariaDB COMPRESSED: VARCHAR_COMPRESSED, one byte more;
- ENUM/SET: STRING of ENUM/SET, the value's bytes (1-2 / 1, 2, 3, 4 or 8);
- TEXT/BLOB kinds: BLOB with the length's bytes (1-4), MariaDB COMPRESSED
  text as BLOB_COMPRESSED; MySQL JSON: JSON, 4; MariaDB JSON is LONGTEXT;
- GEOMETRY kinds: GEOMETRY, 4; MySQL VECTOR(n): VECTOR, 4; MariaDB VECTOR(n):
  VARCHAR of ``4 * n`` binary bytes; MariaDB UUID, INET6, INET4: STRING of
  16, 16 and 4 binary bytes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Final

from ..binlog.charsets import charset_for_collation, charset_info, collation_id, collation_name
from ..binlog.columns import may_be_typed_binary
from ..binlog.constants import BINARY_COLLATION, ColumnType
from ..binlog.events import ColumnInfo, TableMapEvent
from ..binlog.table_map import real_string_type
from .model import (
    BLOB_TYPES,
    GEOMETRY_NAMES,
    GEOMETRY_TYPES,
    NUMERIC_TYPES,
    TEXT_TYPES,
    ColumnDef,
    TableDef,
)

__all__ = ["Shape", "column_info", "expected_shapes", "shape_matches", "table_def_from_map"]

T = ColumnType


@dataclass(frozen=True, slots=True)
class Shape:
    """A column as a TABLE_MAP writes it.

    Attributes:
        type: the type code of the TABLE_MAP.
        real_type: the real type (ENUM/SET/STRING of a STRING column).
        meta: the metadata: for a STRING column its byte length (or an ENUM/SET's
            value bytes), else :attr:`ColumnInfo.meta`; None: not compared.
    """

    type: int
    real_type: int
    meta: int | None


def _plain(code: int, meta: int | None = 0) -> Shape:
    return Shape(code, code, meta)


_FIXED: Final[dict[str, Shape]] = {
    "tinyint": _plain(T.TINY),
    "smallint": _plain(T.SHORT),
    "mediumint": _plain(T.INT24),
    "int": _plain(T.LONG),
    "integer": _plain(T.LONG),
    "bigint": _plain(T.LONGLONG),
    "year": _plain(T.YEAR),
    "float": _plain(T.FLOAT, 4),
    "double": _plain(T.DOUBLE, 8),
    "date": _plain(T.DATE),
}
_BLOB_BYTES: Final = {"tiny": 1, "": 2, "medium": 3, "long": 4}
_TEMPORAL: Final = {
    "time": (T.TIME2, T.TIME),
    "datetime": (T.DATETIME2, T.DATETIME),
    "timestamp": (T.TIMESTAMP2, T.TIMESTAMP),
}
#: MariaDB's types over a fixed binary string: DATA_TYPE -> bytes.
_MARIADB_BINARY: Final = {"uuid": 16, "inet6": 16, "inet4": 4}


def _maxlen(col: ColumnDef, mariadb: bool, version: tuple[int, int]) -> int | None:
    if col.charset is None:
        return None
    info = charset_info(col.charset, mariadb, version)
    return info[0] if info is not None else None


def _set_bytes(labels: int) -> int:
    n = (labels + 7) // 8
    return 8 if n > 4 else n


def expected_shapes(
    col: ColumnDef, mariadb: bool, version: tuple[int, int] = (99, 0)
) -> tuple[Shape, ...] | None:
    """The shapes the server may write for ``col`` (the first is the usual one); None
    when this module cannot tell (a type it does not know)."""
    kind = col.data_type
    fixed = _FIXED.get(kind)
    if fixed is not None:
        return (fixed,)
    if kind == "decimal":
        if col.precision is None or col.scale is None:
            return (Shape(T.NEWDECIMAL, T.NEWDECIMAL, None),)
        return (_plain(T.NEWDECIMAL, col.precision << 8 | col.scale),)
    if kind == "bit":
        n = col.length if col.length is not None else 1
        return (_plain(T.BIT, (n % 8) << 8 | n // 8),)
    if kind in _TEMPORAL:
        new, old = _TEMPORAL[kind]
        fsp = col.fsp or 0
        return (_plain(new, fsp), _plain(old, None))
    if kind in ("char", "binary", "varchar", "varbinary"):
        binary = kind in ("binary", "varbinary")
        per_char = 1 if binary else _maxlen(col, mariadb, version)
        length = None if per_char is None or col.length is None else col.length * per_char
        if kind in ("char", "binary"):
            return (Shape(T.STRING, T.STRING, length),)
        if col.compressed:
            return (_plain(T.VARCHAR_COMPRESSED, None if length is None else length + 1),)
        return (_plain(T.VARCHAR, length),)
    if kind == "enum":
        return (Shape(T.STRING, T.ENUM, 1 if len(col.labels) < 256 else 2),)
    if kind == "set":
        return (Shape(T.STRING, T.SET, _set_bytes(len(col.labels))),)
    if kind in TEXT_TYPES or kind in BLOB_TYPES:
        size = _BLOB_BYTES[kind.removesuffix("text").removesuffix("blob")]
        if col.compressed:
            return (_plain(T.BLOB_COMPRESSED, size),)
        return (_plain(T.BLOB, size),)
    if kind == "json":
        return (_plain(T.BLOB, 4),) if mariadb else (_plain(T.JSON, 4),)
    if kind in GEOMETRY_TYPES:
        return (_plain(T.GEOMETRY, 4),)
    if kind == "vector":
        if mariadb:
            return (_plain(T.VARCHAR, None if col.length is None else 4 * col.length),)
        return (_plain(T.VECTOR, 4),)
    if mariadb and kind in _MARIADB_BINARY:
        return (Shape(T.STRING, T.STRING, _MARIADB_BINARY[kind]),)
    return None


def shape_matches(info: ColumnInfo, shapes: tuple[Shape, ...]) -> bool:
    """True when the TABLE_MAP column ``info`` has one of ``shapes``."""
    for shape in shapes:
        if info.type != shape.type or info.real_type != shape.real_type:
            continue
        if shape.meta is None:
            return True
        meta = real_string_type(info.meta)[1] if info.type == T.STRING else info.meta
        if meta == shape.meta:
            return True
    return False


def _collation(col: ColumnDef, mariadb: bool, version: tuple[int, int]) -> int | None:
    if col.collation is not None:
        known = collation_id(col.collation, mariadb)
        if known is not None:
            return known[0]
    if col.charset is not None:
        if col.charset.lower() == "binary":
            return BINARY_COLLATION
        info = charset_info(col.charset, mariadb, version)
        if info is not None:
            known = collation_id(info[1], mariadb)
            if known is not None:
                return known[0]
    return None


def column_info(
    info: ColumnInfo, col: ColumnDef, mariadb: bool, version: tuple[int, int] = (99, 0)
) -> ColumnInfo:
    """``info`` (a TABLE_MAP's column) with what ``col`` adds where the TABLE_MAP is silent.

    What the TABLE_MAP says wins (a FULL-metadata TABLE_MAP keeps its own name,
    signedness, collation and labels). The SQL data type is set where it changes
    how values read: on columns that may be MariaDB's UUID, INET4, INET6 or VECTOR
    (binary strings in the TABLE_MAP).
    """
    changes: dict[str, object] = {}
    if may_be_typed_binary(info) or (mariadb and col.data_type in (*_MARIADB_BINARY, "vector")):
        changes["data_type"] = col.data_type
    if info.name is None:
        changes["name"] = col.name
    if info.unsigned is None and col.data_type in NUMERIC_TYPES:
        changes["unsigned"] = col.unsigned
    if info.collation is None:
        binary_kind = col.data_type in ("binary", "varbinary") or col.data_type in BLOB_TYPES
        if binary_kind or (mariadb and col.data_type in (*_MARIADB_BINARY, "vector")):
            changes["collation"] = BINARY_COLLATION
        elif col.charset is not None:
            changes["collation"] = _collation(col, mariadb, version)
    if col.data_type == "enum" and info.enum_values is None:
        changes["enum_values"] = col.labels
    if col.data_type == "set" and info.set_values is None:
        changes["set_values"] = col.labels
    if col.invisible and info.visible:
        changes["visible"] = False
    if not changes:
        return info
    return dataclasses.replace(info, **changes)  # type: ignore[arg-type]


# -- a definition from a TABLE_MAP with full metadata ---------------------------------------------

_INT_NAMES: Final[dict[int, str]] = {
    T.TINY: "tinyint",
    T.SHORT: "smallint",
    T.INT24: "mediumint",
    T.LONG: "int",
    T.LONGLONG: "bigint",
}
_PLAIN_NAMES: Final[dict[int, str]] = {
    T.FLOAT: "float",
    T.DOUBLE: "double",
    T.YEAR: "year",
    T.DATE: "date",
}
_TEMPORAL_NAMES: Final[dict[int, str]] = {
    T.TIME2: "time",
    T.DATETIME2: "datetime",
    T.TIMESTAMP2: "timestamp",
    T.TIME: "time",
    T.DATETIME: "datetime",
    T.TIMESTAMP: "timestamp",
}
_BLOB_KIND: Final = {1: "tiny", 2: "", 3: "medium", 4: "long"}


def table_def_from_map(
    tm: TableMapEvent,
    mariadb: bool,
    version: tuple[int, int],
    previous: TableDef | None = None,
) -> TableDef | None:
    """The definition a TABLE_MAP with full metadata states (None when a column's type
    cannot be named from it). Where ``previous`` had a column of the same name and
    shape, its SQL data type is kept (UUID, INET6, ... look like BINARY(n) in the
    binlog)."""
    columns: list[ColumnDef] = []
    for c in tm.columns:
        col = _column_from_info(c, mariadb, version)
        if col is None:
            return None
        if previous is not None:
            i = previous.find(col.name)
            if i is not None:
                old = previous.columns[i]
                shapes = expected_shapes(old, mariadb, version)
                if shapes is not None and shape_matches(c, shapes):
                    col = dataclasses.replace(col, data_type=old.data_type, length=old.length)
        columns.append(col)
    names = [c.name for c in columns]
    charset = collation = None
    if previous is not None:
        charset, collation = previous.charset, previous.collation
    try:
        return TableDef(
            tm.schema,
            tm.table,
            tuple(columns),
            tuple(names[i] for i in tm.primary_key),
            charset,
            collation,
        )
    except ValueError:
        return None


def _column_from_info(c: ColumnInfo, mariadb: bool, version: tuple[int, int]) -> ColumnDef | None:
    assert c.name is not None
    name, t, meta = c.name, c.type, c.meta
    base: dict[str, Any] = {"name": name, "nullable": c.nullable, "invisible": not c.visible}
    if t in _INT_NAMES:
        return ColumnDef(data_type=_INT_NAMES[t], unsigned=bool(c.unsigned), **base)
    if t in _PLAIN_NAMES:  # YEAR's SIGNEDNESS bit is always set: it has no UNSIGNED attribute
        unsigned = bool(c.unsigned) and t in (T.FLOAT, T.DOUBLE)
        return ColumnDef(data_type=_PLAIN_NAMES[t], unsigned=unsigned, **base)
    if t == T.NEWDECIMAL:
        return ColumnDef(
            data_type="decimal",
            precision=meta >> 8,
            scale=meta & 0xFF,
            unsigned=bool(c.unsigned),
            **base,
        )
    if t == T.BIT:
        return ColumnDef(data_type="bit", length=(meta & 0xFF) * 8 + (meta >> 8), **base)
    if t in _TEMPORAL_NAMES:
        return ColumnDef(data_type=_TEMPORAL_NAMES[t], fsp=meta if t in (17, 18, 19) else 0, **base)
    charset = charset_for_collation(c.collation)
    collation = None if c.collation is None else collation_name(c.collation, mariadb)
    binary = c.collation == BINARY_COLLATION
    text: dict[str, Any] = {} if binary else {"charset": charset, "collation": collation}
    if t == T.STRING:
        real, length = real_string_type(meta)
        if real == T.ENUM:
            return ColumnDef(data_type="enum", labels=c.enum_values or (), **text, **base)
        if real == T.SET:
            return ColumnDef(data_type="set", labels=c.set_values or (), **text, **base)
        per_char = _per_char(charset, mariadb, version)
        if binary:
            return ColumnDef(data_type="binary", length=length, **base)
        if per_char is None or length % per_char:
            return None
        return ColumnDef(data_type="char", length=length // per_char, **text, **base)
    if t in (T.VARCHAR, T.VAR_STRING, T.VARCHAR_COMPRESSED):
        compressed = t == T.VARCHAR_COMPRESSED
        length = meta - 1 if compressed else meta
        if binary:
            return ColumnDef(data_type="varbinary", length=length, compressed=compressed, **base)
        per_char = _per_char(charset, mariadb, version)
        if per_char is None or length % per_char:
            return None
        kind = "varchar"
        return ColumnDef(
            data_type=kind, length=length // per_char, compressed=compressed, **text, **base
        )
    if t in (T.BLOB, T.BLOB_COMPRESSED) and meta in _BLOB_KIND:
        kind = _BLOB_KIND[meta] + ("blob" if binary else "text")
        return ColumnDef(data_type=kind, compressed=t == T.BLOB_COMPRESSED, **text, **base)
    if t == T.JSON:
        return ColumnDef(data_type="json", **base)
    if t == T.GEOMETRY:
        g = c.geometry_type or 0
        kind = GEOMETRY_NAMES[g] if 0 <= g < len(GEOMETRY_NAMES) else "geometry"
        if not mariadb and kind == "geometrycollection":
            kind = "geomcollection"
        return ColumnDef(data_type=kind, **base)
    if t == T.VECTOR:
        return ColumnDef(data_type="vector", length=c.dimensions, **base)
    return None


def _per_char(charset: str | None, mariadb: bool, version: tuple[int, int]) -> int | None:
    if charset is None:
        return None
    info = charset_info(charset, mariadb, version)
    return info[0] if info is not None else None
