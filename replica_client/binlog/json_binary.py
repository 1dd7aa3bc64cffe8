"""MySQL binary JSON (JSONB) and JSON partial-update diffs. No I/O: bytes in, values out.

Contract:

* :func:`decode_json_binary` turns the value of a MySQL ``JSON`` column (type 245)
  from a row image -- the bytes after the column's 4-byte length prefix -- into
  Python values: object -> ``dict`` (keys in stored order, which is MySQL's sort
  order: by length, then bytewise), array -> ``list``, literals -> ``None`` /
  ``True`` / ``False``, integers -> ``int``, double -> ``float``, string -> ``str``.
  A whole document that is the literal ``null`` is ``JSON_NULL``, so that it is
  never confused with SQL NULL (``None``); inside a document null is ``None``.
  OPAQUE values (custom MySQL types inside a JSON document) map as:

  ==========================  ===================================================
  field type                  Python value
  ==========================  ===================================================
  246 NEWDECIMAL              ``decimal.Decimal`` (keeps its scale)
  10 DATE                     ``datetime.date``
  11 TIME                     ``datetime.timedelta`` (may be negative / > 24 h)
  12 DATETIME, 7 TIMESTAMP    naive ``datetime.datetime`` (microsecond precision)
  anything else               ``bytes`` -- the raw opaque payload; the field type
                              is not kept (MySQL prints such values as
                              ``base64:typeNN:...``). Typical: 15/253/254 strings
                              cast AS BINARY, 252 BLOB, 16 BIT, 255 GEOMETRY.
  ==========================  ===================================================

  Temporal values Python cannot hold (zero dates such as ``0000-00-00``, day 0,
  year 0) are returned as MySQL's text form (``"0000-00-00 00:00:00.000000"``)
  instead of failing the event.

  A zero-length value is ``JSON_NULL``: the server itself reads an empty JSON
  value that way (``json_binary::parse_binary``: empty documents come from
  ``INSERT IGNORE`` / non-strict mode storing '' into a NOT NULL JSON column).

* :func:`decode_json_diff` decodes the JSON diff vector that a
  PARTIAL_UPDATE_ROWS_EVENT (type 39, ``binlog_row_value_options=PARTIAL_JSON``)
  carries for a partially updated JSON column in the after image.
  :func:`apply_json_diffs` applies such diffs to a decoded before-image value with
  the server's semantics (``apply_json_diffs`` in MySQL ``sql/json_diff.cc``).

Malformed input raises :class:`~replica_client.errors.MalformedEventError` only
(never ``IndexError``, ``struct.error``, ``UnicodeDecodeError`` or
``RecursionError``); nesting is bounded by ``max_depth``.
"""

from __future__ import annotations

import copy
import datetime
import enum
import json
import struct
from dataclasses import dataclass
from typing import Any, Final

from replica_client.binlog.decimal import MAX_PRECISION, decimal_size, decode_decimal
from replica_client.codec import read_lenenc_int
from replica_client.errors import MalformedEventError

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "JSON_NULL",
    "JsonNull",
    "JsonDiff",
    "JsonDiffOperation",
    "JsonType",
    "apply_json_diffs",
    "decode_json_binary",
    "decode_json_diff",
    "parse_json_path",
]


class JsonNull(enum.Enum):
    """A MySQL JSON column holding the JSON document ``null`` (unlike SQL NULL, ``None``)."""

    JSON_NULL = "JSON_NULL"

    def __repr__(self) -> str:
        return "JSON_NULL"

    def __bool__(self) -> bool:
        return False


#: The value of a MySQL JSON column whose document is the JSON literal ``null``
#: (also what the server makes of an empty JSON value). Inside a document, JSON
#: null is ``None``; only a whole document can be confused with SQL NULL.
JSON_NULL: Final = JsonNull.JSON_NULL

#: MySQL refuses documents nested deeper than 100 levels
#: (``JSON_DOCUMENT_MAX_DEPTH``); a little headroom, still far from Python's
#: recursion limit.
DEFAULT_MAX_DEPTH: Final = 150


class JsonType(enum.IntEnum):
    """Value type bytes of the binary JSON format (``json_binary.h``)."""

    SMALL_OBJECT = 0x00
    LARGE_OBJECT = 0x01
    SMALL_ARRAY = 0x02
    LARGE_ARRAY = 0x03
    LITERAL = 0x04
    INT16 = 0x05
    UINT16 = 0x06
    INT32 = 0x07
    UINT32 = 0x08
    INT64 = 0x09
    UINT64 = 0x0A
    DOUBLE = 0x0B
    STRING = 0x0C
    OPAQUE = 0x0F


_LITERAL_NULL: Final = 0x00
_LITERAL_TRUE: Final = 0x01
_LITERAL_FALSE: Final = 0x02

# MySQL field types that appear as OPAQUE payloads we decode.
_FT_TIMESTAMP: Final = 7
_FT_DATE: Final = 10
_FT_TIME: Final = 11
_FT_DATETIME: Final = 12
_FT_NEWDECIMAL: Final = 246

_U16: Final = struct.Struct("<H")
_U32: Final = struct.Struct("<I")
_I16: Final = struct.Struct("<h")
_I32: Final = struct.Struct("<i")
_I64: Final = struct.Struct("<q")
_U64: Final = struct.Struct("<Q")
_F64: Final = struct.Struct("<d")
_KEY_ENTRY_SMALL: Final = struct.Struct("<HH")  # key offset, key length
_KEY_ENTRY_LARGE: Final = struct.Struct("<IH")
_HEADER_SMALL: Final = struct.Struct("<HH")  # element count, byte size
_HEADER_LARGE: Final = struct.Struct("<II")

_FIXED_SCALARS: Final = {
    JsonType.INT16: _I16,
    JsonType.UINT16: _U16,
    JsonType.INT32: _I32,
    JsonType.UINT32: _U32,
    JsonType.INT64: _I64,
    JsonType.UINT64: _U64,
    JsonType.DOUBLE: _F64,
}


def _error(message: str, offset: int | None = None) -> MalformedEventError:
    return MalformedEventError(f"binary JSON: {message}", offset=offset)


# -- binary JSON -----------------------------------------------------------------------
#
# Byte layout (MySQL ``sql-common/json_binary.cc`` header comment, ``parse_binary``,
# ``parse_value``, ``parse_array_or_object``; WL#8132):
#
#   doc      ::= type:u8 value
#   object   ::= count size key-entry* value-entry* key* value*
#   array    ::= count size value-entry* value*
#   count, size, key/value offsets: u16 in the small forms, u32 in the large forms;
#   size is the byte size of the whole object/array (from `count` on), offsets are
#   relative to the start of `count`.
#   key-entry   ::= key-offset key-length:u16
#   value-entry ::= type:u8 offset-or-inlined-value
#     literals, int16, uint16 (and int32/uint32 in the large forms) are inlined.
#   string   ::= varlen utf8mb4-bytes
#   opaque   ::= field-type:u8 varlen bytes
#   varlen   ::= 1..5 bytes, 7 bits each, low group first, high bit = more follows
#   int16..uint64, double: little-endian


def decode_json_binary(
    data: bytes | bytearray | memoryview, *, max_depth: int = DEFAULT_MAX_DEPTH
) -> Any:
    """Decode one binary JSON document (the column value without its length prefix)."""
    view = memoryview(data).cast("B") if not isinstance(data, bytes) else memoryview(data)
    if len(view) == 0:
        return JSON_NULL
    value = _decode_value(view, max_depth)
    return JSON_NULL if value is None else value


def _decode_value(view: memoryview, max_depth: int) -> Any:
    """A non-empty binary JSON value as it is inside a document: JSON null is ``None``."""
    return _Decoder(view, max_depth).value(view[0], 1, len(view), 0)


class _Decoder:
    __slots__ = ("max_depth", "view")

    def __init__(self, view: memoryview, max_depth: int) -> None:
        self.view = view
        self.max_depth = max_depth

    def value(self, type_byte: int, start: int, end: int, depth: int) -> Any:
        """Decode a value of ``type_byte`` whose bytes lie in ``view[start:end]``."""
        if type_byte <= JsonType.LARGE_ARRAY:
            if depth >= self.max_depth:
                raise _error(f"document nested deeper than {self.max_depth} levels", start)
            large = type_byte & 1 == 1
            if type_byte <= JsonType.LARGE_OBJECT:
                return self.container(start, end, large, True, depth + 1)
            return self.container(start, end, large, False, depth + 1)
        if type_byte == JsonType.LITERAL:
            if start >= end:
                raise _error("truncated literal", start)
            return self.literal(self.view[start], start)
        scalar = _FIXED_SCALARS.get(type_byte)  # type: ignore[call-overload]
        if scalar is not None:
            if start + scalar.size > end:
                raise _error(f"truncated {JsonType(type_byte).name} value", start)
            return scalar.unpack_from(self.view, start)[0]
        if type_byte == JsonType.STRING:
            length, pos = self.varlen(start, end)
            if pos + length > end:
                raise _error("string runs past the end of the value", start)
            try:
                return str(self.view[pos : pos + length], "utf-8")
            except UnicodeDecodeError as exc:
                raise _error(f"string is not valid utf8mb4 ({exc.reason})", pos) from None
        if type_byte == JsonType.OPAQUE:
            if start >= end:
                raise _error("truncated opaque value", start)
            field_type = self.view[start]
            length, pos = self.varlen(start + 1, end)
            if pos + length > end:
                raise _error("opaque value runs past the end of the value", start)
            return _decode_opaque(field_type, self.view, pos, length)
        raise _error(f"unknown value type 0x{type_byte:02x}", start - 1)

    @staticmethod
    def literal(code: int, pos: int) -> Any:
        if code == _LITERAL_NULL:
            return None
        if code == _LITERAL_TRUE:
            return True
        if code == _LITERAL_FALSE:
            return False
        raise _error(f"unknown literal 0x{code:02x}", pos)

    def varlen(self, pos: int, end: int) -> tuple[int, int]:
        """Read the 7-bits-per-byte length used by strings and opaque values."""
        length = 0
        for i in range(5):
            if pos + i >= end:
                raise _error("truncated variable-length size", pos)
            byte = self.view[pos + i]
            length |= (byte & 0x7F) << (7 * i)
            if not byte & 0x80:
                if length > 0xFFFFFFFF:
                    break
                return length, pos + i + 1
        raise _error("variable-length size does not fit in 32 bits", pos)

    def container(self, base: int, end: int, large: bool, is_object: bool, depth: int) -> Any:
        view = self.view
        header = _HEADER_LARGE if large else _HEADER_SMALL
        off_size = 4 if large else 2
        if base + header.size > end:
            raise _error("truncated object/array header", base)
        count, size = header.unpack_from(view, base)
        if size > end - base:
            raise _error(f"object/array size {size} exceeds the {end - base} bytes available", base)
        limit = base + size
        key_entry_size = off_size + 2 if is_object else 0
        value_entry_size = 1 + off_size
        header_size = header.size + count * (key_entry_size + value_entry_size)
        if header_size > size:
            raise _error(f"{count} entries do not fit in {size} bytes", base)

        entry = base + header.size
        keys: list[str] = []
        if is_object:
            key_struct = _KEY_ENTRY_LARGE if large else _KEY_ENTRY_SMALL
            for _ in range(count):
                key_off, key_len = key_struct.unpack_from(view, entry)
                entry += key_struct.size
                key_start = base + key_off
                if key_off < header_size or key_start + key_len > limit:
                    raise _error("object key outside the object", entry)
                try:
                    keys.append(str(view[key_start : key_start + key_len], "utf-8"))
                except UnicodeDecodeError as exc:
                    raise _error(f"key is not valid utf8mb4 ({exc.reason})", key_start) from None

        values: list[Any] = []
        offset_struct = _U32 if large else _U16
        for _ in range(count):
            type_byte = view[entry]
            slot = entry + 1
            entry += value_entry_size
            if type_byte == JsonType.LITERAL:
                values.append(self.literal(view[slot], slot))
            elif type_byte == JsonType.INT16:
                values.append(_I16.unpack_from(view, slot)[0])
            elif type_byte == JsonType.UINT16:
                values.append(_U16.unpack_from(view, slot)[0])
            elif large and type_byte == JsonType.INT32:
                values.append(_I32.unpack_from(view, slot)[0])
            elif large and type_byte == JsonType.UINT32:
                values.append(_U32.unpack_from(view, slot)[0])
            else:
                value_off = offset_struct.unpack_from(view, slot)[0]
                if value_off < header_size or value_off >= size:
                    raise _error("value offset outside the object/array", slot)
                values.append(self.value(type_byte, base + value_off, limit, depth))

        if is_object:
            return dict(zip(keys, values, strict=True))
        return values


def _decode_opaque(field_type: int, view: memoryview, pos: int, length: int) -> Any:
    """Decode an OPAQUE payload of MySQL ``field_type`` at ``view[pos:pos+length]``."""
    if field_type == _FT_NEWDECIMAL:
        # Json_decimal::convert_from_binary: precision u8, scale u8, decimal2bin bytes.
        if length < 2:
            raise _error("truncated DECIMAL in JSON", pos)
        precision, scale = view[pos], view[pos + 1]
        if not 0 <= scale <= precision <= MAX_PRECISION:
            raise _error(f"bad DECIMAL({precision},{scale}) in JSON", pos)
        if 2 + decimal_size(precision, scale) != length:
            raise _error("DECIMAL in JSON has the wrong length", pos)
        value, _ = decode_decimal(view, pos + 2, precision, scale)
        return value
    if field_type in (_FT_DATE, _FT_TIME, _FT_DATETIME, _FT_TIMESTAMP):
        # Json_datetime::from_packed: 8-byte little-endian "packed" MYSQL_TIME.
        if length != 8:
            raise _error(f"temporal value of field type {field_type} must be 8 bytes", pos)
        packed = _I64.unpack_from(view, pos)[0]
        if field_type == _FT_TIME:
            return _time_from_packed(packed)
        return _datetime_from_packed(packed, date_only=field_type == _FT_DATE)
    return bytes(view[pos : pos + length])


# Packed temporal layout (``my_time.cc``: TIME_to_longlong_*_packed /
# TIME_from_longlong_*_packed): value = (int_part << 24) + microseconds, negated for
# negative values; for DATETIME int_part = (((year*13 + month) << 5 | day) << 17) |
# (hour << 12 | minute << 6 | second); for TIME int_part = hour << 12 | minute << 6 |
# second (hour may exceed 23).


def _time_from_packed(packed: int) -> datetime.timedelta:
    negative = packed < 0
    magnitude = -packed if negative else packed
    micro = magnitude & 0xFFFFFF
    hms = magnitude >> 24
    hours = (hms >> 12) & 0x3FF
    minutes = (hms >> 6) & 0x3F
    seconds = hms & 0x3F
    delta = datetime.timedelta(hours=hours, minutes=minutes, seconds=seconds, microseconds=micro)
    return -delta if negative else delta


def _datetime_from_packed(packed: int, *, date_only: bool) -> Any:
    magnitude = -packed if packed < 0 else packed
    micro = magnitude & 0xFFFFFF
    ymdhms = magnitude >> 24
    ymd = ymdhms >> 17
    hms = ymdhms & 0x1FFFF
    day = ymd & 0x1F
    year_month = ymd >> 5
    month = year_month % 13
    year = year_month // 13
    second = hms & 0x3F
    minute = (hms >> 6) & 0x3F
    hour = hms >> 12
    try:
        if date_only:
            return datetime.date(year, month, day)
        return datetime.datetime(year, month, day, hour, minute, second, micro)
    except ValueError:
        # Zero or partial dates are legal in MySQL but not in Python.
        if date_only:
            return f"{year:04d}-{month:02d}-{day:02d}"
        return f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}.{micro:06d}"


# -- JSON diffs -----------------------------------------------------------------------


class JsonDiffOperation(enum.IntEnum):
    """``enum_json_diff_operation`` in MySQL ``sql/json_diff.h``."""

    REPLACE = 0
    INSERT = 1
    REMOVE = 2


@dataclass(frozen=True, slots=True)
class JsonDiff:
    """One logical JSON change: ``value`` is ``None`` for REMOVE (and for JSON null)."""

    operation: JsonDiffOperation
    path: str
    value: Any = None


# Byte layout (MySQL ``Json_diff_vector::read_binary`` / ``Json_diff::write_binary``
# in sql/json_diff.cc). The row image stores, for a partially updated JSON column,
# ``length:u32`` followed by ``length`` bytes of diffs; this function takes those
# bytes WITHOUT the u32 (just as decode_json_binary takes a value without it):
#
#   diff ::= operation:u8 path-length:packed path:bytes
#            [value-length:packed value:binary-json]     -- absent for REMOVE
#   packed = MySQL length-encoded integer (< 0xFB: 1 byte; 0xFC/0xFD/0xFE + 2/3/8)


def decode_json_diff(
    data: bytes | bytearray | memoryview, *, max_depth: int = DEFAULT_MAX_DEPTH
) -> list[JsonDiff]:
    """Decode a JSON diff vector (the bytes after its 4-byte length)."""
    view = memoryview(data).cast("B") if not isinstance(data, bytes) else memoryview(data)
    end = len(view)
    pos = 0
    diffs: list[JsonDiff] = []
    while pos < end:
        op_code = view[pos]
        try:
            operation = JsonDiffOperation(op_code)
        except ValueError:
            raise _error(f"unknown JSON diff operation {op_code}", pos) from None
        path_len, pos = read_lenenc_int(view, pos + 1, end)
        if pos + path_len > end:
            raise _error("JSON diff path runs past the end", pos)
        try:
            path = str(view[pos : pos + path_len], "utf-8")
        except UnicodeDecodeError:
            raise _error("JSON diff path is not valid utf-8", pos) from None
        parse_json_path(path)  # validates: MySQL rejects the diff if the path is bad
        pos += path_len
        value: Any = None
        if operation != JsonDiffOperation.REMOVE:
            value_len, pos = read_lenenc_int(view, pos, end)
            if pos + value_len > end:
                raise _error("JSON diff value runs past the end", pos)
            # A diff's value always lands inside the document (a diff never
            # targets the root): JSON null there is None, not JSON_NULL. An
            # empty value is null too, as the server reads it (parse_binary).
            if value_len:
                value = _decode_value(view[pos : pos + value_len], max_depth)
            pos += value_len
        diffs.append(JsonDiff(operation, path, value))
    return diffs


# -- JSON paths (the subset diffs use: member and array-cell legs) ---------------------

#: A path leg: ``str`` = object member, ``int`` >= 0 = array index from the start,
#: ``("last", n)`` = ``[last - n]``.
PathLeg = str | int | tuple[str, int]


def parse_json_path(path: str) -> list[PathLeg]:
    """Parse a MySQL JSON path made of ``.member``, ``."quoted"``, ``[n]``, ``[last-n]``.

    Wildcards, ``**`` and ranges are rejected: the server never writes them in diffs
    (``Json_diff_vector::read_binary`` only accepts paths that select one value).
    """
    text = path.strip()
    if not text.startswith("$"):
        raise _error(f"JSON path {path!r} does not start with '$'")
    legs: list[PathLeg] = []
    i = 1
    n = len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return legs
        ch = text[i]
        if ch == ".":
            i += 1
            while i < n and text[i].isspace():
                i += 1
            if i < n and text[i] == '"':
                j = i + 1
                while j < n and text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
                if j >= n:
                    raise _error(f"unterminated quoted member in JSON path {path!r}")
                try:
                    member = json.loads(text[i : j + 1])
                except ValueError:
                    raise _error(f"bad quoted member in JSON path {path!r}") from None
                legs.append(member)
                i = j + 1
            else:
                j = i
                while j < n and text[j] not in ".[" and not text[j].isspace():
                    j += 1
                member = text[i:j]
                if not member or member.startswith("*"):
                    raise _error(f"unsupported member leg in JSON path {path!r}")
                legs.append(member)
                i = j
        elif ch == "[":
            j = text.find("]", i)
            if j < 0:
                raise _error(f"unterminated array leg in JSON path {path!r}")
            legs.append(_parse_array_leg(text[i + 1 : j], path))
            i = j + 1
        else:
            raise _error(f"unsupported JSON path {path!r}")


def _parse_array_leg(inner: str, path: str) -> PathLeg:
    token = inner.strip()
    if token.isdigit():
        return int(token)
    if token.startswith("last"):
        rest = token[4:].strip()
        if not rest:
            return ("last", 0)
        if rest.startswith("-") and rest[1:].strip().isdigit():
            return ("last", int(rest[1:].strip()))
    raise _error(f"unsupported array leg [{inner}] in JSON path {path!r}")


def _array_index(leg: int | tuple[str, int], size: int) -> tuple[int, bool]:
    """``Json_path_leg::first_array_index``: (position, within_bounds)."""
    if isinstance(leg, int):
        return min(leg, size), leg < size
    back = leg[1]
    return (size - back - 1 if back < size else 0), back < size


def _seek(doc: Any, legs: list[PathLeg]) -> Any:
    """``seek_exact_path``: follow member/array legs without auto-wrapping."""
    missing = _Missing
    node = doc
    for leg in legs:
        if isinstance(node, list):
            if isinstance(leg, str):
                return missing
            position, ok = _array_index(leg, len(node))
            if not ok:
                return missing
            node = node[position]
        elif isinstance(node, dict):
            if not isinstance(leg, str) or leg not in node:
                return missing
            node = node[leg]
        else:
            return missing
    return node


class _Missing:
    """Marker for "path not found" (JSON null is a legitimate value)."""


def apply_json_diffs(doc: Any, diffs: list[JsonDiff] | tuple[JsonDiff, ...]) -> Any:
    """Apply diffs to a decoded JSON document and return the new document.

    The input is not modified. A diff that the server would reject (path not found,
    INSERT of an existing member, a leg of the wrong kind for its container, the root
    as a target) raises :class:`~replica_client.errors.MalformedEventError`: it means
    the before image does not match the diff.
    """
    result = copy.deepcopy(doc)
    for diff in diffs:
        legs = parse_json_path(diff.path)
        if not legs:
            raise _error(f"JSON diff {diff.operation.name} targets the document root")
        parent = _seek(result, legs[:-1])
        last = legs[-1]
        # Inside a document JSON null is None; JSON_NULL only stands for a whole
        # document (a JsonDiff built by hand may still carry it).
        value = None if diff.value is JSON_NULL else copy.deepcopy(diff.value)
        op = diff.operation
        if isinstance(parent, dict) and isinstance(last, str):
            if op == JsonDiffOperation.REPLACE and last in parent:
                parent[last] = value
                continue
            if op == JsonDiffOperation.INSERT and last not in parent:
                parent[last] = value
                continue
            if op == JsonDiffOperation.REMOVE and last in parent:
                del parent[last]
                continue
        elif isinstance(parent, list) and not isinstance(last, str):
            position, within = _array_index(last, len(parent))
            if op == JsonDiffOperation.INSERT:
                parent.insert(position, value)
                continue
            if within:
                if op == JsonDiffOperation.REPLACE:
                    parent[position] = value
                else:
                    del parent[position]
                continue
        raise _error(
            f"JSON diff {op.name} {diff.path!r} does not apply to the document "
            "(the before image does not match)"
        )
    return result
