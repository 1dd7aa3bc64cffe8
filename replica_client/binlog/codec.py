"""Low-level readers over a memoryview with an integer cursor. No I/O.

Every reader takes ``(view, pos)`` and returns ``(value, new_pos)``; none
slices to parse. Out-of-range reads raise :class:`MalformedEventError`.
"""

from __future__ import annotations

import struct
from typing import Final

from ..errors import MalformedEventError

__all__ = [
    "U8",
    "U16",
    "U32",
    "U48",
    "U64",
    "need",
    "read_cstring",
    "read_packed_int",
    "read_packed_str",
    "u8",
    "u16",
    "u24",
    "u32",
    "u48",
    "u64",
]

U8: Final = struct.Struct("<B")
U16: Final = struct.Struct("<H")
U32: Final = struct.Struct("<I")
U64: Final = struct.Struct("<Q")
_U24: Final = struct.Struct("<HB")
U48: Final = struct.Struct("<IH")  # a u48 read as u32 + u16


def need(view: memoryview, pos: int, n: int, what: str) -> None:
    """Raise unless ``n`` bytes are available at ``pos``."""
    if n < 0 or pos + n > len(view):
        raise MalformedEventError(
            f"truncated {what}: need {n} bytes, {max(len(view) - pos, 0)} left", offset=pos
        )


def u8(view: memoryview, pos: int) -> int:
    need(view, pos, 1, "u8")
    return view[pos]


def u16(view: memoryview, pos: int) -> int:
    need(view, pos, 2, "u16")
    return int(U16.unpack_from(view, pos)[0])


def u24(view: memoryview, pos: int) -> int:
    need(view, pos, 3, "u24")
    lo, hi = _U24.unpack_from(view, pos)
    return int(lo | (hi << 16))


def u32(view: memoryview, pos: int) -> int:
    need(view, pos, 4, "u32")
    return int(U32.unpack_from(view, pos)[0])


def u48(view: memoryview, pos: int) -> int:
    need(view, pos, 6, "u48")
    lo, hi = U48.unpack_from(view, pos)
    return int(lo | (hi << 32))


def u64(view: memoryview, pos: int) -> int:
    need(view, pos, 8, "u64")
    return int(U64.unpack_from(view, pos)[0])


def read_packed_int(view: memoryview, pos: int) -> tuple[int, int]:
    """Length-encoded integer (``net_field_length``): 1, 3, 4 or 9 bytes."""
    first = u8(view, pos)
    if first < 251:
        return first, pos + 1
    if first == 252:
        return u16(view, pos + 1), pos + 3
    if first == 253:
        return u24(view, pos + 1), pos + 4
    if first == 254:
        return u64(view, pos + 1), pos + 9
    raise MalformedEventError(f"invalid packed integer prefix 0x{first:02x}", offset=pos)


def read_packed_str(view: memoryview, pos: int) -> tuple[bytes, int]:
    """A length-encoded byte string."""
    n, pos = read_packed_int(view, pos)
    need(view, pos, n, "length-encoded string")
    return bytes(view[pos : pos + n]), pos + n


def read_cstring(view: memoryview, pos: int, end: int) -> tuple[bytes, int]:
    """Bytes up to (not including) a NUL before ``end``; returns the position after it."""
    for i in range(pos, end):
        if view[i] == 0:
            return bytes(view[pos:i]), i + 1
    raise MalformedEventError("unterminated string", offset=pos)
