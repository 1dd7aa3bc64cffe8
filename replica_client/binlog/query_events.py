"""Statement events: QUERY (with its status variables) and the events around it. No I/O.

Body decoders of the dispatch table, each ``fn(fmt, header, view, pos, end)``
(see :mod:`.format`); none keeps state. Layouts follow the server sources
(MySQL ``libs/mysql/binlog/event/statement_events.cpp``: ``Query_event``,
``User_var_event``, ``Intvar_event``, ``Rand_event``; ``load_data_events.cpp``:
``Begin_load_query_event``, ``Append_block_event``,
``Execute_load_query_event``; MariaDB ``sql/log_event.cc``) and the MariaDB
KB "QUERY_EVENT" page:

* QUERY_EVENT (2): the statement text, its default schema and the session
  state it ran under, as status variables (:func:`parse_status_vars`);
* EXECUTE_LOAD_QUERY_EVENT (18): a QUERY whose file was sent by
  BEGIN_LOAD_QUERY_EVENT (17) and APPEND_BLOCK_EVENT (9) blocks;
* USER_VAR_EVENT (14), INTVAR_EVENT (5), RAND_EVENT (13): the user variables,
  LAST_INSERT_ID / INSERT_ID and RAND() seeds a statement-based log replays.

Text the server wrote (schema names, variable names) is :func:`server_text`;
the query text is decoded with its ``charset`` status variable's collation
and kept as bytes too (``QueryEvent.query_bytes``).
"""

from __future__ import annotations

import struct
from decimal import Decimal
from typing import Any, Final

from ..codec import need, read_cstring, server_text, u8, u16, u32, u64
from ..errors import MalformedEventError
from .charsets import decoder_for_collation
from .constants import EventType
from .decimal import decode_decimal
from .events import (
    AppendBlockEvent,
    BeginLoadQueryEvent,
    Event,
    ExecuteLoadQueryEvent,
    IntvarEvent,
    QueryEvent,
    RandEvent,
    UserVarEvent,
)
from .format import BinlogFormat
from .header import EventHeader

__all__ = [
    "decode_append_block",
    "decode_begin_load_query",
    "decode_execute_load_query",
    "decode_intvar",
    "decode_query",
    "decode_rand",
    "decode_user_var",
    "parse_status_vars",
]

E = EventType
_QUERY: Final = int(E.QUERY_EVENT)
_DOUBLE: Final = struct.Struct("<d")
_I64: Final = struct.Struct("<q")

# Status variable codes (``Query_event::Query_event(buf, ...)``, ``enum Query_event_status_vars``).
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
_Q_HRNOW = 128  # MariaDB
_Q_XID = 129  # MariaDB
_OVER_MAX_DBS_IN_EVENT_MTS = 254


def _short_text(view: memoryview, pos: int, what: str) -> tuple[str, int]:
    """length u8 | text; returns the text and the position after it."""
    n = u8(view, pos)
    need(view, pos + 1, n, what)
    return server_text(view[pos + 1 : pos + 1 + n]), pos + 1 + n


def parse_status_vars(view: memoryview, pos: int, end: int) -> tuple[dict[str, Any], bytes]:
    """The status variables between ``pos`` and ``end``: ``(QueryEvent fields, unknown rest)``.

    Each is ``code u8 | value``, the value's size fixed by the code. A code this
    decoder does not know has no knowable size (the server stops there too):
    it and everything after it is returned as bytes, never dropped.
    """
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
            out["catalog"], p = _short_text(view, p, "catalog")
            if code == _Q_CATALOG:
                p += 1  # the old form is NUL-terminated too
        elif code == _Q_AUTO_INCREMENT:
            out["auto_increment_increment"] = u16(view, p)
            out["auto_increment_offset"] = u16(view, p + 2)
            p += 4
        elif code == _Q_CHARSET:
            out["charset"] = (u16(view, p), u16(view, p + 2), u16(view, p + 4))
            p += 6
        elif code == _Q_TIME_ZONE:
            out["time_zone"], p = _short_text(view, p, "time zone")
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
            user, p = _short_text(view, p, "invoker user")
            host, p = _short_text(view, p, "invoker host")
            out["invoker"] = (user, host)
        elif code == _Q_UPDATED_DB_NAMES:
            count = u8(view, p)
            p += 1
            names: list[str] = []
            if count != _OVER_MAX_DBS_IN_EVENT_MTS:
                for _ in range(count):
                    name, p = read_cstring(view, p, end)
                    names.append(server_text(name))
            out["updated_db_names"] = tuple(names)
        elif code in (_Q_MICROSECONDS, _Q_HRNOW):
            need(view, p, 3, "microseconds")
            key = "microseconds" if code == _Q_MICROSECONDS else "hrnow"
            out[key] = view[p] | view[p + 1] << 8 | view[p + 2] << 16
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
        elif code == _Q_XID:
            out["xid"] = u64(view, p)
            p += 8
        else:
            return out, bytes(view[pos:end])
        if p > end:
            raise MalformedEventError(
                f"status variable {code} overruns the status block", offset=pos
            )
        pos = p
    return out, b""


def _query_parts(
    fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int, phl: int
) -> QueryEvent:
    # thread_id u32 | exec_time u32 | db_len u8 | error_code u16 | status_len u16 (v4)
    # [extra post-header of EXECUTE_LOAD_QUERY] | status vars | db | 0x00 | query
    need(view, pos, phl, "QUERY post-header")
    thread_id = u32(view, pos)
    exec_time = u32(view, pos + 4)
    db_len = view[pos + 8]
    error_code = u16(view, pos + 9)
    status_len = u16(view, pos + 11) if phl >= 13 else 0  # v1/v3: no status variables
    pos += phl
    need(view, pos, status_len, "QUERY status variables")
    status, unknown = parse_status_vars(view, pos, pos + status_len)
    pos += status_len
    need(view, pos, db_len + 1, "QUERY schema name")
    schema = server_text(view[pos : pos + db_len])
    pos += db_len + 1
    if pos > end:
        raise MalformedEventError("QUERY text starts past the end of the event", offset=pos)
    raw = bytes(view[pos:end])
    charset = status.get("charset")
    decode = decoder_for_collation(charset[0], fmt.mariadb) if charset else None
    try:
        query = decode(raw) if decode is not None else server_text(raw)
    except UnicodeDecodeError:
        query = server_text(raw)
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


def decode_query(fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    """QUERY_EVENT (see :func:`_query_parts` for the layout)."""
    return _query_parts(fmt, h, view, pos, end, fmt.post_header_lens[_QUERY])


def decode_execute_load_query(
    fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    """EXECUTE_LOAD_QUERY_EVENT: the QUERY post-header, then
    file_id u32 | fn_pos_start u32 | fn_pos_end u32 | dup_handling u8, then a QUERY body."""
    phl = fmt.post_header_len(E.EXECUTE_LOAD_QUERY_EVENT)
    base = fmt.post_header_lens[_QUERY]
    need(view, pos, phl, "EXECUTE_LOAD_QUERY post-header")
    file_id = u32(view, pos + base)
    start = u32(view, pos + base + 4)
    stop = u32(view, pos + base + 8)
    dup = u8(view, pos + base + 12)
    query = _query_parts(fmt, h, view, pos, end, phl)
    return ExecuteLoadQueryEvent(h, query, file_id, start, stop, dup)


def decode_begin_load_query(
    fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    """BEGIN_LOAD_QUERY_EVENT: file_id u32 | the file's first block (rest)."""
    phl = fmt.post_header_len(E.BEGIN_LOAD_QUERY_EVENT)
    return BeginLoadQueryEvent(h, u32(view, pos), bytes(view[pos + phl : end]))


def decode_append_block(
    fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    """APPEND_BLOCK_EVENT: file_id u32 | the next block of the file (rest)."""
    phl = fmt.post_header_len(E.APPEND_BLOCK_EVENT)
    return AppendBlockEvent(h, u32(view, pos), bytes(view[pos + phl : end]))


def decode_intvar(fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    """INTVAR_EVENT: type u8 (1 LAST_INSERT_ID, 2 INSERT_ID) | value u64."""
    return IntvarEvent(h, u8(view, pos), u64(view, pos + 1))


def decode_rand(fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    """RAND_EVENT: seed1 u64 | seed2 u64."""
    return RandEvent(h, u64(view, pos), u64(view, pos + 8))


# Item_result of a user variable's value.
_STRING_RESULT, _REAL_RESULT, _INT_RESULT, _ROW_RESULT, _DECIMAL_RESULT = range(5)


def decode_user_var(
    fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    """USER_VAR_EVENT: name_len u32 | name | is_null u8
    | [type u8 | charset u32 | value_len u32 | value | [flags u8 (bit 0: unsigned)]].

    A string value is decoded with its collation; bytes that do not decode (or
    a binary collation) stay bytes.
    """
    name_len = u32(view, pos)
    need(view, pos + 4, name_len + 1, "user variable name")
    name = server_text(view[pos + 4 : pos + 4 + name_len])
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
        decode = decoder_for_collation(charset, fmt.mariadb)
        try:
            value = decode(raw) if decode is not None else raw
        except UnicodeDecodeError:
            value = raw
    else:
        raise MalformedEventError(f"unknown user variable type {vtype}", offset=pos - 10)
    return UserVarEvent(h, name, value, vtype, charset, unsigned)
