"""Real binlog bytes for the byte-level tests: written by the private primary, split here.

``capture(srv, statements)`` flushes the primary's binary log, runs the
statements, flushes again and returns the bytes of the closed file(s) holding
them plus the bytes of the newly active log (whose FORMAT_DESCRIPTION_EVENT
still carries LOG_EVENT_BINLOG_IN_USE_F). ``split_events`` frames a file with
nothing but the 19-byte header's ``event_size``, independently of the decoder,
and ``show_binlog_events`` gives the server's own list to check the framing
against.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from replica_client.testing.server import MariaDBServer

__all__ = [
    "FIXTURES",
    "decode_hex_events",
    "fixture_events",
    "BinlogBytes",
    "RawEvent",
    "capture",
    "show_binlog_events",
    "split_events",
]

#: Real binlogs written by MySQL 5.0 - 9.x and MariaDB servers, kept in the repository
#: (``tests/data/binlogs``; their origins and licences are in its MANIFEST.md).
FIXTURES: Final = Path(__file__).resolve().parent / "data" / "binlogs"

MAGIC: Final = b"\xfebin"
_HEADER: Final = struct.Struct("<IBIIIH")


@dataclass(frozen=True)
class RawEvent:
    """One event as it sits in a file: start offset and bytes (header to CRC)."""

    position: int
    data: bytes

    @property
    def type_code(self) -> int:
        return self.data[4]

    @property
    def end(self) -> int:
        return self.position + len(self.data)

    @property
    def flags(self) -> int:
        return int(_HEADER.unpack_from(self.data)[5])


def split_events(data: bytes) -> list[RawEvent]:
    """Frame a binlog file's bytes into whole events (a partial tail is left out)."""
    if data[:4] != MAGIC:
        raise ValueError("not a binlog file")
    out: list[RawEvent] = []
    pos = 4
    while pos + 19 <= len(data):
        size = _HEADER.unpack_from(data, pos)[3]
        if size < 19 or pos + size > len(data):
            break
        out.append(RawEvent(pos, data[pos : pos + size]))
        pos += size
    return out


@dataclass(frozen=True)
class BinlogBytes:
    """A captured closed binlog file and the active log that followed it."""

    name: str
    data: bytes
    active_name: str
    active: bytes

    @property
    def events(self) -> list[RawEvent]:
        return split_events(self.data)

    @property
    def active_events(self) -> list[RawEvent]:
        return split_events(self.active)


def show_binlog_events(srv: MariaDBServer, name: str) -> list[tuple[int, str, int]]:
    """``SHOW BINLOG EVENTS IN name``: (Pos, Event_type, End_log_pos) of each event."""
    rows = srv.sql(f"SHOW BINLOG EVENTS IN '{name}'")
    return [(int(r[1]), str(r[2]), int(r[4])) for r in rows]


def capture(srv: MariaDBServer, statements: list[str]) -> BinlogBytes:
    """Run ``statements`` into a fresh binlog file of their own and return its bytes.

    The session's primary is shared, so the file is bracketed by two
    ``FLUSH BINARY LOGS``; the statements must all land in that one file.
    """
    srv.sql("FLUSH BINARY LOGS")
    first = srv.binlog_files()[-1]
    srv.sql_many(statements)
    srv.sql("FLUSH BINARY LOGS")
    closed = first
    active = srv.binlog_files()[-1]
    if active == closed:
        raise AssertionError("FLUSH BINARY LOGS did not open a new file")
    # The active file is read right after the flush; only whole events are used.
    return BinlogBytes(closed.name, closed.read_bytes(), active.name, active.read_bytes())


def decode_hex_events(*events: str) -> list[Any]:
    """Decode events copied from a binlog as hex (the FORMAT_DESCRIPTION first), in order."""
    from replica_client.binlog.decoder import EventDecoder

    decoder = EventDecoder()
    return [decoder.decode(bytes.fromhex(h)) for h in events]


def fixture_events(relative: str, **options: Any) -> list[tuple[int, Any]]:
    """``(start position, event)`` of every event of a fixture binlog (``FIXTURES / relative``)."""
    import replica_client as rc
    from replica_client.config import DecoderOptions

    out: list[tuple[int, Any]] = []
    with rc.open_binlog(FIXTURES / relative, options=DecoderOptions(**options)) as reader:
        for event in reader:
            where = reader.event_position
            assert where is not None
            out.append((where.pos, event))
    return out
