"""Every MariaDB event type the decoder handles, written by the private primary and
checked field by field against the server itself.

The oracle is always the server: the session variables a test SETs and reads
back with SELECT, ``@@gtid_binlog_pos`` / ``@@gtid_binlog_state``, ``SHOW BINARY
LOGS`` and ``SHOW BINLOG EVENTS`` (positions, types and Info text), and values
the server recomputes from what was decoded (a decoded sql_mode bitmask is SET
back and read as text; decoded RAND seeds are SET back and RAND() re-evaluated).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pymysql
import pytest

import replica_client as rc
from replica_client.binlog.events import (
    AnnotateRowsEvent,
    BinlogCheckpointEvent,
    DeleteRowsEvent,
    Event,
    FormatDescriptionEvent,
    GtidEvent,
    GtidListEvent,
    IntvarEvent,
    QueryEvent,
    RandEvent,
    RotateEvent,
    StopEvent,
    TableMapEvent,
    UpdateRowsEvent,
    UserVarEvent,
    WriteRowsEvent,
    XaPrepareEvent,
    XidEvent,
)
from replica_client.testing.server import MariaDBServer

SCHEMA = "live_ev"

#: SHOW BINLOG EVENTS Event_type -> decoded class.
SHOW_TYPES: dict[str, type[Event]] = {
    "Format_desc": FormatDescriptionEvent,
    "Gtid_list": GtidListEvent,
    "Binlog_checkpoint": BinlogCheckpointEvent,
    "Gtid": GtidEvent,
    "Query": QueryEvent,
    "Annotate_rows": AnnotateRowsEvent,
    "Table_map": TableMapEvent,
    "Write_rows_v1": WriteRowsEvent,
    "Update_rows_v1": UpdateRowsEvent,
    "Delete_rows_v1": DeleteRowsEvent,
    "Xid": XidEvent,
    "Intvar": IntvarEvent,
    "RAND": RandEvent,
    "User var": UserVarEvent,
    "XA_prepare": XaPrepareEvent,
    "Rotate": RotateEvent,
    "Stop": StopEvent,
}


@dataclass(frozen=True)
class Shown:
    pos: int
    type: str
    end: int
    info: str


@dataclass
class Captured:
    name: str
    events: list[tuple[int, Event]]
    shown: list[Shown]

    def of(self, cls: type[Event]) -> list[Any]:
        return [e for _, e in self.events if isinstance(e, cls)]

    def info_at(self, pos: int) -> str:
        return next(s.info for s in self.shown if s.pos == pos)

    def with_pos(self, cls: type[Event]) -> Iterator[tuple[int, Any]]:
        return ((p, e) for p, e in self.events if isinstance(e, cls))


def _connect(srv: MariaDBServer) -> pymysql.connections.Connection[Any]:
    return pymysql.connect(
        host=srv.host,
        port=srv.port,
        user=srv.user,
        password=srv.password,
        autocommit=True,
        charset="utf8mb4",
    )


def _one(conn: pymysql.connections.Connection[Any], query: str) -> Any:
    with conn.cursor() as cur:
        cur.execute(query)
        row = cur.fetchone()
    assert row is not None
    return row[0] if len(row) == 1 else row


def _show(srv: MariaDBServer, name: str) -> list[Shown]:
    rows = srv.sql(f"SHOW BINLOG EVENTS IN '{name}'")
    return [Shown(int(r[1]), str(r[2]), int(r[4]), str(r[5])) for r in rows]


def _read(srv: MariaDBServer, name: str, **kwargs: Any) -> list[tuple[int, Event]]:
    path = next(f for f in srv.binlog_files() if f.name == name)
    out: list[tuple[int, Event]] = []
    with rc.open_binlog(path, **kwargs) as reader:
        for event in reader:
            assert reader.event_position is not None
            out.append((reader.event_position.pos, event))
    return out


def capture(
    srv: MariaDBServer, conn: pymysql.connections.Connection[Any], statements: Sequence[str]
) -> Captured:
    """Run ``statements`` on ``conn`` into a binlog file of their own; decode it."""
    srv.sql("FLUSH BINARY LOGS")
    name = srv.binlog_files()[-1].name
    with conn.cursor() as cur:
        for statement in statements:
            cur.execute(statement)
    srv.sql("FLUSH BINARY LOGS")
    captured = Captured(name, _read(srv, name), _show(srv, name))
    # Framing and types agree with the server's own listing.
    assert [(p, type(e)) for p, e in captured.events] == [
        (s.pos, SHOW_TYPES[s.type]) for s in captured.shown
    ]
    assert [e.log_pos for _, e in captured.events] == [s.end for s in captured.shown]
    return captured


@pytest.fixture
def conn(mariadb_primary: MariaDBServer) -> Iterator[pymysql.connections.Connection[Any]]:
    mariadb_primary.sql_many(
        [
            f"CREATE DATABASE IF NOT EXISTS {SCHEMA}",
            f"DROP TABLE IF EXISTS {SCHEMA}.t, {SCHEMA}.a, {SCHEMA}.b",
            f"CREATE TABLE {SCHEMA}.t (id INT AUTO_INCREMENT PRIMARY KEY, v DOUBLE, "
            "s VARCHAR(40), ts TIMESTAMP(6) NULL, dt DATETIME(6) NULL, vb VARBINARY(100))",
        ]
    )
    connection = _connect(mariadb_primary)
    try:
        yield connection
    finally:
        connection.close()


# -- QUERY status variables -------------------------------------------------------------


def test_query_status_variables_equal_what_the_session_set(
    mariadb_primary: MariaDBServer, conn: pymysql.connections.Connection[Any]
) -> None:
    setup = [
        f"USE {SCHEMA}",
        "SET SESSION sql_mode = 'ANSI_QUOTES,STRICT_ALL_TABLES,NO_ZERO_DATE'",
        "SET SESSION time_zone = '+05:30'",
        "SET SESSION auto_increment_increment = 5, auto_increment_offset = 3",
        "SET SESSION lc_time_names = 'de_DE'",
        "SET NAMES utf8mb4 COLLATE utf8mb4_unicode_ci",
        "SET @@session.timestamp = 1700000000.123456",
        "SET SESSION binlog_format = STATEMENT",
    ]
    statement = "INSERT INTO t (v, ts, dt) VALUES (1, NOW(), NOW(6))"
    captured = capture(mariadb_primary, conn, [*setup, statement])
    query = next(e for e in captured.of(QueryEvent) if e.query == statement)

    sql_mode = _one(conn, "SELECT @@session.sql_mode")
    assert query.sql_mode is not None
    # The decoded bitmask, SET back, reads as the same mode names.
    other = _connect(mariadb_primary)
    try:
        with other.cursor() as cur:
            cur.execute("SET SESSION sql_mode = %s", (query.sql_mode,))
            cur.execute(f"SET SESSION lc_time_names = {int(query.lc_time_names or 0)}")
        assert _one(other, "SELECT @@session.sql_mode") == sql_mode
        assert _one(other, "SELECT @@session.lc_time_names") == _one(
            conn, "SELECT @@session.lc_time_names"
        )
    finally:
        other.close()
    assert query.time_zone == _one(conn, "SELECT @@session.time_zone")
    assert (query.auto_increment_increment, query.auto_increment_offset) == _one(
        conn, "SELECT @@auto_increment_increment, @@auto_increment_offset"
    )
    assert query.charset is not None
    client, connection, server = query.charset
    ids = "SELECT ID FROM information_schema.COLLATIONS WHERE COLLATION_NAME = "
    assert connection == _one(conn, ids + "@@collation_connection")
    assert server == _one(conn, ids + "@@collation_server")
    client_ids = mariadb_primary.sql(
        "SELECT ID FROM information_schema.COLLATIONS WHERE CHARACTER_SET_NAME = %s",
        (_one(conn, "SELECT @@character_set_client"),),
    )
    assert client in {r[0] for r in client_ids}
    seconds, fraction = str(_one(conn, "SELECT @@session.timestamp")).split(".")
    assert query.header.timestamp == int(seconds)
    assert query.hrnow == int(fraction.ljust(6, "0")[:6])
    assert query.thread_id == _one(conn, "SELECT CONNECTION_ID()")
    assert query.schema == _one(conn, "SELECT DATABASE()")
    assert query.error_code == 0


def test_query_invoker_and_ddl_xid(
    mariadb_primary: MariaDBServer, conn: pymysql.connections.Connection[Any]
) -> None:
    grant = f"GRANT SELECT ON {SCHEMA}.* TO CURRENT_USER"
    ddl = f"ALTER TABLE {SCHEMA}.t ADD COLUMN extra INT"
    captured = capture(mariadb_primary, conn, [grant, ddl])
    user, host = str(_one(conn, "SELECT CURRENT_USER()")).rsplit("@", 1)
    queries = {e.query: e for e in captured.of(QueryEvent)}
    assert queries[grant].invoker == (user, host)
    # InnoDB DDL is logged with its XID (Q_XID); the statement needs no invoker.
    assert queries[ddl].invoker is None
    assert isinstance(queries[ddl].xid, int) and queries[ddl].xid > 0
    # A standalone DDL: its GTID has FL_STANDALONE and FL_DDL, no XID event.
    gtids = captured.of(GtidEvent)
    assert all(g.standalone for g in gtids)
    assert gtids[-1].flags2 & GtidEvent.FL_DDL
    assert captured.of(XidEvent) == []


# -- statement-format helpers: INTVAR, RAND, USER_VAR ---------------------------------


def test_intvar_and_rand_in_statement_format(
    mariadb_primary: MariaDBServer, conn: pymysql.connections.Connection[Any]
) -> None:
    statements = [
        "SET SESSION binlog_format = STATEMENT",
        f"INSERT INTO {SCHEMA}.t (v) VALUES (RAND())",
        f"INSERT INTO {SCHEMA}.t (v, s) VALUES (LAST_INSERT_ID(), 'x')",
    ]
    captured = capture(mariadb_primary, conn, statements)
    rows = mariadb_primary.sql(f"SELECT id, v FROM {SCHEMA}.t ORDER BY id")
    (first_id, random_value), (second_id, last_insert_id) = rows
    intvars = captured.of(IntvarEvent)
    insert_ids = [e.value for e in intvars if e.kind == IntvarEvent.INSERT_ID]
    last_ids = [e.value for e in intvars if e.kind == IntvarEvent.LAST_INSERT_ID]
    assert insert_ids == [first_id, second_id]
    assert last_ids == [int(last_insert_id)] == [first_id]
    for pos, event in captured.with_pos(IntvarEvent):
        kind = "LAST_INSERT_ID" if event.kind == IntvarEvent.LAST_INSERT_ID else "INSERT_ID"
        assert captured.info_at(pos) == f"{kind}={event.value}"
    ((pos, rand),) = captured.with_pos(RandEvent)
    assert captured.info_at(pos) == f"rand_seed1={rand.seed1},rand_seed2={rand.seed2}"
    # The seeds, SET back, make RAND() give the value the INSERT stored.
    other = _connect(mariadb_primary)
    try:
        with other.cursor() as cur:
            cur.execute(f"SET @@rand_seed1 = {rand.seed1}, @@rand_seed2 = {rand.seed2}")
        assert _one(other, "SELECT RAND()") == random_value
    finally:
        other.close()


def test_user_var_of_every_type(
    mariadb_primary: MariaDBServer, conn: pymysql.connections.Connection[Any]
) -> None:
    assignments = {
        "s": "_latin1 'Stra\\xdfe' COLLATE latin1_german1_ci",
        "u8": "_utf8mb4 'sn\u00f8 \U0001f642'",
        "i": "-5",
        "u": "CAST(18446744073709551615 AS UNSIGNED)",
        "big": "-9223372036854775808",
        "r": "1.5e-3",
        "d": "-12.345",
        "n": "NULL",
        "bin": "_binary X'00FF10'",
    }
    setter = "SET " + ", ".join(f"@{k} = {v}" for k, v in assignments.items())
    use = f"INSERT INTO {SCHEMA}.t (vb) VALUES " + ", ".join(f"(@{k})" for k in assignments)
    captured = capture(
        mariadb_primary, conn, ["SET SESSION binlog_format = STATEMENT", setter, use]
    )
    decoded = {e.name: e for e in captured.of(UserVarEvent)}
    assert set(decoded) == set(assignments)
    for name, event in decoded.items():
        expected = _one(conn, f"SELECT @{name}")
        if expected is None:
            assert event.value is None
            continue
        assert event.value == expected, name
        # The charset is the variable's collation.
        collation = _one(conn, f"SELECT COLLATION(@{name})")
        if collation != "binary":
            assert event.charset == _one(
                conn,
                "SELECT ID FROM information_schema.COLLATIONS "
                f"WHERE COLLATION_NAME = '{collation}'",
            )
    assert isinstance(decoded["d"].value, Decimal)
    assert isinstance(decoded["r"].value, float)
    assert decoded["u"].unsigned and not decoded["i"].unsigned
    for pos, event in captured.with_pos(UserVarEvent):
        assert captured.info_at(pos).startswith(f"@`{event.name}`=")


# -- transactions: XID, GTID, XA, ANNOTATE_ROWS ---------------------------------------


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
        positions.append(_one(conn, "SELECT @@gtid_binlog_pos"))
    srv.sql("FLUSH BINARY LOGS")
    captured = Captured(name, _read(srv, name), _show(srv, name))
    gtids = captured.of(GtidEvent)
    server_id = _one(conn, "SELECT @@server_id")
    domain = _one(conn, "SELECT @@gtid_domain_id")
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
    assert completed.gtid == _one(conn, "SELECT @@gtid_binlog_pos")


# -- file events: GTID_LIST, BINLOG_CHECKPOINT, STOP ----------------------------------


def test_gtid_list_and_checkpoint_after_flush(
    mariadb_primary: MariaDBServer, conn: pymysql.connections.Connection[Any]
) -> None:
    srv = mariadb_primary
    with conn.cursor() as cur:
        cur.execute(f"INSERT INTO {SCHEMA}.t (v) VALUES (1)")
    state = _one(conn, "SELECT @@gtid_binlog_state")
    srv.sql("FLUSH BINARY LOGS")
    name = srv.binlog_files()[-1].name
    events = _read(srv, name)
    shown = _show(srv, name)
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


def test_stop_event_after_clean_restart(mariadb_primary: MariaDBServer) -> None:
    srv = mariadb_primary
    srv.sql("FLUSH BINARY LOGS")
    name = srv.binlog_files()[-1].name
    srv.restart()
    events = _read(srv, name)
    shown = _show(srv, name)
    assert isinstance(events[-1][1], StopEvent)
    assert shown[-1].type == "Stop" and shown[-1].pos == events[-1][0]
    fde = events[0][1]
    assert isinstance(fde, FormatDescriptionEvent)
    assert fde.header.flags & 0x1 == 0  # closed cleanly
    assert fde.server_version == _one(_connect(srv), "SELECT VERSION()")


# -- table filter -----------------------------------------------------------------------


def test_table_filter_drops_other_tables_rows(
    mariadb_primary: MariaDBServer, conn: pymysql.connections.Connection[Any]
) -> None:
    srv = mariadb_primary
    srv.sql_many(
        [
            f"CREATE TABLE {SCHEMA}.a (id INT PRIMARY KEY, s VARCHAR(10))",
            f"CREATE TABLE {SCHEMA}.b (id INT PRIMARY KEY, s VARCHAR(10))",
        ]
    )
    statements = [
        f"INSERT INTO {SCHEMA}.a VALUES (1, 'a1'), (2, 'a2')",
        f"INSERT INTO {SCHEMA}.b VALUES (1, 'b1'), (2, 'b2'), (3, 'b3')",
        "BEGIN",
        f"UPDATE {SCHEMA}.b SET s = 'x'",
        f"DELETE FROM {SCHEMA}.a WHERE id = 2",
        "COMMIT",
    ]
    captured = capture(srv, conn, statements)
    unfiltered = [e for _, e in captured.events]
    filtered = [e for _, e in _read(srv, captured.name, tables=f"{SCHEMA}.a")]
    maps = [e for e in filtered if isinstance(e, TableMapEvent)]
    assert maps and {(m.schema, m.table) for m in maps} == {(SCHEMA, "a")}
    rows_types = (WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent)
    assert all(e.table.table == "a" for e in filtered if isinstance(e, rows_types))
    dropped = [e for e in unfiltered if isinstance(e, TableMapEvent) and e.table == "b"]
    assert len(unfiltered) - len(filtered) > len(dropped)  # maps and rows of b
    path = next(f for f in srv.binlog_files() if f.name == captured.name)
    with rc.open_binlog(path, tables=f"{SCHEMA}.a") as reader:
        changes = list(rc.iter_changes(reader))
    selected = srv.sql(f"SELECT COUNT(*) FROM {SCHEMA}.a")[0][0]
    assert [(c.op, c.table) for c in changes] == [
        ("insert", "a"),
        ("insert", "a"),
        ("delete", "a"),
    ]
    assert selected == 1
