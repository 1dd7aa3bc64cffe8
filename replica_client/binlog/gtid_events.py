"""GTID events of both flavours: where a transaction comes from. No I/O.

Body decoders of the dispatch table, each ``fn(fmt, header, view, pos, end)``
(see :mod:`.format`); none keeps state.

MariaDB (``sql/log_event.cc``, MariaDB KB "GTID_EVENT", "GTID_LIST_EVENT",
"BINLOG_CHECKPOINT_EVENT"):

* GTID_EVENT (162): domain, sequence number and flags of an event group;
* GTID_LIST_EVENT (163): the GTID state at the start of a file (or, artificial,
  where a GTID-started dump begins);
* BINLOG_CHECKPOINT_EVENT (161): the oldest file crash recovery needs.

MySQL (``libs/mysql/binlog/event/control_events.cpp``: ``Gtid_event``,
``Previous_gtids_event``; ``libs/mysql/gtid``):

* GTID_LOG_EVENT (33) / ANONYMOUS_GTID_LOG_EVENT (34): the transaction's
  UUID:number, logical clock and commit timestamps;
* GTID_TAGGED_LOG_EVENT (42, 8.3+): the same in the serialization library's
  format, with a tag;
* PREVIOUS_GTIDS_LOG_EVENT (35): the GTID set of every earlier file.

GTID_TAGGED_LOG_EVENT and tagged PREVIOUS_GTIDS use the MySQL serialization
library (``libs/mysql/serialization``): variable-length integers whose first
byte counts, in trailing one bits, how many more bytes follow
(:func:`read_varlen_unsigned`); signed integers are zig-zag encoded.
"""

from __future__ import annotations

import struct
import uuid as _uuid
from typing import Final

from ..accel import constructor
from ..codec import need, read_lenenc_int, server_text, u8, u32, u64
from ..errors import MalformedEventError
from ..position import GtidTriple
from .constants import EventType
from .events import (
    AnonymousGtidEvent,
    BinlogCheckpointEvent,
    Event,
    GtidEvent,
    GtidListEvent,
    GtidSetEntry,
    MysqlGtidEvent,
    PreviousGtidsEvent,
)
from .format import BinlogFormat
from .header import EventHeader

__all__ = [
    "decode_binlog_checkpoint",
    "decode_gtid_list",
    "decode_gtid_tagged",
    "decode_mariadb_gtid",
    "decode_mysql_gtid",
    "decode_previous_gtids",
    "read_varlen_signed",
    "read_varlen_unsigned",
]

E = EventType

# -- MariaDB ---------------------------------------------------------------------------

_GTID_HEAD: Final = struct.Struct("<QIB")  # seq_no, domain_id, flags2
_GTID_LIST_ENTRY: Final = struct.Struct("<IIQ")  # domain_id, server_id, seq_no
_FL_GROUP_COMMIT_ID: Final = GtidEvent.FL_GROUP_COMMIT_ID
_FL_XA: Final = GtidEvent.FL_PREPARED_XA | GtidEvent.FL_COMPLETED_XA
#: GtidEvent(...) with every field, without the generated __init__ (see accel.constructor).
_new_gtid: Final = constructor(GtidEvent)


def decode_mariadb_gtid(
    fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    """GTID_EVENT (MariaDB): the GTID and flags that open an event group.

    Layout (MariaDB ``sql/log_event.cc``: ``Gtid_log_event::Gtid_log_event``,
    ``::write``)::

        seq_no u64 | domain_id u32 | flags2 u8 | [commit_id u64]
        [XA: format_id u32 | gtrid_len u8 | bqual_len u8 | data]
        [flags_extra u8 | extra_engines u8 | sa_seq_no u64 | thread_id u32]

    The body is zero-padded to 19 bytes: a plain GTID reads flags_extra 0
    from the padding.
    """
    if pos + 13 > len(view):
        need(view, pos, 13, "GTID")  # raises
    seq_no, domain_id, flags2 = _GTID_HEAD.unpack_from(view, pos)
    commit_id = None
    if flags2 & _FL_GROUP_COMMIT_ID:
        commit_id = u64(view, pos + 13)
        pos += 21
    else:
        pos += 13
    format_id = gtrid = bqual = None
    if flags2 & _FL_XA:
        format_id = u32(view, pos)
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
        format_id,
        gtrid,
        bqual,
        flags_extra,
        extra_engines,
        sa_seq_no,
        thread_id,
    )


def decode_gtid_list(
    fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    """GTID_LIST_EVENT (MariaDB): count u32 (low 28 bits; top 4 bits flags)
    | count x (domain_id u32 | server_id u32 | seq_no u64)."""
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


def decode_binlog_checkpoint(
    fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    """BINLOG_CHECKPOINT_EVENT (MariaDB): name_len u32 | file name."""
    n = u32(view, pos)
    need(view, pos + 4, n, "checkpoint file name")
    return BinlogCheckpointEvent(h, server_text(view[pos + 4 : pos + 4 + n]))


# -- MySQL -----------------------------------------------------------------------------

_U56_MASK: Final = (1 << 55) - 1
_U56_FLAG: Final = 1 << 55
_SV_FLAG: Final = 1 << 31
_I64: Final = struct.Struct("<q")
_U56: Final = struct.Struct("<IHB")
_LOGICAL_TIMESTAMP_TYPECODE: Final = 2
_UUID_LEN: Final = 16
#: Top byte of PREVIOUS_GTIDS' n_sids when the set is in the tagged format.
_GTID_FORMAT_TAGGED: Final = 1


def _uuid_at(view: memoryview, pos: int) -> str:
    need(view, pos, _UUID_LEN, "server UUID")
    return str(_uuid.UUID(bytes=bytes(view[pos : pos + _UUID_LEN])))


def _u56(view: memoryview, pos: int) -> int:
    need(view, pos, 7, "7-byte timestamp")
    lo, mid, hi = _U56.unpack_from(view, pos)
    return int(lo | (mid << 32) | (hi << 48))


def decode_mysql_gtid(
    fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
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
            tx_length, p = read_lenenc_int(view, p, end)
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


# -- MySQL serialization library ------------------------------------------------------


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
    fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int
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
            tag = server_text(view[pos : pos + n])
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


def decode_previous_gtids(
    fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int
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
            tag = server_text(view[pos : pos + n])
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
