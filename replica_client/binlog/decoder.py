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
from dataclasses import fields, replace
from decimal import Decimal
from operator import attrgetter
from typing import Any, Final

from ..accel import constructor, speedups
from ..config import DecoderOptions
from ..errors import (
    ChecksumMismatchError,
    DecryptionError,
    LimitExceededError,
    MalformedEventError,
    TruncatedBinlogError,
    UnknownEventError,
)
from ..position import GtidTriple
from .charsets import decoder_for_collation
from .codec import U48, U64, need, read_packed_int, u8, u16, u32, u64
from .compression import (
    MARIADB_COMPRESSED_TYPES,
    decompress_payload,
    parse_transaction_payload,
    split_payload_events,
    uncompress_query_event,
    uncompress_rows_event,
)
from .constants import (
    CHECKSUM_LEN,
    EVENT_HEADER_LEN,
    BinlogChecksumAlg,
    ColumnType,
    EventFlag,
    EventType,
    RowsFlag,
)
from .decimal import decode_decimal
from .encryption import BinlogDecryptor, parse_start_encryption
from .events import (
    MISSING,
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
    PartialJson,
    PartialUpdateRowsEvent,
    QueryEvent,
    RandEvent,
    RotateEvent,
    Row,
    StartEncryptionEvent,
    StopEvent,
    TableMapEvent,
    TransactionPayloadEvent,
    UnknownEvent,
    UpdateRowsEvent,
    UserVarEvent,
    WriteRowsEvent,
    XaPrepareEvent,
    XidEvent,
    event_type_name,
)
from .header import EventHeader, unpack_header
from .json_binary import JsonDiff, apply_json_diffs, decode_json_diff
from .legacy import (
    OLD_HEADER_LEN,
    PRE_GA_PERMUTATION,
    START_V3_V1_MAX_LEN,
    decode_create_file,
    decode_delete_file,
    decode_exec_load,
    decode_load,
    decode_old_rows,
    decode_slave,
    decode_start_v3,
    is_pre_ga_renumbered,
    legacy_post_header_lengths,
    permute_post_header_lengths,
)
from .mysql_events import (
    decode_gtid,
    decode_gtid_tagged,
    decode_heartbeat_v2,
    decode_incident,
    decode_previous_gtids,
    decode_rows_query,
    decode_transaction_context,
    decode_view_change,
)
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
_V1_HEADER: Final = struct.Struct("<IBII")
_GTID_LIST_ENTRY: Final = struct.Struct("<IIQ")
_VERSION: Final = re.compile(rb"(\d+)\.(\d+)\.(\d+)")
# Plain ints for the per-event tests (IntEnum/IntFlag operators cost a Python call).
_FDE_CODE: Final = int(EventType.FORMAT_DESCRIPTION_EVENT)
_CRC32: Final = int(BinlogChecksumAlg.CRC32)
_STMT_END: Final = int(RowsFlag.STMT_END)
# TableMapEvent fields after (header, table_id): a seen TABLE_MAP is rebuilt
# positionally, without dataclasses.replace's per-call field introspection.
_TM_FIELDS: Final = fields(TableMapEvent)
_TM_FAST: Final = all(f.init for f in _TM_FIELDS) and [f.name for f in _TM_FIELDS[:2]] == [
    "header",
    "table_id",
]
_tm_rest: Final = attrgetter(*(f.name for f in _TM_FIELDS[2:]))
# EventHeader from the 6 unpacked fields without the Python-level _make/__new__.
_new_header: Final = tuple.__new__
# The accelerator's common case of decode(): header unpacked, size and CRC32
# checked in one call (None sends the event down the Python path).
_sp = speedups()
_event_head: Final[Callable[[memoryview, int], EventHeader | None] | None] = (
    _sp.event_head if _sp is not None else None
)
if _sp is not None:
    _sp.event_head_setup(EventHeader, zlib.crc32)
_SLOW: Final = -1  # _fast_mode: take the Python path
# Frozen slotted events built field by field without their generated __init__.
_new_gtid: Final = constructor(GtidEvent)
_new_xid: Final = constructor(XidEvent)
_new_table_map: Final = constructor(TableMapEvent)
_new_write_rows: Final = constructor(WriteRowsEvent)
_new_update_rows: Final = constructor(UpdateRowsEvent)
_new_delete_rows: Final = constructor(DeleteRowsEvent)
_new_rotate: Final = constructor(RotateEvent)
_new_annotate: Final = constructor(AnnotateRowsEvent)
_GTID_HEAD: Final = struct.Struct("<QIB")  # seq_no, domain_id, flags2
_TABLE_MAP: Final = int(EventType.TABLE_MAP_EVENT)
_FL_GROUP_COMMIT_ID: Final = GtidEvent.FL_GROUP_COMMIT_ID
_FL_XA: Final = GtidEvent.FL_PREPARED_XA | GtidEvent.FL_COMPLETED_XA
_ID48_FLAGS: Final = struct.Struct("<IHH")  # table id (u48 as u32 + u16), flags u16

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


def _malformed(type_code: int, position: int | None, exc: Exception) -> MalformedEventError:
    return MalformedEventError(
        f"cannot decode {event_type_name(type_code)}: {exc}",
        event_type=type_code,
        position=position,
    )


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="replace")


class EventDecoder:
    """Decodes one binlog event at a time; holds the FDE and TABLE_MAP state.

    Args:
        options: decoder options (checksum verification, table filter, limits,
            unknown-event policy, encryption keys).
        checksum_alg: the checksum algorithm to assume before the first
            FORMAT_DESCRIPTION_EVENT (what the network session negotiated);
            ``None`` means "decide from the FDE" (files start with one).

    Attributes:
        header_len: the common header length of the current log: 19, or 13
            for a v1 (MySQL 3.23) log. ``event_size`` is at bytes 9..12 in
            both, so a reader frames events the same way and asks this only
            for the smallest valid event.
        binlog_version: 4, or 1/3 once :meth:`begin_file` saw a legacy log.
    """

    def __init__(
        self,
        options: DecoderOptions | None = None,
        *,
        checksum_alg: BinlogChecksumAlg | None = None,
    ) -> None:
        self.options = options if options is not None else DecoderOptions()
        self.fde: FormatDescriptionEvent | None = None
        #: Post-header lengths looked up in the FDE (rows, TABLE_MAP), per type.
        self._phl: dict[int, int] = {}
        self._checksum_alg: int = (
            int(checksum_alg) if checksum_alg is not None else BinlogChecksumAlg.UNDEF
        )
        self._header_len: int = EVENT_HEADER_LEN
        self._binlog_version: int = 4
        #: What the accelerated prologue of decode() may do: _SLOW, or event_head's crc_mode.
        self._fast_mode: int = _SLOW
        #: The header of the last event decode() was given (also when it returned None).
        self.last_header: EventHeader | None = None
        self._tables: dict[int, tuple[TableMapEvent, RowDecoder | None]] = {}
        self._row_decoders = RowDecoderCache(self.options.table_map_cache_size)
        self._filter = self.options.tables if self.options.tables else None
        self._mariadb = True
        self._file_start = False
        self._in_file = False
        self._type_map: dict[int, int] | None = None
        self._old_table_map = False
        self._decryptor: BinlogDecryptor | None = None
        self._keep_unknown = self.options.unknown_events == "keep"
        self._max_event_size = self.options.max_event_size
        self._max_tables = self.options.table_map_cache_size
        self._verify_crc = self.options.verify_checksum
        self._refresh_fast()

    # -- state ----------------------------------------------------------------------

    @property
    def checksum_alg(self) -> int:
        """The checksum algorithm of the events being decoded (a BinlogChecksumAlg value)."""
        return self._checksum_alg

    @checksum_alg.setter
    def checksum_alg(self, value: int) -> None:
        self._checksum_alg = int(value)
        self._refresh_fast()

    @property
    def header_len(self) -> int:
        return self._header_len

    @header_len.setter
    def header_len(self, value: int) -> None:
        self._header_len = value
        self._refresh_fast()

    @property
    def binlog_version(self) -> int:
        return self._binlog_version

    @binlog_version.setter
    def binlog_version(self, value: int) -> None:
        self._binlog_version = value
        self._refresh_fast()

    def _refresh_fast(self) -> None:
        # The accelerated prologue covers plain v4 events only; it is re-derived
        # whenever anything it depends on changes.
        if (
            _event_head is None
            or self._header_len != EVENT_HEADER_LEN
            or self._binlog_version != 4
            or self._file_start
            or self._decryptor is not None
            or self._type_map is not None
        ):
            self._fast_mode = _SLOW
        elif self._checksum_alg == _CRC32:
            self._fast_mode = 2 if self._verify_crc else 1
        else:
            self._fast_mode = 0

    def reset(self) -> None:
        """Forget the FDE and table maps (a new connection or file set)."""
        self._set_fde(None)
        self._tables.clear()
        self.header_len = EVENT_HEADER_LEN
        self.binlog_version = 4
        self._type_map = None
        self._old_table_map = False
        self._decryptor = None
        self._file_start = False
        self._refresh_fast()

    def begin_file(self) -> None:
        """Start a binlog file: the next event decides its format version.

        A FORMAT_DESCRIPTION_EVENT means v4; a START_EVENT_V3 of fewer than 75
        bytes v1 (13-byte headers), of 75 or more v3; any other event v3
        (MySQL Internals "Binlog Versions"). Encrypted files are decrypted
        from their START_ENCRYPTION_EVENT on. The network stream never calls
        this: a primary always sends an FDE.
        """
        self.reset()
        self._file_start = True
        self._in_file = True
        self._refresh_fast()

    def _set_fde(self, fde: FormatDescriptionEvent | None) -> None:
        self.fde = fde
        self._phl = {}  # post-header lengths are the FDE's

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
            data: the event: common header, body and checksum trailer (as
                stored: encrypted events are decrypted here).
            position: where the event starts (file offset, or the primary's
                position), used in error messages and, for encrypted files,
                as the IV's counter.

        Returns:
            The event, or ``None`` for TABLE_MAP and rows events of tables the
            ``tables`` option excludes (their rows are never decoded).

        Raises:
            MalformedEventError: (and subclasses) the bytes are not a valid event.
            DecryptionError: an encrypted file without the right key.
        """
        view = data if type(data) is memoryview else memoryview(data)
        mode = self._fast_mode
        header = _event_head(view, mode) if mode != _SLOW else None  # type: ignore[misc]
        if header is not None and header[3] <= self._max_event_size:
            hlen = EVENT_HEADER_LEN
            end = header[3] - CHECKSUM_LEN if mode else header[3]  # size and CRC32 checked
        else:
            header, view, hlen = self._checked_header(view, position)
            end = -1  # checked below
        self.last_header = header
        type_code = header[1]
        try:
            if end < 0:
                if type_code == _FDE_CODE and hlen == EVENT_HEADER_LEN:
                    return self._format_description(header, view)
                end = self._checked_end(view, header, hlen, position)
            fn = DECODERS.get(type_code)
            if fn is not None:
                return fn(self, header, view, hlen, end)
            return self._body(header, view, hlen, end, position)
        except MalformedEventError as exc:
            raise exc.with_context(event_type=type_code, position=position) from None
        except _DECODE_ERRORS as exc:
            raise _malformed(type_code, position, exc) from exc

    def _checked_header(
        self, view: memoryview, position: int | None
    ) -> tuple[EventHeader, memoryview, int]:
        """The Python path's header: every check, decryption and legacy format.

        Returns the header (type code and log_pos as the format means them), the
        event's bytes (decrypted) and the header length.
        """
        size = len(view)
        if self._file_start:
            self._detect_version(view, size, position)
        hlen = self.header_len
        if size < hlen:
            raise TruncatedBinlogError(
                f"event of {size} bytes is shorter than the {hlen}-byte header",
                position=position,
            )
        if self._decryptor is not None:
            view = self._decrypt(view, size, position)
        if hlen == EVENT_HEADER_LEN:
            header = _new_header(EventHeader, unpack_header(view, 0))
        else:
            ts, tc, sid, esize = _V1_HEADER.unpack_from(view, 0)
            header = EventHeader(ts, tc, sid, esize, 0, 0)
        type_code = header.type_code
        if header.event_size != size:
            raise MalformedEventError(
                f"header says {header.event_size} bytes but the event has {size}",
                event_type=type_code,
                position=position,
            )
        if size > self._max_event_size:
            raise LimitExceededError(
                f"event of {size} bytes exceeds max_event_size {self.options.max_event_size}"
            )
        if self._type_map is not None and type_code in self._type_map:
            type_code = self._type_map[type_code]
            header = header._replace(type_code=type_code)
        if self.binlog_version == 3 and header.log_pos and type_code < E.FORMAT_DESCRIPTION_EVENT:
            # v3 (4.0) headers hold the start position; the server reads the end.
            header = header._replace(log_pos=header.log_pos + size)
        return header, view, hlen

    def _checked_end(
        self, view: memoryview, header: EventHeader, hlen: int, position: int | None
    ) -> int:
        """Where the body ends: before the CRC32 trailer, verified, if there is one."""
        end = len(view)
        if self.checksum_alg == _CRC32:
            end -= CHECKSUM_LEN
            if end < hlen:
                raise MalformedEventError("event too short for its checksum")
            if self._verify_crc and zlib.crc32(view[:end]) != _U32.unpack_from(view, end)[0]:
                self._verify(view, end, header, position)  # raises
        return end

    def _body(
        self, header: EventHeader, view: memoryview, pos: int, end: int, position: int | None
    ) -> Event | None:
        type_code = header.type_code
        fn = DECODERS.get(type_code)
        if fn is not None:
            return fn(self, header, view, pos, end)
        if type_code == E.TRANSACTION_PAYLOAD_EVENT:
            return self._transaction_payload(header, view, pos, end, position)
        if type_code in MARIADB_COMPRESSED_TYPES:
            return self._compressed(header, view, end)
        if type_code == E.START_ENCRYPTION_EVENT:
            return self._start_encryption(header, view, pos, end, position)
        if header.flags & EventFlag.IGNORABLE or self._keep_unknown:
            return UnknownEvent(header, bytes(view[pos:end]))
        raise UnknownEventError(
            f"unknown event type {type_code} without LOG_EVENT_IGNORABLE_F; "
            "this decoder cannot skip it safely (DecoderOptions(unknown_events='keep') "
            "keeps such events as UnknownEvent)"
        )

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
        if isinstance(event, TransactionPayloadEvent):
            yield from event.events

    # -- format versions, encryption, containers ----------------------------------------

    def _detect_version(self, view: memoryview, size: int, position: int | None) -> None:
        self._file_start = False
        self._refresh_fast()
        if size < 5:
            return  # too short for a type byte: decode() reports the truncation
        type_code = view[4]
        if type_code == E.FORMAT_DESCRIPTION_EVENT:
            return
        if type_code == E.START_EVENT_V3 and size < START_V3_V1_MAX_LEN:
            version = 1
            self.header_len = OLD_HEADER_LEN
        else:
            version = 3
        self.binlog_version = version
        self.checksum_alg = BinlogChecksumAlg.UNDEF
        header = EventHeader(0, E.START_EVENT_V3, 0, 0, 0, 0)
        self._set_fde(
            FormatDescriptionEvent(
                header, version, "", 0, self.header_len, legacy_post_header_lengths(version), 255
            )
        )
        self._mariadb = False
        self._old_table_map = True

    def _decrypt(self, view: memoryview, size: int, position: int | None) -> memoryview:
        assert self._decryptor is not None
        if position is None:
            raise DecryptionError("decrypting a binlog event needs its file position")
        return memoryview(self._decryptor.decrypt_event(view, position))

    def _start_encryption(
        self, header: EventHeader, view: memoryview, pos: int, end: int, position: int | None
    ) -> Event:
        # crypto_scheme u8 | key_version u32 | nonce[12]  (Start_encryption_log_event)
        start = parse_start_encryption(view[pos:end])
        event = StartEncryptionEvent(header, start.scheme, start.key_version, start.nonce)
        keys = self.options.encryption_keys
        if keys is None:
            if self._in_file:
                raise DecryptionError(
                    "this binlog file is encrypted (START_ENCRYPTION_EVENT at position "
                    f"{position}); pass the server's key file: open_binlog(..., key_file=...)"
                )
            return event  # network: the primary sends plaintext after it
        if self._in_file:
            self._decryptor = BinlogDecryptor.from_start_encryption(
                keys, start, checksum=self.checksum_alg == BinlogChecksumAlg.CRC32
            )
            self._refresh_fast()
        return event

    def _transaction_payload(
        self, header: EventHeader, view: memoryview, pos: int, end: int, position: int | None
    ) -> Event:
        # field list (type, length, value as packed ints; 0 ends it) | payload
        # (Transaction_payload_event; see compression.parse_transaction_payload).
        # The FDE lists 40 as its post-header length, but the fields start right
        # after the common header: that 40 is only the fields' maximal size.
        parsed = parse_transaction_payload(view[pos:end])
        raw = decompress_payload(parsed, max_size=self.options.max_event_size)
        inner: list[Event] = []
        saved = self.checksum_alg
        self.checksum_alg = BinlogChecksumAlg.OFF  # inner events carry no CRC32
        try:
            for part in split_payload_events(raw):
                event = self._decode_inner(part, position)
                if event is not None:
                    inner.append(event)
        finally:
            self.checksum_alg = saved
        return TransactionPayloadEvent(
            header, parsed.compression_type, parsed.payload_size, len(raw), tuple(inner)
        )

    def _decode_inner(self, view: memoryview, position: int | None) -> Event | None:
        header = EventHeader._make(unpack_header(view, 0))
        if header.event_size != len(view):
            raise MalformedEventError("inner event size does not match its header")
        if header.type_code in (E.FORMAT_DESCRIPTION_EVENT, E.START_ENCRYPTION_EVENT):
            raise MalformedEventError(
                f"{event_type_name(header.type_code)} inside a transaction payload"
            )
        return self._body(header, view, EVENT_HEADER_LEN, len(view), position)

    def _compressed(self, header: EventHeader, view: memoryview, end: int) -> Event | None:
        # MariaDB log_bin_compress: rebuild the plain twin (compression.py), then
        # decode it with the twin's decoder under the original header.
        type_code = header.type_code
        crc = self.checksum_alg == BinlogChecksumAlg.CRC32
        limit = self.options.max_event_size
        if type_code == E.QUERY_COMPRESSED_EVENT:
            plain = uncompress_query_event(
                view,
                checksum=crc,
                post_header_len=self.post_header_len(E.QUERY_EVENT, 13),
                max_size=limit,
            )
        else:
            plain = uncompress_rows_event(
                view,
                checksum=crc,
                post_header_len=self.post_header_len(type_code, 8 if type_code > 168 else 10),
                max_size=limit,
            )
        twin = MARIADB_COMPRESSED_TYPES[type_code]
        pview = memoryview(plain)
        return DECODERS[twin](self, header, pview, EVENT_HEADER_LEN, len(pview) - (len(view) - end))

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
        version_text = raw_version.decode("ascii", errors="replace")
        self._type_map = None
        if is_pre_ga_renumbered(version_text):
            # MySQL 5.1/5.2 pre-GA trees numbered types 16-22 differently
            # (Format_description_log_event: event_type_permutation); their
            # TABLE_MAP has no column metadata and no null bitmap.
            lengths = permute_post_header_lengths(lengths)
            self._type_map = dict(PRE_GA_PERMUTATION)
        self._old_table_map = self._type_map is not None
        self._refresh_fast()
        fde = FormatDescriptionEvent(
            header,
            binlog_version,
            version_text,
            create_timestamp,
            header_length,
            lengths,
            alg,
        )
        self._set_fde(fde)
        self.checksum_alg = alg
        self.binlog_version = 4
        self.header_len = EVENT_HEADER_LEN
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
        phl = self._phl.get(_TABLE_MAP)
        if phl is None:
            phl = self._phl[_TABLE_MAP] = self.post_header_len(_TABLE_MAP, 8)
        # Key: the body after the table id, and what else decodes it differently.
        definition = bytes([self._mariadb | self._old_table_map << 1]) + view[pos + phl - 2 : end]
        decoder: RowDecoder | None = self._row_decoders.lookup(definition)
        if decoder is not None:
            # Seen before (every transaction repeats its TABLE_MAPs): reuse the
            # decoded definition, only the header and the table id differ.
            if phl == 6:
                table_id = u32(view, pos)
            else:
                if pos + 6 > len(view):
                    need(view, pos, 6, "u48")  # raises
                lo, hi = U48.unpack_from(view, pos)
                table_id = lo | hi << 32
            rest = decoder.table_rest
            if rest is not None:
                tm = _new_table_map(header, table_id, *rest)
            else:
                tm = replace(decoder.table, header=header, table_id=table_id)
            keep = True
        else:
            tm = decode_table_map(
                header, view, pos, end, phl, self._mariadb, old_layout=self._old_table_map
            )
            keep = self._filter is None or self._filter(tm.schema, tm.table)
            decoder = self._row_decoders.get(definition, tm) if keep else None
            if decoder is not None and _TM_FAST and type(tm) is TableMapEvent:
                decoder.table_rest = _tm_rest(tm)
        if len(self._tables) >= self._max_tables and tm.table_id not in self._tables:
            raise LimitExceededError(
                f"more than {self.options.table_map_cache_size} TABLE_MAPs in one statement "
                "(raise table_map_cache_size)"
            )
        self._tables[tm.table_id] = (tm, decoder)
        return tm if keep else None

    def _rows(self, header: EventHeader, view: memoryview, pos: int, end: int) -> Event | None:
        type_code = header[1]
        v2, kind = _ROWS_KINDS[type_code]
        phl = self._phl.get(type_code)
        if phl is None:
            phl = self._phl[type_code] = self.post_header_len(type_code, 10 if v2 else 8)
        if phl == 6:
            table_id = u32(view, pos)
            pos += 4
            flags = u16(view, pos)
        else:
            if pos + 8 > len(view):
                need(view, pos, 8, "rows event post-header")  # raises
            lo, hi, flags = _ID48_FLAGS.unpack_from(view, pos)
            table_id = lo | hi << 32
            pos += 6
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
        if flags & _STMT_END:
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
        width = view[pos] if pos < end else -1
        if width < 251 and width == len(table.columns):  # the common one-byte count
            pos += 1
        else:
            width, pos = read_packed_int(view, pos)
            check_width(width, table)
        nbytes = (width + 7) >> 3
        if pos + nbytes > len(view):
            need(view, pos, nbytes, "columns-present bitmap")  # raises
        present = view[pos] if nbytes == 1 else int.from_bytes(view[pos : pos + nbytes], "little")
        pos += nbytes
        if kind >= _PRE_GA_WRITE:
            # PRE_GA rows (log_event_old.cc): one bitmap, raw record images.
            old_rows = decode_old_rows(decoder, view, pos, end, present, kind == _PRE_GA_UPDATE)
            if kind == _PRE_GA_UPDATE:
                return UpdateRowsEvent(
                    header, table_id, flags, table, present, extra, old_rows, present
                )
            cls = WriteRowsEvent if kind == _PRE_GA_WRITE else DeleteRowsEvent
            return cls(header, table_id, flags, table, present, extra, old_rows)
        if kind == _PARTIAL:
            need(view, pos, nbytes, "columns-present bitmap (after image)")
            present_after = int.from_bytes(view[pos : pos + nbytes], "little")
            pos += nbytes
            return self._partial_update(
                header,
                table_id,
                flags,
                table,
                decoder,
                extra,
                view,
                pos,
                end,
                present,
                present_after,
            )
        if kind == _UPDATE:
            need(view, pos, nbytes, "columns-present bitmap (after image)")
            present_after = int.from_bytes(view[pos : pos + nbytes], "little")
            pos += nbytes
            pairs = decoder.decode_update_rows(view, pos, end, present, present_after)
            return _new_update_rows(
                header, table_id, flags, table, present, extra, pairs, present_after
            )
        rows = decoder.decode_rows(view, pos, end, present)
        if kind == _WRITE:
            return _new_write_rows(header, table_id, flags, table, present, extra, rows)
        return _new_delete_rows(header, table_id, flags, table, present, extra, rows)

    def _partial_update(
        self,
        header: EventHeader,
        table_id: int,
        flags: int,
        table: TableMapEvent,
        decoder: RowDecoder,
        extra: bytes,
        view: memoryview,
        pos: int,
        end: int,
        present: int,
        present_after: int,
    ) -> Event:
        # PARTIAL_UPDATE_ROWS_EVENT rows (MySQL rpl_record.h, unpack_row):
        #   before-image | value_options packed | [partial_bits] | after-image
        # partial_bits: one bit per JSON column of the table (LSB first), set
        # when that column's after value is a JSON diff vector: length (as the
        # column's BLOB length bytes) | diffs (json_binary.decode_json_diff).
        json_cols = [c.index for c in table.columns if c.type == ColumnType.JSON]
        nbits = len(json_cols)
        pairs: list[tuple[Row, Row]] = []
        all_diffs: list[dict[int, tuple[JsonDiff, ...]]] = []
        readers = decoder.readers
        while pos < end:
            before, pos = decoder.decode_image(view, pos, present)
            options, pos = read_packed_int(view, pos)
            partial: list[int] = []
            if options & _PARTIAL_JSON_UPDATES:
                nb = (nbits + 7) >> 3
                need(view, pos, nb, "partial-JSON bitmap")
                bits = int.from_bytes(view[pos : pos + nb], "little")
                pos += nb
                partial = [c for i, c in enumerate(json_cols) if (bits >> i) & 1]
            if partial:
                patched = list(readers)
                for c in partial:
                    patched[c] = _diff_reader(table.columns[c].meta)
                after, pos = decoder.decode_image_with(view, pos, present_after, tuple(patched))
                values = list(after)
                diffs: dict[int, tuple[JsonDiff, ...]] = {}
                for c in partial:
                    value = values[c]
                    if not isinstance(value, PartialJson):
                        continue  # NULL or absent: nothing was diffed
                    diffs[c] = value.diffs
                    base = before[c]
                    if base is not MISSING:
                        values[c] = apply_json_diffs(base, value.diffs)
                after = tuple(values)
                all_diffs.append(diffs)
            else:
                after, pos = decoder.decode_image(view, pos, present_after)
                all_diffs.append({})
            pairs.append((before, after))
        if pos != end:
            raise MalformedEventError(
                f"row images overrun the event by {pos - end} bytes", offset=end
            )
        return PartialUpdateRowsEvent(
            header,
            table_id,
            flags,
            table,
            present,
            extra,
            tuple(pairs),
            present_after,
            tuple(all_diffs),
        )


_WRITE, _UPDATE, _DELETE, _PARTIAL = 0, 1, 2, 3
_PRE_GA_WRITE, _PRE_GA_UPDATE, _PRE_GA_DELETE = 10, 11, 12
_PARTIAL_JSON_UPDATES: Final = 1


def _diff_reader(meta: int) -> Callable[[memoryview, int], tuple[Any, int]]:
    """Reads a partial JSON value: length (meta bytes) | JSON diff vector."""
    if meta not in (1, 2, 3, 4):
        raise MalformedEventError(f"JSON length size {meta} not in 1..4")

    def read(view: memoryview, pos: int) -> tuple[Any, int]:
        need(view, pos, meta, "JSON diff length")
        n = int.from_bytes(view[pos : pos + meta], "little")
        start = pos + meta
        need(view, start, n, "JSON diff vector")
        return PartialJson(tuple(decode_json_diff(view[start : start + n]))), start + n

    return read


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
    # (v1 logs have no post-header: the next file starts at 4)
    phl = 0 if d.binlog_version == 1 else d.post_header_len(E.ROTATE_EVENT, 8)
    position = u64(view, pos) if phl >= 8 else 4
    name = bytes(view[pos + phl : end])
    if h.flags & EventFlag.ARTIFICIAL or h.log_pos == 0:
        pass  # a fake ROTATE (first event of a dump, or a relay log's): same fields
    d._tables.clear()
    return _new_rotate(h, position, _text(name))


def _stop(d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    return StopEvent(h)


def _heartbeat(d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    return HeartbeatEvent(h, _text(bytes(view[pos:end])))


def _xid(d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    if pos + 8 > len(view):
        need(view, pos, 8, "u64")  # raises
    return _new_xid(h, U64.unpack_from(view, pos)[0])


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
    # seq_no u64 | domain_id u32 | flags2 u8 | [commit_id u64]
    # [XA: format_id u32 | gtrid_len u8 | bqual_len u8 | data]
    # [flags_extra u8 | extra_engines u8 | sa_seq_no u64 | thread_id u32]
    # zero-padded to 19 bytes: a plain GTID reads flags_extra 0 from the padding
    # (MariaDB sql/log_event.cc Gtid_log_event::Gtid_log_event, ::write)
    if pos + 13 > len(view):
        need(view, pos, 13, "GTID")  # raises
    seq_no, domain_id, flags2 = _GTID_HEAD.unpack_from(view, pos)
    commit_id = None
    if flags2 & _FL_GROUP_COMMIT_ID:
        commit_id = u64(view, pos + 13)
        pos += 21
    else:
        pos += 13
    fmt = gtrid = bqual = None
    if flags2 & _FL_XA:
        fmt = u32(view, pos)
        glen, blen = u8(view, pos + 4), u8(view, pos + 5)
        pos += 6
        need(view, pos, glen + blen, "XA xid")
        gtrid = bytes(view[pos : pos + glen])
        bqual = bytes(view[pos + glen : pos + glen + blen])
        pos += glen + blen
    flags_extra = 0
    extra_engines = sa_seq_no = thread_id = None
    if pos < end:
        flags_extra = view[pos]
        pos += 1
        if flags_extra & 0x01:
            extra_engines = u8(view, pos)
            pos += 1
        if flags_extra & 0x0C:  # FL_COMMIT_ALTER_E1 | FL_ROLLBACK_ALTER_E1
            sa_seq_no = u64(view, pos)
            pos += 8
        if flags_extra & 0x10:  # FL_EXTRA_THREAD_ID (MariaDB 11.x)
            thread_id = u32(view, pos)
            pos += 4
    return _new_gtid(
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
    return _new_annotate(h, _text(bytes(view[pos:end])))


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


#: Rows event type -> (v2 post-header with extra data, kind) for EventDecoder._rows.
_ROWS_KINDS: Final[dict[int, tuple[bool, int]]] = {
    E.WRITE_ROWS_EVENT_V1: (False, _WRITE),
    E.UPDATE_ROWS_EVENT_V1: (False, _UPDATE),
    E.DELETE_ROWS_EVENT_V1: (False, _DELETE),
    E.WRITE_ROWS_EVENT: (True, _WRITE),
    E.UPDATE_ROWS_EVENT: (True, _UPDATE),
    E.DELETE_ROWS_EVENT: (True, _DELETE),
    E.PARTIAL_UPDATE_ROWS_EVENT: (True, _PARTIAL),
    E.PRE_GA_WRITE_ROWS_EVENT: (False, _PRE_GA_WRITE),
    E.PRE_GA_UPDATE_ROWS_EVENT: (False, _PRE_GA_UPDATE),
    E.PRE_GA_DELETE_ROWS_EVENT: (False, _PRE_GA_DELETE),
}
# MariaDB's compressed rows events are decoded as their plain twins, under their own header.
_ROWS_KINDS.update(
    {c: _ROWS_KINDS[twin] for c, twin in MARIADB_COMPRESSED_TYPES.items() if twin in _ROWS_KINDS}
)


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
    E.TABLE_MAP_EVENT: EventDecoder._table_map,
    E.WRITE_ROWS_EVENT_V1: EventDecoder._rows,
    E.UPDATE_ROWS_EVENT_V1: EventDecoder._rows,
    E.DELETE_ROWS_EVENT_V1: EventDecoder._rows,
    E.WRITE_ROWS_EVENT: EventDecoder._rows,
    E.UPDATE_ROWS_EVENT: EventDecoder._rows,
    E.DELETE_ROWS_EVENT: EventDecoder._rows,
    E.HEARTBEAT_LOG_EVENT: _heartbeat,
    E.XA_PREPARE_LOG_EVENT: _xa_prepare,
    E.ANNOTATE_ROWS_EVENT: _annotate_rows,
    E.BINLOG_CHECKPOINT_EVENT: _binlog_checkpoint,
    E.GTID_EVENT: _mariadb_gtid,
    E.GTID_LIST_EVENT: _gtid_list,
    # MySQL
    E.INCIDENT_EVENT: decode_incident,
    E.ROWS_QUERY_LOG_EVENT: decode_rows_query,
    E.GTID_LOG_EVENT: decode_gtid,
    E.ANONYMOUS_GTID_LOG_EVENT: decode_gtid,
    E.GTID_TAGGED_LOG_EVENT: decode_gtid_tagged,
    E.PREVIOUS_GTIDS_LOG_EVENT: decode_previous_gtids,
    E.TRANSACTION_CONTEXT_EVENT: decode_transaction_context,
    E.VIEW_CHANGE_EVENT: decode_view_change,
    E.HEARTBEAT_LOG_EVENT_V2: decode_heartbeat_v2,
    E.PARTIAL_UPDATE_ROWS_EVENT: EventDecoder._rows,
    # legacy (binlog v1/v3, pre-GA 5.1)
    E.START_EVENT_V3: decode_start_v3,
    E.LOAD_EVENT: decode_load,
    E.NEW_LOAD_EVENT: decode_load,
    E.SLAVE_EVENT: decode_slave,
    E.CREATE_FILE_EVENT: decode_create_file,
    E.EXEC_LOAD_EVENT: decode_exec_load,
    E.DELETE_FILE_EVENT: decode_delete_file,
    E.PRE_GA_WRITE_ROWS_EVENT: EventDecoder._rows,
    E.PRE_GA_UPDATE_ROWS_EVENT: EventDecoder._rows,
    E.PRE_GA_DELETE_ROWS_EVENT: EventDecoder._rows,
}
# Decoded by EventDecoder itself (they need its state): TRANSACTION_PAYLOAD (inner
# events), START_ENCRYPTION (switches decryption on), MariaDB compressed events.
