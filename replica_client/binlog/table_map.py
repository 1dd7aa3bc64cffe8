"""TABLE_MAP_EVENT and its optional metadata. No I/O.

Layout (MariaDB KB "TABLE_MAP_EVENT"; MySQL ``Table_map_log_event``):

    post-header: table_id u48 (u32 when the FDE's post-header length is 6) | flags u16
    body:        schema_len u8 | schema | 0x00 | table_len u8 | table | 0x00
                 column_count packed | column_types u8[count]
                 metadata_len packed | metadata (per-type, see _META_LEN)
                 null_bitmap ((count + 7) / 8 bytes, bit i = column i nullable)
                 optional metadata: repeated (type u8 | length packed | value)

Optional metadata (``binlog_row_metadata``): each field lists values for a
subset of the columns, in column order; which subset follows the server
(``Table_map_log_event::init_*_field``), checked against TABLE_MAPs written by
MariaDB 10.11, MariaDB 11.8 and MySQL 9.7 (``tests/binlog/test_table_map.py``):

- SIGNEDNESS: one bit per numeric column, most significant bit first. MariaDB
  counts every field whose ``binlog_type_info()`` carries a signedness (the
  ``Field_num`` family), MySQL every ``is_numeric_type()`` column: TINY, SHORT,
  INT24, LONG, LONGLONG, FLOAT, DOUBLE, DECIMAL, NEWDECIMAL and YEAR (a
  ``Field_tiny`` underneath, always flagged unsigned). BIT is not counted.
- DEFAULT_CHARSET / COLUMN_CHARSET: character columns, i.e. CHAR/VARCHAR/
  BINARY/VARBINARY/TEXT/BLOB (MariaDB's COMPRESSED ones too) and MySQL VECTOR,
  not ENUM/SET (they have their own pair of fields) and not MySQL JSON.
  MariaDB also counts GEOMETRY (a BLOB underneath) and writes UUID, INET4,
  INET6 (CHAR with the binary charset) and VECTOR (VARCHAR, binary) as the
  character columns they are stored as.
- ENUM_STR_VALUE / SET_STR_VALUE / ENUM_AND_SET_*_CHARSET: ENUM and SET columns.
- GEOMETRY_TYPE: GEOMETRY columns; VECTOR_DIMENSIONALITY: MySQL VECTOR columns.
- COLUMN_NAME and COLUMN_VISIBILITY: every column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ..codec import need, read_lenenc_int, server_text, u8, u16, u32, u48
from ..errors import MalformedEventError
from .charsets import decoder_for_collation
from .constants import BINARY_COLLATION, ColumnType
from .events import ColumnInfo, TableMapEvent
from .header import EventHeader

__all__ = ["OptionalMetadata", "decode_table_map", "real_string_type"]

T = ColumnType

# Bytes of type metadata per column type in the TABLE_MAP metadata block.
_META_LEN: Final[dict[int, int]] = {
    T.FLOAT: 1,
    T.DOUBLE: 1,
    T.BLOB: 1,
    T.TINY_BLOB: 1,
    T.MEDIUM_BLOB: 1,
    T.LONG_BLOB: 1,
    T.GEOMETRY: 1,
    T.JSON: 1,
    T.VECTOR: 1,
    T.TIME2: 1,
    T.DATETIME2: 1,
    T.TIMESTAMP2: 1,
    T.VARCHAR: 2,
    T.VARCHAR_COMPRESSED: 2,
    T.BLOB_COMPRESSED: 1,
    T.VAR_STRING: 2,
    T.BIT: 2,
    T.NEWDECIMAL: 2,
    T.STRING: 2,
    T.ENUM: 2,
    T.SET: 2,
    T.DECIMAL: 2,
}

# Types whose 2 metadata bytes are (byte0 << 8 | byte1) rather than little-endian.
_META_BIG_ENDIAN: Final = frozenset({T.BIT, T.NEWDECIMAL, T.STRING, T.ENUM, T.SET, T.DECIMAL})

# Columns with a SIGNEDNESS bit (see the module docstring): YEAR included.
_NUMERIC: Final = frozenset(
    {
        T.TINY,
        T.SHORT,
        T.INT24,
        T.LONG,
        T.LONGLONG,
        T.NEWDECIMAL,
        T.FLOAT,
        T.DOUBLE,
        T.DECIMAL,
        T.YEAR,
    }
)
# MySQL 9 counts VECTOR (a binary string underneath) among the character
# columns of DEFAULT_CHARSET / COLUMN_CHARSET (seen in vector.binlog, 9.0).
_CHARACTER: Final = frozenset(
    {
        T.STRING,
        T.VAR_STRING,
        T.VARCHAR,
        T.BLOB,
        T.TINY_BLOB,
        T.MEDIUM_BLOB,
        T.LONG_BLOB,
        T.VECTOR,
        T.VARCHAR_COMPRESSED,
        T.BLOB_COMPRESSED,
    }
)


class OptionalMetadata:
    """Optional-metadata field types (``enum_optional_metadata_field_type``)."""

    SIGNEDNESS: Final = 1
    DEFAULT_CHARSET: Final = 2
    COLUMN_CHARSET: Final = 3
    COLUMN_NAME: Final = 4
    SET_STR_VALUE: Final = 5
    ENUM_STR_VALUE: Final = 6
    GEOMETRY_TYPE: Final = 7
    SIMPLE_PRIMARY_KEY: Final = 8
    PRIMARY_KEY_WITH_PREFIX: Final = 9
    ENUM_AND_SET_DEFAULT_CHARSET: Final = 10
    ENUM_AND_SET_COLUMN_CHARSET: Final = 11
    COLUMN_VISIBILITY: Final = 12
    VECTOR_DIMENSIONALITY: Final = 13


def real_string_type(meta: int) -> tuple[int, int]:
    """Resolve a STRING column's metadata into (real type, max length / pack length).

    The server folds the high bits of CHAR lengths > 255 into the type byte:
    when ``(byte0 & 0x30) != 0x30`` the real type is ``byte0 | 0x30`` and the
    length gains ``((byte0 & 0x30) ^ 0x30) << 4``.
    """
    byte0, byte1 = meta >> 8, meta & 0xFF
    if byte0 and (byte0 & 0x30) != 0x30:
        return byte0 | 0x30, byte1 | (((byte0 & 0x30) ^ 0x30) << 4)
    return (byte0 or T.STRING), byte1


@dataclass(slots=True)
class _Col:
    """Mutable column description while the optional metadata is applied."""

    type: int
    real_type: int
    meta: int
    nullable: bool
    name: str | None = None
    unsigned: bool | None = None
    collation: int | None = None
    enum_values: tuple[bytes, ...] | None = None
    set_values: tuple[bytes, ...] | None = None
    geometry_type: int | None = None
    visible: bool = True
    dimensions: int | None = None

    def labels(self, raw: tuple[bytes, ...] | None, mariadb: bool) -> tuple[str, ...] | None:
        # ENUM/SET labels are in the column's charset (known only once every
        # optional-metadata field was read); binary or no charset: server text.
        # Labels that are not text in their charset (or a charset this decoder
        # does not know) are dropped: values stay indexes / bit masks.
        if raw is None:
            return None
        decode = decoder_for_collation(self.collation, mariadb)
        if decode is None:
            if self.collation not in (None, BINARY_COLLATION):
                return None
            decode = server_text
        try:
            return tuple(decode(v) for v in raw)
        except UnicodeDecodeError:
            return None


def decode_table_map(
    header: EventHeader,
    view: memoryview,
    pos: int,
    end: int,
    post_header_len: int,
    mariadb: bool,
    *,
    old_layout: bool = False,
) -> TableMapEvent:
    """Decode a TABLE_MAP body from ``pos`` to ``end`` (checksum excluded).

    ``old_layout``: the log is from a MySQL 5.1/5.2 pre-GA tree, whose TABLE_MAP
    may end right after the column types (no metadata, no null bitmap: every
    column is then taken as nullable with no type metadata).
    """
    if post_header_len == 6:
        table_id = u32(view, pos)
        pos += 4
    else:
        table_id = u48(view, pos)
        pos += 6
    table_flags = u16(view, pos)
    pos += 2
    schema, pos = _name(view, pos)
    table, pos = _name(view, pos)
    count, pos = read_lenenc_int(view, pos)
    need(view, pos, count, "column types")
    types = bytes(view[pos : pos + count])
    pos += count
    if old_layout and pos == end:
        cols_old = tuple(
            ColumnInfo(index=i, type=t, real_type=t, meta=0, nullable=True)
            for i, t in enumerate(types)
        )
        return TableMapEvent(header, table_id, table_flags, schema, table, cols_old)
    meta_len, pos = read_lenenc_int(view, pos)
    need(view, pos, meta_len, "column metadata")
    meta_end = pos + meta_len
    metas: list[int] = []
    for t in types:
        n = _META_LEN.get(t, 0)
        if pos + n > meta_end:
            raise MalformedEventError(
                "column metadata shorter than the column types need", offset=pos
            )
        if n == 1:
            metas.append(view[pos])
        elif n == 2:
            metas.append(
                (view[pos] << 8 | view[pos + 1]) if t in _META_BIG_ENDIAN else u16(view, pos)
            )
        else:
            metas.append(0)
        pos += n
    pos = meta_end
    null_len = (count + 7) >> 3
    need(view, pos, null_len, "null bitmap")
    nulls = int.from_bytes(view[pos : pos + null_len], "little")
    pos += null_len
    if pos > end:
        raise MalformedEventError("TABLE_MAP body overruns the event", offset=pos)

    cols: list[_Col] = []
    for i, (t, m) in enumerate(zip(types, metas, strict=True)):
        real, meta = t, m
        if t == T.STRING:
            real, length = real_string_type(m)
            # Keep the byte layout: the reader needs (real type, length).
            meta = (real << 8) | (length & 0xFF) if real in (T.ENUM, T.SET) else m
        cols.append(_Col(t, real, meta, bool((nulls >> i) & 1)))

    primary_key: tuple[int, ...] = ()
    pk_prefixes: tuple[tuple[int, int], ...] = ()
    unknown: list[tuple[int, bytes]] = []
    while pos < end:
        field_type = view[pos]
        length, pos = read_lenenc_int(view, pos + 1)
        if pos + length > end:
            raise MalformedEventError("optional metadata field overruns the event", offset=pos)
        fend = pos + length
        if field_type == OptionalMetadata.SIGNEDNESS:
            _apply_signedness(cols, view, pos, fend)
        elif field_type == OptionalMetadata.DEFAULT_CHARSET:
            _apply_default_charset(_character_cols(cols, mariadb), view, pos, fend)
        elif field_type == OptionalMetadata.COLUMN_CHARSET:
            _apply_column_charset(_character_cols(cols, mariadb), view, pos, fend)
        elif field_type == OptionalMetadata.ENUM_AND_SET_DEFAULT_CHARSET:
            _apply_default_charset(_enum_set_cols(cols), view, pos, fend)
        elif field_type == OptionalMetadata.ENUM_AND_SET_COLUMN_CHARSET:
            _apply_column_charset(_enum_set_cols(cols), view, pos, fend)
        elif field_type == OptionalMetadata.COLUMN_NAME:
            names = _strings(view, pos, fend)
            for col, name in zip(cols, names, strict=False):
                col.name = name
        elif field_type == OptionalMetadata.SET_STR_VALUE:
            values = _string_lists(view, pos, fend)
            for col, vals in zip((c for c in cols if c.real_type == T.SET), values, strict=False):
                col.set_values = vals
        elif field_type == OptionalMetadata.ENUM_STR_VALUE:
            values = _string_lists(view, pos, fend)
            for col, vals in zip((c for c in cols if c.real_type == T.ENUM), values, strict=False):
                col.enum_values = vals
        elif field_type == OptionalMetadata.GEOMETRY_TYPE:
            geo = (c for c in cols if c.type == T.GEOMETRY)
            for col, value in zip(geo, _packed_ints(view, pos, fend), strict=False):
                col.geometry_type = value
        elif field_type == OptionalMetadata.SIMPLE_PRIMARY_KEY:
            primary_key = tuple(_packed_ints(view, pos, fend))
            pk_prefixes = tuple((c, 0) for c in primary_key)
        elif field_type == OptionalMetadata.PRIMARY_KEY_WITH_PREFIX:
            ints = _packed_ints(view, pos, fend)
            pk_prefixes = tuple(zip(ints[::2], ints[1::2], strict=False))
            primary_key = tuple(c for c, _ in pk_prefixes)
        elif field_type == OptionalMetadata.COLUMN_VISIBILITY:
            bits = int.from_bytes(view[pos:fend], "big")
            nbits = (fend - pos) * 8
            for i, col in enumerate(cols[:nbits]):
                col.visible = bool((bits >> (nbits - 1 - i)) & 1)
        elif field_type == OptionalMetadata.VECTOR_DIMENSIONALITY:
            vec = (c for c in cols if c.type == T.VECTOR)
            for col, value in zip(vec, _packed_ints(view, pos, fend), strict=False):
                col.dimensions = value
        else:
            unknown.append((field_type, bytes(view[pos:fend])))
        pos = fend

    for i in primary_key:
        if i >= count:
            raise MalformedEventError(f"primary key column {i} out of range", offset=pos)
    columns = tuple(
        ColumnInfo(
            index=i,
            type=c.type,
            real_type=c.real_type,
            meta=c.meta,
            nullable=c.nullable,
            name=c.name,
            unsigned=c.unsigned,
            collation=c.collation,
            enum_values=c.labels(c.enum_values, mariadb),
            set_values=c.labels(c.set_values, mariadb),
            geometry_type=c.geometry_type,
            visible=c.visible,
            dimensions=c.dimensions,
        )
        for i, c in enumerate(cols)
    )
    return TableMapEvent(
        header,
        table_id,
        table_flags,
        schema,
        table,
        columns,
        primary_key,
        pk_prefixes,
        tuple(unknown),
    )


def _name(view: memoryview, pos: int) -> tuple[str, int]:
    n = u8(view, pos)
    need(view, pos + 1, n + 1, "name")
    return server_text(view[pos + 1 : pos + 1 + n]), pos + 2 + n


def _is_character(col: _Col, mariadb: bool) -> bool:
    if col.type == T.STRING:
        return col.real_type not in (T.ENUM, T.SET)
    # MariaDB counts GEOMETRY (a BLOB underneath) as a character column.
    return col.type in _CHARACTER or (mariadb and col.type == T.GEOMETRY)


def _character_cols(cols: list[_Col], mariadb: bool) -> list[_Col]:
    return [c for c in cols if _is_character(c, mariadb)]


def _enum_set_cols(cols: list[_Col]) -> list[_Col]:
    return [c for c in cols if c.real_type in (T.ENUM, T.SET)]


def _apply_signedness(cols: list[_Col], view: memoryview, pos: int, end: int) -> None:
    # One bit per numeric column, most significant bit first.
    numeric = [c for c in cols if c.type in _NUMERIC]
    for i, col in enumerate(numeric):
        byte = pos + (i >> 3)
        if byte >= end:
            raise MalformedEventError("SIGNEDNESS bitmap too short", offset=byte)
        col.unsigned = bool(view[byte] & (0x80 >> (i & 7)))


def _apply_default_charset(cols: list[_Col], view: memoryview, pos: int, end: int) -> None:
    # default collation, then (column index among `cols`, collation) exceptions.
    default, pos = read_lenenc_int(view, pos)
    for col in cols:
        col.collation = default
    while pos < end:
        idx, pos = read_lenenc_int(view, pos)
        coll, pos = read_lenenc_int(view, pos)
        if idx >= len(cols):
            raise MalformedEventError(f"charset for column {idx} out of range", offset=pos)
        cols[idx].collation = coll


def _apply_column_charset(cols: list[_Col], view: memoryview, pos: int, end: int) -> None:
    for col, coll in zip(cols, _packed_ints(view, pos, end), strict=False):
        col.collation = coll


def _packed_ints(view: memoryview, pos: int, end: int) -> list[int]:
    out = []
    while pos < end:
        value, pos = read_lenenc_int(view, pos)
        out.append(value)
    if pos > end:
        raise MalformedEventError("packed integer overruns its metadata field", offset=pos)
    return out


def _strings(view: memoryview, pos: int, end: int) -> list[str]:
    out = []
    while pos < end:
        n, pos = read_lenenc_int(view, pos)
        if pos + n > end:
            raise MalformedEventError("string overruns its metadata field", offset=pos)
        out.append(server_text(view[pos : pos + n]))
        pos += n
    return out


def _string_lists(view: memoryview, pos: int, end: int) -> list[tuple[bytes, ...]]:
    out = []
    while pos < end:
        count, pos = read_lenenc_int(view, pos)
        values = []
        for _ in range(count):
            n, pos = read_lenenc_int(view, pos)
            if pos + n > end:
                raise MalformedEventError("string overruns its metadata field", offset=pos)
            values.append(bytes(view[pos : pos + n]))
            pos += n
        out.append(tuple(values))
    return out
