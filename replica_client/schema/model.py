"""Table definitions as the server knows them: what the binlog does not say. No I/O.

A :class:`TableDef` is one table's columns, in order, with what decoding needs
beyond the TABLE_MAP: names, signedness, character sets and collations,
ENUM/SET labels, the SQL data type (MariaDB's UUID, INET4, INET6 and VECTOR
are written to the binlog as binary strings), the primary key, generated and
invisible columns. Definitions come from ``information_schema`` (captured at a
binlog point, :mod:`replica_client.control`) or from DDL text
(:mod:`.ddl`), and are kept per binlog point by :class:`~.history.SchemaHistory`.

Every value here is frozen and has a JSON form (``to_json`` / ``from_json``)
that goes into checkpoints; the form is compact (defaults are left out) and
versioned by the history that holds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Final

__all__ = ["ColumnDef", "TableDef", "column_from_json", "table_from_json"]

#: Integer types (``unsigned`` applies), as information_schema.COLUMNS.DATA_TYPE spells them.
INTEGER_TYPES: Final = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint"})
#: Types with a signedness in the binlog's SIGNEDNESS metadata.
NUMERIC_TYPES: Final = INTEGER_TYPES | {"decimal", "float", "double", "year"}
TEXT_TYPES: Final = frozenset({"tinytext", "text", "mediumtext", "longtext"})
BLOB_TYPES: Final = frozenset({"tinyblob", "blob", "mediumblob", "longblob"})
#: The spatial types, indexed by the binlog's geometry type code (GEOMETRY_TYPE metadata).
GEOMETRY_NAMES: Final = (
    "geometry",
    "point",
    "linestring",
    "polygon",
    "multipoint",
    "multilinestring",
    "multipolygon",
    "geometrycollection",
)
#: The spatial types, with MySQL 8's spelling of GEOMETRYCOLLECTION.
GEOMETRY_TYPES: Final = frozenset({*GEOMETRY_NAMES, "geomcollection"})
#: Types whose values are text in a character set (ENUM/SET labels too).
CHARACTER_TYPES: Final = frozenset({"char", "varchar", "enum", "set"}) | TEXT_TYPES


@dataclass(frozen=True, slots=True)
class ColumnDef:
    """One column of a table definition.

    Attributes:
        name: the column's name.
        data_type: ``information_schema.COLUMNS.DATA_TYPE``, lower case (``"int"``,
            ``"varchar"``, ``"enum"``, ``"uuid"``, ``"json"``, ...; MariaDB's JSON is
            ``"longtext"``).
        unsigned: an UNSIGNED number.
        length: characters of CHAR/VARCHAR, bytes of BINARY/VARBINARY, bits of BIT,
            dimensions of VECTOR; None otherwise.
        precision, scale: of DECIMAL.
        fsp: fractional-second digits of TIME, DATETIME and TIMESTAMP.
        charset, collation: of a character column (ENUM and SET included); None
            for the others.
        labels: the members of an ENUM or SET, in definition order.
        nullable: NULL allowed.
        generated: a generated (virtual or stored) column.
        invisible: an invisible column (MariaDB INVISIBLE, MySQL INVISIBLE).
        compressed: a MariaDB COMPRESSED column.
    """

    name: str
    data_type: str
    unsigned: bool = False
    length: int | None = None
    precision: int | None = None
    scale: int | None = None
    fsp: int | None = None
    charset: str | None = None
    collation: str | None = None
    labels: tuple[str, ...] = ()
    nullable: bool = True
    generated: bool = False
    invisible: bool = False
    compressed: bool = False

    def renamed(self, name: str) -> ColumnDef:
        return replace(self, name=name)

    def to_json(self) -> dict[str, Any]:
        """The column as JSON: ``name`` and ``type`` always, other fields when not default."""
        out: dict[str, Any] = {"name": self.name, "type": self.data_type}
        for f in _OPTIONAL:
            value = getattr(self, f.name)
            if value != f.default:
                out[f.name] = list(value) if isinstance(value, tuple) else value
        return out


_OPTIONAL: Final = tuple(f for f in fields(ColumnDef) if f.name not in ("name", "data_type"))


def column_from_json(data: Mapping[str, Any]) -> ColumnDef:
    """The inverse of :meth:`ColumnDef.to_json`.

    Raises:
        KeyError, TypeError, ValueError: not a column's JSON form.
    """
    known = {f.name for f in _OPTIONAL}
    extra = set(data) - known - {"name", "type"}
    if extra:
        raise ValueError(f"unknown column fields {sorted(extra)}")
    kwargs: dict[str, Any] = {k: v for k, v in data.items() if k in known}
    if "labels" in kwargs:
        kwargs["labels"] = tuple(str(v) for v in kwargs["labels"])
    return ColumnDef(name=str(data["name"]), data_type=str(data["type"]), **kwargs)


@dataclass(frozen=True, slots=True)
class TableDef:
    """One table: its columns in order, primary key and default character set.

    Attributes:
        schema, name: the table's database and name.
        columns: every column, in the table's order (the TABLE_MAP's order).
        primary_key: the primary key's column names, in key order.
        charset, collation: the table's default (what a column added without
            one gets).
    """

    schema: str
    name: str
    columns: tuple[ColumnDef, ...]
    primary_key: tuple[str, ...] = ()
    charset: str | None = None
    collation: str | None = None
    _index: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index = self._index
        for i, col in enumerate(self.columns):
            key = col.name.lower()  # column names are case-insensitive
            if key in index:
                raise ValueError(f"column {col.name!r} twice in {self.schema}.{self.name}")
            index[key] = i

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"

    def find(self, name: str) -> int | None:
        """The index of column ``name`` (case-insensitive), or None."""
        return self._index.get(name.lower())

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema": self.schema,
            "name": self.name,
            "columns": [c.to_json() for c in self.columns],
        }
        if self.primary_key:
            out["primary_key"] = list(self.primary_key)
        if self.charset is not None:
            out["charset"] = self.charset
        if self.collation is not None:
            out["collation"] = self.collation
        return out


def table_from_json(data: Mapping[str, Any]) -> TableDef:
    """The inverse of :meth:`TableDef.to_json`.

    Raises:
        KeyError, TypeError, ValueError: not a table's JSON form.
    """
    return TableDef(
        schema=str(data["schema"]),
        name=str(data["name"]),
        columns=tuple(column_from_json(c) for c in data["columns"]),
        primary_key=tuple(str(c) for c in data.get("primary_key", ())),
        charset=data.get("charset"),
        collation=data.get("collation"),
    )
