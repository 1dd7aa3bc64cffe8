"""Control events: where the log goes, what ends a transaction, what rides along. No I/O.

Body decoders of the dispatch table, each ``fn(fmt, header, view, pos, end)``
(see :mod:`.format`); none keeps state. Layouts follow MySQL
``libs/mysql/binlog/event/control_events.cpp`` and ``rows_event.cpp``, MariaDB
``sql/log_event.cc`` and the MariaDB KB / MySQL Internals "Binlog Event" pages:

* ROTATE_EVENT (4): the next file and position; STOP_EVENT (3): clean shutdown;
* HEARTBEAT_LOG_EVENT (27) and HEARTBEAT_LOG_EVENT_V2 (41): the primary is idle;
* XID_EVENT (16): a transaction committed; XA_PREPARE_LOG_EVENT (38): an XA
  transaction was prepared;
* INCIDENT_EVENT (26): something happened that a replica must know about;
* ANNOTATE_ROWS_EVENT (160, MariaDB) and ROWS_QUERY_LOG_EVENT (29, MySQL): the
  statement behind the rows events that follow;
* VIEW_CHANGE_EVENT (37) and TRANSACTION_CONTEXT_EVENT (36): MySQL Group
  Replication's membership changes and certification data.

The decoder drops its TABLE_MAPs at a ROTATE (``EventDecoder``); the
decoding here does not depend on it.
"""

from __future__ import annotations

from typing import Final

from ..accel import constructor
from ..codec import U64, need, read_lenenc_int, server_text, u8, u16, u32, u64, until_nul
from ..errors import MalformedEventError
from .constants import EventType
from .events import (
    AnnotateRowsEvent,
    Event,
    HeartbeatEvent,
    HeartbeatV2Event,
    IncidentEvent,
    RotateEvent,
    RowsQueryEvent,
    StopEvent,
    TransactionContextEvent,
    ViewChangeEvent,
    XaPrepareEvent,
    XidEvent,
)
from .format import BinlogFormat
from .header import EventHeader

__all__ = [
    "decode_annotate_rows",
    "decode_heartbeat",
    "decode_heartbeat_v2",
    "decode_incident",
    "decode_rotate",
    "decode_rows_query",
    "decode_stop",
    "decode_transaction_context",
    "decode_view_change",
    "decode_xa_prepare",
    "decode_xid",
]

E = EventType
_ROTATE: Final = int(E.ROTATE_EVENT)
# Frozen slotted events built field by field without their generated __init__.
_new_rotate: Final = constructor(RotateEvent)
_new_xid: Final = constructor(XidEvent)
_new_annotate: Final = constructor(AnnotateRowsEvent)
# HEARTBEAT_LOG_EVENT_V2 field types (``Heartbeat_event_v2``).
_HB_END, _HB_LOG_FILENAME, _HB_LOG_POSITION = 0, 1, 2


def decode_rotate(fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    """ROTATE_EVENT: position u64 | next file name (rest).

    A v1 log's ROTATE has no post-header: the next file starts at 4. The
    primary's own ROTATEs (artificial, or ``log_pos`` 0: the first event of a
    dump, a relay log's) have the same fields.
    """
    phl = 0 if fmt.binlog_version == 1 else fmt.post_header_lens[_ROTATE]
    position = u64(view, pos) if phl >= 8 else 4
    return _new_rotate(h, position, server_text(view[pos + phl : end]))


def decode_stop(fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    """STOP_EVENT: no body."""
    return StopEvent(h)


def decode_heartbeat(
    fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    """HEARTBEAT_LOG_EVENT: the primary's current file name (rest); log_pos in the header."""
    return HeartbeatEvent(h, server_text(view[pos:end]))


def decode_heartbeat_v2(
    fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    """HEARTBEAT_LOG_EVENT_V2: { type packed | length packed | value }* up to type 0.

    1 = log file name, 2 = log position (a packed integer); other types are
    skipped by their length (``Heartbeat_event_v2``).
    """
    name = ""
    position = 0
    while pos < end:
        field_type, pos = read_lenenc_int(view, pos, end)
        if field_type == _HB_END:
            break
        length, pos = read_lenenc_int(view, pos, end)
        if pos + length > end:
            raise MalformedEventError("heartbeat field overruns the event", offset=pos)
        if field_type == _HB_LOG_FILENAME:
            name = server_text(view[pos : pos + length])
        elif field_type == _HB_LOG_POSITION:
            position, after = read_lenenc_int(view, pos, end)
            if after != pos + length:
                raise MalformedEventError("heartbeat position field length", offset=pos)
        pos += length
    return HeartbeatV2Event(h, name, position)


def decode_xid(fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    """XID_EVENT: xid u64 (the transaction committed)."""
    if pos + 8 > len(view):
        need(view, pos, 8, "u64")  # raises
    return _new_xid(h, U64.unpack_from(view, pos)[0])


def decode_xa_prepare(
    fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    """XA_PREPARE_LOG_EVENT: one_phase u8 | format_id u32 | gtrid_len u32 | bqual_len u32
    | gtrid | bqual (each at most 64 bytes)."""
    one_phase = bool(u8(view, pos))
    format_id = u32(view, pos + 1)
    glen = u32(view, pos + 5)
    blen = u32(view, pos + 9)
    pos += 13
    if glen > 64 or blen > 64:
        raise MalformedEventError(f"XA xid lengths {glen}/{blen} exceed 64", offset=pos)
    need(view, pos, glen + blen, "XA xid")
    return XaPrepareEvent(
        h,
        one_phase,
        format_id,
        bytes(view[pos : pos + glen]),
        bytes(view[pos + glen : pos + glen + blen]),
    )


def decode_incident(
    fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    """INCIDENT_EVENT: incident u16 | [message length u8 | message]."""
    incident = u16(view, pos)
    phl = fmt.post_header_len(E.INCIDENT_EVENT)
    p = pos + phl
    message = ""
    if p < end:
        n = u8(view, p)
        if p + 1 + n > end:
            raise MalformedEventError("INCIDENT message overruns the event", offset=p)
        message = server_text(view[p + 1 : p + 1 + n])
    return IncidentEvent(h, incident, message)


def decode_annotate_rows(
    fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    """ANNOTATE_ROWS_EVENT (MariaDB): the statement text of the rows events that follow (rest)."""
    return _new_annotate(h, server_text(view[pos:end]))


def decode_rows_query(
    fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    """ROWS_QUERY_LOG_EVENT: length u8 (the text's length mod 256, unused) | text (rest)."""
    need(view, pos, 1, "ROWS_QUERY length")
    return RowsQueryEvent(h, server_text(view[pos + 1 : end]))


def decode_view_change(
    fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    """VIEW_CHANGE_EVENT: view_id char[40] | seq_number u64 | cert_info_size u32
    | { key_len u16 | key | value_len u32 | value }* (``View_change_event``)."""
    need(view, pos, 52, "VIEW_CHANGE post-header")
    view_id = server_text(until_nul(view[pos : pos + 40]))
    seq = u64(view, pos + 40)
    count = u32(view, pos + 48)
    p = pos + fmt.post_header_len(E.VIEW_CHANGE_EVENT)
    info: list[tuple[str, bytes]] = []
    for _ in range(count):
        klen = u16(view, p)
        need(view, p + 2, klen, "certification key")
        key = server_text(view[p + 2 : p + 2 + klen])
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
    fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int
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
    p = pos + fmt.post_header_len(E.TRANSACTION_CONTEXT_EVENT)
    if p + uuid_len + snap_len > end:
        raise MalformedEventError("TRANSACTION_CONTEXT data overruns the event", offset=p)
    server_uuid = server_text(view[p : p + uuid_len])
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
