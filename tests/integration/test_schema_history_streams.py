"""Regression tests of the schema history on servers that log no column names.

Each test is a scenario the generated oracle (tests/gen_oracle) met, cut to the
statements that matter, and guards one fix:

- ``test_a_database_created_after_the_start_is_followed``: a database created
  after the history was read (``start="now"``, no table filter; files read with
  a history captured before) is followed like the others, its rows under their
  column names. Before, its tables had no definition: UnknownSchemaError "the
  schema history does not follow its database".
- ``test_a_stream_started_at_a_binlog_files_beginning_moves_its_checkpoint``:
  a stream started at "now" right after the primary rotated its binlog
  (``FLUSH BINARY LOGS``; MariaDB 10.11 then dumps by GTID from a file's
  beginning) reaches that beginning and moves its checkpoint with every
  transaction, so a new stream from ``Checkpoint.from_json`` continues after the
  last one delivered. Before, the checkpoint stayed at the start (no file
  position, the GTID of the start): a stream restarted from it would have
  delivered those transactions again.
- ``test_identical_ddl_in_one_second_takes_the_definitions_read_at_the_last``:
  two identical DDL statements written in the same second (a table swapped
  twice by gh-ost, whose statements are always the same text; here
  ``SET timestamp`` makes the second exact) are two events: the definitions
  read after them take over at the last one, not at the first. Before, both had
  the same pending mark and the table's definition was lost at the second
  (UnknownSchemaError "altered while its definition was not known").
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pymysql
import pytest

import replica_client as rc
from replica_client.aio.control import ask
from replica_client.changes import Change
from replica_client.checkpoint import Checkpoint
from replica_client.control.queries import prepare_history
from replica_client.schema.history import SchemaHistory
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import DatabaseServer, ServerVariant
from tests import loops
from tests.integration._stream_support import config_for, repl_user

pytestmark = pytest.mark.integration

#: each server in its own defaults: no column names in the binlog (MariaDB NO_LOG,
#: MySQL MINIMAL), MariaDB logging MIXED
DEFAULTS = (
    ServerVariant.server_defaults(),
    ServerVariant.server_defaults("mariadb", "11.8"),
    ServerVariant.server_defaults("mysql", "9.7"),
)
RECOMMENDED = (
    ServerVariant(),
    ServerVariant(flavor="mariadb", version="11.8"),
    ServerVariant(flavor="mysql", version="9.7"),
)


@pytest.fixture(params=DEFAULTS, ids=[v.label for v in DEFAULTS])
def defaults(
    request: pytest.FixtureRequest, mariadb_primary_factory: PrimaryFactory
) -> Iterator[DatabaseServer]:
    srv = mariadb_primary_factory(request.param)
    repl_user(srv)
    yield srv


@pytest.fixture(params=RECOMMENDED, ids=[v.label for v in RECOMMENDED])
def recommended(
    request: pytest.FixtureRequest, mariadb_primary_factory: PrimaryFactory
) -> Iterator[DatabaseServer]:
    srv = mariadb_primary_factory(request.param)
    repl_user(srv)
    yield srv


def _writer(srv: DatabaseServer) -> Any:
    """A session that logs rows (the server's own default may be MIXED)."""
    conn = pymysql.connect(
        host=srv.host,
        port=srv.port,
        user=srv.user,
        password=srv.password,
        charset="utf8mb4",
        autocommit=True,
    )
    cur = conn.cursor()
    cur.execute("SET SESSION binlog_format = 'ROW'")
    return conn


def _run(srv: DatabaseServer, statements: list[str], *, timestamp: int | None = None) -> None:
    conn = _writer(srv)
    try:
        with conn.cursor() as cur:
            if timestamp is not None:
                cur.execute(f"SET timestamp = {timestamp}")
            for sql in statements:
                cur.execute(sql)
    finally:
        conn.close()


async def _take(stream: rc.BinlogStream, database: str, n: int) -> list[Change]:
    got: list[Change] = []
    async with asyncio.timeout(30):
        async for change in stream.changes():
            if change.schema == database:
                got.append(change)
                if len(got) == n:
                    break
    return got


def test_a_database_created_after_the_start_is_followed(defaults: DatabaseServer) -> None:
    srv = defaults
    db = "sh_new_db"
    srv.sql(f"DROP DATABASE IF EXISTS {db}")  # (also: the start is not a file's beginning)
    statements = [
        f"CREATE DATABASE {db}",
        f"CREATE TABLE {db}.t (id INT PRIMARY KEY, name VARCHAR(10), e ENUM('a','b'))",
        f"INSERT INTO {db}.t VALUES (1, 'x', 'b')",
    ]
    want = {"id": 1, "name": "x", "e": "b"}

    async def live() -> tuple[list[Change], SchemaHistory]:
        before = (await ask(config_for(srv), prepare_history(None, "now"))).history
        async with rc.connect(config_for(srv, start="now")) as stream:
            _run(srv, statements)
            got = await _take(stream, db, 1)
        return got, before

    got, before = loops.run(live())
    assert [c.after for c in got] == [want]
    srv.sql("FLUSH BINARY LOGS")
    files = srv.binlog_files()[:-1]
    # (the server's other tests log statements of their own tables: read this one's)
    with rc.open_binlog(files, schema_history=before, tables=f"{db}.*") as events:
        from_files = [c.after for c in rc.iter_changes(events) if c.schema == db]
    assert from_files[-1:] == [want]


def test_a_stream_started_at_a_binlog_files_beginning_moves_its_checkpoint(
    recommended: DatabaseServer,
) -> None:
    srv = recommended
    db = "sh_flush"
    _run(srv, [f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}"])
    _run(srv, [f"CREATE TABLE {db}.t (id INT PRIMARY KEY)"])
    srv.sql("FLUSH BINARY LOGS")  # the GTID state now is where the new file begins

    async def scenario() -> tuple[list[Any], list[Any], list[Any]]:
        async with rc.connect(config_for(srv, start="now", schema_history="off")) as stream:
            start = (stream.position, stream.gtid_state)
            _run(srv, [f"INSERT INTO {db}.t VALUES ({i})" for i in (1, 2, 3)])
            first = await _take(stream, db, 2)
            checkpoint = stream.checkpoint
            moved = [start, (checkpoint.position, checkpoint.gtid_state)]
            text = checkpoint.to_json()
        config = config_for(srv, start=Checkpoint.from_json(text), schema_history="off")
        async with rc.connect(config) as stream:
            rest = await _take(stream, db, 1)
        return moved, [c.after for c in first], [c.after for c in rest]

    moved, first, rest = loops.run(scenario())
    assert moved[1] != moved[0], f"the checkpoint stayed at the start: {moved}"
    # the checkpoint is after the first transaction, before the second
    assert first == [{"id": 1}, {"id": 2}]
    assert rest == [{"id": 2}], f"a stream from the checkpoint began with {rest}"


def test_identical_ddl_in_one_second_takes_the_definitions_read_at_the_last(
    defaults: DatabaseServer,
) -> None:
    srv = defaults
    db = "sh_same_ddl"
    _run(srv, [f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}"])
    file, pos = srv.binlog_position()
    _run(
        srv,
        [
            f"CREATE TABLE {db}.t (id INT PRIMARY KEY, x INT)",
            f"ALTER TABLE {db}.t ADD COLUMN y INT",
            f"INSERT INTO {db}.t VALUES (1, 10, 11)",
            f"ALTER TABLE {db}.t DROP COLUMN y, RENAME COLUMN x TO w",
            f"ALTER TABLE {db}.t ADD COLUMN y INT",  # the same text, the same second
            f"INSERT INTO {db}.t VALUES (2, 20, 21)",
        ],
        timestamp=1_700_000_000,
    )

    async def lagging() -> list[Any]:
        # the history is read now; the binlog since the start is read for DDL
        async with rc.connect(config_for(srv, start=rc.FilePos(file, pos))) as stream:
            return [c.after for c in await _take(stream, db, 2)]

    assert loops.run(lagging()) == [{"id": 1, "x": 10, "y": 11}, {"id": 2, "w": 20, "y": 21}]
