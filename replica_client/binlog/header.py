"""The binlog v4 common event header. No I/O: bytes in, values out.

Layout (little-endian), 19 bytes (MariaDB KB "Binlog Event Header"):

    timestamp u32 | type_code u8 | server_id u32 | event_size u32 | log_pos u32 | flags u16

``log_pos`` is the position just after this event in the primary's binlog (in a
relay log: in the primary's log, not the relay log; 0 for artificial events and,
on MariaDB 11.4+, inside transactions).
"""

from __future__ import annotations

import struct
import zlib
from typing import Final, NamedTuple

__all__ = ["HEADER", "EventHeader", "checksum_holds", "unpack_header"]

HEADER: Final = struct.Struct("<IBIIIH")
unpack_header: Final = HEADER.unpack_from
_U32: Final = struct.Struct("<I")


def checksum_holds(event: bytes | memoryview, end: int) -> bool:
    """Whether the CRC32 trailer at ``end`` is that of ``event[:end]`` (checksum CRC32)."""
    stored: int = _U32.unpack_from(event, end)[0]
    return zlib.crc32(event[:end]) == stored


class EventHeader(NamedTuple):
    """The common header every binlog event starts with."""

    timestamp: int
    type_code: int
    server_id: int
    event_size: int
    log_pos: int
    flags: int
