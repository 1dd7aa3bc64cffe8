"""Legacy binlogs (``binlog/legacy.py``): v1 (3.23), v3 (4.0), LOAD events, pre-GA 5.1/5.2.

No fixture of a v1/v3 log exists, so those are built here byte by byte after
the layouts in MySQL's ``log_event.cc`` (``Start_log_event_v3``,
``Load_log_event::copy_log_event``, ``Create_file_log_event``) and the
"Binlog Versions" rules: a START_EVENT_V3 under 75 bytes means v1 with 13-byte
headers, 75+ bytes (or no START_EVENT_V3 at all) means v3, whose header
``log_pos`` is the event's start. The pre-GA files are real (MySQL test suite's
``ver_5_1-wl2325_*``): their FDE permutes type ids 16-22, their TABLE_MAP has
no metadata and their PRE_GA rows events hold record images.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

import replica_client as rc
from replica_client.binlog.constants import EventType
from replica_client.binlog.events import (
    CreateFileEvent,
    DeleteFileEvent,
    ExecLoadEvent,
    LoadEvent,
    StartEventV3,
)
from replica_client.files import BinlogFileReader
from tests.binlog_files import FIXTURES

MAGIC = b"\xfebin"
E = EventType


def v1_event(type_code: int, body: bytes, ts: int = 1000, server_id: int = 7) -> bytes:
    # timestamp u32 | type u8 | server_id u32 | event_size u32
    return struct.pack("<IBII", ts, type_code, server_id, 13 + len(body)) + body


def v3_event(type_code: int, body: bytes, start: int, server_id: int = 7) -> bytes:
    # v3 header: log_pos is where the event starts (4.0)
    size = 19 + len(body)
    return struct.pack("<IBIIIH", 2000, type_code, server_id, size, start, 0) + body


def start_v3(version: int, server: bytes) -> bytes:
    return struct.pack("<H50sI", version, server, 1234)


def query_body(db: bytes, sql: bytes) -> bytes:
    # thread_id u32 | exec_time u32 | db_len u8 | error_code u16 | db NUL | query
    return struct.pack("<IIBH", 11, 0, len(db), 0) + db + b"\0" + sql


def load_body(new_format: bool, file_id: int | None = None) -> bytes:
    fields = [b"a", b"bb"]
    head = struct.pack("<IIIBBI", 5, 1, 2, len(b"t1"), len(b"db"), len(fields))
    if file_id is not None:
        head += struct.pack("<I", file_id)
    if new_format:
        ex = b"".join(bytes([len(x)]) + x for x in (b",", b'"', b"\n", b"", b"\\")) + b"\x01"
    else:
        ex = b',"\n\0\\' + b"\x01\x02"
    names = bytes(len(f) for f in fields) + b"".join(f + b"\0" for f in fields)
    tail = b"t1\0db\0/tmp/in.txt"
    if file_id is not None:
        tail += b"\0" + b"1,2\n3,4\n"
    return head + ex + names + tail


def _write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "legacy-bin.001"
    path.write_bytes(data)
    return path


def test_v1_log_has_13_byte_headers(tmp_path: Path) -> None:
    events = [
        v1_event(E.START_EVENT_V3, start_v3(1, b"3.23.58-log")),
        v1_event(E.QUERY_EVENT, query_body(b"db", b"INSERT INTO t VALUES (1)")),
        v1_event(E.INTVAR_EVENT, struct.pack("<BQ", 2, 42)),
        v1_event(E.STOP_EVENT, b""),  # 13 bytes: smaller than a v4 header
        v1_event(E.ROTATE_EVENT, b"legacy-bin.002"),  # v1 ROTATE: no position
    ]
    assert len(events[0]) == 69
    path = _write(tmp_path, MAGIC + b"".join(events))
    with rc.open_binlog(path) as reader:
        decoded = list(reader)
        assert reader.decoder.header_len == 13
        assert reader.decoder.binlog_version == 1
    start, query, intvar, stop, rotate = decoded
    assert isinstance(start, StartEventV3)
    assert (start.binlog_version, start.server_version) == (1, "3.23.58-log")
    assert isinstance(query, rc.QueryEvent)
    assert (query.schema, query.query, query.thread_id) == ("db", "INSERT INTO t VALUES (1)", 11)
    assert query.header.log_pos == 0 and query.server_id == 7
    assert isinstance(intvar, rc.IntvarEvent) and intvar.value == 42
    assert isinstance(stop, rc.StopEvent) and stop.header.event_size == 13
    assert isinstance(rotate, rc.RotateEvent)
    assert (rotate.next_file, rotate.position) == ("legacy-bin.002", 4)


def test_v3_log_turns_start_positions_into_end_positions(tmp_path: Path) -> None:
    out = bytearray(MAGIC)
    bodies = [
        (E.START_EVENT_V3, start_v3(3, b"4.0.27-log")),
        (E.QUERY_EVENT, query_body(b"db", b"BEGIN")),
        (E.LOAD_EVENT, load_body(new_format=False)),
        (E.NEW_LOAD_EVENT, load_body(new_format=True)),
        (E.CREATE_FILE_EVENT, load_body(new_format=True, file_id=9)),
        (E.APPEND_BLOCK_EVENT, struct.pack("<I", 9) + b"5,6\n"),
        (E.EXEC_LOAD_EVENT, struct.pack("<I", 9)),
        (E.DELETE_FILE_EVENT, struct.pack("<I", 9)),
        (E.ROTATE_EVENT, struct.pack("<Q", 4) + b"legacy-bin.002"),
    ]
    starts = []
    for type_code, body in bodies:
        starts.append(len(out))
        out += v3_event(type_code, body, len(out))
    assert len(out) - starts[1] > 0 and starts[1] - 4 == 75
    path = _write(tmp_path, bytes(out))
    with rc.open_binlog(path) as reader:
        decoded = list(reader)
        assert reader.decoder.binlog_version == 3
        assert reader.decoder.header_len == 19
    assert [e.header.log_pos for e in decoded[1:]] == [
        s + e.header.event_size for s, e in zip(starts[1:], decoded[1:], strict=True)
    ]
    start, _, load, new_load, create, append, exec_load, delete, rotate = decoded
    assert isinstance(start, StartEventV3) and start.binlog_version == 3
    for ev in (load, new_load):
        assert isinstance(ev, LoadEvent)
        assert (ev.schema, ev.table, ev.fields, ev.file_name) == (
            "db",
            "t1",
            ("a", "bb"),
            "/tmp/in.txt",
        )
        assert (ev.field_term, ev.enclosed, ev.line_term, ev.escaped) == (b",", b'"', b"\n", b"\\")
        assert (ev.thread_id, ev.exec_time, ev.skip_lines, ev.opt_flags) == (5, 1, 2, 1)
    assert isinstance(load, LoadEvent) and load.line_start == b"\0" and load.empty_flags == 2
    assert isinstance(new_load, LoadEvent) and new_load.line_start == b""
    assert isinstance(create, CreateFileEvent)
    assert (create.file_id, create.data, create.file_name) == (9, b"1,2\n3,4\n", "/tmp/in.txt")
    assert isinstance(append, rc.AppendBlockEvent) and append.data == b"5,6\n"
    assert isinstance(exec_load, ExecLoadEvent) and exec_load.file_id == 9
    assert isinstance(delete, DeleteFileEvent) and delete.file_id == 9
    assert isinstance(rotate, rc.RotateEvent) and rotate.next_file == "legacy-bin.002"
    # a pre-v4 log has no GTID events to cut at: one span, read by the first
    options = rc.open_binlog(path).options
    size = len(out)
    for span, expected in (((0, size // 3), len(decoded)), ((size // 3, size), 0)):
        with BinlogFileReader([path], options, span=span) as reader:
            assert len(list(reader)) == expected


def test_log_without_start_event_is_v3(tmp_path: Path) -> None:
    path = _write(tmp_path, MAGIC + v3_event(E.QUERY_EVENT, query_body(b"", b"SELECT 1"), 4))
    with rc.open_binlog(path) as reader:
        (query,) = list(reader)
        assert reader.decoder.binlog_version == 3
    assert isinstance(query, rc.QueryEvent) and query.query == "SELECT 1"


def test_truncated_v1_event_is_a_typed_error(tmp_path: Path) -> None:
    first = v1_event(E.START_EVENT_V3, start_v3(1, b"3.23.58-log"))
    stop = v1_event(E.STOP_EVENT, b"")
    path = _write(tmp_path, MAGIC + first + stop[:10])
    with pytest.raises(rc.TruncatedBinlogError) as info:
        list(rc.open_binlog(path))
    assert info.value.position == 4 + len(first)


def test_pre_ga_row_log_renumbered_types_and_old_table_map() -> None:
    path = FIXTURES / "rust_mysql_common" / "ver_5_1-wl2325_r.001"
    events = list(rc.open_binlog(path))
    fde = events[0]
    assert isinstance(fde, rc.FormatDescriptionEvent)
    assert fde.server_version == "5.2.2-a_drop6p13-debug-log"
    # post-header lengths are given in today's numbering after the permutation
    assert fde.post_header_len(E.TABLE_MAP_EVENT) == 6
    assert fde.post_header_len(E.EXECUTE_LOAD_QUERY_EVENT) == 26
    assert fde.post_header_len(E.XID_EVENT) == 0
    types = [e.type_code for e in events]
    assert types == [15, 2, 2, 2, 19, 20, 19, 21, 19, 22, 3]
    tables = [e for e in events if isinstance(e, rc.TableMapEvent)]
    assert all((t.schema, t.table) == ("test", "t1") for t in tables)
    assert [c.type for c in tables[0].columns] == [3, 254]  # INT, CHAR(50)
    rows = [
        e.rows
        for e in events
        if isinstance(e, (rc.WriteRowsEvent, rc.UpdateRowsEvent, rc.DeleteRowsEvent))
    ]
    assert rows == [
        ((0, b"one"), (1, b"two")),
        (((0, b"one"), (1, b"one")), ((1, b"two"), (2, b"two"))),
        ((2, b"two"),),
    ]


def test_pre_ga_statement_log_renumbered_types() -> None:
    path = FIXTURES / "rust_mysql_common" / "ver_5_1-wl2325_s.001"
    events = list(rc.open_binlog(path))
    by_type = {type(e).__name__ for e in events}
    assert {"XidEvent", "BeginLoadQueryEvent", "ExecuteLoadQueryEvent"} <= by_type
    assert not any(isinstance(e, rc.RowsEvent) for e in events)
    loads = [e for e in events if isinstance(e, rc.ExecuteLoadQueryEvent)]
    assert loads[0].query.startswith("LOAD DATA INFILE '")
    q = loads[0].query
    # this pre-GA server's offsets frame " INFILE '<file>' INTO" (as written)
    assert q[loads[0].fn_pos_start : loads[0].fn_pos_end] == " INFILE 'big_file.dat' INTO"
    xids = [e for e in events if isinstance(e, rc.XidEvent)]
    assert [x.xid for x in xids] == [16]
