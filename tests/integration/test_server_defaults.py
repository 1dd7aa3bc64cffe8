"""What a new user gets from a primary in its own default settings.

MariaDB 10.11 and 11.8 start with ``binlog_format=MIXED`` and
``binlog_row_metadata=NO_LOG``, MySQL 9.7 with ``binlog_row_metadata=MINIMAL``
(``ServerVariant.server_defaults``). On each, with a plain ``connect()``:

- statements logged as SQL text never pass as if nothing happened: the
  changes they made raise ``StatementLoggedError`` (or come as
  ``op="statement"`` changes when asked for), and statements on tables
  outside the filter do not concern the stream;
- rows written in ROW format decode to what ``SELECT`` shows: UNSIGNED
  integers, ENUM and SET labels, utf8mb4 and latin1 text, names;
- names follow every DDL for a consumer that streams through it, one that
  starts before it after the fact, and one restarted from a checkpoint taken
  before it;
- an account that cannot see a table in information_schema gets the typed
  error naming the grant, never a guess; ``unproven="positional"`` gives the
  binlog's own ``@1``, ``@2``, ... instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pymysql
import pytest

import replica_client as rc
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import MariaDBServer, ServerVariant
from tests.integration._stream_support import config_for, repl_user

pytestmark = pytest.mark.integration

SERVERS = (
    ServerVariant.server_defaults(),
    ServerVariant.server_defaults("mariadb", "11.8"),
    ServerVariant.server_defaults("mysql", "9.7"),
)


#: Servers that log statements: MariaDB's defaults, and MySQL 9.7 set to MIXED.
MIXED = (*SERVERS[:2], ServerVariant(flavor="mysql", version="9.7", binlog_format="MIXED"))


@pytest.fixture(params=MIXED, ids=[v.label for v in MIXED])
def mixed(
    request: pytest.FixtureRequest, mariadb_primary_factory: PrimaryFactory
) -> Iterator[MariaDBServer]:
    srv = mariadb_primary_factory(request.param)
    repl_user(srv)
    yield srv


@pytest.fixture(params=SERVERS, ids=[v.label for v in SERVERS])
def server(
    request: pytest.FixtureRequest, mariadb_primary_factory: PrimaryFactory
) -> Iterator[MariaDBServer]:
    srv = mariadb_primary_factory(request.param)
    repl_user(srv)
    yield srv


def _writer(srv: MariaDBServer, row_format: bool) -> pymysql.connections.Connection[Any]:
    """A client session; ``row_format``: it logs its changes as rows (SET SESSION)."""
    conn = pymysql.connect(
        host=srv.host,
        port=srv.port,
        user=srv.user,
        password=srv.password,
        autocommit=True,
        charset="utf8mb4",
    )
    if row_format and srv.flavor == "mariadb":
        with conn.cursor() as cur:
            cur.execute("SET SESSION binlog_format = 'ROW'")
    return conn


def _run(conn: pymysql.connections.Connection[Any], *statements: str) -> None:
    with conn.cursor() as cur:
        for statement in statements:
            cur.execute(statement)


async def _changes(config: rc.ReplicaConfig, table: str | None = None) -> list[rc.Change]:
    async with asyncio.timeout(60), rc.connect(config) as stream:
        return [c async for c in stream.changes() if table is None or c.table == table]


def test_the_servers_defaults_are_what_users_get(server: MariaDBServer) -> None:
    variables = dict(
        server.sql(
            "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('binlog_format', 'binlog_row_metadata')"
        )
    )
    expected = ("MIXED", "NO_LOG") if server.flavor == "mariadb" else ("ROW", "MINIMAL")
    assert (variables["binlog_format"], variables["binlog_row_metadata"]) == expected


def test_statements_logged_as_sql_are_refused_never_skipped(mixed: MariaDBServer) -> None:
    server = mixed
    server.sql("DROP DATABASE IF EXISTS dm")
    server.sql("DROP DATABASE IF EXISTS dm_other")
    server.sql("CREATE DATABASE dm")
    server.sql("CREATE DATABASE dm_other")
    server.sql("CREATE TABLE dm.t (id INT PRIMARY KEY, v VARCHAR(40))")
    server.sql("CREATE TABLE dm_other.t (id INT PRIMARY KEY)")
    start = rc.FilePos(*server.binlog_position())
    conn = _writer(server, row_format=False)
    statements = [
        "INSERT INTO dm.t VALUES (1,'a'),(2,'b')",
        "UPDATE dm.t SET v='c' WHERE id=1",
        "DELETE FROM dm.t WHERE id=2",
    ]
    try:
        _run(conn, "INSERT INTO dm_other.t VALUES (1)", *statements)
        _run(conn, "INSERT INTO dm.t VALUES (3, UUID())")  # unsafe: logged as rows
    finally:
        conn.close()
    config = config_for(server, start=start, blocking=False, tables="dm.*")
    with pytest.raises(rc.StatementLoggedError) as info:
        asyncio.run(_changes(config))
    error = info.value
    assert error.statement == statements[0]
    assert error.tables == ("dm.t",)
    assert error.binlog_format == "MIXED" and "binlog_format=ROW" in str(error)
    assert error.position.startswith(start.file + ":")
    assert error.gtid or server.flavor == "mysql"  # (MySQL: anonymous without GTID mode)
    # asked for, they come in order as changes of their own, with the row change
    delivered = asyncio.run(
        _changes(
            config_for(server, start=start, blocking=False, tables="dm.*", statements="deliver")
        )
    )
    assert [(c.op, c.statement) for c in delivered[:3]] == [("statement", s) for s in statements]
    assert [(c.op, c.table) for c in delivered] == [
        ("statement", "t"),
        ("statement", "t"),
        ("statement", "t"),
        ("insert", "t"),
    ]
    assert delivered[3].after is not None and delivered[3].after["id"] == 3
    # a statement on a table the filter leaves out does not concern the stream
    other = asyncio.run(
        _changes(config_for(server, start=start, blocking=False, tables="dm_other.none"))
    )
    assert other == []


_VALUES = "(4000000000, 'green', 'a,b', 'ü€', 'é')"
_WANT = {"id": 4000000000, "e": "green", "s": frozenset({"a", "b"}), "v": "ü€", "l": "é"}


def _typed_table(server: MariaDBServer, db: str) -> rc.FilePos:
    server.sql(f"DROP DATABASE IF EXISTS {db}")
    server.sql(f"CREATE DATABASE {db}")
    server.sql(
        f"CREATE TABLE {db}.t (id INT UNSIGNED PRIMARY KEY, e ENUM('red','green'), "
        "s SET('a','b'), v VARCHAR(10) CHARACTER SET utf8mb4, "
        "l VARCHAR(10) CHARACTER SET latin1)"
    )
    return rc.FilePos(*server.binlog_position())


def test_rows_without_metadata_decode_as_select(server: MariaDBServer) -> None:
    start = _typed_table(server, "dv")
    conn = _writer(server, row_format=True)
    try:
        _run(conn, f"INSERT INTO dv.t VALUES {_VALUES}")
    finally:
        conn.close()
    [change] = asyncio.run(_changes(config_for(server, start=start, blocking=False, tables="dv.*")))
    assert change.after == _WANT
    assert change.primary_key == ("id",)
    # without a history: the binlog's own, which is not what SELECT shows
    off = config_for(server, start=start, blocking=False, tables="dv.*", schema_history="off")
    [plain] = asyncio.run(_changes(off))
    assert plain.after is not None and set(plain.after) == {"@1", "@2", "@3", "@4", "@5"}
    assert plain.after != _WANT


def test_files_without_metadata_decode_with_a_history_from_create_table(
    server: MariaDBServer,
) -> None:
    _typed_table(server, "df")
    server.sql("FLUSH BINARY LOGS")
    first = server.binlog_files()[-1]
    conn = _writer(server, row_format=True)
    try:
        _run(conn, f"INSERT INTO df.t VALUES {_VALUES}")
    finally:
        conn.close()
    server.sql("FLUSH BINARY LOGS")
    files = [f for f in server.binlog_files()[:-1] if f.name >= first.name]
    create = str(server.sql("SHOW CREATE TABLE df.t")[0][1])
    major, minor = (int(x) for x in server.version.split(".")[:2])
    history = rc.SchemaHistory.from_ddl(
        [create], mariadb=server.flavor == "mariadb", version=(major, minor), default_schema="df"
    )
    with rc.open_binlog(files, schema_history=history, tables="df.*") as events:
        [change] = list(rc.iter_changes(events))
    assert change.after == _WANT
    with rc.open_binlog(files, tables="df.*") as events:
        [plain] = list(rc.iter_changes(events))
    assert plain.after != _WANT


_DDL = (
    "CREATE TABLE dd.t (id INT PRIMARY KEY, a INT, b VARCHAR(10))",
    "INSERT INTO dd.t VALUES (1, 10, 'x')",
    "ALTER TABLE dd.t CHANGE a renamed_a INT",
    "INSERT INTO dd.t VALUES (2, 20, 'y')",
    "ALTER TABLE dd.t DROP COLUMN b, ADD COLUMN c VARCHAR(10) FIRST",
    "INSERT INTO dd.t VALUES ('z', 3, 30)",
)
_AFTER_DDL = [
    {"id": 1, "a": 10, "b": "x"},
    {"id": 2, "renamed_a": 20, "b": "y"},
    {"c": "z", "id": 3, "renamed_a": 30},
]


async def _live(server: MariaDBServer) -> tuple[list[dict[str, Any] | None], str]:
    config = config_for(server, start="now", tables="dd.*")
    out: list[dict[str, Any] | None] = []
    checkpoint = ""
    async with asyncio.timeout(60), rc.connect(config) as stream:
        conn = _writer(server, row_format=True)
        try:
            await asyncio.to_thread(_run, conn, *_DDL)
        finally:
            conn.close()
        async for change in stream.changes():
            out.append(change.after)
            if len(out) == 2:
                # the transactions before the second row's are passed (its own is not
                # whole yet): a checkpoint before it, and before the second ALTER
                checkpoint = stream.checkpoint.to_json()
            if len(out) == 3:
                break
    return out, checkpoint


def test_names_follow_every_ddl_live_lagging_and_restarted(server: MariaDBServer) -> None:
    server.sql("DROP DATABASE IF EXISTS dd")
    server.sql("CREATE DATABASE dd")
    start = rc.FilePos(*server.binlog_position())
    live, saved = asyncio.run(_live(server))
    assert live == _AFTER_DDL
    lagging = asyncio.run(_changes(config_for(server, start=start, blocking=False, tables="dd.*")))
    assert [c.after for c in lagging] == _AFTER_DDL
    # restarted from the checkpoint taken before the second row: the names of that
    # point, moved by the ALTER after it
    checkpoint = rc.Checkpoint.from_json(saved)
    assert checkpoint.schema_history is not None
    restarted = asyncio.run(
        _changes(config_for(server, start=checkpoint, blocking=False, tables="dd.*"))
    )
    assert [c.after for c in restarted] == _AFTER_DDL[1:]


def test_a_table_the_account_cannot_see_is_refused_by_name(server: MariaDBServer) -> None:
    start = _typed_table(server, "dg")
    server.create_user("rc_noselect", "pw-noselect", grants="REPLICATION SLAVE, REPLICATION CLIENT")
    conn = _writer(server, row_format=True)
    try:
        _run(conn, f"INSERT INTO dg.t VALUES {_VALUES}")
    finally:
        conn.close()
    config = config_for(
        server,
        user="rc_noselect",
        password="pw-noselect",
        start=start,
        blocking=False,
        tables="dg.*",
    )
    with pytest.raises(rc.UnknownSchemaError, match=r"GRANT SELECT ON `dg`\.\*") as info:
        asyncio.run(_changes(config))
    assert (info.value.schema, info.value.table) == ("dg", "t")
    positional = asyncio.run(
        _changes(
            config_for(
                server,
                user="rc_noselect",
                password="pw-noselect",
                start=start,
                blocking=False,
                tables="dg.*",
                unproven="positional",
            )
        )
    )
    assert [c.after is not None and set(c.after) for c in positional] == [
        {"@1", "@2", "@3", "@4", "@5"}
    ]
