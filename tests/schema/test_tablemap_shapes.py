"""Table definitions read from ``information_schema`` against the TABLE_MAPs the server writes.

For generated tables of every column type (``tests/gen_oracle``), on MariaDB
10.11, 11.8 and MySQL 9.7 with FULL row metadata: the definition the control
layer reads for each table must agree with the TABLE_MAP of a row written to
it, column by column (type code, metadata, name, signedness, charset, ENUM/SET
labels: ``sqltypes.expected_shapes`` and the history's cross-check), and the
definition the history learns from that TABLE_MAP alone must be the one read
(what a FULL-metadata TABLE_MAP says, it says right). The server is the oracle
for both directions of the mapping.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import Iterator

import pytest

import replica_client as rc
from replica_client.aio.control import ask
from replica_client.binlog.events import TableMapEvent
from replica_client.control import server_facts, table_definitions
from replica_client.schema.model import ColumnDef
from replica_client.schema.sqltypes import expected_shapes, shape_matches, table_def_from_map
from replica_client.schema.tracker import _disagreement
from replica_client.testing.pytest_plugin import PrimaryFactory
from replica_client.testing.server import MariaDBServer, ServerVariant
from tests import oracle
from tests.gen_oracle.schema import generate_table
from tests.integration._stream_support import config_for, repl_user

SERVERS = (
    ServerVariant(),
    ServerVariant(flavor="mariadb", version="11.8"),
    ServerVariant(flavor="mysql", version="9.7"),
)
SEEDS = range(10)
DB = "rc_shapes"

pytestmark = pytest.mark.integration


@pytest.fixture(params=SERVERS, ids=[v.label for v in SERVERS], scope="module")
def server(
    request: pytest.FixtureRequest, mariadb_primary_factory: PrimaryFactory
) -> Iterator[MariaDBServer]:
    srv = mariadb_primary_factory(request.param)
    repl_user(srv)  # REPLICATION SLAVE, REPLICATION CLIENT and SELECT
    yield srv


def _version(srv: MariaDBServer) -> str:
    return ".".join(srv.version.split(".")[:2])


async def _table_maps(srv: MariaDBServer, statements: list[str]) -> list[TableMapEvent]:
    file, pos = srv.binlog_position()
    conn = oracle.connect(srv.host, srv.port, srv.user, srv.password)
    try:
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
    finally:
        conn.close()
    config = config_for(srv, start=rc.FilePos(file, pos), blocking=False, schema_history="off")
    out = []
    async with rc.connect(config) as stream:
        async for event in stream:
            if isinstance(event, TableMapEvent) and event.schema == DB:
                out.append(event)
    return out


#: MariaDB's types the binlog writes as binary strings: DATA_TYPE -> (as what, bytes per unit)
_STORED_AS = {"uuid": ("binary", 16), "inet6": ("binary", 16), "inet4": ("binary", 4)}


def _as_the_binlog_says(col: ColumnDef, mariadb: bool) -> ColumnDef:
    """``col`` as a TABLE_MAP with full metadata can state it: not whether it is
    generated; MariaDB's UUID/INET types and VECTOR as the binary strings they are
    written as."""
    col = dataclasses.replace(col, generated=False)
    if mariadb and col.data_type in _STORED_AS:
        kind, length = _STORED_AS[col.data_type]
        return dataclasses.replace(col, data_type=kind, length=length)
    if mariadb and col.data_type == "vector":
        assert col.length is not None
        return dataclasses.replace(col, data_type="varbinary", length=4 * col.length)
    return col


def test_definitions_agree_with_table_maps(server: MariaDBServer) -> None:
    flavor, version = server.flavor, _version(server)
    tables = [generate_table(seed, flavor, version) for seed in SEEDS]
    server.sql(f"DROP DATABASE IF EXISTS {DB}")
    server.sql(f"CREATE DATABASE {DB}")
    statements = []
    rng = random.Random(0)
    for i, table in enumerate(tables):
        statements.append(table.ddl(f"{DB}.t{i}"))
        names = ", ".join(f"`{c.name}`" for c in table.columns)
        values = ", ".join(c.value(rng) for c in table.columns)
        statements.append(f"INSERT INTO {DB}.t{i} ({names}) VALUES ({values})")
    maps = asyncio.run(_table_maps(server, statements))
    config = config_for(server)
    facts = asyncio.run(ask(config, server_facts()))
    read = asyncio.run(ask(config, table_definitions(rc.TableFilter.parse(f"{DB}.*"))))
    assert {tm.table for tm in maps} == {f"t{i}" for i in range(len(tables))}
    checked = 0
    for tm in maps:
        definition = read.tables[(DB, tm.table)]
        assert len(definition.columns) == len(tm.columns)
        for info, col in zip(tm.columns, definition.columns, strict=True):
            shapes = expected_shapes(col, facts.mariadb, facts.major_minor)
            where = f"{tm.table}.{col.name} {col.data_type}: {info}"
            assert shapes is not None, where
            assert shape_matches(info, shapes), where
            assert _disagreement(info, col, facts.mariadb, facts.major_minor) is None, where
            checked += 1
        learned = table_def_from_map(tm, facts.mariadb, facts.major_minor)
        assert learned is not None, tm.table
        for mine, theirs in zip(learned.columns, definition.columns, strict=True):
            assert mine == _as_the_binlog_says(theirs, facts.mariadb), (tm.table, mine, theirs)
        assert learned.primary_key == definition.primary_key
        # and with the definition before it, the SQL types the binlog cannot say are kept
        kept = table_def_from_map(tm, facts.mariadb, facts.major_minor, definition)
        assert kept is not None
        assert [c.data_type for c in kept.columns] == [c.data_type for c in definition.columns]
    assert checked > 60
