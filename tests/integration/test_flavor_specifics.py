"""What one flavour writes and the others do not, streamed live.

MySQL 9.7: tagged GTIDs (a GTID set with tags starts a dump and is the stream's
state), ``binlog_transaction_compression``, partial JSON updates, VECTOR,
MINIMAL row metadata with names from a schema provider, caching_sha2_password
over TLS. MariaDB 11.8: GTID events carry the thread id of the transaction
(11.5+), parsec logins.
"""

from __future__ import annotations

import json

import pymysql

import replica_client as rc
from replica_client.binlog.events import (
    GtidEvent,
    MysqlGtidEvent,
    PartialUpdateRowsEvent,
    TransactionPayloadEvent,
    WriteRowsEvent,
)
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import MariaDBServer, ServerVariant
from tests.integration._stream_support import config_for, repl_user

__all__: list[str] = []

MYSQL = ServerVariant(flavor="mysql", version="9.7")
MARIADB_11 = ServerVariant(flavor="mariadb", version="11.8")


def _prepare(srv: MariaDBServer, ddl: str) -> rc.MysqlGtidSet:
    repl_user(srv)
    srv.sql("CREATE DATABASE IF NOT EXISTS rc_spec")
    srv.sql("DROP TABLE IF EXISTS rc_spec.t")
    srv.sql(ddl)
    return rc.MysqlGtidSet(str(srv.sql("SELECT @@GLOBAL.gtid_executed")[0][0]))


def _executed(srv: MariaDBServer) -> rc.MysqlGtidSet:
    return rc.MysqlGtidSet(str(srv.sql("SELECT @@GLOBAL.gtid_executed")[0][0]))


async def _events(cfg: rc.ReplicaConfig) -> tuple[list[rc.Event], rc.BinlogStream]:
    async with rc.connect(cfg) as stream:
        events = [e async for e in stream]
    return events, stream


async def test_mysql_tagged_gtids_start_a_dump_and_are_the_state(
    mariadb_primary_factory: PrimaryFactory,
) -> None:
    srv = mariadb_primary_factory(MYSQL)
    start = _prepare(srv, "CREATE TABLE rc_spec.t (id INT PRIMARY KEY)")
    srv.sql_many(
        [
            "SET gtid_next = 'AUTOMATIC:batch_a'",
            "INSERT INTO rc_spec.t VALUES (1)",
            "INSERT INTO rc_spec.t VALUES (2)",
            "SET gtid_next = 'AUTOMATIC'",
            "INSERT INTO rc_spec.t VALUES (3)",
        ]
    )
    events, stream = await _events(config_for(srv, start=start, blocking=False))
    gtids = [str(e.gtid) for e in events if isinstance(e, MysqlGtidEvent)]
    assert [g.count(":") for g in gtids] == [2, 2, 1]  # uuid:tag:gno twice, then uuid:gno
    assert [g.split(":")[1] for g in gtids[:2]] == ["batch_a", "batch_a"]
    state = stream.gtid_state
    assert state == _executed(srv)
    assert ":batch_a:" in str(state)
    # the tagged set starts the next dump: only what came after it
    srv.sql_many(["SET gtid_next = 'AUTOMATIC:batch_b'", "INSERT INTO rc_spec.t VALUES (4)"])
    srv.sql("SET gtid_next = 'AUTOMATIC'")
    again, _ = await _events(config_for(srv, start=state, blocking=False))
    rows = [r for e in again if isinstance(e, WriteRowsEvent) for r in e.rows]
    assert rows == [(4,)]


async def test_mysql_transaction_compression_streams(
    mariadb_primary_factory: PrimaryFactory,
) -> None:
    srv = mariadb_primary_factory(
        ServerVariant(flavor="mysql", version="9.7", transaction_compression=True)
    )
    start = _prepare(srv, "CREATE TABLE rc_spec.t (id INT PRIMARY KEY, body TEXT)")
    srv.sql_many(
        [
            "BEGIN",
            *(f"INSERT INTO rc_spec.t VALUES ({i}, REPEAT('z', 500))" for i in range(50)),
            "COMMIT",
        ]
    )
    cfg = config_for(srv, start=start, blocking=False)
    events, stream = await _events(cfg)
    assert any(isinstance(e, TransactionPayloadEvent) for e in events)
    async with rc.connect(cfg) as again:
        changes = [c async for c in again.changes() if c.table == "t"]
    assert [c.after["id"] for c in changes if c.after] == list(range(50))
    assert all(c.after and c.after["body"] == "z" * 500 for c in changes)
    assert stream.gtid_state == _executed(srv)


async def test_mysql_partial_json_updates(mariadb_primary_factory: PrimaryFactory) -> None:
    # PARTIAL_JSON: the after image carries JSON diffs. With a FULL before image
    # they are applied to it (the document SELECT shows); with MINIMAL there is
    # nothing to apply them to, and the value says so (PartialJson, the diffs).
    srv = mariadb_primary_factory(MYSQL)
    start = _prepare(srv, "CREATE TABLE rc_spec.t (id INT PRIMARY KEY, doc JSON)")
    doc = {"a": 1, "list": [1, 2, 3], "name": "x" * 200}
    srv.sql("INSERT INTO rc_spec.t VALUES (1, %s)", (json.dumps(doc),))
    shown = []
    conn = pymysql.connect(
        host=srv.host, port=srv.port, user="root", password=srv.password, autocommit=True
    )
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION binlog_row_value_options = 'PARTIAL_JSON'")
            for image, change in (
                ("FULL", "JSON_SET(doc, '$.a', 2, '$.list[1]', 20)"),
                ("FULL", "JSON_REMOVE(doc, '$.name')"),
                ("MINIMAL", "JSON_SET(doc, '$.a', 3)"),
            ):
                cur.execute(f"SET SESSION binlog_row_image = '{image}'")
                cur.execute(f"UPDATE rc_spec.t SET doc = {change} WHERE id = 1")
                cur.execute("SELECT CAST(doc AS CHAR) FROM rc_spec.t")
                shown.append(json.loads(cur.fetchone()[0]))
    finally:
        conn.close()
    events, _ = await _events(config_for(srv, start=start, blocking=False))
    partial = [e for e in events if isinstance(e, PartialUpdateRowsEvent)]
    assert len(partial) == 3
    assert [e.rows[0][1][1] for e in partial[:2]] == shown[:2]
    assert all(e.json_diffs[0] for e in partial)
    last = partial[2].rows[0][1][1]
    assert isinstance(last, rc.PartialJson) and last.diffs


async def test_mysql_vector_and_minimal_metadata_named_by_the_history_or_a_provider(
    mariadb_primary_factory: PrimaryFactory,
) -> None:
    srv = mariadb_primary_factory(
        ServerVariant(flavor="mysql", version="9.7", row_metadata="MINIMAL")
    )
    start = _prepare(
        srv, "CREATE TABLE rc_spec.t (id INT PRIMARY KEY, v VECTOR(3), n INT UNSIGNED)"
    )
    srv.sql("INSERT INTO rc_spec.t VALUES (1, STRING_TO_VECTOR('[1.5, -2, 0.25]'), 4000000000)")
    shown = json.loads(str(srv.sql("SELECT VECTOR_TO_STRING(v) FROM rc_spec.t")[0][0]))
    # the schema history (the default) names the columns MINIMAL metadata leaves out
    async with rc.connect(config_for(srv, start=start, blocking=False)) as stream:
        named = [c.after async for c in stream.changes() if c.table == "t"]
    assert named == [{"id": 1, "v": shown, "n": 4000000000}]
    # without it, the binlog's own: positions, and a signedness MINIMAL does carry
    cfg = config_for(srv, start=start, blocking=False, schema_history="off")
    async with rc.connect(cfg) as stream:
        plain = [c.after async for c in stream.changes() if c.table == "t"]
    assert plain == [{"@1": 1, "@2": shown, "@3": 4000000000}]
    provider = rc.InformationSchemaProvider(config_for(srv))
    try:
        cfg = config_for(
            srv, start=start, blocking=False, schema_provider=provider, schema_history="off"
        )
        async with rc.connect(cfg) as stream:
            provided = [c.after async for c in stream.changes() if c.table == "t"]
    finally:
        await provider.aclose()
    assert provided == named


async def test_mysql_caching_sha2_over_tls(mariadb_primary_factory: PrimaryFactory) -> None:
    srv = mariadb_primary_factory(ServerVariant(flavor="mysql", version="9.7", tls=True))
    start = _prepare(srv, "CREATE TABLE rc_spec.t (id INT PRIMARY KEY)")
    srv.create_user("rc_sha2", "sha2-secret")
    srv.sql("ALTER USER 'rc_sha2'@'%' REQUIRE SSL")
    srv.sql("INSERT INTO rc_spec.t VALUES (7)")
    cfg = config_for(
        srv,
        user="rc_sha2",
        password="sha2-secret",
        start=start,
        blocking=False,
        tls="verify_identity",
        tls_ca=str(srv.ca_cert),
    )
    events, _ = await _events(cfg)
    assert [r for e in events if isinstance(e, WriteRowsEvent) for r in e.rows] == [(7,)]


async def test_mariadb_11_gtid_events_carry_the_thread_id(
    mariadb_primary_factory: PrimaryFactory,
) -> None:
    srv = mariadb_primary_factory(MARIADB_11)
    repl_user(srv)
    srv.sql("CREATE DATABASE IF NOT EXISTS rc_spec")
    srv.sql("DROP TABLE IF EXISTS rc_spec.t")
    srv.sql("CREATE TABLE rc_spec.t (id INT PRIMARY KEY)")
    start = rc.Gtid(str(srv.sql("SELECT @@GLOBAL.gtid_binlog_pos")[0][0]))
    conn = pymysql.connect(
        host=srv.host, port=srv.port, user="root", password=srv.password, autocommit=True
    )
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT CONNECTION_ID()")
            (thread_id,) = cur.fetchone()
            cur.execute("INSERT INTO rc_spec.t VALUES (1)")
    finally:
        conn.close()
    events, _ = await _events(config_for(srv, start=start, blocking=False))
    gtid = [e for e in events if isinstance(e, GtidEvent)][-1]
    assert gtid.thread_id == thread_id
    assert gtid.flags_extra & 0x10


async def test_mariadb_11_parsec_login_streams(mariadb_primary_factory: PrimaryFactory) -> None:
    srv = mariadb_primary_factory(MARIADB_11)
    repl_user(srv)
    srv.create_user("rc_parsec", "parsec-secret", plugin="parsec")
    start = rc.Gtid(str(srv.sql("SELECT @@GLOBAL.gtid_binlog_pos")[0][0]))
    srv.sql("CREATE DATABASE IF NOT EXISTS rc_spec")
    cfg = config_for(srv, user="rc_parsec", password="parsec-secret", start=start, blocking=False)
    events, stream = await _events(cfg)
    assert any(isinstance(e, GtidEvent) for e in events)
    assert stream.gtid_state == rc.Gtid(str(srv.sql("SELECT @@GLOBAL.gtid_binlog_pos")[0][0]))
