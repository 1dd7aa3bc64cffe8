"""Legacy binlogs: v1 (3.23) and v3 (4.0) logs, LOAD events, pre-GA 5.1/5.2 numbering. No I/O.

Binlog format versions (MySQL Internals "Binlog Versions";
``Format_description_log_event::Format_description_log_event(uint8)``):

* **v1** (MySQL 3.23): the first event is a START_EVENT_V3 shorter than 75
  bytes; every header is 13 bytes: ``timestamp u32 | type u8 | server_id u32 |
  event_size u32`` (no log_pos, no flags). ROTATE has no position field.
* **v3** (MySQL 4.0): the first event is a START_EVENT_V3 of 75+ bytes, or is
  neither START_EVENT_V3 nor FORMAT_DESCRIPTION_EVENT; 19-byte headers whose
  ``log_pos`` is where the event *starts* (the decoder turns it into the end
  position, as the server does).
* **v4** (MySQL 5.0+, MariaDB): the first event is a FORMAT_DESCRIPTION_EVENT
  that lists the header and post-header lengths.

``event_size`` sits at bytes 9..12 in every version, so a file reader frames
v1 events exactly like v4 ones; only the minimal header length differs
(``EventDecoder.header_len``).

Pre-GA trees of MySQL 5.1/5.2 (server versions ``5.1.[1-5]-a_drop5*``,
``5.1.4-a_drop6*``, ``5.2.[0-2]-a_drop6*``) numbered types 16-22 differently
(``Format_description_log_event``: ``event_type_permutation``); their TABLE_MAP
carries no column metadata and no null bitmap, and their rows events
(PRE_GA_*_ROWS, ``log_event_old.cc``) hold raw record images (decoded in
:mod:`.table_bindings`).

Here: the formats of v1/v3 logs (:func:`legacy_format`), the pre-GA
renumbering, and the body decoders of the events only old servers write,
each ``fn(fmt, header, view, pos, end)`` of the dispatch table (see
:mod:`.format`), none keeping state: START_EVENT_V3 (1); LOAD_EVENT (6),
NEW_LOAD_EVENT (12), CREATE_FILE_EVENT (8), EXEC_LOAD_EVENT (10) and
DELETE_FILE_EVENT (11) of ``LOAD DATA INFILE`` before 5.0
(``Load_log_event``, ``Create_file_log_event``); SLAVE_EVENT (7).
"""

from __future__ import annotations

import re
from typing import Any, Final

from ..codec import need, read_cstring, server_text, u16, u32, u64, until_nul
from ..errors import MalformedEventError
from .constants import BinlogChecksumAlg, EventType
from .events import (
    CreateFileEvent,
    DeleteFileEvent,
    Event,
    ExecLoadEvent,
    LoadEvent,
    SlaveEvent,
    StartEventV3,
)
from .format import BinlogFormat, resolve_post_header_lens
from .header import EventHeader

__all__ = [
    "LOG_EVENT_MINIMAL_HEADER_LEN",
    "OLD_HEADER_LEN",
    "PRE_GA_PERMUTATION",
    "START_V3_V1_MAX_LEN",
    "decode_create_file",
    "decode_delete_file",
    "decode_exec_load",
    "decode_load",
    "decode_slave",
    "decode_start_v3",
    "is_pre_ga_renumbered",
    "legacy_format",
    "legacy_post_header_lengths",
    "permute_post_header_lengths",
]

E = EventType

#: v1 (3.23) common header length.
OLD_HEADER_LEN: Final = 13
#: v3/v4 common header length.
LOG_EVENT_MINIMAL_HEADER_LEN: Final = 19
#: A START_EVENT_V3 shorter than this is from a v1 log (13 + 56 = 69 bytes).
START_V3_V1_MAX_LEN: Final = 75

#: Old type id -> current type id for the pre-GA 5.1/5.2 trees (ids 16-22).
PRE_GA_PERMUTATION: Final[dict[int, int]] = {
    16: int(E.TABLE_MAP_EVENT),
    17: int(E.PRE_GA_WRITE_ROWS_EVENT),
    18: int(E.PRE_GA_UPDATE_ROWS_EVENT),
    19: int(E.PRE_GA_DELETE_ROWS_EVENT),
    20: int(E.XID_EVENT),
    21: int(E.BEGIN_LOAD_QUERY_EVENT),
    22: int(E.EXECUTE_LOAD_QUERY_EVENT),
}
_PRE_GA_VERSION: Final = re.compile(r"5\.(?:1\.[1-5]-a_drop5|1\.4-a_drop6|2\.[0-2]-a_drop6)")
_PRE_GA_EVENT_TYPES: Final = 22


def is_pre_ga_renumbered(server_version: str) -> bool:
    """True for the pre-GA 5.1/5.2 trees whose type ids 16-22 were permuted."""
    return _PRE_GA_VERSION.match(server_version) is not None


def permute_post_header_lengths(lengths: tuple[int, ...]) -> tuple[int, ...]:
    """Reorder a pre-GA FDE's post-header lengths into today's type numbering."""
    if len(lengths) != _PRE_GA_EVENT_TYPES:
        raise MalformedEventError(
            f"pre-GA FORMAT_DESCRIPTION_EVENT lists {len(lengths)} event types, expected 22"
        )
    out = list(lengths)
    for old, new in PRE_GA_PERMUTATION.items():
        out[new - 1] = lengths[old - 1]
    return tuple(out)


def legacy_post_header_lengths(binlog_version: int) -> tuple[int, ...]:
    """Post-header lengths of types 1..14 for v1/v3 logs (they have no FDE)."""
    rotate = 0 if binlog_version == 1 else 8
    # START_V3 QUERY STOP ROTATE INTVAR LOAD SLAVE CREATE APPEND EXEC DELETE NEW_LOAD RAND UVAR
    return (56, 11, 0, rotate, 0, 18, 0, 4, 4, 4, 4, 18, 0, 0)


def legacy_format(binlog_version: int) -> BinlogFormat:
    """The format of a v1 or v3 log: no FDE, no checksums, MySQL, old TABLE_MAPs."""
    return BinlogFormat(
        binlog_version=binlog_version,
        header_len=OLD_HEADER_LEN if binlog_version == 1 else LOG_EVENT_MINIMAL_HEADER_LEN,
        checksum_alg=BinlogChecksumAlg.UNDEF,
        mariadb=False,
        post_header_lens=resolve_post_header_lens(legacy_post_header_lengths(binlog_version)),
        old_table_map=True,
    )


def _cstring(view: memoryview, pos: int, end: int) -> tuple[str, int]:
    raw, pos = read_cstring(view, pos, end)
    return server_text(raw), pos


def decode_start_v3(
    fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    """START_EVENT_V3: binlog_version u16 | server_version char[50] | created u32."""
    need(view, pos, 56, "START_EVENT_V3")
    if pos + 56 > end:
        raise MalformedEventError("START_EVENT_V3 shorter than 56 bytes", offset=pos)
    version = server_text(until_nul(view[pos + 2 : pos + 52]))
    return StartEventV3(h, u16(view, pos), version, u32(view, pos + 52))


def _load_parts(
    fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int, create: bool
) -> tuple[dict[str, Any], int]:
    # Load_log_event::copy_log_event:
    # post-header: thread_id u32 | exec_time u32 | skip_lines u32 | table_len u8
    #              | db_len u8 | num_fields u32   [CREATE_FILE: + file_id u32]
    # body: sql_ex | field_lens u8[num_fields] | fields (NUL-terminated each)
    #       | table NUL | db NUL | file name (NUL-terminated for CREATE_FILE)
    #       [CREATE_FILE: | first block of the file]
    # sql_ex, old format (LOAD_EVENT): 5 single bytes field_term enclosed
    #   line_term line_start escaped | opt_flags u8 | empty_flags u8;
    # new format (NEW_LOAD, CREATE_FILE): 5 x (len u8 | bytes) | opt_flags u8.
    load_phl = fmt.post_header_len(E.LOAD_EVENT)
    need(view, pos, 18, "LOAD post-header")
    thread_id, exec_time, skip = u32(view, pos), u32(view, pos + 4), u32(view, pos + 8)
    table_len, db_len, num_fields = view[pos + 12], view[pos + 13], u32(view, pos + 14)
    p = pos + load_phl
    file_id = 0
    if create:
        file_id = u32(view, p)
        p += fmt.post_header_len(E.CREATE_FILE_EVENT)
    terms: list[bytes] = []
    empty_flags = 0
    if h.type_code == E.LOAD_EVENT:
        need(view, p, 7, "sql_ex")
        terms = [bytes(view[p + i : p + i + 1]) for i in range(5)]
        opt_flags, empty_flags = view[p + 5], view[p + 6]
        p += 7
    else:
        for _ in range(5):
            need(view, p, 1, "sql_ex")
            n = view[p]
            need(view, p + 1, n, "sql_ex string")
            terms.append(bytes(view[p + 1 : p + 1 + n]))
            p += 1 + n
        need(view, p, 1, "sql_ex flags")
        opt_flags = view[p]
        p += 1
    if num_fields > end - p:
        raise MalformedEventError(f"LOAD event announces {num_fields} fields", offset=p)
    p += num_fields  # field_lens: the names below are NUL-terminated anyway
    fields = []
    for _ in range(num_fields):
        name, p = _cstring(view, p, end)
        fields.append(name)
    need(view, p, table_len + 1, "LOAD table name")
    table = server_text(view[p : p + table_len])
    p += table_len + 1
    need(view, p, db_len + 1, "LOAD schema name")
    schema = server_text(view[p : p + db_len])
    p += db_len + 1
    if p > end:
        raise MalformedEventError("LOAD event names overrun the event", offset=p)
    if create:
        file_name, p = _cstring(view, p, end)
    else:
        file_name = server_text(until_nul(view[p:end]))
        p = end
    parts: dict[str, Any] = {
        "thread_id": thread_id,
        "exec_time": exec_time,
        "skip_lines": skip,
        "schema": schema,
        "table": table,
        "fields": tuple(fields),
        "file_name": file_name,
        "field_term": terms[0],
        "enclosed": terms[1],
        "line_term": terms[2],
        "line_start": terms[3],
        "escaped": terms[4],
        "opt_flags": opt_flags,
        "empty_flags": empty_flags,
    }
    if create:
        parts["file_id"] = file_id
        parts["data"] = bytes(view[p:end])
    return parts, p


def decode_load(fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    """LOAD_EVENT / NEW_LOAD_EVENT (see :func:`_load_parts` for the layout)."""
    parts, _ = _load_parts(fmt, h, view, pos, end, create=False)
    return LoadEvent(h, **parts)


def decode_create_file(
    fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    """CREATE_FILE_EVENT: a LOAD event, a file id and the file's first block."""
    parts, _ = _load_parts(fmt, h, view, pos, end, create=True)
    return CreateFileEvent(h, **parts)


def decode_exec_load(
    fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    """EXEC_LOAD_EVENT: file_id u32."""
    return ExecLoadEvent(h, u32(view, pos))


def decode_delete_file(
    fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int
) -> Event:
    """DELETE_FILE_EVENT: file_id u32."""
    return DeleteFileEvent(h, u32(view, pos))


def decode_slave(fmt: BinlogFormat, h: EventHeader, view: memoryview, pos: int, end: int) -> Event:
    """SLAVE_EVENT: master_pos u64 | master_port u16 | master_host NUL | master_log (rest)."""
    master_pos = u64(view, pos)
    port = u16(view, pos + 8)
    host, p = _cstring(view, pos + 10, end)
    log = server_text(until_nul(view[p:end]))
    return SlaveEvent(h, master_pos, port, host, log)
