"""The binlog event decoder: its state, its prologue, and where it looks event types up. No I/O.

``EventDecoder.decode(event_bytes)`` takes one whole event (common header,
body, checksum trailer) and returns a typed event. Between events it keeps
what a binlog is read with: the current format (:class:`~.format.BinlogFormat`:
what the FORMAT_DESCRIPTION_EVENT said, or a v1/v3 log's rules), the
decryption of an encrypted file, and the TABLE_MAPs of the running statement
(:class:`~.table_bindings.TableMaps`). The network session and the file reader
both feed it; it never asks a server for anything.

:data:`DECODERS` maps every event type the decoder knows to the decoder of
its body; ``decode()`` looks the type up there and nowhere else. The table,
its entry types (:class:`OnDecoder`, :class:`OnTables`) and the entries that
need the decoder (FORMAT_DESCRIPTION, ROTATE, START_ENCRYPTION,
TRANSACTION_PAYLOAD, MariaDB's compressed events; methods of
:class:`~.decoder_dispatch.DecoderEntries`, which :class:`EventDecoder`
inherits) are in :mod:`.decoder_dispatch`, and re-exported here.

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

import struct
import zlib
from collections.abc import Callable, Iterator
from types import MethodType
from typing import Final

from ..accel import speedups
from ..config import DecoderOptions
from ..errors import (
    ChecksumMismatchError,
    DecryptionError,
    LimitExceededError,
    MalformedEventError,
    SchemaHistoryError,
    TruncatedBinlogError,
)
from .constants import (
    CHECKSUM_LEN,
    EVENT_HEADER_LEN,
    BinlogChecksumAlg,
    EventType,
)
from .decoder_dispatch import (
    DECODERS,
    BoundEntry,
    DecoderEntries,
    DispatchEntry,
    OnDecoder,
    OnTables,
)
from .encryption import BinlogDecryptor
from .events import (
    Event,
    FormatDescriptionEvent,
    QueryEvent,
    TableMapEvent,
    TransactionPayloadEvent,
    event_type_name,
)
from .format import BinlogFormat
from .header import EventHeader, checksum_holds, unpack_header
from .legacy import (
    PRE_GA_PERMUTATION,
    START_V3_V1_MAX_LEN,
    legacy_format,
    legacy_post_header_lengths,
)
from .table_bindings import TableDefinitions, TableMaps

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
# Plain ints for the per-event tests (IntEnum/IntFlag operators cost a Python call).
_FDE_CODE: Final = int(E.FORMAT_DESCRIPTION_EVENT)
_CRC32: Final = int(BinlogChecksumAlg.CRC32)
_QUERY: Final = int(E.QUERY_EVENT)
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


def _malformed(type_code: int, position: int | None, exc: Exception) -> MalformedEventError:
    return MalformedEventError(
        f"cannot decode {event_type_name(type_code)}: {exc}",
        event_type=type_code,
        position=position,
    )


class EventDecoder(DecoderEntries):
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
        self._dispatch: dict[int, BoundEntry] = {
            code: self._bind(entry) for code, entry in DECODERS.items()
        }
        if definitions is not None:
            self._dispatch[_QUERY] = _observed(self._dispatch[_QUERY], definitions.query)
        alg = BinlogChecksumAlg.UNDEF if checksum_alg is None else int(checksum_alg)
        self._set_format(BinlogFormat(checksum_alg=alg))

    def _bind(self, entry: DispatchEntry) -> BoundEntry:
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


def _observed(decode: BoundEntry, observe: Callable[[QueryEvent], None]) -> BoundEntry:
    """``decode`` (of QUERY_EVENT) that also hands each event to ``observe``."""

    def decode_and_observe(
        fmt: BinlogFormat, header: EventHeader, view: memoryview, pos: int, end: int
    ) -> Event | None:
        event = decode(fmt, header, view, pos, end)
        if type(event) is QueryEvent:
            observe(event)
        return event

    return decode_and_observe
