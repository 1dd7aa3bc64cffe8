"""GTID events of both flavours (``binlog/gtid_events.py``).

Real bytes: MariaDB 10.5 and 11.8 logs (``rust_mysql_common/mariadb-bin.000001``;
``mariadb-operator-poc``, whose ``README.expected-metadata.md`` lists each
file's GTID_LIST state and first and last GTIDs), MySQL 5.7 logs with and
without GTIDs (``mysql-cdc-rs``, oracle: ``dump.txt``, mysqlbinlog's output)
and MySQL 8.0.40 / 9.6 tagged GTIDs (``rust_mysql_common``). The live tests
check against ``@@gtid_binlog_pos`` and SHOW BINLOG EVENTS.
"""

from __future__ import annotations

from typing import Any

import pymysql
import pytest

from replica_client.binlog.events import (
    AnnotateRowsEvent,
    AnonymousGtidEvent,
    BinlogCheckpointEvent,
    GtidEvent,
    GtidListEvent,
    GtidSetEntry,
    MysqlGtidEvent,
    PreviousGtidsEvent,
    RotateEvent,
    XidEvent,
)
from replica_client.binlog.gtid_events import read_varlen_signed, read_varlen_unsigned
from replica_client.errors import MalformedEventError
from replica_client.position import GtidTriple
from replica_client.testing.server import MariaDBServer
from tests.binlog_files import fixture_events
from tests.binlog_live import SCHEMA, Captured, one, read, show

CDC = "mysql-cdc-rs/5.7"
TAGGED = "rust_mysql_common/binlog_transaction_with_GTID_TAG.000001"


def _of(rel: str, cls: type) -> list[Any]:
    return [e for _, e in fixture_events(rel) if isinstance(e, cls)]


# -- MariaDB ---------------------------------------------------------------------------


def test_mariadb_gtids_of_an_11_8_file() -> None:
    rel = "mariadb-operator-poc/domain_id_0/mariadb-repl-bin.000004"
    # README.expected-metadata.md: PreviousGTIDs 0-10-262175, FirstGTID
    # 0-10-262176, LastGTID 0-10-262580
    (gtid_list,) = _of(rel, GtidListEvent)
    assert gtid_list.gtids == (GtidTriple(0, 10, 262175),)
    assert gtid_list.gtid_state == "0-10-262175"
    gtids = _of(rel, GtidEvent)
    assert (gtids[0].gtid, gtids[-1].gtid) == ("0-10-262176", "0-10-262580")
    assert [g.seq_no for g in gtids] == list(range(262176, 262581))
    # MariaDB 11.x writes the thread id (flags_extra FL_EXTRA_THREAD_ID)
    assert all(g.flags_extra & 0x10 and g.thread_id for g in gtids)
    checkpoints = [c.log_file for c in _of(rel, BinlogCheckpointEvent)]
    assert checkpoints[0] == "mariadb-repl-bin.000003"
    assert checkpoints[-1] == "mariadb-repl-bin.000004"


def test_mariadb_gtids_of_a_10_5_file() -> None:
    rel = "rust_mysql_common/mariadb-bin.000001"
    (gtid_list,) = _of(rel, GtidListEvent)
    assert gtid_list.gtids == () and gtid_list.gtid_state == ""  # the first file
    (checkpoint,) = _of(rel, BinlogCheckpointEvent)
    assert checkpoint.log_file == "mariadb-bin.000001"
    gtids = _of(rel, GtidEvent)
    assert [g.gtid for g in gtids] == ["0-1-1", "0-1-2"]
    for g in gtids:
        assert g.flags2 == GtidEvent.FL_TRANSACTIONAL | GtidEvent.FL_ALLOW_PARALLEL
        assert (g.commit_id, g.xa_format_id, g.thread_id) == (None, None, None)


# -- MySQL ---------------------------------------------------------------------------------


def test_mysql_gtids_of_a_5_7_file() -> None:
    rel = f"{CDC}/33_35_gtid_prev_gtid/log.bin"
    (previous,) = _of(rel, PreviousGtidsEvent)
    assert previous.entries == ()  # "# Previous-GTIDs" (empty)
    gtids = _of(rel, MysqlGtidEvent)
    uuid = "80549ecc-d2f2-11ea-b790-0242ac130002"
    # "SET @@SESSION.GTID_NEXT= '80549ecc-...:1'", "last_committed=0 sequence_number=1"
    assert [g.gtid for g in gtids] == [f"{uuid}:{n}" for n in (1, 2, 3)]
    assert [(g.last_committed, g.sequence_number) for g in gtids] == [(0, 1), (1, 2), (2, 3)]
    # rbr_only=no, no, yes: FLAG_MAY_HAVE_SBR is clear on the row-only transaction
    assert [g.flags & MysqlGtidEvent.FLAG_MAY_HAVE_SBR for g in gtids] == [1, 1, 0]
    assert all(g.immediate_commit_timestamp is None for g in gtids)  # 5.7: no timestamps


def test_anonymous_gtids_of_a_5_7_file() -> None:
    gtids = _of(f"{CDC}/34_anonymous_gtid/log.bin", MysqlGtidEvent)
    assert gtids and all(type(g) is AnonymousGtidEvent for g in gtids)
    # "Anonymous_GTID last_committed=0 sequence_number=1"; GTID_NEXT= 'ANONYMOUS'
    assert (gtids[0].last_committed, gtids[0].sequence_number) == (0, 1)
    assert all(g.gno == 0 and g.uuid == "00000000-0000-0000-0000-000000000000" for g in gtids)


def test_tagged_gtids_of_a_9_6_file() -> None:
    (previous,) = _of(TAGGED, PreviousGtidsEvent)
    uuid = "55778904-0299-11f1-b1b8-4ef0c4956feb"
    assert previous.entries == (
        GtidSetEntry(uuid, "", ((1, 13),)),
        GtidSetEntry(uuid, "mytag", ((1, 2),)),
    )
    (gtid,) = _of(TAGGED, MysqlGtidEvent)
    assert gtid.header.type_code == 42
    # the next transaction of the tagged set, 8.0+ timestamps, its own length
    assert (gtid.uuid, gtid.tag, gtid.gno) == (uuid, "mytag", 3)
    assert gtid.gtid == f"{uuid}:mytag:3"
    assert gtid.immediate_commit_timestamp == gtid.original_commit_timestamp
    assert gtid.immediate_commit_timestamp // 1_000_000 == gtid.header.timestamp
    assert gtid.transaction_length and gtid.immediate_server_version == 90600


def test_untagged_previous_gtids_of_an_8_0_40_file() -> None:
    (previous,) = _of(
        "rust_mysql_common/binlog_transaction_previous_GTID_no_tag.000001", PreviousGtidsEvent
    )
    assert previous.entries == (
        GtidSetEntry("b9b88c66-0755-11f1-9899-4a9da94c4d71", "", ((1, 2),)),
    )


# -- the serialization library's integers ---------------------------------------------


def _varlen(value: int) -> bytes:
    # libs/mysql/serialization: n bytes hold the value shifted left by n, the
    # low n-1 bits set (their count says n); 9 bytes: a 0xFF marker, then 8.
    for n in range(1, 9):
        if value < 1 << (7 * n):
            return ((value << n) | ((1 << (n - 1)) - 1)).to_bytes(n, "little")
    return b"\xff" + value.to_bytes(8, "little")


@pytest.mark.parametrize("value", [0, 1, 127, 128, 2**14 - 1, 2**14, 2**49 - 1, 2**56, 2**64 - 1])
def test_varlen_unsigned(value: int) -> None:
    raw = _varlen(value)
    assert read_varlen_unsigned(memoryview(b"\0" + raw), 1, len(raw) + 1) == (value, len(raw) + 1)
    with pytest.raises(MalformedEventError, match="truncated"):
        read_varlen_unsigned(memoryview(raw), 0, len(raw) - 1)


@pytest.mark.parametrize("value", [0, -1, 1, -64, 63, 2**62, -(2**63)])
def test_varlen_signed_is_zigzag(value: int) -> None:
    raw = _varlen(value * 2 if value >= 0 else -value * 2 - 1)
    assert read_varlen_signed(memoryview(raw), 0, len(raw)) == (value, len(raw))


# -- live: the server is the oracle -------------------------------------------------------


def test_gtid_xid_and_annotate_rows(
    mariadb_primary: MariaDBServer, conn: pymysql.connections.Connection[Any]
) -> None:
    statements = [
        f"INSERT INTO {SCHEMA}.t (v, s) VALUES (1, 'a'), (2, 'b')",
        f"UPDATE {SCHEMA}.t SET s = 'c' WHERE v = 1",
        f"CREATE TABLE {SCHEMA}.a (x INT)",
    ]
    srv = mariadb_primary
    srv.sql("FLUSH BINARY LOGS")
    name = srv.binlog_files()[-1].name
    positions = []
    for statement in statements:
        with conn.cursor() as cur:
            cur.execute(statement)
        positions.append(one(conn, "SELECT @@gtid_binlog_pos"))
    srv.sql("FLUSH BINARY LOGS")
    captured = Captured(name, read(srv, name), show(srv, name))
    gtids = captured.of(GtidEvent)
    server_id = one(conn, "SELECT @@server_id")
    domain = one(conn, "SELECT @@gtid_domain_id")
    assert [g.gtid for g in gtids] == positions
    assert all(g.domain_id == domain and g.server_id == server_id for g in gtids)
    dml, ddl = gtids[:2], gtids[2]
    assert all(g.flags2 & GtidEvent.FL_TRANSACTIONAL and not g.standalone for g in dml)
    assert ddl.standalone and ddl.flags2 & GtidEvent.FL_DDL
    for pos, gtid in captured.with_pos(GtidEvent):
        info = captured.info_at(pos)
        assert info == (f"GTID {gtid.gtid}" if gtid.standalone else f"BEGIN GTID {gtid.gtid}")
    xids = list(captured.with_pos(XidEvent))
    assert len(xids) == 2
    for pos, xid in xids:
        assert captured.info_at(pos) == f"COMMIT /* xid={xid.xid} */"
    assert [a.query for a in captured.of(AnnotateRowsEvent)] == statements[:2]
    # The ROTATE written by the flush names the next file, at position 4.
    rotate = captured.events[-1][1]
    assert isinstance(rotate, RotateEvent)
    names = [f.name for f in srv.binlog_files()]
    assert rotate.next_file == names[names.index(name) + 1]
    assert captured.info_at(captured.events[-1][0]) == f"{rotate.next_file};pos={rotate.position}"
    assert rotate.position == 4


def test_gtid_list_and_checkpoint_after_flush(
    mariadb_primary: MariaDBServer, conn: pymysql.connections.Connection[Any]
) -> None:
    srv = mariadb_primary
    with conn.cursor() as cur:
        cur.execute(f"INSERT INTO {SCHEMA}.t (v) VALUES (1)")
    state = one(conn, "SELECT @@gtid_binlog_state")
    srv.sql("FLUSH BINARY LOGS")
    name = srv.binlog_files()[-1].name
    events = read(srv, name)
    shown = show(srv, name)
    (gtid_list,) = [e for _, e in events if isinstance(e, GtidListEvent)]
    assert sorted(gtid_list.gtid_state.split(",")) == sorted(state.split(","))
    info = next(s.info for s in shown if s.type == "Gtid_list")
    assert info == "[" + gtid_list.gtid_state + "]"
    checkpoints = [(p, e) for p, e in events if isinstance(e, BinlogCheckpointEvent)]
    assert checkpoints
    names = {f.name for f in srv.binlog_files()}
    for pos, checkpoint in checkpoints:
        assert checkpoint.log_file in names
        assert next(s.info for s in shown if s.pos == pos) == checkpoint.log_file
