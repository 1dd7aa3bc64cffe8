"""The binlog event decoder: one dispatch table from event type to decoder. No I/O.

``EventDecoder.decode(event_bytes)`` takes one whole event (common header,
body, checksum trailer) and returns a typed event. It keeps the state a binlog
needs between events: the current FORMAT_DESCRIPTION_EVENT (post-header
lengths, checksum algorithm) and the TABLE_MAPs of the running statement.
The network session and the file reader both feed it; it never asks a server
for anything.

Rules:
- the CRC32 trailer is verified on every event unless switched off; the FDE
  of a log still in use carries a CRC computed with LOG_EVENT_BINLOG_IN_USE_F
  cleared;
- an event type without a decoder raises :class:`UnknownEventError`, unless
  the server marked it LOG_EVENT_IGNORABLE_F: then it becomes an
  :class:`UnknownEvent` with its body kept;
- malformed input raises only :class:`MalformedEventError` subclasses, with
  the event type, position and offset.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any, Final

from ..config import DecoderOptions
from ..errors import (
    ChecksumMismatchError,
    LimitExceededError,
    MalformedEventError,
    TruncatedBinlogError,
    UnknownEventError,
)
from ..position import GtidTriple
from .charsets import decoder_for_collation
from .codec import need, read_packed_int, u8, u16, u32, u48, u64
from .constants import (
    CHECKSUM_LEN,
    EVENT_HEADER_LEN,
    BinlogChecksumAlg,
    EventFlag,
    EventType,
    RowsFlag,
)
from .decimal import decode_decimal
from .events import (
    AnnotateRowsEvent,
    AppendBlockEvent,
    BeginLoadQueryEvent,
    BinlogCheckpointEvent,
    DeleteRowsEvent,
    Event,
    ExecuteLoadQueryEvent,
    FormatDescriptionEvent,
    GtidEvent,
    GtidListEvent,
    HeartbeatEvent,
    IntvarEvent,
    QueryEvent,
    RandEvent,
    RotateEvent,
    StopEvent,
    TableMapEvent,
    UnknownEvent,
    UpdateRowsEvent,
    UserVarEvent,
    WriteRowsEvent,
    XaPrepareEvent,
    XidEvent,
    event_type_name,
)
from .header import EventHeader, unpack_header
from .rows import RowDecoder, RowDecoderCache, check_width
from .table_map import decode_table_map

__all__ = ["DECODERS", "EventDecoder", "EventDecoderFn"]

E = EventType

#: Signature of one entry of the dispatch table: decodes the body between
#: ``pos`` (just after the common header) and ``end`` (before the checksum).
EventDecoderFn = Callable[["EventDecoder", EventHeader, memoryview, int, int], Event | None]

_U32: Final = struct.Struct("<I")
_DOUBLE: Final = struct.Struct("<d")
_I64: Final = struct.Struct("<q")
_GTID_LIST_ENTRY: Final = struct.Struct("<IIQ")
_VERSION: Final = re.compile(rb"(\d+)\.(\d+)\.(\d+)")

# Malformed bytes surface as these from struct/slicing/int/str helpers; the
# decode boundary turns them into MalformedEventError with context.
_DECODE_ERRORS: Final = (
    struct.error,
    IndexError,
    ValueError,
    ArithmeticError,
    KeyError,
    RecursionError,
    zlib.error,
)


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="replace")


class EventDecoder:
    """Decodes one binlog event at a time; holds the FDE and TABLE_MAP state.

    Args:
        options: decoder options (checksum verification, table filter, limits).
        checksum_alg: the checksum algorithm to assume before the first
            FORMAT_DESCRIPTION_EVENT (what the network session negotiated);
            ``None`` means "decide from the FDE" (files start with one).
    """

    def __init__(
        self,
        options: DecoderOptions | None = None,
        *,
        checksum_alg: BinlogChecksumAlg | None = None,
    ) -> None:
        self.options = options if options is not None else DecoderOptions()
        self.fde: FormatDescriptionEvent | None = None
        self.checksum_alg: int = (
            int(checksum_alg) if checksum_alg is not None else BinlogChecksumAlg.UNDEF
        )
        self._tables: dict[int, tuple[TableMapEvent, RowDecoder | None]] = {}
        self._row_decoders = RowDecoderCache(self.options.table_map_cache_size)
        self._filter = self.options.tables if self.options.tables else None
        self._mariadb = True

    # -- state ----------------------------------------------------------------------

    def reset(self) -> None:
        """Forget the FDE and table maps (a new connection or file set)."""
        self.fde = None
        self._tables.clear()

    def post_header_len(self, type_code: int, default: int) -> int:
        """Post-header length of ``type_code`` from the current FDE (or ``default``)."""
        fde = self.fde
        if fde is None:
            return default
        n = fde.post_header_len(type_code)
        return n if n else default

    def table(self, table_id: int) -> TableMapEvent | None:
        """The TABLE_MAP currently bound to ``table_id``, if any."""
        entry = self._tables.get(table_id)
        return entry[0] if entry is not None else None

    # -- decoding ---------------------------------------------------------------------

    def decode(
        self, data: bytes | bytearray | memoryview, position: int | None = None
    ) -> Event | None:
        """Decode one whole event.

        Args:
            data: the event: 19-byte header, body and checksum trailer.
            position: where the event starts (file offset, or the primary's
                position), used in error messages.

        Returns:
            The event, or ``None`` for TABLE_MAP and rows events of tables the
            ``tables`` option excludes (their rows are never decoded).

        Raises:
            MalformedEventError: (and subclasses) the bytes are not a valid event.
        """
        view = memoryview(data)
        size = len(view)
        if size < EVENT_HEADER_LEN:
            raise TruncatedBinlogError(
                f"event of {size} bytes is shorter than the 19-byte header", position=position
            )
        header = EventHeader._make(unpack_header(view, 0))
        type_code = header.type_code
        if header.event_size != size:
            raise MalformedEventError(
                f"header says {header.event_size} bytes but the event has {size}",
                event_type=type_code,
                position=position,
            )
        if size > self.options.max_event_size:
            raise LimitExceededError(
                f"event of {size} bytes exceeds max_event_size {self.options.max_event_size}"
            )
        try:
            if type_code == E.FORMAT_DESCRIPTION_EVENT:
                return self._format_description(header, view)
            end = size
            if self.checksum_alg == BinlogChecksumAlg.CRC32:
                end -= CHECKSUM_LEN
                if end < EVENT_HEADER_LEN:
                    raise MalformedEventError("event too short for its checksum")
                if self.options.verify_checksum:
                    self._verify(view, end, header, position)
            fn = DECODERS.get(type_code)
            if fn is None:
                if header.flags & EventFlag.IGNORABLE:
                    return UnknownEvent(header, bytes(view[EVENT_HEADER_LEN:end]))
                raise UnknownEventError(
                    f"unknown event type {type_code} without LOG_EVENT_IGNORABLE_F; "
                    "this decoder cannot skip it safely"
                )
            return fn(self, header, view, EVENT_HEADER_LEN, end)
        except MalformedEventError as exc:
            raise exc.with_context(event_type=type_code, position=position) from None
        except _DECODE_ERRORS as exc:
            raise MalformedEventError(
                f"cannot decode {event_type_name(type_code)}: {exc}",
                event_type=type_code,
                position=position,
            ) from exc

    def iter_decode(
        self, data: bytes | bytearray | memoryview, position: int | None = None
    ) -> Iterator[Event]:
        """Decode one event and yield it (nothing for filtered tables).

        Container events (MySQL TRANSACTION_PAYLOAD) yield the payload event
        followed by their inner events, in place.
        """
        event = self.decode(data, position)
        if event is None:
            return
        yield event
        inner = getattr(event, "events", None)
        if inner is not None:
            yield from inner

    @staticmethod
    def _verify(view: memoryview, end: int, header: EventHeader, position: int | None) -> None:
        expected = _U32.unpack_from(view, end)[0]
        actual = zlib.crc32(view[:end])
        if actual != expected:
            raise ChecksumMismatchError(
                f"CRC32 mismatch: stored 0x{expected:08x}, computed 0x{actual:08x}",
                event_type=header.type_code,
                position=position,
            )

    # -- FORMAT_DESCRIPTION_EVENT -----------------------------------------------------

    def _format_description(self, header: EventHeader, view: memoryview) -> FormatDescriptionEvent:
        # binlog_version u16 | server_version char[50] | create_timestamp u32 |
        # header_length u8 | post_header_lengths u8[n] | [checksum_alg u8 | crc u32]
        size = len(view)
        pos = EVENT_HEADER_LEN
        need(view, pos, 57, "FORMAT_DESCRIPTION_EVENT")
        binlog_version = u16(view, pos)
        raw_version = bytes(view[pos + 2 : pos + 52]).split(b"\0", 1)[0]
        create_timestamp = u32(view, pos + 52)
        header_length = view[pos + 56]
        pos += 57
        if header_length != EVENT_HEADER_LEN:
            raise MalformedEventError(
                f"FORMAT_DESCRIPTION_EVENT header length {header_length}, expected 19",
                offset=pos - 1,
            )
        if _has_checksum_alg(raw_version):
            if size < pos + 5:
                raise MalformedEventError("FORMAT_DESCRIPTION_EVENT lacks its checksum fields")
            alg = view[size - 5]
            lengths = tuple(view[pos : size - 5])
            # A checksum-aware server writes a valid CRC on its FDE even with
            # binlog_checksum=NONE: verify it whatever the algorithm byte says,
            # so that a corrupted algorithm byte cannot switch verification off.
            if self.options.verify_checksum:
                self._verify_fde(view, header)
            if alg not in (BinlogChecksumAlg.OFF, BinlogChecksumAlg.CRC32):
                raise MalformedEventError(f"unknown checksum algorithm {alg}", offset=size - 5)
        else:
            alg = BinlogChecksumAlg.UNDEF
            lengths = tuple(view[pos:size])
        fde = FormatDescriptionEvent(
            header,
            binlog_version,
            raw_version.decode("ascii", errors="replace"),
            create_timestamp,
            header_length,
            lengths,
            alg,
        )
        self.fde = fde
        self.checksum_alg = alg
        self._mariadb = fde.is_mariadb
        self._tables.clear()
        return fde

    @staticmethod
    def _verify_fde(view: memoryview, header: EventHeader) -> None:
        # The server computes the FDE's CRC with LOG_EVENT_BINLOG_IN_USE_F
        # cleared, then sets the flag in the file while the log is open.
        end = len(view) - CHECKSUM_LEN
        expected = _U32.unpack_from(view, end)[0]
        flags = header.flags & ~EventFlag.BINLOG_IN_USE
        crc = zlib.crc32(view[:17])
        crc = zlib.crc32(struct.pack("<H", flags), crc)
        crc = zlib.crc32(view[19:end], crc)
        if crc != expected:
            raise ChecksumMismatchError(
                f"CRC32 mismatch in FORMAT_DESCRIPTION_EVENT: stored 0x{expected:08x}, "
                f"computed 0x{crc:08x}",
                event_type=header.type_code,
            )

    # -- rows ------------------------------------------------------------------------

    def _table_map(self, header: EventHeader, view: memoryview, pos: int, end: int) -> Event | None:
        phl = self.post_header_len(E.TABLE_MAP_EVENT, 8)
        tm = decode_table_map(header, view, pos, end, phl, self._mariadb)
        keep = self._filter is None or self._filter(tm.schema, tm.table)
        if keep:
            definition = bytes(view[pos + phl - 2 : end])
            decoder: RowDecoder | None = self._row_decoders.get(definition, tm)
        else:
            decoder = None
        if (
            len(self._tables) >= self.options.table_map_cache_size
            and tm.table_id not in self._tables
        ):
            raise LimitExceededError(
                f"more than {self.options.table_map_cache_size} TABLE_MAPs in one statement "
                "(raise table_map_cache_size)"
            )
        self._tables[tm.table_id] = (tm, decoder)
        return tm if keep else None

    def _rows(
        self, header: EventHeader, view: memoryview, pos: int, end: int, *, v2: bool, kind: int
    ) -> Event | None:
        type_code = header.type_code
        phl = self.post_header_len(type_code, 10 if v2 else 8)
        if phl == 6:
            table_id = u32(view, pos)
            pos += 4
        else:
            table_id = u48(view, pos)
            pos += 6
        flags = u16(view, pos)
        pos += 2
        extra = b""
        if v2:
            extra_len = u16(view, pos)
            if extra_len < 2:
                raise MalformedEventError(
                    f"rows event extra-data length {extra_len} < 2", offset=pos
                )
            need(view, pos, extra_len, "rows event extra data")
            extra = bytes(view[pos + 2 : pos + extra_len])
            pos += extra_len
        entry = self._tables.get(table_id)
        if flags & RowsFlag.STMT_END:
            # The statement ends here: its TABLE_MAPs are not used again.
            self._tables.clear()
        if entry is None:
            raise MalformedEventError(
                f"rows event for table id {table_id} without a preceding TABLE_MAP "
                "(the read started inside a statement?)"
            )
        table, decoder = entry
        if decoder is None:
            return None  # excluded by the table filter: rows are not decoded
        width, pos = read_packed_int(view, pos)
        check_width(width, table)
        nbytes = (width + 7) >> 3
        need(view, pos, nbytes, "columns-present bitmap")
        present = int.from_bytes(view[pos : pos + nbytes], "little")
        pos += nbytes
        if kind == _UPDATE:
            need(view, pos, nbytes, "columns-present bitmap (after image)")
            present_after = int.from_bytes(view[pos : pos + nbytes], "little")
            pos += nbytes
            pairs = decoder.decode_update_rows(view, pos, end, present, present_after)
            return UpdateRowsEvent(
                header, table_id, flags, table, present, extra, pairs, present_after
            )
        rows = decoder.decode_rows(view, pos, end, present)
        if kind == _WRITE:
            return WriteRowsEvent(header, table_id, flags, table, present, extra, rows)
        return DeleteRowsEvent(header, table_id, flags, table, present, extra, rows)


_WRITE, _UPDATE, _DELETE = 0, 1, 2


def _has_checksum_alg(version: bytes) -> bool:
    """FDEs from MySQL >= 5.6.1 and MariaDB >= 5.3 end with the checksum algorithm."""
    m = _VERSION.match(version)
    if m is None:
        return False
    v = (int(m[1]), int(m[2]), int(m[3]))
    if b"mariadb" in version.lower():
        return v >= (5, 3, 0)
    return v >= (5, 6, 1)


# -- event decoders (body between pos and end) ------------------------------------------


def _rotate(d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    # position u64 | next file name (rest)
    phl = d.post_header_len(E.ROTATE_EVENT, 8)
    position = u64(view, pos) if phl >= 8 else 4
    name = bytes(view[pos + phl : end])
    if h.flags & EventFlag.ARTIFICIAL or h.log_pos == 0:
        pass  # a fake ROTATE (first event of a dump, or a relay log's): same fields
    d._tables.clear()
    return RotateEvent(h, position, _text(name))


def _stop(d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    return StopEvent(h)


def _heartbeat(d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    return HeartbeatEvent(h, _text(bytes(view[pos:end])))


def _xid(d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    return XidEvent(h, u64(view, pos))


def _intvar(d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    return IntvarEvent(h, u8(view, pos), u64(view, pos + 1))


def _rand(d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    return RandEvent(h, u64(view, pos), u64(view, pos + 8))


_STRING_RESULT, _REAL_RESULT, _INT_RESULT, _ROW_RESULT, _DECIMAL_RESULT = range(5)


def _user_var(d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    # name_len u32 | name | is_null u8 | [type u8 | charset u32 | len u32 | value | flags u8]
    name_len = u32(view, pos)
    need(view, pos + 4, name_len + 1, "user variable name")
    name = _text(bytes(view[pos + 4 : pos + 4 + name_len]))
    pos += 4 + name_len
    if view[pos]:
        return UserVarEvent(h, name, None)
    vtype = u8(view, pos + 1)
    charset = u32(view, pos + 2)
    vlen = u32(view, pos + 6)
    pos += 10
    need(view, pos, vlen, "user variable value")
    vend = pos + vlen
    unsigned = vend < end and bool(view[vend] & 1)
    value: int | float | Decimal | str | bytes
    if vtype == _REAL_RESULT:
        value = _DOUBLE.unpack_from(view, pos)[0]
    elif vtype == _INT_RESULT:
        value = u64(view, pos) if unsigned else _I64.unpack_from(view, pos)[0]
    elif vtype == _DECIMAL_RESULT:
        precision, scale = u8(view, pos), u8(view, pos + 1)
        value = decode_decimal(view, pos + 2, precision, scale)[0]
    elif vtype in (_STRING_RESULT, _ROW_RESULT):
        raw = bytes(view[pos:vend])
        decode = decoder_for_collation(charset)
        try:
            value = decode(raw) if decode is not None else raw
        except UnicodeDecodeError:
            value = raw
    else:
        raise MalformedEventError(f"unknown user variable type {vtype}", offset=pos - 10)
    return UserVarEvent(h, name, value, vtype, charset, unsigned)


# Query status variables (Query_log_event::Query_log_event(buf, ...)).
_Q_FLAGS2 = 0
_Q_SQL_MODE = 1
_Q_CATALOG = 2
_Q_AUTO_INCREMENT = 3
_Q_CHARSET = 4
_Q_TIME_ZONE = 5
_Q_CATALOG_NZ = 6
_Q_LC_TIME_NAMES = 7
_Q_CHARSET_DATABASE = 8
_Q_TABLE_MAP_FOR_UPDATE = 9
_Q_MASTER_DATA_WRITTEN = 10
_Q_INVOKER = 11
_Q_UPDATED_DB_NAMES = 12
_Q_MICROSECONDS = 13
_Q_COMMIT_TS = 14
_Q_COMMIT_TS2 = 15
_Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP = 16
_Q_DDL_LOGGED_WITH_XID = 17
_Q_DEFAULT_COLLATION_FOR_UTF8MB4 = 18
_Q_SQL_REQUIRE_PRIMARY_KEY = 19
_Q_DEFAULT_TABLE_ENCRYPTION = 20
_Q_HRNOW = 128
_Q_XID = 129
_OVER_MAX_DBS_IN_EVENT_MTS = 254


def _status_vars(view: memoryview, pos: int, end: int) -> tuple[dict[str, Any], bytes]:
    out: dict[str, Any] = {}
    while pos < end:
        code = view[pos]
        p = pos + 1
        if code == _Q_FLAGS2:
            out["flags2"] = u32(view, p)
            p += 4
        elif code == _Q_SQL_MODE:
            out["sql_mode"] = u64(view, p)
            p += 8
        elif code in (_Q_CATALOG, _Q_CATALOG_NZ):
            n = u8(view, p)
            need(view, p + 1, n, "catalog")
            out["catalog"] = _text(bytes(view[p + 1 : p + 1 + n]))
            p += 1 + n + (1 if code == _Q_CATALOG else 0)
        elif code == _Q_AUTO_INCREMENT:
            out["auto_increment_increment"] = u16(view, p)
            out["auto_increment_offset"] = u16(view, p + 2)
            p += 4
        elif code == _Q_CHARSET:
            out["charset"] = (u16(view, p), u16(view, p + 2), u16(view, p + 4))
            p += 6
        elif code == _Q_TIME_ZONE:
            n = u8(view, p)
            need(view, p + 1, n, "time zone")
            out["time_zone"] = _text(bytes(view[p + 1 : p + 1 + n]))
            p += 1 + n
        elif code == _Q_LC_TIME_NAMES:
            out["lc_time_names"] = u16(view, p)
            p += 2
        elif code == _Q_CHARSET_DATABASE:
            out["charset_database"] = u16(view, p)
            p += 2
        elif code == _Q_TABLE_MAP_FOR_UPDATE:
            out["table_map_for_update"] = u64(view, p)
            p += 8
        elif code == _Q_MASTER_DATA_WRITTEN:
            out["master_data_written"] = u32(view, p)
            p += 4
        elif code == _Q_INVOKER:
            n = u8(view, p)
            need(view, p + 1, n + 1, "invoker user")
            user = _text(bytes(view[p + 1 : p + 1 + n]))
            p += 1 + n
            m = u8(view, p)
            need(view, p + 1, m, "invoker host")
            host = _text(bytes(view[p + 1 : p + 1 + m]))
            p += 1 + m
            out["invoker"] = (user, host)
        elif code == _Q_UPDATED_DB_NAMES:
            count = u8(view, p)
            p += 1
            names: list[str] = []
            if count != _OVER_MAX_DBS_IN_EVENT_MTS:
                for _ in range(count):
                    nul = bytes(view[p:end]).find(b"\0")
                    if nul < 0:
                        raise MalformedEventError("unterminated updated-db name", offset=p)
                    names.append(_text(bytes(view[p : p + nul])))
                    p += nul + 1
            out["updated_db_names"] = tuple(names)
        elif code == _Q_MICROSECONDS:
            need(view, p, 3, "microseconds")
            out["microseconds"] = view[p] | view[p + 1] << 8 | view[p + 2] << 16
            p += 3
        elif code == _Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP:
            out["explicit_defaults_for_timestamp"] = u8(view, p)
            p += 1
        elif code == _Q_DDL_LOGGED_WITH_XID:
            out["ddl_xid"] = u64(view, p)
            p += 8
        elif code == _Q_DEFAULT_COLLATION_FOR_UTF8MB4:
            out["default_collation_for_utf8mb4"] = u16(view, p)
            p += 2
        elif code == _Q_SQL_REQUIRE_PRIMARY_KEY:
            out["sql_require_primary_key"] = u8(view, p)
            p += 1
        elif code == _Q_DEFAULT_TABLE_ENCRYPTION:
            out["default_table_encryption"] = u8(view, p)
            p += 1
        elif code == _Q_HRNOW:
            need(view, p, 3, "Q_HRNOW")
            out["hrnow"] = view[p] | view[p + 1] << 8 | view[p + 2] << 16
            p += 3
        elif code == _Q_XID:
            out["xid"] = u64(view, p)
            p += 8
        else:
            # Lengths of unknown codes are unknowable (the server stops here
            # too): keep the rest, never drop it.
            return out, bytes(view[pos:end])
        if p > end:
            raise MalformedEventError(
                f"status variable {code} overruns the status block", offset=pos
            )
        pos = p
    return out, b""


def _query_parts(
    d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int, phl: int
) -> QueryEvent:
    # thread_id u32 | exec_time u32 | db_len u8 | error_code u16 | status_len u16
    # [extra post-header of EXECUTE_LOAD_QUERY] | status vars | db | 0x00 | query
    need(view, pos, phl, "QUERY post-header")
    thread_id = u32(view, pos)
    exec_time = u32(view, pos + 4)
    db_len = view[pos + 8]
    error_code = u16(view, pos + 9)
    status_len = u16(view, pos + 11) if phl >= 13 else 0
    pos += phl
    need(view, pos, status_len, "QUERY status variables")
    status, unknown = _status_vars(view, pos, pos + status_len)
    pos += status_len
    need(view, pos, db_len + 1, "QUERY schema name")
    schema = _text(bytes(view[pos : pos + db_len]))
    pos += db_len + 1
    if pos > end:
        raise MalformedEventError("QUERY text starts past the end of the event", offset=pos)
    raw = bytes(view[pos:end])
    charset = status.get("charset")
    decode = decoder_for_collation(charset[0]) if charset else None
    try:
        query = decode(raw) if decode is not None else raw.decode("utf-8")
    except UnicodeDecodeError:
        query = raw.decode("utf-8", errors="replace")
    return QueryEvent(
        h,
        thread_id,
        exec_time,
        error_code,
        schema,
        query,
        unknown_status_vars=unknown,
        query_bytes=raw,
        **status,
    )


def _query(d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    return _query_parts(d, h, view, pos, end, d.post_header_len(E.QUERY_EVENT, 13))


def _execute_load_query(
    d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    # QUERY post-header (13) | file_id u32 | fn_pos_start u32 | fn_pos_end u32 | dup u8
    phl = d.post_header_len(E.EXECUTE_LOAD_QUERY_EVENT, 26)
    base = d.post_header_len(E.QUERY_EVENT, 13)
    need(view, pos, phl, "EXECUTE_LOAD_QUERY post-header")
    file_id = u32(view, pos + base)
    start = u32(view, pos + base + 4)
    stop = u32(view, pos + base + 8)
    dup = u8(view, pos + base + 12)
    query = _query_parts(d, h, view, pos, end, phl)
    return ExecuteLoadQueryEvent(h, query, file_id, start, stop, dup)


def _begin_load_query(
    d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    phl = d.post_header_len(E.BEGIN_LOAD_QUERY_EVENT, 4)
    return BeginLoadQueryEvent(h, u32(view, pos), bytes(view[pos + phl : end]))


def _append_block(d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    phl = d.post_header_len(E.APPEND_BLOCK_EVENT, 4)
    return AppendBlockEvent(h, u32(view, pos), bytes(view[pos + phl : end]))


def _mariadb_gtid(d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    # seq_no u64 | domain_id u32 | flags2 u8 | commit_id u64 or 6 zero bytes
    # [XA: format_id u32 | gtrid_len u8 | bqual_len u8 | data]
    # [flags_extra u8 | extra_engines u8 | sa_seq_no u64 | thread_id u32]
    # (MariaDB sql/log_event.cc Gtid_log_event::Gtid_log_event, ::write)
    base = pos
    seq_no = u64(view, pos)
    domain_id = u32(view, pos + 8)
    flags2 = u8(view, pos + 12)
    commit_id = None
    if flags2 & GtidEvent.FL_GROUP_COMMIT_ID:
        commit_id = u64(view, pos + 13)
        pos += 21
    else:
        pos += 19
    fmt = gtrid = bqual = None
    if flags2 & (GtidEvent.FL_PREPARED_XA | GtidEvent.FL_COMPLETED_XA):
        fmt = u32(view, pos)
        glen, blen = u8(view, pos + 4), u8(view, pos + 5)
        pos += 6
        need(view, pos, glen + blen, "XA xid")
        gtrid = bytes(view[pos : pos + glen])
        bqual = bytes(view[pos + glen : pos + glen + blen])
        pos += glen + blen
    flags_extra = 0
    extra_engines = sa_seq_no = thread_id = None
    if pos < end and pos - base >= 19:
        flags_extra = view[pos]
        pos += 1
        if flags_extra & 0x01:
            extra_engines = u8(view, pos)
            pos += 1
        if flags_extra & 0x06:
            sa_seq_no = u64(view, pos)
            pos += 8
        if flags_extra & 0x08:
            thread_id = u32(view, pos)
            pos += 4
    return GtidEvent(
        h,
        domain_id,
        seq_no,
        flags2,
        commit_id,
        fmt,
        gtrid,
        bqual,
        flags_extra,
        extra_engines,
        sa_seq_no,
        thread_id,
    )


def _gtid_list(d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    # count u32 (low 28 bits; top 4 bits flags) | count x (domain u32 | server u32 | seq u64)
    raw = u32(view, pos)
    count, flags = raw & 0x0FFFFFFF, raw >> 28
    pos += 4
    need(view, pos, count * 16, "GTID_LIST entries")
    if pos + count * 16 > end:
        raise MalformedEventError("GTID_LIST entries overrun the event", offset=pos)
    gtids = tuple(
        GtidTriple(*_GTID_LIST_ENTRY.unpack_from(view, pos + 16 * i)) for i in range(count)
    )
    return GtidListEvent(h, gtids, flags)


def _binlog_checkpoint(
    d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    n = u32(view, pos)
    need(view, pos + 4, n, "checkpoint file name")
    return BinlogCheckpointEvent(h, _text(bytes(view[pos + 4 : pos + 4 + n])))


def _annotate_rows(d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    return AnnotateRowsEvent(h, _text(bytes(view[pos:end])))


def _xa_prepare(d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    # one_phase u8 | format_id u32 | gtrid_len u32 | bqual_len u32 | data
    one_phase = bool(u8(view, pos))
    fmt = u32(view, pos + 1)
    glen = u32(view, pos + 5)
    blen = u32(view, pos + 9)
    pos += 13
    if glen > 64 or blen > 64:
        raise MalformedEventError(f"XA xid lengths {glen}/{blen} exceed 64", offset=pos)
    need(view, pos, glen + blen, "XA xid")
    return XaPrepareEvent(
        h,
        one_phase,
        fmt,
        bytes(view[pos : pos + glen]),
        bytes(view[pos + glen : pos + glen + blen]),
    )


def _table_map(
    d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event | None:
    return d._table_map(h, view, pos, end)


def _rows_fn(v2: bool, kind: int) -> EventDecoderFn:
    def decode(
        d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int
    ) -> Event | None:
        return d._rows(h, view, pos, end, v2=v2, kind=kind)

    return decode


#: The one dispatch table: event type -> decoder of its body.
DECODERS: dict[int, EventDecoderFn] = {
    E.QUERY_EVENT: _query,
    E.STOP_EVENT: _stop,
    E.ROTATE_EVENT: _rotate,
    E.INTVAR_EVENT: _intvar,
    E.APPEND_BLOCK_EVENT: _append_block,
    E.RAND_EVENT: _rand,
    E.USER_VAR_EVENT: _user_var,
    E.XID_EVENT: _xid,
    E.BEGIN_LOAD_QUERY_EVENT: _begin_load_query,
    E.EXECUTE_LOAD_QUERY_EVENT: _execute_load_query,
    E.TABLE_MAP_EVENT: _table_map,
    E.WRITE_ROWS_EVENT_V1: _rows_fn(False, _WRITE),
    E.UPDATE_ROWS_EVENT_V1: _rows_fn(False, _UPDATE),
    E.DELETE_ROWS_EVENT_V1: _rows_fn(False, _DELETE),
    E.WRITE_ROWS_EVENT: _rows_fn(True, _WRITE),
    E.UPDATE_ROWS_EVENT: _rows_fn(True, _UPDATE),
    E.DELETE_ROWS_EVENT: _rows_fn(True, _DELETE),
    E.HEARTBEAT_LOG_EVENT: _heartbeat,
    E.XA_PREPARE_LOG_EVENT: _xa_prepare,
    E.ANNOTATE_ROWS_EVENT: _annotate_rows,
    E.BINLOG_CHECKPOINT_EVENT: _binlog_checkpoint,
    E.GTID_EVENT: _mariadb_gtid,
    E.GTID_LIST_EVENT: _gtid_list,
}
