"""The one dispatch table of the event decoder, and its entries that need the decoder. No I/O.

:data:`DECODERS` maps every event type the decoder knows to the decoder of
its body; ``EventDecoder.decode()`` looks the type up there and nowhere else.
Most entries are stateless functions of the format, in the modules of their
kind of event (:mod:`.query_events`, :mod:`.gtid_events`,
:mod:`.control_events`, :mod:`.legacy`). The others say what state they need:
:class:`OnTables` (TABLE_MAP and rows events, :mod:`.table_bindings`) and
:class:`OnDecoder` (FORMAT_DESCRIPTION, which changes the format; ROTATE,
which ends the table maps; START_ENCRYPTION; MySQL's TRANSACTION_PAYLOAD,
whose inner events go through the same table; MariaDB's compressed events,
decoded as their plain twins).

The :class:`OnDecoder` entries are methods of :class:`DecoderEntries`, which
:class:`~.decoder.EventDecoder` inherits, as is what becomes of an event type
without an entry. :mod:`.decoder` re-exports the table and its entry types.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Final

from ..codec import is_mariadb_version, need, server_text, u16, u32, until_nul
from ..config import DecoderOptions
from ..errors import (
    ChecksumMismatchError,
    DecryptionError,
    MalformedEventError,
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
    RotateEvent,
    StartEncryptionEvent,
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
from .header import EventHeader, unpack_header
from .legacy import (
    decode_create_file,
    decode_delete_file,
    decode_exec_load,
    decode_load,
    decode_slave,
    decode_start_v3,
    is_pre_ga_renumbered,
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
from .table_bindings import (
    ROWS_EVENT_TYPES,
    TableMaps,
    decode_rows,
    decode_table_map_event,
)

__all__ = [
    "DECODERS",
    "BoundEntry",
    "DecoderEntries",
    "DispatchEntry",
    "OnDecoder",
    "OnTables",
]

E = EventType

_U32: Final = struct.Struct("<I")
_VERSION: Final = re.compile(rb"(\d+)\.(\d+)\.(\d+)")
# Plain ints for the per-event tests (IntEnum/IntFlag operators cost a Python call).
_FDE_CODE: Final = int(E.FORMAT_DESCRIPTION_EVENT)
_QUERY: Final = int(E.QUERY_EVENT)
_QUERY_COMPRESSED: Final = int(E.QUERY_COMPRESSED_EVENT)
#: Event types a transaction payload must not hold.
_NOT_IN_PAYLOAD: Final = frozenset({_FDE_CODE, int(E.START_ENCRYPTION_EVENT)})
# EventHeader from the 6 unpacked fields without the Python-level _make/__new__.
_new_header: Final = tuple.__new__

#: What decode() calls for an event: ``fn(fmt, header, view, pos, end)``.
BoundEntry = Callable[[BinlogFormat, EventHeader, memoryview, int, int], "Event | None"]


class DecoderEntries:
    """The entries of :data:`DECODERS` that need the decoder, as methods it inherits.

    The decoder's state they read and change is declared here;
    :class:`~.decoder.EventDecoder` sets it, and changes the reading state in
    one place only, its ``_set_format``.
    """

    options: DecoderOptions
    fde: FormatDescriptionEvent | None
    file: str | None
    table_maps: TableMaps
    _format: BinlogFormat
    _decryptor: BinlogDecryptor | None
    _keep_unknown: bool
    _max_event_size: int
    _verify_crc: bool
    _in_file: bool
    #: The body decoders of DECODERS, bound to the state they need.
    _dispatch: dict[int, BoundEntry]
    #: ``EventDecoder._set_format(fmt, *, detecting=False, decryptor=None)``.
    _set_format: Callable[..., None]

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

    # -- an event type without an entry ---------------------------------------------------

    def _unknown(self, header: EventHeader, view: memoryview, pos: int, end: int) -> Event:
        if header.flags & EventFlag.IGNORABLE or self._keep_unknown:
            return UnknownEvent(header, bytes(view[pos:end]))
        raise UnknownEventError(
            f"unknown event type {header.type_code} without LOG_EVENT_IGNORABLE_F; "
            "this decoder cannot skip it safely (DecoderOptions(unknown_events='keep') "
            "keeps such events as UnknownEvent)"
        )


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

    fn: Callable[[DecoderEntries, BinlogFormat, EventHeader, memoryview, int, int], Event | None]


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
    E.ROTATE_EVENT: OnDecoder(DecoderEntries._rotate),
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
    E.FORMAT_DESCRIPTION_EVENT: OnDecoder(DecoderEntries._format_description),
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
    E.TRANSACTION_PAYLOAD_EVENT: OnDecoder(DecoderEntries._transaction_payload),
    E.HEARTBEAT_LOG_EVENT_V2: decode_heartbeat_v2,
    E.GTID_TAGGED_LOG_EVENT: decode_gtid_tagged,
    # MariaDB
    E.ANNOTATE_ROWS_EVENT: decode_annotate_rows,
    E.BINLOG_CHECKPOINT_EVENT: decode_binlog_checkpoint,
    E.GTID_EVENT: decode_mariadb_gtid,
    E.GTID_LIST_EVENT: decode_gtid_list,
    E.START_ENCRYPTION_EVENT: OnDecoder(DecoderEntries._start_encryption),
}
# Rows events of every version (v1, v2, PRE_GA, PARTIAL_UPDATE) and MariaDB's
# compressed events, decoded as their plain twin after uncompressing.
_decoder_entries.update(dict.fromkeys(sorted(ROWS_EVENT_TYPES), OnTables(decode_rows)))
_decoder_entries.update(
    dict.fromkeys(sorted(MARIADB_COMPRESSED_TYPES), OnDecoder(DecoderEntries._compressed))
)

#: The one dispatch table: event type -> decoder of its body (plain int keys:
#: the header's type code finds its entry without an enum comparison).
DECODERS: Final[dict[int, DispatchEntry]] = {
    int(code): entry for code, entry in sorted(_decoder_entries.items())
}
