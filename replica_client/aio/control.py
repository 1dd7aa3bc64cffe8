"""The asyncio runner of the control layer (aiomysql): questions to the primary.

Driver layer: ordinary SQL over a normal client connection, never on the
replication connection. :func:`ask` drives a procedure of
:mod:`replica_client.control` over the project's own client connection in a
worker thread (binlog scans included); :func:`drive_async` drives one over an
aiomysql connection (the snapshot's, inside its transaction). Also here, each
the procedure of :mod:`replica_client.control.primary` over aiomysql:

* what the primary is: version, flavor, server_id, binlog settings
  (:func:`server_info`);
* where its binlog is now: file position and GTID state (:func:`current_position`)
  and the binlog file list (:func:`binlog_files`);
* column names for servers that do not write FULL row metadata
  (:class:`InformationSchemaProvider`, a ``schema_provider`` for
  :class:`~replica_client.aio.ReplicaConfig`).

``connect()`` asks through it for the table definitions at the start
(``schema_history``) and, on failover, which host is a writable primary.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..control import primary as asked
from ..control.blocking import client_error
from ..control.primary import PrimaryState, ServerFacts, server_facts
from ..control.procedure import (
    Answer,
    Procedure,
    Query,
    ScanQueries,
    drive_awaiting,
    text_rows,
    tolerated,
)
from ..position import FilePos, Gtid, MysqlGtidSet
from ..schema import ColumnSchema
from .config import ReplicaConfig

T = TypeVar("T")

__all__ = [
    "InformationSchemaProvider",
    "PrimaryState",
    "ServerInfo",
    "ask",
    "binlog_files",
    "current_position",
    "drive_async",
    "open_control",
    "primary_state",
    "server_info",
]


async def open_control(config: ReplicaConfig, **options: Any) -> Any:
    """An aiomysql connection with the replica's address, account and TLS settings
    (``options`` go to ``aiomysql.connect``).

    Raises:
        ConnectionLostError: the primary cannot be reached.
        ServerError: the primary refused the login (AuthenticationError for 1045).
    """
    # (imported here: a stream asks its questions with ask(), and connecting
    # to stream need not import aiomysql, 1.6 ms)
    import aiomysql

    try:
        return await aiomysql.connect(
            host=config.host,
            port=config.port,
            unix_socket=config.unix_socket,
            user=config.user,
            password=config.password,
            ssl=config.ssl_context(),
            autocommit=True,
            connect_timeout=config.connect_timeout,
            charset="utf8mb4",
            **options,
        )
    except Exception as exc:
        raise client_error(exc, config.address) from exc


async def ask(config: ReplicaConfig, procedure: Procedure[T]) -> T:
    """Drive a procedure of :mod:`replica_client.control.queries` to its result: the
    blocking runner (the project's own client connection, and binlog scans) in a
    worker thread, so the event loop goes on meanwhile."""
    from ..control.blocking import run

    return await asyncio.to_thread(run, config, procedure)


async def drive_async(procedure: Procedure[T], conn: Any) -> T:
    """Drive ``procedure`` over an aiomysql connection (e.g. one inside a snapshot's
    transaction): :func:`replica_client.control.procedure.drive` with ``await``. Text
    comes back as ``str`` whatever the connection's ``use_unicode``; a failed query is
    thrown into the procedure, as there."""
    return await drive_awaiting(procedure, lambda request: _answer(conn, request))


async def _answer(conn: Any, request: Query | ScanQueries) -> Answer:
    import aiomysql  # (imported with the connection: see open_control)

    if isinstance(request, ScanQueries):
        raise TypeError("a binlog scan needs ask(), not an aiomysql connection")
    try:
        return text_rows(await _rows(conn, request.sql, request.args or None))
    except aiomysql.Error as exc:
        if (failed := tolerated(request, exc)) is not None:
            return failed
        raise


async def _rows(conn: Any, sql: str, args: Sequence[object] | None = None) -> list[tuple[Any, ...]]:
    async with conn.cursor() as cur:
        await cur.execute(sql, args)
        return list(await cur.fetchall())


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """What the primary says about itself."""

    version: str
    is_mariadb: bool
    server_id: int
    binlog_format: str
    binlog_row_metadata: str | None
    binlog_checksum: str
    semi_sync_enabled: bool

    @classmethod
    def of(cls, facts: ServerFacts) -> ServerInfo:
        return cls(
            version=facts.version,
            is_mariadb=facts.mariadb,
            server_id=facts.server_id,
            binlog_format=facts.variables.get("binlog_format", ""),
            binlog_row_metadata=facts.variables.get("binlog_row_metadata"),
            binlog_checksum=facts.variables.get("binlog_checksum", "NONE"),
            semi_sync_enabled=facts.semi_sync_enabled,
        )


async def server_info(conn: Any) -> ServerInfo:
    """Version, flavor and binlog settings of the primary."""
    return ServerInfo.of(await drive_async(server_facts(), conn))


async def current_position(conn: Any) -> tuple[FilePos | None, Gtid | MysqlGtidSet | None]:
    """The primary's binlog end: (file position, GTID state) as of now.

    The file position needs BINLOG MONITOR / REPLICATION CLIENT; ``None`` when
    the account lacks it or binary logging is off. The GTID state is None on a
    MySQL primary without GTIDs.
    """
    end = await drive_async(asked.current_end(exact=True), conn)
    no_gtids = isinstance(end.gtid, MysqlGtidSet) and not end.gtid
    return end.position, None if no_gtids else end.gtid


async def primary_state(conn: Any) -> PrimaryState:
    """Flavor, read-only flag and GTID state (no privilege needed beyond a login)."""
    return await drive_async(asked.primary_state(), conn)


async def binlog_files(conn: Any) -> list[tuple[str, int]]:
    """``SHOW BINARY LOGS``: (file name, size) pairs, oldest first."""
    return await drive_async(asked.binlog_files(), conn)


class InformationSchemaProvider:
    """``schema_provider`` that reads names and data types from ``information_schema.COLUMNS``.

    Names are cached per table; call :meth:`forget` after DDL, :meth:`aclose`
    when done. The account needs SELECT on the tables it should name.
    """

    def __init__(self, config: ReplicaConfig) -> None:
        self._config = config
        self._conn: Any = None
        self._cache: dict[tuple[str, str], tuple[ColumnSchema, ...] | None] = {}

    def __repr__(self) -> str:
        return f"<InformationSchemaProvider {self._config.address} cached={len(self._cache)}>"

    async def __call__(self, schema: str, table: str) -> Sequence[ColumnSchema] | None:
        key = (schema, table)
        if key in self._cache:
            return self._cache[key]
        if self._conn is None:
            self._conn = await open_control(self._config)
        rows = await _rows(
            self._conn,
            "SELECT COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
            (schema, table),
        )
        columns = tuple(ColumnSchema(str(name), str(dtype).lower()) for name, dtype in rows)
        self._cache[key] = columns or None
        return self._cache[key]

    def forget(self, schema: str | None = None, table: str | None = None) -> None:
        """Drop cached names (all, one schema, or one table)."""
        if schema is None:
            self._cache.clear()
            return
        for key in [k for k in self._cache if k[0] == schema and table in (None, k[1])]:
            del self._cache[key]

    async def aclose(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
