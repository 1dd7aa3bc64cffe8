"""Control events (``binlog/control_events.py``).

Real bytes where a server wrote them to a file: the mysql-cdc-rs MySQL 5.7
fixtures (oracle: ``dump.txt``, mysqlbinlog's output), MySQL 5.1's
``bug40482-bin.000001`` (INCIDENT) and MariaDB 10.5's ``mariadb-bin.000001``
(ANNOTATE_ROWS). Heartbeats never reach a file, and no fixture holds Group
Replication's VIEW_CHANGE / TRANSACTION_CONTEXT: those are built here byte by
byte after the layouts in MySQL ``libs/mysql/binlog/event/control_events.h``
(``Heartbeat_event_v2``, ``View_change_event``, ``Transaction_context_event``)
and decoded through the body decoders with a plain format. XA_PREPARE and
STOP are also written live by the private MariaDB primary.
"""

from __future__ import annotations

import struct
from typing import Any

import pymysql
import pytest

from replica_client.binlog.constants import HEARTBEAT_TYPES, EventType
from replica_client.binlog.control_events import (
    decode_heartbeat,
    decode_heartbeat_v2,
    decode_rotate,
    decode_transaction_context,
    decode_view_change,
)
from replica_client.binlog.events import (
    AnnotateRowsEvent,
    FormatDescriptionEvent,
    GtidEvent,
    HeartbeatEvent,
    HeartbeatV2Event,
    IncidentEvent,
    RotateEvent,
    RowsQueryEvent,
    StopEvent,
    WriteRowsEvent,
    XaPrepareEvent,
    XidEvent,
)
from replica_client.binlog.format import BinlogFormat
from replica_client.binlog.header import EventHeader
from replica_client.binlog.legacy import legacy_format
from replica_client.codec import encode_lenenc_bytes, encode_lenenc_int
from replica_client.errors import MalformedEventError
from replica_client.testing.server import MariaDBServer
from tests.binlog_files import fixture_events
from tests.binlog_live import SCHEMA, capture, connect, one, read, show

E = EventType
CDC = "mysql-cdc-rs/5.7"


def _of(rel: str, cls: type) -> list[tuple[int, Any]]:
    return [(p, e) for p, e in fixture_events(rel) if isinstance(e, cls)]


def _body(decoder: Any, type_code: int, body: bytes, fmt: BinlogFormat | None = None) -> Any:
    header = EventHeader(1, type_code, 1, 19 + len(body), 0, 0x20)
    view = memoryview(bytes(19) + body)
    return decoder(fmt or BinlogFormat(), header, view, 19, len(view))


# -- what a file holds -----------------------------------------------------------------------


def test_rotate_stop_and_xid_of_fixtures() -> None:
    ((pos, rotate),) = _of(f"{CDC}/04_rotate/log.bin", RotateEvent)
    # "Rotate to mysql_bin.000002  pos: 4", the last event
    assert (pos, rotate.next_file, rotate.position) == (154, "mysql_bin.000002", 4)
    ((pos, stop),) = _of(f"{CDC}/03_stop/log.bin", StopEvent)
    assert (pos, stop.header.event_size) == (154, 23)  # "# Stop": header and CRC only
    ((pos, xid),) = _of(f"{CDC}/16_xid/log.bin", XidEvent)
    assert (pos, xid.xid) == (912, 41)  # "Xid = 41"


def test_rotate_of_a_v1_log_has_no_position() -> None:
    body = b"master-bin.002"
    assert _body(decode_rotate, E.ROTATE_EVENT, body, legacy_format(1)) == RotateEvent(
        EventHeader(1, 4, 1, 19 + len(body), 0, 0x20), 4, "master-bin.002"
    )


def test_incident_of_mysql_5_1() -> None:
    ((pos, incident),) = _of("rust_mysql_common/bug40482-bin.000001", IncidentEvent)
    # body: 42 00 (incident u16) | 00 (message length u8)
    assert (pos, incident.incident, incident.message) == (106, 0x42, "")


def test_rows_query_and_annotate_rows_of_fixtures() -> None:
    ((_, rows_query),) = _of(f"{CDC}/29_row_query/log.bin", RowsQueryEvent)
    # "# INSERT INTO `boxercrab` (`title`) VALUES ('hahhhhhhhhh')"
    assert rows_query.query == "INSERT INTO `boxercrab` (`title`) VALUES ('hahhhhhhhhh')"
    events = [e for _, e in fixture_events("rust_mysql_common/mariadb-bin.000001")]
    annotations = [e for e in events if isinstance(e, AnnotateRowsEvent)]
    rows = [e for e in events if isinstance(e, WriteRowsEvent)]
    assert len(annotations) == len(rows) == 2
    for note, row in zip(annotations, rows, strict=True):
        # the statement behind the row that follows it
        assert (
            note.query
            == "insert into outbox (topic, event_type, event) values ('foo', 'JSON', '{\"foo\":1}')"
        )
        assert row.rows[0][1:4] == ("foo", "JSON", b'{"foo":1}')


# -- what only the network carries ------------------------------------------------------------


def test_heartbeat() -> None:
    beat = _body(decode_heartbeat, E.HEARTBEAT_LOG_EVENT, b"mysql-bin.000007")
    assert type(beat) is HeartbeatEvent and beat.log_file == "mysql-bin.000007"
    # the one rule the session, the tracker and the metrics know heartbeats by
    assert beat.header.type_code in HEARTBEAT_TYPES


def _hb2_field(field_type: int, value: bytes) -> bytes:
    return encode_lenenc_int(field_type) + encode_lenenc_bytes(value)


def test_heartbeat_v2() -> None:
    # { type packed | length packed | value }*: 1 log file name, 2 position (packed)
    body = (
        _hb2_field(1, b"binlog.000042")
        + _hb2_field(7, b"unknown field, skipped")
        + _hb2_field(2, encode_lenenc_int(5_000_000_000))
        + b"\x00"
    )
    beat = _body(decode_heartbeat_v2, E.HEARTBEAT_LOG_EVENT_V2, body)
    assert isinstance(beat, HeartbeatV2Event)
    assert (beat.log_file, beat.position) == ("binlog.000042", 5_000_000_000)
    assert beat.header.type_code in HEARTBEAT_TYPES
    bad = _hb2_field(2, encode_lenenc_int(70000) + b"x")  # value longer than the integer
    with pytest.raises(MalformedEventError, match="position field length"):
        _body(decode_heartbeat_v2, E.HEARTBEAT_LOG_EVENT_V2, bad)


def test_view_change() -> None:
    # view_id char[40] | seq_number u64 | cert_info_size u32
    # | { key_len u16 | key | value_len u32 | value }*
    view_id = b"16112734561234567:3".ljust(40, b"\0")
    info = [(b"group_gtid_executed", b"aaaa-bbbb:1-10"), (b"k2", b"")]
    body = view_id + struct.pack("<QI", 99, len(info))
    for key, value in info:
        body += struct.pack("<H", len(key)) + key + struct.pack("<I", len(value)) + value
    event = _body(decode_view_change, E.VIEW_CHANGE_EVENT, body)
    assert (event.view_id, event.seq_number) == ("16112734561234567:3", 99)
    assert event.certification_info == (("group_gtid_executed", b"aaaa-bbbb:1-10"), ("k2", b""))


def test_transaction_context() -> None:
    # post-header: server_uuid_len u8 | thread_id u32 | gtid_specified u8
    #   | snapshot_version_len u32 | write_set_len u32 | read_set_len u32
    # body: server_uuid | snapshot_version | write set items | read set items (len u16 | bytes)
    uuid = b"3e11fa47-71ca-11e1-9e33-c80aa9429562"
    snapshot = b"\x01\x02\x03"
    writes, reads = [b"w1", b"w22"], [b"r"]
    body = struct.pack("<BIBIII", len(uuid), 77, 1, len(snapshot), len(writes), len(reads))
    body += uuid + snapshot
    body += b"".join(struct.pack("<H", len(x)) + x for x in (*writes, *reads))
    event = _body(decode_transaction_context, E.TRANSACTION_CONTEXT_EVENT, body)
    assert (event.server_uuid, event.thread_id, event.gtid_specified) == (uuid.decode(), 77, True)
    assert (event.snapshot_version, event.write_set, event.read_set) == (
        snapshot,
        tuple(writes),
        tuple(reads),
    )


# -- live: the server is the oracle -------------------------------------------------------


def test_xa_transaction(
    mariadb_primary: MariaDBServer, conn: pymysql.connections.Connection[Any]
) -> None:
    fmt = 7
    statements = [
        f"XA START 'gtrid1','bq',{fmt}",
        f"INSERT INTO {SCHEMA}.t (v) VALUES (7)",
        f"XA END 'gtrid1','bq',{fmt}",
        f"XA PREPARE 'gtrid1','bq',{fmt}",
        f"XA COMMIT 'gtrid1','bq',{fmt}",
    ]
    captured = capture(mariadb_primary, conn, statements)
    gtids = captured.of(GtidEvent)
    assert len(gtids) == 2
    prepared, completed = gtids
    assert prepared.flags2 & GtidEvent.FL_PREPARED_XA
    assert completed.flags2 & GtidEvent.FL_COMPLETED_XA
    for gtid in gtids:
        assert (gtid.xa_format_id, gtid.xa_gtrid, gtid.xa_bqual) == (fmt, b"gtrid1", b"bq")
    xid_text = f"X'{b'gtrid1'.hex()}',X'{b'bq'.hex()}',{fmt}"
    for pos, gtid in captured.with_pos(GtidEvent):
        assert gtid.gtid in captured.info_at(pos)
    # SHOW BINLOG EVENTS names the xid on the GTID that starts the XA transaction.
    first = next(pos for pos, _ in captured.with_pos(GtidEvent))
    assert f"XA START {xid_text}".lower() in captured.info_at(first).lower()
    ((pos, xa),) = captured.with_pos(XaPrepareEvent)
    assert (xa.format_id, xa.gtrid, xa.bqual, xa.one_phase) == (fmt, b"gtrid1", b"bq", False)
    assert xid_text.lower() in captured.info_at(pos).lower()
    assert completed.gtid == one(conn, "SELECT @@gtid_binlog_pos")


def test_stop_event_after_clean_restart(mariadb_primary: MariaDBServer) -> None:
    srv = mariadb_primary
    srv.sql("FLUSH BINARY LOGS")
    name = srv.binlog_files()[-1].name
    srv.restart()
    events = read(srv, name)
    shown = show(srv, name)
    assert isinstance(events[-1][1], StopEvent)
    assert shown[-1].type == "Stop" and shown[-1].pos == events[-1][0]
    fde = events[0][1]
    assert isinstance(fde, FormatDescriptionEvent)
    assert fde.header.flags & 0x1 == 0  # closed cleanly
    assert fde.server_version == one(connect(srv), "SELECT VERSION()")
