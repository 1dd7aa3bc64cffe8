"""The typed table's struct layout (``typed=true``): the Spark type of each column.

:func:`typed_column` is the one place that says which Spark type a column of a
TABLE_MAP gets (the mapping is tabled in :mod:`replica_client.spark.typed`).
No pyspark or pyarrow import.

The schema is known before reading, from the same table definitions the
executors decode with (:mod:`replica_client.spark.history`): a stream takes
the table's definition in the schema history valid at the query's start
(:func:`history_layout`; read from the primary, or option ``schemaHistory``'s
file), a batch over files the table's first TABLE_MAP in the files, completed
by the history given (:func:`file_layout`; the definition at the start of the
first file when the files hold no row of the table). Without a history
(``schemaHistory=off``) a stream asks the primary's
``information_schema.COLUMNS`` (:func:`stream_layout`) and both need
``binlog_row_metadata=FULL``, as the TABLE_MAPs are then read as the binlog has
them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ..binlog.columns import typed_binary_converter
from ..binlog.constants import BINARY_COLLATION, ColumnType
from ..binlog.events import ColumnInfo, TableMapEvent
from ..config import DecoderOptions
from ..errors import ConfigError, UnsupportedError
from ..schema import SchemaHistory, TableDef, Unproven
from ..snapshot import GEOMETRY_TYPES
from .options import SourceOptions

__all__ = [
    "COLUMNS_SQL",
    "TypedColumn",
    "check_row_image",
    "columns_from_information_schema",
    "definition_layout",
    "file_layout",
    "history_layout",
    "stream_layout",
    "typed_column",
    "typed_columns",
]

T = ColumnType


@dataclass(frozen=True, slots=True)
class TypedColumn:
    """One field of the typed struct: the column's name, Spark type, and value kind."""

    name: str
    #: Spark's ``DataType.simpleString()`` of the field: ``int``, ``decimal(20,0)``, ...
    spark: str
    #: How a decoded value becomes the Arrow value (a key of ``_ACCEPTS`` in ``typed``).
    kind: str
    #: SET labels in definition order (kind ``set``).
    labels: tuple[str, ...] = ()


_INT_BITS: Final[dict[int, int]] = {T.TINY: 8, T.SHORT: 16, T.INT24: 24, T.LONG: 32, T.LONGLONG: 64}
_TEXT_TYPES: Final = frozenset(
    {
        T.VARCHAR,
        T.VAR_STRING,
        T.STRING,
        T.TINY_BLOB,
        T.MEDIUM_BLOB,
        T.LONG_BLOB,
        T.BLOB,
        T.VARCHAR_COMPRESSED,
        T.BLOB_COMPRESSED,
    }
)
#: Column types with one fixed (Spark type, value kind).
_FIXED: Final[dict[int, tuple[str, str]]] = {
    T.FLOAT: ("float", "float"),
    T.DOUBLE: ("double", "float"),
    T.YEAR: ("int", "int"),
    T.DATE: ("date", "date"),
    T.NEWDATE: ("date", "date"),
    T.TIME: ("interval day to second", "time"),
    T.TIME2: ("interval day to second", "time"),
    T.DATETIME: ("timestamp_ntz", "datetime"),
    T.DATETIME2: ("timestamp_ntz", "datetime"),
    T.TIMESTAMP: ("timestamp", "timestamp"),
    T.TIMESTAMP2: ("timestamp", "timestamp"),
    T.JSON: ("string", "json"),
    T.GEOMETRY: ("binary", "geometry"),
}
_MAX_SPARK_PRECISION: Final = 38
#: MariaDB's types over binary strings whose decoded values (a schema history gives
#: their SQL type) are read as their text: ``uuid.UUID``, ``ipaddress`` addresses.
_TEXT_VALUE_TYPES: Final = frozenset({"uuid", "inet4", "inet6"})


def _integer(bits: int, unsigned: bool) -> str:
    """The smallest Spark integer type that holds every value of ``bits`` bits."""
    magnitude = bits if unsigned else bits - 1  # every value is below 2**magnitude
    if magnitude <= 31:
        return "int"
    if magnitude <= 63:
        return "bigint"
    return "decimal(20,0)"


def _needs_full(table: str, column: int, what: str) -> ConfigError:
    return ConfigError(
        f"typed=true needs binlog_row_metadata=FULL: the TABLE_MAP of {table} does not give "
        f"the {what} of column {column + 1}"
    )


def typed_column(col: ColumnInfo, table: str = "") -> TypedColumn:
    """The struct field of one TABLE_MAP column (``table``: ``schema.table``, for errors).

    Raises:
        ConfigError: the TABLE_MAP lacks what the type needs (names, signedness,
            charset, ENUM/SET labels: ``binlog_row_metadata=FULL``).
        UnsupportedError: a column type without a typed form (VECTOR, ...).
    """
    if col.name is None:
        raise _needs_full(table, col.index, "name")
    name, t = col.name, col.real_type
    sql_type = (col.data_type or "").lower()
    if sql_type in _TEXT_VALUE_TYPES and typed_binary_converter(col) is not None:
        return TypedColumn(name, "string", "text_value")
    if sql_type == "vector" and typed_binary_converter(col) is not None:
        raise UnsupportedError(
            f"typed=true: column {name!r} of {table} has type VECTOR, which has no typed form"
        )
    if t in _INT_BITS:
        if col.unsigned is None:
            raise _needs_full(table, col.index, "signedness")
        return TypedColumn(name, _integer(_INT_BITS[t], col.unsigned), "int")
    fixed = _FIXED.get(t)
    if fixed is not None:
        return TypedColumn(name, *fixed)
    if t == T.NEWDECIMAL:
        precision, scale = col.meta >> 8, col.meta & 0xFF
        if precision <= _MAX_SPARK_PRECISION:
            return TypedColumn(name, f"decimal({precision},{scale})", "decimal")
        return TypedColumn(name, "string", "decimal_text")
    if t == T.BIT:
        return TypedColumn(name, _integer((col.meta & 0xFF) * 8 + (col.meta >> 8), True), "int")
    if t == T.ENUM:
        if col.enum_values is None:
            raise _needs_full(table, col.index, "ENUM labels")
        return TypedColumn(name, "string", "enum")
    if t == T.SET:
        if col.set_values is None:
            raise _needs_full(table, col.index, "SET labels")
        return TypedColumn(name, "string", "set", col.set_values)
    if t in _TEXT_TYPES:
        if col.collation is None:
            raise _needs_full(table, col.index, "character set")
        if col.collation == BINARY_COLLATION:
            return TypedColumn(name, "binary", "binary")
        return TypedColumn(name, "string", "text")
    try:
        type_name = ColumnType(t).name
    except ValueError:
        type_name = str(t)
    raise UnsupportedError(
        f"typed=true: column {name!r} of {table} has type {type_name}, which has no typed form"
    )


def typed_columns(table_map: TableMapEvent) -> tuple[TypedColumn, ...]:
    """The struct fields of a table, in column order (see :func:`typed_column`)."""
    name = f"{table_map.schema}.{table_map.table}"
    return tuple(typed_column(col, name) for col in table_map.columns)


# -- the schema before reading -----------------------------------------------------------

#: The columns of one table, as :func:`columns_from_information_schema` reads them.
COLUMNS_SQL: Final = (
    "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, NUMERIC_PRECISION, NUMERIC_SCALE, "
    "CHARACTER_SET_NAME FROM information_schema.COLUMNS "
    "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION"
)

#: information_schema DATA_TYPE -> the type code the server writes in the TABLE_MAP.
_SQL_TYPES: Final[dict[str, int]] = {
    "tinyint": T.TINY,
    "smallint": T.SHORT,
    "mediumint": T.INT24,
    "int": T.LONG,
    "integer": T.LONG,
    "bigint": T.LONGLONG,
    "float": T.FLOAT,
    "double": T.DOUBLE,
    "real": T.DOUBLE,
    "decimal": T.NEWDECIMAL,
    "numeric": T.NEWDECIMAL,
    "bit": T.BIT,
    "year": T.YEAR,
    "date": T.DATE,
    "time": T.TIME2,
    "datetime": T.DATETIME2,
    "timestamp": T.TIMESTAMP2,
    "char": T.STRING,
    "binary": T.STRING,
    "varchar": T.VARCHAR,
    "varbinary": T.VARCHAR,
    **dict.fromkeys(("tinytext", "text", "mediumtext", "longtext"), T.BLOB),
    **dict.fromkeys(("tinyblob", "blob", "mediumblob", "longblob"), T.BLOB),
    "enum": T.ENUM,
    "set": T.SET,
    "json": T.JSON,
    **dict.fromkeys(GEOMETRY_TYPES, T.GEOMETRY),
    # MariaDB's UUID, INET6 and INET4 are BINARY(16) / BINARY(4) in the TABLE_MAP.
    **dict.fromkeys(("uuid", "inet6", "inet4"), T.STRING),
    "vector": T.VECTOR,
}
_BINARY_SQL_TYPES: Final = frozenset({"uuid", "inet6", "inet4"})
_LABEL: Final = re.compile(r"'((?:[^']|'')*)'")


def _labels(column_type: str) -> tuple[str, ...]:
    """The labels of ``enum('a','b')`` / ``set(...)``."""
    return tuple(m.replace("''", "'") for m in _LABEL.findall(column_type))


def columns_from_information_schema(
    rows: Sequence[Sequence[Any]], table: str
) -> tuple[ColumnInfo, ...]:
    """The ``ColumnInfo`` a FULL-metadata TABLE_MAP gives for these :data:`COLUMNS_SQL` rows.

    Only what :func:`typed_column` reads is filled in (type, the metadata of
    DECIMAL and BIT, signedness, binary or not, labels); the collation of a
    character column is not known here and is given as 0 (not binary).
    """
    out: list[ColumnInfo] = []
    for index, (name, data_type, column_type, precision, scale, charset) in enumerate(rows):
        sql_type = str(data_type).lower()
        code = _SQL_TYPES.get(sql_type)
        if code is None:
            raise UnsupportedError(
                f"typed=true: column {name!r} of {table} has type {sql_type}, "
                "which has no typed form"
            )
        full_type = str(column_type).lower()
        meta = 0
        if code == T.NEWDECIMAL:
            meta = (int(precision) << 8) | int(scale or 0)
        elif code == T.BIT:
            meta = ((int(precision) % 8) << 8) | (int(precision) // 8)
        binary = charset is None or sql_type in _BINARY_SQL_TYPES
        labels = _labels(str(column_type)) if code in (T.ENUM, T.SET) else None
        out.append(
            ColumnInfo(
                index=index,
                type=code,
                real_type=code,
                meta=meta,
                nullable=True,
                name=str(name),
                unsigned="unsigned" in full_type,
                collation=BINARY_COLLATION if binary else 0,
                enum_values=labels if code == T.ENUM else None,
                set_values=labels if code == T.SET else None,
            )
        )
    return tuple(out)


def stream_layout(
    opts: SourceOptions, query: Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]
) -> tuple[TypedColumn, ...]:
    """The struct fields of the typed table, asked of the primary (``query(sql, args)``).

    Raises:
        ConfigError: the primary does not log FULL row metadata and FULL row
            images, or the table is not there (or not visible to the user).
    """
    schema, table = opts.typed_table
    name = f"{schema}.{table}"
    metadata, image = (str(v).upper() for v in query(_SETTINGS_SQL, ())[0])
    if metadata != "FULL" or image != "FULL":
        raise ConfigError(
            f"typed=true needs binlog_row_metadata=FULL and binlog_row_image=FULL on the "
            f"primary {opts.address} (column names, signedness and every column of every "
            f"row image in the binlog); it has binlog_row_metadata={metadata}, "
            f"binlog_row_image={image}"
        )
    rows = query(COLUMNS_SQL, (schema, table))
    if not rows:
        raise ConfigError(
            f"typed=true: the primary {opts.address} has no table {name} that the user "
            f"{opts.user!r} can see (information_schema.COLUMNS shows the columns of tables "
            "the user has a privilege on)"
        )
    return tuple(typed_column(c, name) for c in columns_from_information_schema(rows, name))


_SETTINGS_SQL: Final = "SELECT @@GLOBAL.binlog_row_metadata, @@GLOBAL.binlog_row_image"


def file_layout(
    opts: SourceOptions,
    files: Sequence[Path],
    options: DecoderOptions,
    history: SchemaHistory | None = None,
    unproven: Unproven = "error",
) -> tuple[TypedColumn, ...]:
    """The struct fields of the typed table from its first TABLE_MAP in ``files``,
    completed by ``history`` (the schema history at the start of the first file)
    as the executors complete it; with a history and no row of the table in the
    files, the table's definition there.

    Raises:
        ConfigError: no TABLE_MAP of the table in the files (nor a definition), or
            one without column names (``binlog_row_metadata=FULL``, or a history).
        SchemaHistoryError: the history cannot prove the TABLE_MAP.
    """
    from dataclasses import replace

    from ..files import BinlogFileReader

    schema, table = opts.typed_table
    if history is not None:
        options = replace(options, decode_rows=False)
    reader = BinlogFileReader(files, options, schema_history=history, unproven=unproven)
    with reader:
        for event in reader:
            if isinstance(event, TableMapEvent) and (event.schema, event.table) == (schema, table):
                where = reader.event_position
                try:
                    return typed_columns(event)
                except ConfigError as exc:
                    raise ConfigError(
                        f"{exc} (binlog files: the first TABLE_MAP of {schema}.{table}, at "
                        f"{where}; the files were written without binlog_row_metadata=FULL"
                        + (
                            " and the schema history does not prove the table there)"
                            if history is not None
                            else ", and no schemaHistory was given)"
                        )
                    ) from None
    if history is not None:
        return history_layout(opts, history, "the schema history at the first file's start")
    raise ConfigError(
        f"typed=true: the binlog files have no row of {schema}.{table}: the typed schema "
        "is that of the table's first TABLE_MAP in the files"
    )


def _string_meta(real_type: int, length: int) -> int:
    """The TABLE_MAP metadata of a STRING column of ``length`` bytes (see
    ``binlog.table_map.real_string_type``: lengths above 255 fold into the type byte)."""
    byte0 = real_type ^ (((length >> 8) & 0x3) << 4)
    return byte0 << 8 | (length & 0xFF)


def definition_layout(
    definition: TableDef, mariadb: bool, version: tuple[int, int]
) -> tuple[TypedColumn, ...]:
    """The struct fields of a table definition (of a schema history): the fields of the
    TABLE_MAP the server writes for it, completed by it as the decoder completes one.

    Raises:
        UnsupportedError: a column type without a typed form.
    """
    from ..schema.sqltypes import column_info, expected_shapes

    name = f"{definition.schema}.{definition.name}"
    out: list[TypedColumn] = []
    for index, col in enumerate(definition.columns):
        shapes = expected_shapes(col, mariadb, version)
        if shapes is None:
            raise UnsupportedError(
                f"typed=true: column {col.name!r} of {name} has type {col.data_type}, "
                "which has no typed form"
            )
        shape = shapes[0]
        meta = shape.meta or 0
        if shape.type == T.STRING:
            meta = _string_meta(shape.real_type, meta)
        info = ColumnInfo(
            index=index, type=shape.type, real_type=shape.real_type, meta=meta, nullable=True
        )
        out.append(typed_column(column_info(info, col, mariadb, version), name))
    return tuple(out)


def history_layout(
    opts: SourceOptions, history: SchemaHistory, where: str = "the query's start"
) -> tuple[TypedColumn, ...]:
    """The struct fields of the typed table: its definition in ``history`` (``where``:
    the point it is valid at, for the error).

    Raises:
        ConfigError: the history holds no definition of the table.
    """
    from ..schema import Unknown

    schema, table = opts.typed_table
    state = history.tables.get((schema, table))
    if not isinstance(state, TableDef):
        # changed between the start and the moment it was read: its definition after
        # that DDL (a TABLE_MAP before it fails the query: the layout changed there)
        state = history.captured.get((schema, table), state)
    if isinstance(state, TableDef):
        return definition_layout(state, history.mariadb, history.version)
    why = (
        state.reason
        if isinstance(state, Unknown)
        else "it is not in it (no such table, or not visible to the user: it needs SELECT "
        "on the table)"
    )
    raise ConfigError(
        f"typed=true: the schema history at {where} has no definition of {schema}.{table}: {why}"
    )


def check_row_image(opts: SourceOptions, image: str) -> None:
    """typed=true needs every column of every row image (``binlog_row_image=FULL``).

    Raises:
        ConfigError: the primary's ``binlog_row_image`` is another.
    """
    if image.upper() != "FULL":
        raise ConfigError(
            f"typed=true needs binlog_row_image=FULL on the primary {opts.address} (every "
            f"column of every row image in the binlog); it has binlog_row_image={image}"
        )
