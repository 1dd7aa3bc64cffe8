"""Column value readers for row images, chosen once per column. No I/O.

``reader_for(column)`` returns a function ``read(view, pos) -> (value, pos)``
for one non-NULL value of that column; the row decoder calls these in a tight
loop. Encodings follow the server's ``Field_*::pack`` functions and
``log_event_print_value`` (MariaDB ``sql/log_event_client.cc``):

=============  ==============================================================
TINY..LONGLONG little-endian, 1/2/3/4/8 bytes; sign from SIGNEDNESS metadata
FLOAT/DOUBLE   IEEE little-endian (FLOAT is returned as the exact float32 value)
NEWDECIMAL     binary decimal (see decimal.py), exact ``Decimal``
BIT            big-endian, ``(bits + 7) // 8`` bytes -> int
YEAR           1 byte; 0 stays 0, else 1900 + n
DATE           3 bytes LE: day 5 bits | month 4 bits | year
TIME2          3 bytes BE + fsp bytes, offset 0x800000 (sign), ``timedelta``
DATETIME2      5 bytes BE + fsp bytes: year*13+month 17 bits | day | h | m | s
TIMESTAMP2     4 bytes BE seconds + fsp bytes -> aware UTC ``datetime``
TIME/DATETIME  old formats: 3-byte HHMMSS, 8-byte YYYYMMDDhhmmss
TIMESTAMP      old format: 4 bytes LE seconds
VARCHAR        1- or 2-byte length (max length < 256 or not), bytes
STRING (CHAR)  as VARCHAR; ENUM 1-2 byte index; SET 1-8 byte bitmask
BLOB/TEXT      1-4 byte length (metadata), bytes
GEOMETRY       as BLOB; SRID u32 LE then WKB (an empty value stays ``b""``)
JSON (MySQL)   as BLOB; MySQL binary JSON (the document ``null`` is ``JSON_NULL``)
VECTOR         as BLOB; float32 LE values
*_COMPRESSED   MariaDB COMPRESSED columns: as VARCHAR/BLOB, then zlib-inflated
=============  ==============================================================

Character data is decoded with the column's charset when the TABLE_MAP says
it (``binlog_row_metadata`` FULL or MINIMAL); binary columns and columns of
unknown charset give ``bytes``. A value that is not valid in its charset is
given as ``bytes`` too, never altered.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import struct
import uuid
import zlib
from collections.abc import Callable
from typing import Any, Final

from ..errors import MalformedEventError
from .charsets import decoder_for_collation, encoding_for_collation
from .constants import BINARY_COLLATION, ColumnType
from .decimal import decode_decimal
from .events import ColumnInfo, Geometry, InvalidDate, InvalidDatetime
from .table_map import real_string_type

__all__ = [
    "ColumnReader",
    "geometry_value",
    "make_date",
    "make_datetime",
    "may_be_typed_binary",
    "reader_for",
    "text_reader",
    "typed_binary_converter",
]

#: Reads one non-NULL value at ``pos``; returns (value, position after it).
ColumnReader = Callable[[memoryview, int], tuple[Any, int]]

T = ColumnType
_UTC: Final = dt.UTC
_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_S24: Final = struct.Struct("<Hb")
_U24: Final = struct.Struct("<HB")
_BE_U24: Final = struct.Struct(">BH")
_BE_U32: Final = struct.Struct(">I")
_BE_U16: Final = struct.Struct(">H")
_BE_U40: Final = struct.Struct(">BI")
_LEN: Final = {1: struct.Struct("<B"), 2: struct.Struct("<H"), 3: _U24, 4: struct.Struct("<I")}


def _fixed(fmt: str) -> ColumnReader:
    s = struct.Struct(fmt)
    unpack_from, size = s.unpack_from, s.size

    def read(view: memoryview, pos: int) -> tuple[Any, int]:
        return unpack_from(view, pos)[0], pos + size

    return read


def _int24(view: memoryview, pos: int) -> tuple[int, int]:
    lo, hi = _S24.unpack_from(view, pos)
    return lo | (hi << 16), pos + 3


def _uint24(view: memoryview, pos: int) -> tuple[int, int]:
    lo, hi = _U24.unpack_from(view, pos)
    return lo | (hi << 16), pos + 3


_INTS: Final[dict[tuple[int, bool], ColumnReader]] = {
    (T.TINY, False): _fixed("<b"),
    (T.TINY, True): _fixed("<B"),
    (T.SHORT, False): _fixed("<h"),
    (T.SHORT, True): _fixed("<H"),
    (T.INT24, False): _int24,
    (T.INT24, True): _uint24,
    (T.LONG, False): _fixed("<i"),
    (T.LONG, True): _fixed("<I"),
    (T.LONGLONG, False): _fixed("<q"),
    (T.LONGLONG, True): _fixed("<Q"),
}


def _year(view: memoryview, pos: int) -> tuple[int, int]:
    v = view[pos]
    return (1900 + v if v else 0), pos + 1


def make_date(y: int, m: int, d: int) -> dt.date | InvalidDate:
    try:
        return dt.date(y, m, d)
    except ValueError:
        return InvalidDate(y, m, d)


def _date(view: memoryview, pos: int) -> tuple[dt.date | InvalidDate, int]:
    lo, hi = _U24.unpack_from(view, pos)
    v = lo | (hi << 16)
    return make_date(v >> 9, (v >> 5) & 15, v & 31), pos + 3


def make_datetime(
    y: int, mo: int, d: int, h: int, mi: int, s: int, us: int
) -> dt.datetime | InvalidDatetime:
    try:
        return dt.datetime(y, mo, d, h, mi, s, us)
    except ValueError:
        return InvalidDatetime(y, mo, d, h, mi, s, us)


def _frac_reader(fsp: int) -> Callable[[memoryview, int], tuple[int, int]]:
    """Fractional seconds of TIME2/DATETIME2/TIMESTAMP2: (fsp + 1) // 2 bytes BE."""
    if fsp <= 0:
        return lambda view, pos: (0, pos)
    if fsp <= 2:
        return lambda view, pos: (view[pos] * 10000, pos + 1)
    if fsp <= 4:
        return lambda view, pos: (_BE_U16.unpack_from(view, pos)[0] * 100, pos + 2)

    def frac3(view: memoryview, pos: int) -> tuple[int, int]:
        hi, lo = _BE_U24.unpack_from(view, pos)
        return (hi << 16) | lo, pos + 3

    return frac3


def _datetime2(fsp: int) -> ColumnReader:
    frac = _frac_reader(fsp)

    def read(view: memoryview, pos: int) -> tuple[Any, int]:
        hi, lo = _BE_U40.unpack_from(view, pos)
        packed = ((hi << 32) | lo) - 0x8000000000
        us, pos = frac(view, pos + 5)
        ymd = packed >> 17
        ym = ymd >> 5
        hms = packed & 0x1FFFF
        value = make_datetime(ym // 13, ym % 13, ymd & 31, hms >> 12, (hms >> 6) & 63, hms & 63, us)
        return value, pos

    return read


def _timestamp2(fsp: int) -> ColumnReader:
    frac = _frac_reader(fsp)

    def read(view: memoryview, pos: int) -> tuple[Any, int]:
        secs = _BE_U32.unpack_from(view, pos)[0]
        us, pos = frac(view, pos + 4)
        if secs == 0 and us == 0:
            return InvalidDatetime(0, 0, 0, 0, 0, 0, 0), pos
        return _EPOCH + dt.timedelta(seconds=secs, microseconds=us), pos

    return read


def _time2(fsp: int) -> ColumnReader:
    # my_time_packed_from_binary(): the integer part is offset by 0x800000 and
    # negative values with a fraction borrow one second from the integer part.
    nfrac = (fsp + 1) // 2

    def read(view: memoryview, pos: int) -> tuple[dt.timedelta, int]:
        hi, lo = _BE_U24.unpack_from(view, pos)
        intpart = ((hi << 16) | lo) - 0x800000
        if nfrac == 0:
            packed = intpart << 24
        elif nfrac == 1:
            f = view[pos + 3]
            if intpart < 0 and f:
                intpart += 1
                f -= 0x100
            packed = (intpart << 24) + f * 10000
        elif nfrac == 2:
            f = _BE_U16.unpack_from(view, pos + 3)[0]
            if intpart < 0 and f:
                intpart += 1
                f -= 0x10000
            packed = (intpart << 24) + f * 100
        else:
            fh, fl = _BE_U24.unpack_from(view, pos + 3)
            packed = (intpart << 24) + ((fh << 16) | fl)
        neg = packed < 0
        if neg:
            packed = -packed
        hms = packed >> 24
        us = packed & 0xFFFFFF
        value = dt.timedelta(
            hours=(hms >> 12) & 0x3FF, minutes=(hms >> 6) & 63, seconds=hms & 63, microseconds=us
        )
        return (-value if neg else value), pos + 3 + nfrac

    return read


def _time_old(view: memoryview, pos: int) -> tuple[dt.timedelta, int]:
    lo, hi = _S24.unpack_from(view, pos)
    v = lo | (hi << 16)
    neg = v < 0
    v = -v if neg else v
    value = dt.timedelta(hours=v // 10000, minutes=(v // 100) % 100, seconds=v % 100)
    return (-value if neg else value), pos + 3


def _datetime_old(view: memoryview, pos: int) -> tuple[Any, int]:
    v = struct.unpack_from("<Q", view, pos)[0]
    d, t = divmod(v, 1000000)
    value = make_datetime(
        d // 10000, (d // 100) % 100, d % 100, t // 10000, (t // 100) % 100, t % 100, 0
    )
    return value, pos + 8


def _timestamp_old(view: memoryview, pos: int) -> tuple[Any, int]:
    secs = struct.unpack_from("<I", view, pos)[0]
    if secs == 0:
        return InvalidDatetime(0, 0, 0, 0, 0, 0, 0), pos + 4
    return dt.datetime.fromtimestamp(secs, _UTC), pos + 4


def _bit(nbytes: int) -> ColumnReader:
    def read(view: memoryview, pos: int) -> tuple[int, int]:
        return int.from_bytes(view[pos : pos + nbytes], "big"), pos + nbytes

    return read


def _decimal(precision: int, scale: int) -> ColumnReader:
    def read(view: memoryview, pos: int) -> tuple[Any, int]:
        return decode_decimal(view, pos, precision, scale)

    return read


def text_reader(collation: int | None, mariadb: bool) -> Callable[[memoryview], Any]:
    """Turn a raw value into str (charset known) or bytes (binary/unknown)."""
    encoding = encoding_for_collation(collation, mariadb)
    if encoding is None:
        return bytes
    if encoding == "utf-8":

        def utf8(raw: memoryview) -> str | bytes:
            try:
                return str(raw, "utf-8")
            except UnicodeDecodeError:
                return bytes(raw)

        return utf8
    decode = decoder_for_collation(collation, mariadb)
    assert decode is not None

    def other(raw: memoryview) -> str | bytes:
        data = bytes(raw)
        try:
            return decode(data)
        except UnicodeDecodeError:
            return data

    return other


def _length_prefixed(prefix: int, convert: Callable[[memoryview], Any]) -> ColumnReader:
    unpack_len = _LEN[prefix].unpack_from
    if prefix == 3:

        def read3(view: memoryview, pos: int) -> tuple[Any, int]:
            lo, hi = _U24.unpack_from(view, pos)
            start = pos + 3
            end = start + (lo | (hi << 16))
            if end > len(view):
                raise MalformedEventError("value overruns the row image", offset=pos)
            return convert(view[start:end]), end

        return read3

    def read(view: memoryview, pos: int) -> tuple[Any, int]:
        start = pos + prefix
        end = start + unpack_len(view, pos)[0]
        if end > len(view):
            raise MalformedEventError("value overruns the row image", offset=pos)
        return convert(view[start:end]), end

    return read


def _enum(pack_len: int, labels: tuple[str, ...] | None) -> ColumnReader:
    unpack = _LEN[pack_len].unpack_from
    if labels is None:

        def index(view: memoryview, pos: int) -> tuple[int, int]:
            return unpack(view, pos)[0], pos + pack_len

        return index
    table = ("", *labels)  # index 0 is the "invalid value" empty string

    def read(view: memoryview, pos: int) -> tuple[str | int, int]:
        i = unpack(view, pos)[0]
        return (table[i] if i < len(table) else i), pos + pack_len

    return read


def _set(pack_len: int, labels: tuple[str, ...] | None) -> ColumnReader:
    def bits(view: memoryview, pos: int) -> int:
        return int.from_bytes(view[pos : pos + pack_len], "little")

    if labels is None:
        return lambda view, pos: (bits(view, pos), pos + pack_len)
    names = labels

    def read(view: memoryview, pos: int) -> tuple[frozenset[str] | int, int]:
        mask = bits(view, pos)
        if mask >> len(names):
            return mask, pos + pack_len  # bits beyond the labels: keep the raw mask
        return frozenset(n for i, n in enumerate(names) if (mask >> i) & 1), pos + pack_len

    return read


def _zero_padded(length: int) -> Callable[[memoryview], bytes]:
    def pad(raw: memoryview) -> bytes:
        data = bytes(raw)
        return data + b"\0" * (length - len(data)) if len(data) < length else data

    return pad


def geometry_value(raw: memoryview) -> Geometry | bytes:
    # MariaDB stores '' when NULL goes into a NOT NULL GEOMETRY column under a
    # permissive sql_mode (SELECT HEX(g) is '', ST_AsText(g) NULL): it stays b"".
    if not raw:
        return b""
    if len(raw) < 4:
        raise MalformedEventError("GEOMETRY value shorter than its SRID")
    return Geometry(int.from_bytes(raw[:4], "little"), bytes(raw[4:]))


def _vector(raw: memoryview) -> list[float] | bytes:
    # MySQL keeps what an ALTER from another type (GEOMETRY, BLOB) left in a VECTOR
    # column as it is; SELECT HEX() shows those bytes: they stay bytes, as MariaDB's.
    if len(raw) % 4:
        return bytes(raw)
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


def _decompressed(
    max_length: int, convert: Callable[[memoryview], Any]
) -> Callable[[memoryview], Any]:
    """MariaDB column compression: ``header | [original length, big-endian] | data``.

    header bit 7 set: compressed with zlib (bit 3: raw deflate, else with a zlib
    header), bits 0-2 the byte count of the original length; clear: the data
    follows as it is. An empty value has no header. (``Field_*_compressed``,
    ``uncompress_zlib`` in MariaDB ``sql/field.cc``.)
    """

    def read(raw: memoryview) -> Any:
        if not raw:
            return convert(raw)
        head = raw[0]
        if not head & 0x80:
            return convert(raw[1:])
        nlen = head & 0x07
        if len(raw) < 1 + nlen:
            raise MalformedEventError("compressed column value shorter than its header")
        length = int.from_bytes(raw[1 : 1 + nlen], "big")
        if length > max_length:
            raise MalformedEventError(
                f"compressed column value of {length} bytes exceeds the column's {max_length}"
            )
        inflate = zlib.decompressobj(-zlib.MAX_WBITS if head & 0x08 else zlib.MAX_WBITS)
        try:
            data = inflate.decompress(raw[1 + nlen :], length + 1)
        except zlib.error as exc:
            raise MalformedEventError(f"compressed column value: {exc}") from None
        if len(data) != length or not inflate.eof:
            raise MalformedEventError(
                f"compressed column value inflates to {len(data)} bytes, header says {length}"
            )
        return convert(memoryview(data))

    return read


def _json_binary(raw: memoryview) -> Any:
    from .json_binary import decode_json_binary

    return decode_json_binary(bytes(raw))


# -- MariaDB's types stored as binary strings -----------------------------------------------
#
# UUID, INET6 and INET4 are BINARY(16) / BINARY(4) in the TABLE_MAP, VECTOR a binary
# VARCHAR of float32s; only the SQL data type (``ColumnInfo.data_type``, from a
# table definition) tells them apart from plain binary strings. Their values are
# converted to what ``SELECT`` shows.


def _uuid(value: bytes) -> uuid.UUID:
    # The binlog strips trailing 0x00 bytes of a BINARY value; MariaDB writes the
    # UUID's 16 bytes in the order of its text form.
    return uuid.UUID(bytes=value.ljust(16, b"\0"))


def _inet4(value: bytes) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(value.ljust(4, b"\0"))


def _inet6(value: bytes) -> ipaddress.IPv6Address:
    return ipaddress.IPv6Address(value.ljust(16, b"\0"))


def _mariadb_vector(value: bytes) -> list[float] | bytes:
    if len(value) % 4:
        return value  # not a whole number of float32s: keep the bytes
    return list(struct.unpack(f"<{len(value) // 4}f", value))


# DATA_TYPE -> (conversion of the decoded bytes, binary byte length it needs or 0 for any)
_TYPED_BINARY: Final[dict[str, tuple[Callable[[bytes], Any], int]]] = {
    "uuid": (_uuid, 16),
    "inet6": (_inet6, 16),
    "inet4": (_inet4, 4),
    "vector": (_mariadb_vector, 0),
}


def _binary_length(col: ColumnInfo) -> int | None:
    """Byte length of a fixed binary column (CHAR with the binary charset), else None."""
    if col.type != T.STRING or col.collation not in (BINARY_COLLATION, None):
        return None
    real, length = real_string_type(col.meta)
    return length if real == T.STRING else None


def may_be_typed_binary(col: ColumnInfo) -> bool:
    """True when ``col`` may be one of MariaDB's types stored as binary strings."""
    if _binary_length(col) in (4, 16):
        return True
    return col.type == T.VARCHAR and col.collation == BINARY_COLLATION


def typed_binary_converter(col: ColumnInfo) -> Callable[[bytes], Any] | None:
    """The conversion of ``col``'s decoded bytes for its ``data_type``, if any."""
    entry = _TYPED_BINARY.get((col.data_type or "").lower())
    if entry is None:
        return None
    convert, length = entry
    if length:
        if _binary_length(col) != length:
            return None
    elif not (col.type == T.VARCHAR and col.collation == BINARY_COLLATION):
        return None
    return convert


def _converted(read: ColumnReader, convert: Callable[[bytes], Any]) -> ColumnReader:
    def read_typed(view: memoryview, pos: int) -> tuple[Any, int]:
        value, pos = read(view, pos)
        return convert(value), pos

    return read_typed


def reader_for(col: ColumnInfo, mariadb: bool = True) -> ColumnReader:
    """Choose the reader for one column; called once per table definition.

    ``mariadb``: the flavour that wrote the binlog (a few character
    conversions differ between MariaDB and MySQL)."""
    if col.data_type is not None:
        convert = typed_binary_converter(col)
        if convert is not None:
            return _converted(_reader_for(col, mariadb), convert)
    return _reader_for(col, mariadb)


def _reader_for(col: ColumnInfo, mariadb: bool) -> ColumnReader:
    t, meta = col.type, col.meta
    if t in (T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG):
        # Without SIGNEDNESS metadata integers are read as signed, as the
        # server's own mariadb-binlog does.
        return _INTS[(t, bool(col.unsigned))]
    if t == T.FLOAT:
        return _fixed("<f")
    if t == T.DOUBLE:
        return _fixed("<d")
    if t == T.NEWDECIMAL:
        return _decimal(meta >> 8, meta & 0xFF)
    if t == T.YEAR:
        return _year
    if t in (T.DATE, T.NEWDATE):
        return _date
    if t == T.TIME2:
        return _time2(meta)
    if t == T.DATETIME2:
        return _datetime2(meta)
    if t == T.TIMESTAMP2:
        return _timestamp2(meta)
    if t == T.TIME:
        return _time_old
    if t == T.DATETIME:
        return _datetime_old
    if t == T.TIMESTAMP:
        return _timestamp_old
    if t == T.BIT:
        nbits = (meta & 0xFF) * 8 + (meta >> 8)
        return _bit((nbits + 7) // 8)
    if t == T.NULL:
        return lambda view, pos: (None, pos)
    if t in (T.VARCHAR, T.VAR_STRING):
        return _length_prefixed(1 if meta < 256 else 2, text_reader(col.collation, mariadb))
    if t == T.STRING:
        real, length = real_string_type(meta)
        if real == T.ENUM:
            return _enum(length, col.enum_values)
        if real == T.SET:
            return _set(length, col.set_values)
        if col.collation == BINARY_COLLATION:
            # BINARY(n): the server strips trailing 0x00 when it packs the
            # value; SELECT gives the value padded back to n bytes.
            return _length_prefixed(1 if length < 256 else 2, _zero_padded(length))
        return _length_prefixed(1 if length < 256 else 2, text_reader(col.collation, mariadb))
    if t == T.ENUM:
        return _enum(meta & 0xFF, col.enum_values)
    if t == T.SET:
        return _set(meta & 0xFF, col.set_values)
    if t in (T.BLOB, T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB):
        if meta not in _LEN:
            raise MalformedEventError(f"BLOB length size {meta} not in 1..4")
        return _length_prefixed(meta, text_reader(col.collation, mariadb))
    if t == T.VARCHAR_COMPRESSED:
        # meta: the column's maximal byte length plus the header byte
        return _length_prefixed(
            1 if meta < 256 else 2, _decompressed(meta, text_reader(col.collation, mariadb))
        )
    if t == T.BLOB_COMPRESSED:
        if meta not in _LEN:
            raise MalformedEventError(f"BLOB length size {meta} not in 1..4")
        max_length = (1 << (8 * meta)) - 1
        return _length_prefixed(
            meta, _decompressed(max_length, text_reader(col.collation, mariadb))
        )
    if t == T.GEOMETRY:
        if meta not in _LEN:
            raise MalformedEventError(f"GEOMETRY length size {meta} not in 1..4")
        return _length_prefixed(meta, geometry_value)
    if t == T.JSON:
        if meta not in _LEN:
            raise MalformedEventError(f"JSON length size {meta} not in 1..4")
        return _length_prefixed(meta, _json_binary)
    if t == T.VECTOR:
        if meta not in _LEN:
            raise MalformedEventError(f"VECTOR length size {meta} not in 1..4")
        return _length_prefixed(meta, _vector)
    # A type byte no server writes: the TABLE_MAP (or its source) is corrupt.
    raise MalformedEventError(
        f"unknown column type {t} ({_type_name(t)}) of column {col.index + 1}"
    )


def _type_name(t: int) -> str:
    try:
        return ColumnType(t).name
    except ValueError:
        return "unknown"
