"""Bytes with an integer cursor: the encodings ``wire/`` and ``binlog/`` share. No I/O.

The one place for the primitive types of the MySQL/MariaDB client protocol and
binary log (MariaDB KB "Protocol Data Types"; MySQL ``net_field_length``,
``net_store_length``), read the same way from a packet payload and from a
binlog event:

* fixed-width little-endian unsigned integers (:func:`u8` ... :func:`u64`);
* length-encoded integers: a first byte below 0xFB is the value; 0xFC, 0xFD
  and 0xFE are followed by the value as u16, u24 and u64. 0xFB is SQL NULL in a
  text result-set row (:func:`read_lenenc_int_or_null`) and invalid everywhere
  else; 0xFF is never valid;
* length-encoded strings: a length-encoded integer, then that many bytes;
* NUL-terminated strings (:func:`read_cstring`) and NUL-padded fixed-size
  fields (:func:`until_nul`);
* server text (:func:`server_text`), the one rule for turning the names,
  file names, versions and messages a server writes into ``str``.

Readers take ``(buf, pos)`` (some an ``end`` bound, ``len(buf)`` by default)
and return ``(value, position after it)``; none slices to parse. A field that
runs past its bound or has an invalid marker raises
:class:`~replica_client.errors.MalformedEventError` with the offset where
reading failed: the binlog decoder adds the event's type and position, and
``wire/`` parsers report it as the :class:`~replica_client.errors.ProtocolError`
of the packet they were reading.
"""

from __future__ import annotations

import struct
from typing import Final

from .errors import MalformedEventError

__all__ = [
    "U8",
    "U16",
    "U32",
    "U48",
    "U64",
    "Buffer",
    "encode_lenenc_bytes",
    "encode_lenenc_int",
    "is_mariadb_version",
    "need",
    "read_cstring",
    "read_lenenc_bytes",
    "read_lenenc_bytes_or_null",
    "read_lenenc_int",
    "read_lenenc_int_or_null",
    "server_text",
    "u8",
    "u16",
    "u24",
    "u32",
    "u48",
    "u64",
    "until_nul",
]

#: What the readers accept: a packet payload, an event, or a view of either.
Buffer = bytes | bytearray | memoryview

U8: Final = struct.Struct("<B")
U16: Final = struct.Struct("<H")
U32: Final = struct.Struct("<I")
U64: Final = struct.Struct("<Q")
U24: Final = struct.Struct("<HB")  # a u24 read as u16 + u8
U48: Final = struct.Struct("<IH")  # a u48 read as u32 + u16

_NULL: Final = 0xFB
#: Bytes that follow a length-encoded integer's first byte, by that byte.
_LENENC_WIDTH: Final = {0xFC: 2, 0xFD: 3, 0xFE: 8}


# -- fixed-width integers -------------------------------------------------------------


def need(buf: Buffer, pos: int, n: int, what: str) -> None:
    """Raise unless ``n`` bytes are available at ``pos``."""
    if n < 0 or pos + n > len(buf):
        raise MalformedEventError(
            f"truncated {what}: need {n} bytes, {max(len(buf) - pos, 0)} left", offset=pos
        )


def u8(buf: Buffer, pos: int) -> int:
    need(buf, pos, 1, "u8")
    return buf[pos]


def u16(buf: Buffer, pos: int) -> int:
    need(buf, pos, 2, "u16")
    return int(U16.unpack_from(buf, pos)[0])


def u24(buf: Buffer, pos: int) -> int:
    need(buf, pos, 3, "u24")
    lo, hi = U24.unpack_from(buf, pos)
    return int(lo | (hi << 16))


def u32(buf: Buffer, pos: int) -> int:
    need(buf, pos, 4, "u32")
    return int(U32.unpack_from(buf, pos)[0])


def u48(buf: Buffer, pos: int) -> int:
    need(buf, pos, 6, "u48")
    lo, hi = U48.unpack_from(buf, pos)
    return int(lo | (hi << 32))


def u64(buf: Buffer, pos: int) -> int:
    need(buf, pos, 8, "u64")
    return int(U64.unpack_from(buf, pos)[0])


# -- length-encoded integers and strings ----------------------------------------------


def read_lenenc_int(buf: Buffer, pos: int, end: int | None = None) -> tuple[int, int]:
    """A length-encoded integer before ``end``: 1, 3, 4 or 9 bytes (0xFB is invalid)."""
    if end is None:
        end = len(buf)
    if pos < end:
        first = buf[pos]
        if first < _NULL:
            return first, pos + 1
        width = _LENENC_WIDTH.get(first)
        if width is None:
            raise MalformedEventError(
                f"invalid length-encoded integer prefix 0x{first:02x}", offset=pos
            )
        stop = pos + 1 + width
        if stop <= end:
            return int.from_bytes(buf[pos + 1 : stop], "little"), stop
    raise MalformedEventError("truncated length-encoded integer", offset=pos)


def read_lenenc_int_or_null(buf: Buffer, pos: int) -> tuple[int | None, int]:
    """A length-encoded integer, or ``None`` for the NULL marker 0xFB (text rows)."""
    if pos < len(buf) and buf[pos] == _NULL:
        return None, pos + 1
    return read_lenenc_int(buf, pos)


def read_lenenc_bytes(buf: Buffer, pos: int, end: int | None = None) -> tuple[bytes, int]:
    """A length-encoded string before ``end``."""
    if end is None:
        end = len(buf)
    n, pos = read_lenenc_int(buf, pos, end)
    stop = pos + n
    if stop > end:
        raise MalformedEventError(
            f"length-encoded string of {n} bytes overruns its buffer", offset=pos
        )
    return bytes(buf[pos:stop]), stop


def read_lenenc_bytes_or_null(buf: Buffer, pos: int) -> tuple[bytes | None, int]:
    """A length-encoded string, or ``None`` for SQL NULL (text rows)."""
    if pos < len(buf) and buf[pos] == _NULL:
        return None, pos + 1
    return read_lenenc_bytes(buf, pos)


def encode_lenenc_int(value: int) -> bytes:
    """``value`` as a length-encoded integer (the shortest form)."""
    if value < _NULL:
        return bytes((value,))
    if value < 1 << 16:
        return b"\xfc" + U16.pack(value)
    if value < 1 << 24:
        return b"\xfd" + U24.pack(value & 0xFFFF, value >> 16)
    return b"\xfe" + U64.pack(value)


def encode_lenenc_bytes(value: bytes) -> bytes:
    """``value`` as a length-encoded string."""
    return encode_lenenc_int(len(value)) + value


# -- NUL-terminated strings and text --------------------------------------------------


def read_cstring(buf: Buffer, pos: int, end: int | None = None) -> tuple[bytes, int]:
    """The bytes before a NUL that comes before ``end``; returns the position after the NUL."""
    if end is None:
        end = len(buf)
    for i in range(pos, min(end, len(buf))):
        if buf[i] == 0:
            return bytes(buf[pos:i]), i + 1
    raise MalformedEventError("string without its terminating NUL", offset=pos)


def until_nul(raw: Buffer) -> bytes:
    """The bytes before the first NUL, or all of them: a NUL-padded fixed-size field."""
    data = bytes(raw)
    nul = data.find(b"\0")
    return data if nul < 0 else data[:nul]


def server_text(raw: Buffer) -> str:
    """Text the server wrote in its system character set: names, file names, messages.

    The one policy of the package: UTF-8 (what MariaDB and MySQL use for
    identifiers, file names, versions and messages); bytes that are not valid
    UTF-8 are decoded as latin-1, which maps every byte to one character. No
    byte is lost either way: when the fallback was taken,
    ``text.encode("latin-1")`` gives the bytes back. Where the exact bytes
    matter beyond that, the event keeps them too (``QueryEvent.query_bytes``).
    Values in a column's own character set are not server text: the column
    readers decode those with the column's collation.
    """
    try:
        return str(raw, "utf-8")
    except UnicodeDecodeError:
        return str(raw, "latin-1")


def is_mariadb_version(version: str | bytes) -> bool:
    """Whether a server's version text (``VERSION()``, the greeting, a
    FORMAT_DESCRIPTION_EVENT) is MariaDB's; anything else speaks MySQL. The one
    place the flavour is decided from a version."""
    if isinstance(version, bytes):
        return b"mariadb" in version.lower()
    return "mariadb" in version.lower()
