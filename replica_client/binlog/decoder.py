"""The binlog event decoder: its state, and the one dispatch table. No I/O.

``EventDecoder.decode(event_bytes)`` takes one whole event (common header,
body, checksum trailer) and returns a typed event. Between events it keeps
what a binlog is read with: the current format (:class:`~.format.BinlogFormat`:
what the FORMAT_DESCRIPTION_EVENT said, or a v1/v3 log's rules), the
decryption of an encrypted file, and the TABLE_MAPs of the running statement
(:class:`~.rows_events.TableMaps`). The network session and the file reader
both feed it; it never asks a server for anything.

:data:`DECODERS` maps every event type the decoder knows to the decoder of
its body; ``decode()`` looks the type up there and nowhere else. Most entries
are stateless functions of the format, in the modules of their kind of event
(:mod:`.query_events`, :mod:`.gtid_events`, :mod:`.control_events`,
:mod:`.legacy`). The others say what state they need: :class:`OnTables`
(TABLE_MAP and rows events, :mod:`.rows_events`) and :class:`OnDecoder`
(FORMAT_DESCRIPTION, which changes the format; ROTATE, which ends the table
maps; START_ENCRYPTION; MySQL's TRANSACTION_PAYLOAD, whose inner events go
through the same table; MariaDB's compressed events, decoded as their plain
twins).

Rules (MySQL Internals "Binlog Event"; MariaDB KB "Binlog Event Header",
"Format Description Event"):

- the CRC32 trailer is verified on every event unless switched off; a
  FORMAT_DESCRIPTION_EVENT says itself whether it has one, and the FDE of a
  log still in use carries a CRC computed with LOG_EVENT_BINLOG_IN_USE_F
  cleared;
- an event type without a decoder raises :class:`UnknownEventError`, unless
  the server marked it LOG_EVENT_IGNORABLE_F: then it becomes an
  :class:`UnknownEvent` with its body kept;
- malformed input raises only :class:`MalformedEventError` subclasses, with
  the event type, position and offset.

The common case (a v4 event, no encryption) has an accelerated prologue: the
compiled ``event_head`` unpacks the header and checks size and CRC32 in one
call. Which prologue ``decode()`` may take is derived from the decoder's
state in one place, :meth:`EventDecoder._set_format`.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from types import MethodType
from typing import Final

from ..accel import speedups
from ..codec import is_mariadb_version, need, server_text, u16, u32, until_nul
from ..config import DecoderOptions
from ..errors import (
    ChecksumMismatchError,
    DecryptionError,
    LimitExceededError,
    MalformedEventError,
    SchemaHistoryError,
    TruncatedBinlogError,
    UnknownEventError,
)
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
    EventFlag,
    EventType,
)
from .control_events import (
    decode_annotate_rows,
    decode_heartbeat,
    decode_heartbeat_v2,
    decode_incident,
    decode_rotate,
    decode_rows_query,
    decode_stop,
    decode_transaction_context,
    decode_view_change,
    decode_xa_prepare,
    decode_xid,
)
from .encryption import BinlogDecryptor, parse_start_encryption
from .events import (
    Event,
    FormatDescriptionEvent,
    QueryEvent,
    RotateEvent,
    StartEncryptionEvent,
    TableMapEvent,
    TransactionPayloadEvent,
    UnknownEvent,
    event_type_name,
)
from .format import BinlogFormat, BodyDecoder, resolve_post_header_lens
from .gtid_events import (
    decode_binlog_checkpoint,
    decode_gtid_list,
    decode_gtid_tagged,
    decode_mariadb_gtid,
    decode_mysql_gtid,
    decode_previous_gtids,
)
from .header import EventHeader, checksum_holds, unpack_header
from .legacy import (
    PRE_GA_PERMUTATION,
    START_V3_V1_MAX_LEN,
    decode_create_file,
    decode_delete_file,
    decode_exec_load,
    decode_load,
    decode_slave,
    decode_start_v3,
    is_pre_ga_renumbered,
    legacy_format,
    legacy_post_header_lengths,
    permute_post_header_lengths,
)
from .query_events import (
    decode_append_block,
    decode_begin_load_query,
    decode_execute_load_query,
    decode_intvar,
    decode_query,
    decode_rand,
    decode_user_var,
)
from .rows_events import (
    ROWS_EVENT_TYPES,
    TableDefinitions,
    TableMaps,
    decode_rows,
    decode_table_map_event,
)

__all__ = [
    "DECODERS",
    "DispatchEntry",
    "EventDecoder",
    "OnDecoder",
    "OnTables",
    "whole_event_head",
]

E = EventType

_U32: Final = struct.Struct("<I")
_V1_HEADER: Final = struct.Struct("<IBII")
_VERSION: Final = re.compile(rb"(\d+)\.(\d+)\.(\d+)")
# Plain ints for the per-event tests (IntEnum/IntFlag operators cost a Python call).
_FDE_CODE: Final = int(E.FORMAT_DESCRIPTION_EVENT)
_CRC32: Final = int(BinlogChecksumAlg.CRC32)
_QUERY: Final = int(E.QUERY_EVENT)
_QUERY_COMPRESSED: Final = int(E.QUERY_COMPRESSED_EVENT)
#: Event types a transaction payload must not hold.
_NOT_IN_PAYLOAD: Final = frozenset({_FDE_CODE, int(E.START_ENCRYPTION_EVENT)})
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


def _whole_event_head_py(view: memoryview, crc_mode: int) -> EventHeader | None:
    n = len(view)
    if n < EVENT_HEADER_LEN:
        return None
    header: EventHeader = _new_header(EventHeader, unpack_header(view, 0))
    if header[1] == _FDE_CODE or header[3] != n:
        return None
    if crc_mode and n < EVENT_HEADER_LEN + CHECKSUM_LEN:
        return None
    if crc_mode == 2 and not checksum_holds(view, n - CHECKSUM_LEN):
        return None
    return header


#: ``whole_event_head(view, crc_mode)``: the header of one whole event whose size
#: field is its length, and whose CRC32 trailer holds (``crc_mode`` 0: no trailer,
#: 1: a trailer not verified, 2: verified); None for anything else and for a
#: FORMAT_DESCRIPTION_EVENT (which says itself whether it has a trailer). What
#: decode() takes without its Python prologue: the accelerator's ``event_head``
#: when it is built.
whole_event_head: Final[Callable[[memoryview, int], EventHeader | None]] = (
    _event_head if _event_head is not None else _whole_event_head_py
)

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

#: What decode() calls for an event: ``fn(fmt, header, view, pos, end)``.
_Bound = Callable[[BinlogFormat, EventHeader, memoryview, int, int], "Event | None"]


def _malformed(type_code: int, position: int | None, exc: Exception) -> MalformedEventError:
    return MalformedEventError(
        f"cannot decode {event_type_name(type_code)}: {exc}",
        event_type=type_code,
        position=position,
    )


class EventDecoder:
    """Decodes one binlog event at a time; holds the format and TABLE_MAP state.

    Args:
        options: decoder options (checksum verification, table filter, limits,
            unknown-event policy, encryption keys).
        checksum_alg: the checksum algorithm to assume before the first
            FORMAT_DESCRIPTION_EVENT (what the network session negotiated);
            ``None`` means "decide from the FDE" (files start with one).
        definitions: what completes TABLE_MAPs that lack names, signedness,
            charsets or labels (a schema history); it sees every QueryEvent, in
            order, and every TABLE_MAP of a table the filter keeps.

    Attributes:
        fde: the log's FORMAT_DESCRIPTION_EVENT (for a v1/v3 log, the one its
            rules imply), None before it.
        table_maps: the TABLE_MAPs of the running statement.
        last_header: the header of the last event ``decode()`` was given (also
            when it returned None).
        file: the binlog file being read (from the last ROTATE, or given to
            :meth:`begin_file`), for messages; None before either.
    """

    def __init__(
        self,
        options: DecoderOptions | None = None,
        *,
        checksum_alg: BinlogChecksumAlg | None = None,
        definitions: TableDefinitions | None = None,
    ) -> None:
        self.options = options if options is not None else DecoderOptions()
        self.fde: FormatDescriptionEvent | None = None
        self.last_header: EventHeader | None = None
        self.file: str | None = None
        self.table_maps = TableMaps(self.options, definitions)
        self._keep_unknown = self.options.unknown_events == "keep"
        self._max_event_size = self.options.max_event_size
        self._verify_crc = self.options.verify_checksum
        self._in_file = False
        #: The body decoders of DECODERS, bound to the state they need.
        self._dispatch: dict[int, _Bound] = {
            code: self._bind(entry) for code, entry in DECODERS.items()
        }
        if definitions is not None:
            self._dispatch[_QUERY] = _observed(self._dispatch[_QUERY], definitions.query)
        alg = BinlogChecksumAlg.UNDEF if checksum_alg is None else int(checksum_alg)
        self._set_format(BinlogFormat(checksum_alg=alg))

    def _bind(self, entry: DispatchEntry) -> _Bound:
        if isinstance(entry, OnDecoder):
            return MethodType(entry.fn, self)
        if isinstance(entry, OnTables):
            return MethodType(entry.fn, self.table_maps)
        return entry

    # -- state ----------------------------------------------------------------------

    def _set_format(
        self,
        fmt: BinlogFormat,
        *,
        detecting: bool = False,
        decryptor: BinlogDecryptor | None = None,
    ) -> None:
        """The one place the reading state changes, and ``_fast_mode`` is derived.

        ``detecting``: a file's first event is next and decides its version;
        ``decryptor``: the file is encrypted from here on.
        """
        self._format = fmt
        self._detecting = detecting
        self._decryptor = decryptor
        # The accelerated prologue covers plain v4 events only.
        if (
            _event_head is None
            or detecting
            or decryptor is not None
            or fmt.header_len != EVENT_HEADER_LEN
            or fmt.binlog_version != 4
            or fmt.pre_ga
        ):
            self._fast_mode = _SLOW
        elif fmt.checksum_alg == _CRC32:
            self._fast_mode = 2 if self._verify_crc else 1  # event_head's crc_mode
        else:
            self._fast_mode = 0

    @property
    def format(self) -> BinlogFormat:
        """The format of the events being decoded."""
        return self._format

    @property
    def checksum_alg(self) -> int:
        """The checksum algorithm of the events being decoded (a BinlogChecksumAlg value)."""
        return self._format.checksum_alg

    @property
    def header_len(self) -> int:
        """The common header length of the current log: 19, or 13 for a v1 (MySQL 3.23) log.

        ``event_size`` is at bytes 9..12 in both, so a reader frames events the
        same way and asks this only for the smallest valid event.
        """
        return self._format.header_len

    @property
    def binlog_version(self) -> int:
        """4, or 1/3 once :meth:`begin_file` saw a legacy log."""
        return self._format.binlog_version

    def reset(self) -> None:
        """Forget the FDE, the decryption and the table maps (a new connection or file set)."""
        old = self._format
        self.fde = None
        self.table_maps.clear()
        self._set_format(BinlogFormat(checksum_alg=old.checksum_alg, mariadb=old.mariadb))

    def begin_file(self, name: str | None = None) -> None:
        """Start a binlog file (``name``, for messages): the next event decides its format version.

        A FORMAT_DESCRIPTION_EVENT means v4; a START_EVENT_V3 of fewer than 75
        bytes v1 (13-byte headers), of 75 or more v3; any other event v3
        (MySQL Internals "Binlog Versions"). Encrypted files are decrypted
        from their START_ENCRYPTION_EVENT on. The network stream never calls
        this: a primary always sends an FDE.
        """
        self.reset()
        self.file = name
        self._in_file = True
        self._set_format(self._format, detecting=True)

    def post_header_len(self, type_code: int, default: int) -> int:
        """Post-header length of ``type_code`` from the current FDE (or ``default``)."""
        fde = self.fde
        n = fde.post_header_len(type_code) if fde is not None else 0
        return n if n else default

    def table(self, table_id: int) -> TableMapEvent | None:
        """The TABLE_MAP currently bound to ``table_id``, if any."""
        return self.table_maps.get(table_id)

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
            header, view, hlen, end = self._checked(view, position)
        self.last_header = header
        type_code = header[1]
        try:
            fn = self._dispatch.get(type_code)
            if fn is not None:
                return fn(self._format, header, view, hlen, end)
            return self._unknown(header, view, hlen, end)
        except MalformedEventError as exc:
            raise exc.with_context(event_type=type_code, position=position) from None
        except SchemaHistoryError as exc:
            where = "" if position is None else str(position)
            raise exc.with_context(f"{self.file}:{where}" if self.file else where) from None
        except _DECODE_ERRORS as exc:
            raise _malformed(type_code, position, exc) from exc

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

    def _checked(
        self, view: memoryview, position: int | None
    ) -> tuple[EventHeader, memoryview, int, int]:
        """The Python path's prologue: every check, decryption, legacy formats, CRC32.

        Returns the header (type code and log_pos as the format means them),
        the event's bytes (decrypted), the header length and where the body
        ends (before the checksum trailer, verified).
        """
        size = len(view)
        if self._detecting:
            self._detect_version(view, size)
        fmt = self._format
        hlen = fmt.header_len
        if size < hlen:
            raise TruncatedBinlogError(
                f"event of {size} bytes is shorter than the {hlen}-byte header",
                position=position,
            )
        if self._decryptor is not None:
            view = self._decrypt(view, position)
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
                f"event of {size} bytes exceeds max_event_size {self._max_event_size}"
            )
        if fmt.pre_ga and type_code in PRE_GA_PERMUTATION:
            type_code = PRE_GA_PERMUTATION[type_code]
            header = header._replace(type_code=type_code)
        if fmt.binlog_version == 3 and header.log_pos and type_code < _FDE_CODE:
            # v3 (4.0) headers hold the start position; the server reads the end.
            header = header._replace(log_pos=header.log_pos + size)
        end = size
        # An FDE says itself whether it ends with a CRC32 (_format_description).
        if fmt.checksum_alg == _CRC32 and type_code != _FDE_CODE:
            end -= CHECKSUM_LEN
            if end < hlen:
                raise MalformedEventError(
                    "event too short for its checksum", event_type=type_code, position=position
                )
            if self._verify_crc and not checksum_holds(view, end):
                self._verify(view, end, type_code, position)  # raises
        return header, view, hlen, end

    def _unknown(self, header: EventHeader, view: memoryview, pos: int, end: int) -> Event:
        if header.flags & EventFlag.IGNORABLE or self._keep_unknown:
            return UnknownEvent(header, bytes(view[pos:end]))
        raise UnknownEventError(
            f"unknown event type {header.type_code} without LOG_EVENT_IGNORABLE_F; "
            "this decoder cannot skip it safely (DecoderOptions(unknown_events='keep') "
            "keeps such events as UnknownEvent)"
        )

    @staticmethod
    def _verify(view: memoryview, end: int, type_code: int, position: int | None) -> None:
        expected = _U32.unpack_from(view, end)[0]
        actual = zlib.crc32(view[:end])
        if actual != expected:
            raise ChecksumMismatchError(
                f"CRC32 mismatch: stored 0x{expected:08x}, computed 0x{actual:08x}",
                event_type=type_code,
                position=position,
            )

    # -- format versions and encryption -------------------------------------------------

    def _detect_version(self, view: memoryview, size: int) -> None:
        if size < 5 or view[4] == _FDE_CODE:
            # v4 (or too short for a type byte: decode() reports the truncation)
            self._set_format(self._format)
            return
        version = 1 if view[4] == E.START_EVENT_V3 and size < START_V3_V1_MAX_LEN else 3
        fmt = legacy_format(version)
        self.fde = FormatDescriptionEvent(
            EventHeader(0, E.START_EVENT_V3, 0, 0, 0, 0),
            version,
            "",
            0,
            fmt.header_len,
            legacy_post_header_lengths(version),
            fmt.checksum_alg,
        )
        self._set_format(fmt)

    def _decrypt(self, view: memoryview, position: int | None) -> memoryview:
        assert self._decryptor is not None
        if position is None:
            raise DecryptionError("decrypting a binlog event needs its file position")
        return memoryview(self._decryptor.decrypt_event(view, position))

    # -- entries of the dispatch table that need the decoder --------------------------

    def _format_description(
        self, fmt: BinlogFormat, header: EventHeader, view: memoryview, pos: int, end: int
    ) -> Event:
        # binlog_version u16 | server_version char[50] | create_timestamp u32 |
        # header_length u8 | post_header_lengths u8[n] | [checksum_alg u8 | crc u32]
        # (Format_description_event; the last two only from checksum-aware servers)
        if pos != EVENT_HEADER_LEN:
            raise MalformedEventError("FORMAT_DESCRIPTION_EVENT in a binlog v1 log")
        need(view, pos, 57, "FORMAT_DESCRIPTION_EVENT")
        binlog_version = u16(view, pos)
        raw_version = until_nul(view[pos + 2 : pos + 52])
        create_timestamp = u32(view, pos + 52)
        header_length = view[pos + 56]
        pos += 57
        if header_length != EVENT_HEADER_LEN:
            raise MalformedEventError(
                f"FORMAT_DESCRIPTION_EVENT header length {header_length}, expected 19",
                offset=pos - 1,
            )
        if _has_checksum_alg(raw_version):
            if end < pos + 5:
                raise MalformedEventError("FORMAT_DESCRIPTION_EVENT lacks its checksum fields")
            alg = view[end - 5]
            lengths = tuple(view[pos : end - 5])
            # A checksum-aware server writes a valid CRC on its FDE even with
            # binlog_checksum=NONE: verify it whatever the algorithm byte says,
            # so that a corrupted algorithm byte cannot switch verification off.
            if self._verify_crc:
                self._verify_fde(view, header)
            if alg not in (BinlogChecksumAlg.OFF, BinlogChecksumAlg.CRC32):
                raise MalformedEventError(f"unknown checksum algorithm {alg}", offset=end - 5)
        else:
            alg = BinlogChecksumAlg.UNDEF
            lengths = tuple(view[pos:end])
        version_text = server_text(raw_version)
        pre_ga = is_pre_ga_renumbered(version_text)
        if pre_ga:
            # MySQL 5.1/5.2 pre-GA trees numbered types 16-22 differently
            # (Format_description_log_event: event_type_permutation); their
            # TABLE_MAP has no column metadata and no null bitmap.
            lengths = permute_post_header_lengths(lengths)
        fde = FormatDescriptionEvent(
            header,
            binlog_version,
            version_text,
            create_timestamp,
            header_length,
            lengths,
            alg,
        )
        self.fde = fde
        self.table_maps.clear()
        self._set_format(
            BinlogFormat(
                checksum_alg=alg,
                mariadb=fde.is_mariadb,
                post_header_lens=resolve_post_header_lens(lengths),
                pre_ga=pre_ga,
                old_table_map=pre_ga,
            ),
            decryptor=self._decryptor,
        )
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

    def _rotate(
        self, fmt: BinlogFormat, header: EventHeader, view: memoryview, pos: int, end: int
    ) -> Event:
        # A new file: table ids of the old one mean nothing there.
        self.table_maps.clear()
        event = decode_rotate(fmt, header, view, pos, end)
        if isinstance(event, RotateEvent):
            self.file = event.next_file
        return event

    def _start_encryption(
        self, fmt: BinlogFormat, header: EventHeader, view: memoryview, pos: int, end: int
    ) -> Event:
        # crypto_scheme u8 | key_version u32 | nonce[12]  (Start_encryption_log_event)
        start = parse_start_encryption(view[pos:end])
        event = StartEncryptionEvent(header, start.scheme, start.key_version, start.nonce)
        keys = self.options.encryption_keys
        if keys is None:
            if self._in_file:
                raise DecryptionError(
                    "this binlog file is encrypted (its START_ENCRYPTION_EVENT ends at "
                    f"{header.log_pos}); pass the server's key file: open_binlog(..., key_file=...)"
                )
            return event  # network: the primary sends plaintext after it
        if self._in_file:
            decryptor = BinlogDecryptor.from_start_encryption(keys, start, checksum=fmt.crc32)
            self._set_format(self._format, decryptor=decryptor)
        return event

    def _transaction_payload(
        self, fmt: BinlogFormat, header: EventHeader, view: memoryview, pos: int, end: int
    ) -> Event:
        # field list (type, length, value as packed ints; 0 ends it) | payload
        # (Transaction_payload_event; see compression.parse_transaction_payload).
        # The FDE lists 40 as its post-header length, but the fields start right
        # after the common header: that 40 is only the fields' maximal size.
        parsed = parse_transaction_payload(view[pos:end])
        raw = decompress_payload(parsed, max_size=self._max_event_size)
        inner_fmt = replace(fmt, checksum_alg=BinlogChecksumAlg.OFF)  # inner events: no CRC32
        dispatch = self._dispatch
        inner: list[Event] = []
        for part in split_payload_events(raw):
            inner_header = _new_header(EventHeader, unpack_header(part, 0))
            type_code = inner_header.type_code
            size = len(part)
            if inner_header.event_size != size:
                raise MalformedEventError("inner event size does not match its header")
            if type_code in _NOT_IN_PAYLOAD:
                raise MalformedEventError(
                    f"{event_type_name(type_code)} inside a transaction payload"
                )
            fn = dispatch.get(type_code)
            if fn is not None:
                event = fn(inner_fmt, inner_header, part, EVENT_HEADER_LEN, size)
            else:
                event = self._unknown(inner_header, part, EVENT_HEADER_LEN, size)
            if event is not None:
                inner.append(event)
        return TransactionPayloadEvent(
            header, parsed.compression_type, parsed.payload_size, len(raw), tuple(inner)
        )

    def _compressed(
        self, fmt: BinlogFormat, header: EventHeader, view: memoryview, pos: int, end: int
    ) -> Event | None:
        # MariaDB log_bin_compress: rebuild the plain twin (compression.py), then
        # decode it with the twin's decoder under the original header.
        type_code = header[1]
        limit = self._max_event_size
        if type_code == _QUERY_COMPRESSED:
            plain = uncompress_query_event(
                view,
                checksum=fmt.crc32,
                post_header_len=fmt.post_header_lens[_QUERY],
                max_size=limit,
            )
        else:
            plain = uncompress_rows_event(
                view,
                checksum=fmt.crc32,
                post_header_len=fmt.post_header_lens[type_code],
                max_size=limit,
            )
        twin = self._dispatch[MARIADB_COMPRESSED_TYPES[type_code]]
        pview = memoryview(plain)
        return twin(fmt, header, pview, EVENT_HEADER_LEN, len(pview) - (len(view) - end))


def _observed(decode: _Bound, observe: Callable[[QueryEvent], None]) -> _Bound:
    """``decode`` (of QUERY_EVENT) that also hands each event to ``observe``."""

    def decode_and_observe(
        fmt: BinlogFormat, header: EventHeader, view: memoryview, pos: int, end: int
    ) -> Event | None:
        event = decode(fmt, header, view, pos, end)
        if type(event) is QueryEvent:
            observe(event)
        return event

    return decode_and_observe


def _has_checksum_alg(version: bytes) -> bool:
    """FDEs from MySQL >= 5.6.1 and MariaDB >= 5.3 end with the checksum algorithm."""
    m = _VERSION.match(version)
    if m is None:
        return False
    v = (int(m[1]), int(m[2]), int(m[3]))
    if is_mariadb_version(version):
        return v >= (5, 3, 0)
    return v >= (5, 6, 1)


# -- the dispatch table ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OnDecoder:
    """A dispatch entry that needs the decoder: ``fn(decoder, fmt, header, view, pos, end)``."""

    fn: Callable[[EventDecoder, BinlogFormat, EventHeader, memoryview, int, int], Event | None]


@dataclass(frozen=True, slots=True)
class OnTables:
    """A dispatch entry that needs the statement's TABLE_MAPs: ``fn(maps, fmt, header, ...)``."""

    fn: Callable[[TableMaps, BinlogFormat, EventHeader, memoryview, int, int], Event | None]


#: One entry of :data:`DECODERS`: a stateless body decoder, or one with its state.
DispatchEntry = BodyDecoder | OnDecoder | OnTables

_decoder_entries: dict[int, DispatchEntry] = {
    E.START_EVENT_V3: decode_start_v3,
    E.QUERY_EVENT: decode_query,
    E.STOP_EVENT: decode_stop,
    E.ROTATE_EVENT: OnDecoder(EventDecoder._rotate),
    E.INTVAR_EVENT: decode_intvar,
    E.LOAD_EVENT: decode_load,
    E.SLAVE_EVENT: decode_slave,
    E.CREATE_FILE_EVENT: decode_create_file,
    E.APPEND_BLOCK_EVENT: decode_append_block,
    E.EXEC_LOAD_EVENT: decode_exec_load,
    E.DELETE_FILE_EVENT: decode_delete_file,
    E.NEW_LOAD_EVENT: decode_load,
    E.RAND_EVENT: decode_rand,
    E.USER_VAR_EVENT: decode_user_var,
    E.FORMAT_DESCRIPTION_EVENT: OnDecoder(EventDecoder._format_description),
    E.XID_EVENT: decode_xid,
    E.BEGIN_LOAD_QUERY_EVENT: decode_begin_load_query,
    E.EXECUTE_LOAD_QUERY_EVENT: decode_execute_load_query,
    E.TABLE_MAP_EVENT: OnTables(decode_table_map_event),
    E.INCIDENT_EVENT: decode_incident,
    E.HEARTBEAT_LOG_EVENT: decode_heartbeat,
    E.ROWS_QUERY_LOG_EVENT: decode_rows_query,
    E.GTID_LOG_EVENT: decode_mysql_gtid,
    E.ANONYMOUS_GTID_LOG_EVENT: decode_mysql_gtid,
    E.PREVIOUS_GTIDS_LOG_EVENT: decode_previous_gtids,
    E.TRANSACTION_CONTEXT_EVENT: decode_transaction_context,
    E.VIEW_CHANGE_EVENT: decode_view_change,
    E.XA_PREPARE_LOG_EVENT: decode_xa_prepare,
    E.TRANSACTION_PAYLOAD_EVENT: OnDecoder(EventDecoder._transaction_payload),
    E.HEARTBEAT_LOG_EVENT_V2: decode_heartbeat_v2,
    E.GTID_TAGGED_LOG_EVENT: decode_gtid_tagged,
    # MariaDB
    E.ANNOTATE_ROWS_EVENT: decode_annotate_rows,
    E.BINLOG_CHECKPOINT_EVENT: decode_binlog_checkpoint,
    E.GTID_EVENT: decode_mariadb_gtid,
    E.GTID_LIST_EVENT: decode_gtid_list,
    E.START_ENCRYPTION_EVENT: OnDecoder(EventDecoder._start_encryption),
}
# Rows events of every version (v1, v2, PRE_GA, PARTIAL_UPDATE) and MariaDB's
# compressed events, decoded as their plain twin after uncompressing.
_decoder_entries.update(dict.fromkeys(sorted(ROWS_EVENT_TYPES), OnTables(decode_rows)))
_decoder_entries.update(
    dict.fromkeys(sorted(MARIADB_COMPRESSED_TYPES), OnDecoder(EventDecoder._compressed))
)

#: The one dispatch table: event type -> decoder of its body (plain int keys:
#: the header's type code finds its entry without an enum comparison).
DECODERS: Final[dict[int, DispatchEntry]] = {
    int(code): entry for code, entry in sorted(_decoder_entries.items())
}
