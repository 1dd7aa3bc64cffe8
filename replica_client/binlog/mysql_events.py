"""Body decoders of MySQL-only events (5.6 - 9.x). No I/O.

Each function has the dispatch-table signature ``(decoder, header, view, pos,
end) -> Event``: ``pos`` is just after the common header, ``end`` before the
checksum trailer. Layouts follow MySQL ``libs/mysql/binlog/event``
(``control_events.cpp``, ``rows_event.cpp``, ``statement_events.cpp``) and the
MySQL Internals "Binlog Event" pages. Malformed input raises
:class:`MalformedEventError` only.

GTID_TAGGED_LOG_EVENT (9.x, type 42) and tagged PREVIOUS_GTIDS use the MySQL
serialization library (``libs/mysql/serialization``): variable-length
integers whose first byte counts, in trailing one bits, how many more bytes
follow (:func:`read_varlen_unsigned`); signed integers are zig-zag encoded.
"""

from __future__ import annotations

import struct
import uuid as _uuid
from typing import TYPE_CHECKING, Final

from ..errors import MalformedEventError
from .codec import need, read_packed_int, u8, u16, u32, u64
from .constants import EventType
from .events import (
    AnonymousGtidEvent,
    Event,
    GtidSetEntry,
    HeartbeatV2Event,
    IncidentEvent,
    MysqlGtidEvent,
    PreviousGtidsEvent,
    RowsQueryEvent,
    TransactionContextEvent,
    ViewChangeEvent,
)
from .header import EventHeader

if TYPE_CHECKING:
    from .decoder import EventDecoder

__all__ = [
    "decode_gtid",
    "decode_gtid_tagged",
    "decode_heartbeat_v2",
    "decode_incident",
    "decode_previous_gtids",
    "decode_rows_query",
    "decode_transaction_context",
    "decode_view_change",
    "read_varlen_signed",
    "read_varlen_unsigned",
]

E = EventType
_U56_MASK: Final = (1 << 55) - 1
_U56_FLAG: Final = 1 << 55
_SV_FLAG: Final = 1 << 31
_I64: Final = struct.Struct("<q")
_U56: Final = struct.Struct("<IHB")
_LOGICAL_TIMESTAMP_TYPECODE: Final = 2
_UUID_LEN: Final = 16
#: Top byte of PREVIOUS_GTIDS' n_sids when the set is in the tagged format.
_GTID_FORMAT_TAGGED: Final = 1


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="replace")


def _uuid_at(view: memoryview, pos: int) -> str:
    need(view, pos, _UUID_LEN, "server UUID")
    return str(_uuid.UUID(bytes=bytes(view[pos : pos + _UUID_LEN])))


def _u56(view: memoryview, pos: int) -> int:
    need(view, pos, 7, "7-byte timestamp")
    lo, mid, hi = _U56.unpack_from(view, pos)
    return int(lo | (mid << 32) | (hi << 48))


# -- GTID_LOG_EVENT / ANONYMOUS_GTID_LOG_EVENT (33, 34) ------------------------------------


def decode_gtid(d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    """GTID_LOG_EVENT / ANONYMOUS_GTID_LOG_EVENT (``Gtid_event::Gtid_event``).

    post-header: gtid_flags u8 | sid[16] | gno i64
                 [lt_type u8 (= 2) | last_committed i64 | sequence_number i64]  (5.7+)
    body (each part only when bytes remain, as the server reads it):
                 immediate_commit_timestamp u56 (bit 55: original follows)
                 [original_commit_timestamp u56] | transaction_length packed
                 immediate_server_version u32 (bit 31: original follows)
                 [original_server_version u32] | [commit_group_ticket u64]
    """
    need(view, pos, 25, "GTID post-header")
    if pos + 25 > end:
        raise MalformedEventError("GTID event shorter than its 25-byte post-header", offset=pos)
    flags = view[pos]
    sid = _uuid_at(view, pos + 1)
    gno = _I64.unpack_from(view, pos + 17)[0]
    p = pos + 25
    last_committed = sequence_number = None
    if p + 17 <= end and view[p] == _LOGICAL_TIMESTAMP_TYPECODE:
        last_committed = _I64.unpack_from(view, p + 1)[0]
        sequence_number = _I64.unpack_from(view, p + 9)[0]
        p += 17
    immediate_ts = original_ts = tx_length = None
    immediate_sv = original_sv = ticket = None
    if p + 7 <= end:
        raw = _u56(view, p)
        p += 7
        immediate_ts = raw & _U56_MASK
        original_ts = immediate_ts
        if raw & _U56_FLAG:
            if p + 7 > end:
                raise MalformedEventError("GTID original_commit_timestamp truncated", offset=p)
            original_ts = _u56(view, p)
            p += 7
        if p < end:
            tx_length, p = read_packed_int(view, p)
        if p + 4 <= end:
            raw_sv = u32(view, p)
            p += 4
            immediate_sv = raw_sv & ~_SV_FLAG
            original_sv = immediate_sv
            if raw_sv & _SV_FLAG:
                if p + 4 > end:
                    raise MalformedEventError("GTID original_server_version truncated", offset=p)
                original_sv = u32(view, p)
                p += 4
        if p + 8 <= end:
            ticket = u64(view, p)
            p += 8
    if p > end:
        raise MalformedEventError("GTID event fields overrun the event", offset=p)
    cls = AnonymousGtidEvent if h.type_code == E.ANONYMOUS_GTID_LOG_EVENT else MysqlGtidEvent
    return cls(
        h,
        flags,
        sid,
        gno,
        None,
        last_committed,
        sequence_number,
        immediate_ts,
        original_ts,
        tx_length,
        immediate_sv,
        original_sv,
        ticket,
    )


# -- MySQL serialization library ------------------------------------------------------------


def read_varlen_unsigned(view: memoryview, pos: int, end: int) -> tuple[int, int]:
    """A serialization-library unsigned integer (``read_varlen_bytes_unsigned``).

    The number of trailing one bits of the first byte plus one is the byte
    count (0xFF: a marker byte then 8 bytes); the value is the little-endian
    number of that many bytes shifted right by the byte count.
    """
    if pos >= end:
        raise MalformedEventError("truncated variable-length integer", offset=pos)
    first = view[pos]
    if first == 0xFF:
        if pos + 9 > end:
            raise MalformedEventError("truncated variable-length integer", offset=pos)
        return int.from_bytes(view[pos + 1 : pos + 9], "little"), pos + 9
    nbytes = 1
    while first & (1 << (nbytes - 1)):
        nbytes += 1
    if pos + nbytes > end:
        raise MalformedEventError("truncated variable-length integer", offset=pos)
    return int.from_bytes(view[pos : pos + nbytes], "little") >> nbytes, pos + nbytes


def read_varlen_signed(view: memoryview, pos: int, end: int) -> tuple[int, int]:
    """A zig-zag encoded signed integer (``read_varlen_bytes_signed``)."""
    raw, pos = read_varlen_unsigned(view, pos, end)
    return (-(raw >> 1) - 1 if raw & 1 else raw >> 1), pos


_F_FLAGS, _F_SID, _F_GNO, _F_TAG, _F_LAST, _F_SEQ = range(6)
_F_IMM_TS, _F_ORIG_TS, _F_TX_LEN, _F_IMM_SV, _F_ORIG_SV, _F_TICKET = range(6, 12)
_SIGNED_FIELDS: Final = frozenset({_F_GNO, _F_LAST, _F_SEQ})
_TAG_MAX: Final = 32


def decode_gtid_tagged(
    d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    """GTID_TAGGED_LOG_EVENT (42): a ``Gtid_event`` in the serialization format.

    layout: version u8 | payload_size varlen (counts the whole body)
            | last_non_ignorable_field_id varlen
            | { field_id varlen | value }*
    fields (``Gtid_event::define_fields``): 0 gtid_flags, 1 sid (16 varlen
    bytes), 2 gno (signed), 3 tag (varlen length + bytes), 4 last_committed
    (signed), 5 sequence_number (signed), 6 immediate_commit_timestamp,
    7 original_commit_timestamp, 8 transaction_length, 9 immediate_server_version,
    10 original_server_version, 11 commit_group_ticket. Omitted optional
    fields take their defaults (originals equal the immediates). Fields after
    the last known one are skipped by the payload size.
    """
    start = pos
    need(view, pos, 1, "serialization version")
    pos += 1
    size, pos = read_varlen_unsigned(view, pos, end)
    if size < pos - start or start + size > end:
        raise MalformedEventError(f"tagged GTID payload size {size} does not fit", offset=pos)
    stop = start + size
    last_non_ignorable, pos = read_varlen_unsigned(view, pos, stop)
    values: dict[int, int] = {}
    sid = "00000000-0000-0000-0000-000000000000"
    tag = ""
    previous = -1
    while pos < stop:
        field_id, fpos = read_varlen_unsigned(view, pos, stop)
        if field_id <= previous:
            raise MalformedEventError(f"tagged GTID field {field_id} out of order", offset=pos)
        if field_id > _F_TICKET:
            if field_id <= last_non_ignorable:
                raise MalformedEventError(
                    f"tagged GTID has unknown non-ignorable field {field_id}", offset=pos
                )
            break  # ignorable fields from a newer server: the size bounds them
        previous = field_id
        pos = fpos
        if field_id == _F_SID:
            raw = bytearray()
            for _ in range(_UUID_LEN):
                b, pos = read_varlen_unsigned(view, pos, stop)
                if b > 0xFF:
                    raise MalformedEventError("tagged GTID sid byte out of range", offset=pos)
                raw.append(b)
            sid = str(_uuid.UUID(bytes=bytes(raw)))
        elif field_id == _F_TAG:
            n, pos = read_varlen_unsigned(view, pos, stop)
            if n > _TAG_MAX or pos + n > stop:
                raise MalformedEventError(f"tagged GTID tag of {n} bytes", offset=pos)
            tag = _text(bytes(view[pos : pos + n]))
            pos += n
        elif field_id in _SIGNED_FIELDS:
            values[field_id], pos = read_varlen_signed(view, pos, stop)
        else:
            values[field_id], pos = read_varlen_unsigned(view, pos, stop)
    imm_ts = values.get(_F_IMM_TS)
    imm_sv = values.get(_F_IMM_SV)
    return MysqlGtidEvent(
        h,
        values.get(_F_FLAGS, 0),
        sid,
        values.get(_F_GNO, 0),
        tag or None,
        values.get(_F_LAST),
        values.get(_F_SEQ),
        imm_ts,
        values.get(_F_ORIG_TS, imm_ts),
        values.get(_F_TX_LEN),
        imm_sv,
        values.get(_F_ORIG_SV, imm_sv),
        values.get(_F_TICKET),
    )


# -- PREVIOUS_GTIDS_LOG_EVENT (35) ------------------------------------------------------------


def decode_previous_gtids(
    d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    """PREVIOUS_GTIDS_LOG_EVENT: a GTID set (``Gtid_set::add_gtid_encoding``).

    n_sids u64 | { sid[16] | [tag: varlen length + bytes] | n_intervals u64
                   | { start u64 | end u64 (exclusive) }* }*
    In the tagged format (8.4+) the low and high bytes of n_sids hold the
    format (1) and the count sits in bytes 1..6.
    """
    raw = u64(view, pos)
    pos += 8
    tagged = (raw >> 56) == _GTID_FORMAT_TAGGED and (raw & 0xFF) == _GTID_FORMAT_TAGGED
    n_sids = (raw >> 8) & ((1 << 48) - 1) if tagged else raw
    if n_sids > (end - pos) // (_UUID_LEN + 8):
        raise MalformedEventError(f"PREVIOUS_GTIDS announces {n_sids} sources", offset=pos - 8)
    entries: list[GtidSetEntry] = []
    for _ in range(n_sids):
        sid = _uuid_at(view, pos)
        pos += _UUID_LEN
        tag = ""
        if tagged:
            n, pos = read_varlen_unsigned(view, pos, end)
            if n > _TAG_MAX or pos + n > end:
                raise MalformedEventError(f"GTID tag of {n} bytes", offset=pos)
            tag = _text(bytes(view[pos : pos + n]))
            pos += n
        n_iv = u64(view, pos)
        pos += 8
        if n_iv > (end - pos) // 16:
            raise MalformedEventError(f"PREVIOUS_GTIDS announces {n_iv} intervals", offset=pos)
        intervals = []
        for _ in range(n_iv):
            a, b = u64(view, pos), u64(view, pos + 8)
            if not 0 < a < b:
                raise MalformedEventError(f"bad GTID interval [{a}, {b})", offset=pos)
            intervals.append((a, b - 1))
            pos += 16
        entries.append(GtidSetEntry(sid, tag, tuple(intervals)))
    if pos != end:
        raise MalformedEventError(f"{end - pos} bytes after the PREVIOUS_GTIDS set", offset=pos)
    return PreviousGtidsEvent(h, tuple(entries))


# -- small MySQL events ----------------------------------------------------------------------


def decode_rows_query(
    d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    """ROWS_QUERY_LOG_EVENT: length u8 (the text's length mod 256, unused) | text (rest)."""
    need(view, pos, 1, "ROWS_QUERY length")
    return RowsQueryEvent(h, _text(bytes(view[pos + 1 : end])))


def decode_incident(d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    """INCIDENT_EVENT: incident u16 | [message length u8 | message]."""
    incident = u16(view, pos)
    phl = d.post_header_len(E.INCIDENT_EVENT, 2)
    p = pos + phl
    message = ""
    if p < end:
        n = u8(view, p)
        if p + 1 + n > end:
            raise MalformedEventError("INCIDENT message overruns the event", offset=p)
        message = _text(bytes(view[p + 1 : p + 1 + n]))
    return IncidentEvent(h, incident, message)


_HB_END, _HB_LOG_FILENAME, _HB_LOG_POSITION = 0, 1, 2


def decode_heartbeat_v2(
    d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    """HEARTBEAT_LOG_EVENT_V2: { type packed | length packed | value }* up to type 0.

    1 = log file name, 2 = log position (a packed integer); other types are
    skipped by their length (``Heartbeat_event_v2``).
    """
    name = ""
    position = 0
    while pos < end:
        field_type, pos = read_packed_int(view, pos)
        if field_type == _HB_END:
            break
        length, pos = read_packed_int(view, pos)
        if pos + length > end:
            raise MalformedEventError("heartbeat field overruns the event", offset=pos)
        if field_type == _HB_LOG_FILENAME:
            name = _text(bytes(view[pos : pos + length]))
        elif field_type == _HB_LOG_POSITION:
            position, after = read_packed_int(view, pos)
            if after != pos + length:
                raise MalformedEventError("heartbeat position field length", offset=pos)
        pos += length
    return HeartbeatV2Event(h, name, position)


def decode_view_change(
    d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    """VIEW_CHANGE_EVENT: view_id char[40] | seq_number u64 | cert_info_size u32
    | { key_len u16 | key | value_len u32 | value }* (``View_change_event``)."""
    need(view, pos, 52, "VIEW_CHANGE post-header")
    view_id = _text(bytes(view[pos : pos + 40]).split(b"\0", 1)[0])
    seq = u64(view, pos + 40)
    count = u32(view, pos + 48)
    p = pos + d.post_header_len(E.VIEW_CHANGE_EVENT, 52)
    info: list[tuple[str, bytes]] = []
    for _ in range(count):
        klen = u16(view, p)
        need(view, p + 2, klen, "certification key")
        key = _text(bytes(view[p + 2 : p + 2 + klen]))
        p += 2 + klen
        vlen = u32(view, p)
        if p + 4 + vlen > end:
            raise MalformedEventError("certification value overruns the event", offset=p)
        info.append((key, bytes(view[p + 4 : p + 4 + vlen])))
        p += 4 + vlen
    if p > end:
        raise MalformedEventError("VIEW_CHANGE data overruns the event", offset=p)
    return ViewChangeEvent(h, view_id, seq, tuple(info))


def decode_transaction_context(
    d: EventDecoder, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    """TRANSACTION_CONTEXT_EVENT (``Transaction_context_event``).

    post-header: server_uuid_len u8 | thread_id u32 | gtid_specified u8
                 | snapshot_version_len u32 | write_set_len u32 | read_set_len u32
    body:        server_uuid | snapshot_version | write_set items | read_set items,
                 each item: len u16 | bytes
    """
    need(view, pos, 18, "TRANSACTION_CONTEXT post-header")
    uuid_len = view[pos]
    thread_id = u32(view, pos + 1)
    gtid_specified = bool(view[pos + 5])
    snap_len = u32(view, pos + 6)
    ws_len = u32(view, pos + 10)
    rs_len = u32(view, pos + 14)
    p = pos + d.post_header_len(E.TRANSACTION_CONTEXT_EVENT, 18)
    if p + uuid_len + snap_len > end:
        raise MalformedEventError("TRANSACTION_CONTEXT data overruns the event", offset=p)
    server_uuid = _text(bytes(view[p : p + uuid_len]))
    p += uuid_len
    snapshot = bytes(view[p : p + snap_len])
    p += snap_len
    sets: list[tuple[bytes, ...]] = []
    for count in (ws_len, rs_len):
        if count > (end - p) // 2:
            raise MalformedEventError(f"TRANSACTION_CONTEXT set of {count} items", offset=p)
        items = []
        for _ in range(count):
            n = u16(view, p)
            if p + 2 + n > end:
                raise MalformedEventError("write/read set item overruns the event", offset=p)
            items.append(bytes(view[p + 2 : p + 2 + n]))
            p += 2 + n
        sets.append(tuple(items))
    return TransactionContextEvent(
        h, server_uuid, thread_id, gtid_specified, snapshot, sets[0], sets[1]
    )
