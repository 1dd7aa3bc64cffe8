"""Statement events (``binlog/query_events.py``): QUERY and what goes with it.

Real bytes: the mysql-cdc-rs MySQL 5.7 fixtures, whose ``dump.txt`` (the
output of ``mysqlbinlog --hexdump``) is the oracle for every field checked
here, and the MySQL 5.1 test-suite log ``ver_5_1_23.001`` (LOAD DATA blocks).
The live tests write the events on the private MariaDB primary and check them
against the server itself (see ``tests/binlog_live.py``).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pymysql

from replica_client.binlog.events import (
    AppendBlockEvent,
    BeginLoadQueryEvent,
    ExecuteLoadQueryEvent,
    GtidEvent,
    IntvarEvent,
    QueryEvent,
    RandEvent,
    UserVarEvent,
    XidEvent,
)
from replica_client.binlog.query_events import parse_status_vars
from replica_client.testing.server import MariaDBServer
from tests.binlog_files import fixture_events
from tests.binlog_live import SCHEMA, capture, connect, one

CDC = "mysql-cdc-rs/5.7"


def _at(rel: str, position: int) -> Any:
    return next(e for p, e in fixture_events(rel) if p == position)


# -- QUERY ------------------------------------------------------------------------------

#: The status variables of the INSERT at 1049 of 14_user_var (dump.txt, 0x42c + 13).
STATUS_HEX = "0000000000012000a05500000000060373746404210021002d000c0164656661756c7400"


def test_query_of_a_fixture() -> None:
    query = _at(f"{CDC}/14_user_var/log.bin", 1049)
    assert isinstance(query, QueryEvent)
    # "# Query thread_id=18 exec_time=0 error_code=0", "INSERT INTO `boxercrab` ..."
    assert (query.thread_id, query.exec_time, query.error_code) == (18, 0, 0)
    assert (
        query.query
        == "INSERT INTO `boxercrab` (`str`, `int`, `dec`) VALUES (@val_s, @val_i, @val_d)"
    )
    assert query.query_bytes == query.query.encode()
    assert query.schema == "default"
    assert query.sql_mode == 0x55A00020
    assert (query.flags2, query.catalog, query.charset) == (0, "std", (33, 33, 45))
    assert query.updated_db_names == ("default",)
    assert query.unknown_status_vars == b""


def test_status_variables_of_real_bytes() -> None:
    raw = bytes.fromhex(STATUS_HEX)
    values, unknown = parse_status_vars(memoryview(raw), 0, len(raw))
    assert values == {
        "flags2": 0,
        "sql_mode": 1436549152,
        "catalog": "std",
        "charset": (33, 33, 45),
        "updated_db_names": ("default",),
    }
    assert unknown == b""


def test_unknown_status_variable_keeps_the_rest() -> None:
    raw = bytes.fromhex(STATUS_HEX[:10] + "ee0102" + STATUS_HEX[10:28])
    values, unknown = parse_status_vars(memoryview(raw), 0, len(raw))
    assert values == {"flags2": 0}
    assert unknown == raw[5:]  # the unknown code and everything after it


# -- the helpers of statement-based logs -----------------------------------------------


def test_intvar_of_fixtures() -> None:
    # "SET LAST_INSERT_ID=0" (05_intvar), "SET INSERT_ID=1" (14_user_var)
    last = _at(f"{CDC}/05_intvar/log.bin", 736)
    assert (last.kind, last.value) == (IntvarEvent.LAST_INSERT_ID, 0)
    insert = _at(f"{CDC}/14_user_var/log.bin", 869)
    assert (insert.kind, insert.value) == (IntvarEvent.INSERT_ID, 1)


def test_rand_of_a_fixture() -> None:
    rand = _at(f"{CDC}/13_rand/log.bin", 736)
    # "SET @@RAND_SEED1=694882935, @@RAND_SEED2=292094996"
    assert isinstance(rand, RandEvent)
    assert (rand.seed1, rand.seed2) == (694882935, 292094996)


def test_user_vars_of_a_fixture() -> None:
    events = [e for _, e in fixture_events(f"{CDC}/14_user_var/log.bin")]
    decoded = {e.name: e for e in events if isinstance(e, UserVarEvent)}
    # SET @`val_s`:=_utf8 0x7465737420626C6F67 COLLATE `utf8_general_ci`
    assert (decoded["val_s"].value, decoded["val_s"].charset) == ("test blog", 33)
    assert decoded["val_i"].value == 100  # SET @`val_i`:=100
    assert decoded["val_d"].value == Decimal("1.00")  # SET @`val_d`:=1.00
    assert not any(e.unsigned for e in decoded.values())


def test_load_data_blocks_of_fixtures() -> None:
    events = fixture_events(f"{CDC}/17_18_load/log.bin")
    begin = next(e for _, e in events if isinstance(e, BeginLoadQueryEvent))
    # "#Begin_load_query: file_id: 1  block_len: 8"
    assert (begin.file_id, begin.data) == (1, b'1,"abc"\n')
    execute = next(e for _, e in events if isinstance(e, ExecuteLoadQueryEvent))
    # post-header bytes (dump.txt at 0x166): ... 01000000 09000000 25000000 00
    assert (execute.file_id, execute.fn_pos_start, execute.fn_pos_end) == (1, 9, 37)
    assert execute.dup_handling == 0
    assert execute.query_event.thread_id == 23
    # mysqlbinlog replaces exactly this span with its own LOCAL INFILE clause
    assert execute.query[9:37] == " INFILE '/tmp/data.txt' INTO"
    # MySQL 5.1: a 128 KiB first block, the rest in an APPEND_BLOCK of the same file
    events = fixture_events("rust_mysql_common/ver_5_1_23.001")
    blocks = [e for _, e in events if isinstance(e, BeginLoadQueryEvent | AppendBlockEvent)]
    assert [type(b) for b in blocks] == [BeginLoadQueryEvent, AppendBlockEvent]
    assert {b.file_id for b in blocks} == {2}
    assert len(blocks[0].data) == 128 * 1024
    text = b"".join(b.data for b in blocks)
    assert text.startswith(b"Aarhus\nAaron\n") and text.endswith(b"\n")
    execute = next(e for _, e in events if isinstance(e, ExecuteLoadQueryEvent))
    assert execute.file_id == 2


# -- live: the server is the oracle -------------------------------------------------------


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

    sql_mode = one(conn, "SELECT @@session.sql_mode")
    assert query.sql_mode is not None
    # The decoded bitmask, SET back, reads as the same mode names.
    other = connect(mariadb_primary)
    try:
        with other.cursor() as cur:
            cur.execute("SET SESSION sql_mode = %s", (query.sql_mode,))
            cur.execute(f"SET SESSION lc_time_names = {int(query.lc_time_names or 0)}")
        assert one(other, "SELECT @@session.sql_mode") == sql_mode
        assert one(other, "SELECT @@session.lc_time_names") == one(
            conn, "SELECT @@session.lc_time_names"
        )
    finally:
        other.close()
    assert query.time_zone == one(conn, "SELECT @@session.time_zone")
    assert (query.auto_increment_increment, query.auto_increment_offset) == one(
        conn, "SELECT @@auto_increment_increment, @@auto_increment_offset"
    )
    assert query.charset is not None
    client, connection, server = query.charset
    ids = "SELECT ID FROM information_schema.COLLATIONS WHERE COLLATION_NAME = "
    assert connection == one(conn, ids + "@@collation_connection")
    assert server == one(conn, ids + "@@collation_server")
    client_ids = mariadb_primary.sql(
        "SELECT ID FROM information_schema.COLLATIONS WHERE CHARACTER_SET_NAME = %s",
        (one(conn, "SELECT @@character_set_client"),),
    )
    assert client in {r[0] for r in client_ids}
    seconds, fraction = str(one(conn, "SELECT @@session.timestamp")).split(".")
    assert query.header.timestamp == int(seconds)
    assert query.hrnow == int(fraction.ljust(6, "0")[:6])
    assert query.thread_id == one(conn, "SELECT CONNECTION_ID()")
    assert query.schema == one(conn, "SELECT DATABASE()")
    assert query.error_code == 0


def test_query_invoker_and_ddl_xid(
    mariadb_primary: MariaDBServer, conn: pymysql.connections.Connection[Any]
) -> None:
    grant = f"GRANT SELECT ON {SCHEMA}.* TO CURRENT_USER"
    ddl = f"ALTER TABLE {SCHEMA}.t ADD COLUMN extra INT"
    captured = capture(mariadb_primary, conn, [grant, ddl])
    user, host = str(one(conn, "SELECT CURRENT_USER()")).rsplit("@", 1)
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
    other = connect(mariadb_primary)
    try:
        with other.cursor() as cur:
            cur.execute(f"SET @@rand_seed1 = {rand.seed1}, @@rand_seed2 = {rand.seed2}")
        assert one(other, "SELECT RAND()") == random_value
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
        expected = one(conn, f"SELECT @{name}")
        if expected is None:
            assert event.value is None
            continue
        assert event.value == expected, name
        # The charset is the variable's collation.
        collation = one(conn, f"SELECT COLLATION(@{name})")
        if collation != "binary":
            assert event.charset == one(
                conn,
                "SELECT ID FROM information_schema.COLLATIONS "
                f"WHERE COLLATION_NAME = '{collation}'",
            )
    assert isinstance(decoded["d"].value, Decimal)
    assert isinstance(decoded["r"].value, float)
    assert decoded["u"].unsigned and not decoded["i"].unsigned
    for pos, event in captured.with_pos(UserVarEvent):
        assert captured.info_at(pos).startswith(f"@`{event.name}`=")
