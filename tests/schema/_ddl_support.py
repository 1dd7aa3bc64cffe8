"""The servers as the oracle of the DDL tests: what ``information_schema`` says the
tables are, the QueryEvents a statement made the server log (read over a replication
connection: the text, current database, sql_mode and collations the binlog holds), and
the schema state :func:`~replica_client.schema.ddl.interpret` moves by those events.

The state is captured with the product's capture
(:func:`replica_client.control.queries.table_definitions`), so these tests hold
it to the server too (COMPRESSED columns, MySQL's DEFAULT_GENERATED defaults,
ENUM/SET labels with backslashes and control characters among them).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pymysql

import replica_client as rc
from replica_client.binlog.charsets import collation_name
from replica_client.binlog.events import QueryEvent
from replica_client.config import TableFilter
from replica_client.control import Query, QueryFailed, table_definitions
from replica_client.schema.ddl import DdlContext, DdlEffect, interpret
from replica_client.schema.model import ColumnDef, TableDef
from replica_client.testing.server import DatabaseServer, ServerVariant
from tests.integration._stream_support import REPL_PASSWORD, REPL_USER, next_server_id, repl_user

__all__ = [
    "SERVERS",
    "Capture",
    "Replay",
    "capture",
    "connect",
    "execute",
    "logged_events",
    "server_version",
]

#: The servers every test runs on: name -> variant.
SERVERS: dict[str, ServerVariant] = {
    "mariadb-10.11": ServerVariant(),
    "mariadb-11.8": ServerVariant(flavor="mariadb", version="11.8"),
    "mysql-9.7": ServerVariant(flavor="mysql", version="9.7"),
}

TableKey = tuple[str, str]


if TYPE_CHECKING:
    from typing import TypeAlias

    Connection: TypeAlias = pymysql.connections.Connection[Any]


def connect(server: DatabaseServer) -> Connection:
    """A connection of its own (its session settings do not leak into other tests)."""
    return pymysql.connect(
        host=server.host,
        port=server.port,
        user=server.user,
        password=server.password,
        autocommit=True,
        charset="utf8mb4",
    )


def execute(conn: Connection, statements: Iterable[str]) -> None:
    with conn.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def server_version(server: DatabaseServer) -> tuple[bool, tuple[int, int]]:
    """(MariaDB?, (major, minor)) of a server."""
    text = server.version
    m = re.match(r"(\d+)\.(\d+)", text)
    assert m is not None, text
    return "mariadb" in text.lower(), (int(m[1]), int(m[2]))


@dataclass
class Capture:
    """Tables and database collations of some databases, as information_schema shows them."""

    tables: dict[TableKey, TableDef]
    databases: dict[str, str]


def capture(server: DatabaseServer, schemas: Iterable[str]) -> Capture:
    """The tables and database collations of ``schemas`` now."""
    names = sorted(set(schemas))
    procedure = table_definitions(TableFilter.parse([f"{s}.*" for s in names]))
    answer: Any = None
    try:
        while True:
            query = procedure.send(answer)
            assert isinstance(query, Query)
            try:
                answer = server.sql(query.sql, query.args or None)
            except Exception as exc:  # a tolerated error
                errno = int(exc.args[0]) if exc.args else 0
                if errno not in query.tolerate:
                    raise
                answer = QueryFailed(errno, str(exc))
    except StopIteration as stop:
        found = stop.value
    tables = dict(found.tables)
    databases = {
        str(name): str(coll)
        for name, coll in server.sql(
            "SELECT SCHEMA_NAME, DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA"
        )
    }
    return Capture(tables, {k: v for k, v in databases.items() if k in names})


_REPL_READY: set[int] = set()


def logged_events(server: DatabaseServer, start: tuple[str, int]) -> list[QueryEvent]:
    """Every QueryEvent the server wrote since ``start`` (a binlog position)."""
    if id(server) not in _REPL_READY:
        repl_user(server)
        _REPL_READY.add(id(server))
    config = rc.ReplicaConfig.from_kwargs(
        host=server.host,
        port=server.port,
        user=REPL_USER,
        password=REPL_PASSWORD,
        server_id=next_server_id(),
        start=rc.FilePos(*start),
        blocking=False,
        connect_timeout=20.0,
    )

    async def read() -> list[QueryEvent]:
        async with rc.connect(config) as stream:
            return [e async for e in stream if isinstance(e, QueryEvent)]

    return asyncio.run(read())


@dataclass
class Replay:
    """The schema state as :func:`interpret` moves it from a capture."""

    mariadb: bool
    version: tuple[int, int]
    server_collation: str
    tables: dict[TableKey, TableDef]
    databases: dict[str, str]
    unknown: dict[TableKey, str] = field(default_factory=dict)
    effects: list[tuple[str, DdlEffect | None]] = field(default_factory=list)
    explicit_defaults_for_timestamp: bool | None = True

    @classmethod
    def start(cls, server: DatabaseServer, state: Capture) -> Replay:
        mariadb, version = server_version(server)
        collation = str(server.sql("SELECT @@collation_server")[0][0])
        return cls(mariadb, version, collation, dict(state.tables), dict(state.databases))

    def apply(self, event: QueryEvent) -> DdlEffect | None:
        """Move the state by one QueryEvent, with the context a replica has: the event's
        database, sql_mode, collation_server (and explicit_defaults_for_timestamp where
        the server logs it; the session's setting given to the replay otherwise)."""
        server = self.server_collation
        if event.charset is not None:
            server = collation_name(event.charset[2], self.mariadb) or server
        explicit = self.explicit_defaults_for_timestamp
        if event.explicit_defaults_for_timestamp is not None:
            explicit = bool(event.explicit_defaults_for_timestamp)
        ctx = DdlContext(
            default_schema=event.schema,
            mariadb=self.mariadb,
            version=self.version,
            server_collation=server,
            lookup=lambda s, t: self.tables.get((s, t)),
            database_collation=self.databases.get,
            exists=self.exists,
            sql_mode=event.sql_mode,
            explicit_defaults_for_timestamp=explicit,
        )
        query = event.query
        effect = interpret(query, ctx)
        self.effects.append((query, effect))
        if effect is None:
            return None
        for db, collation in effect.databases.items():
            if collation is None:
                self.databases.pop(db, None)
                for key in [k for k in (*self.tables, *self.unknown) if k[0] == db]:
                    self.tables.pop(key, None)
                    self.unknown.pop(key, None)
            else:
                self.databases[db] = collation
        for key, table in effect.tables.items():
            self.unknown.pop(key, None)
            if table is None:
                self.tables.pop(key, None)
            else:
                assert (table.schema, table.name) == key, (key, table)
                self.tables[key] = table
        for key, reason in effect.unknown.items():
            self.tables.pop(key, None)
            self.unknown[key] = reason
        return effect

    def exists(self, schema: str, table: str) -> bool | None:
        """What a caller that tracks whole databases knows: a table of a tracked database
        exists when it has a definition or is unknown, and does not exist otherwise."""
        if (schema, table) in self.unknown or (schema, table) in self.tables:
            return True
        return False if schema in self.databases else None

    def apply_all(self, events: Sequence[QueryEvent]) -> None:
        for event in events:
            self.apply(event)

    def differences(self, now: Capture, schemas: Iterable[str]) -> list[str]:
        """What differs from the server's state now (unknown tables left out)."""
        out = []
        wanted = set(schemas)
        keys = {k for k in (*self.tables, *now.tables) if k[0] in wanted}
        for key in sorted(keys - set(self.unknown)):
            mine, theirs = _as_shown(self.tables.get(key)), now.tables.get(key)
            if mine != theirs:
                out.append(f"{key}:\n  interpreted {_show(mine)}\n  server      {_show(theirs)}")
        for db in sorted(wanted):
            if db in self.databases and self.databases.get(db) != now.databases.get(db):
                out.append(f"database {db}: {self.databases.get(db)} != {now.databases.get(db)}")
        return out


def _as_shown(table: TableDef | None) -> TableDef | None:
    """``table`` as information_schema can show it: a label's characters beyond U+FFFF
    are ``?`` there (its COLUMN_TYPE is utf8mb3; the server keeps the label whole)."""
    if table is None or all(
        label.isascii() or max(map(ord, label)) <= 0xFFFF
        for c in table.columns
        for label in c.labels
    ):
        return table
    columns = tuple(
        replace(c, labels=tuple(re.sub("[\U00010000-\U0010ffff]", "?", x) for x in c.labels))
        for c in table.columns
    )
    return replace(table, columns=columns)


_SHOWN = (
    "unsigned", "length", "precision", "scale", "fsp", "charset", "collation", "labels",
    "nullable", "generated", "invisible", "compressed",
)  # fmt: skip


def _show(table: TableDef | None) -> str:
    if table is None:
        return "(none)"
    cols = ", ".join(
        f"{c.name} {c.data_type}"
        + "".join(
            f" {f}={getattr(c, f)!r}"
            for f in _SHOWN
            if getattr(c, f) != getattr(ColumnDef("", ""), f)
        )
        for c in table.columns
    )
    return f"[{cols}] pk={table.primary_key} {table.charset}/{table.collation}"
