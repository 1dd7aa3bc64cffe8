"""The asyncio runner of the control layer (aiomysql): questions to the primary.

Driver layer: ordinary SQL over a normal client connection, never on the
replication connection. :func:`ask` drives a procedure of
:mod:`replica_client.control.queries` (its binlog scans run in a worker
thread, :func:`replica_client.control.blocking.scan_queries`). Also here:

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

import aiomysql

from ..codec import is_mariadb_version
from ..control.queries import (
    PRIMARY_STATE_SQL,
    PrimaryState,
    Procedure,
    client_error,
    primary_state_from,
)
from ..position import FilePos, Gtid, MysqlGtidSet
from ..schema import ColumnSchema
from .config import ReplicaConfig

T = TypeVar("T")

__all__ = [
    "InformationSchemaProvider",
    "ask",
    "PRIMARY_STATE_SQL",
    "PrimaryState",
    "ServerInfo",
    "binlog_files",
    "current_position",
    "open_control",
    "primary_state",
    "primary_state_from",
    "server_info",
]


async def open_control(config: ReplicaConfig, **options: Any) -> Any:
    """An aiomysql connection with the replica's address, account and TLS settings
    (``options`` go to ``aiomysql.connect``).

    Raises:
        ConnectionLostError: the primary cannot be reached.
        ServerError: the primary refused the login (AuthenticationError for 1045).
    """
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


async def server_info(conn: Any) -> ServerInfo:
    """Version, flavor and binlog settings of the primary."""
    version = str((await _rows(conn, "SELECT VERSION()"))[0][0])
    mariadb = is_mariadb_version(version)
    variables = {
        str(name).lower(): value
        for name, value in await _rows(
            conn,
            "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('server_id', 'binlog_format', "
            "'binlog_row_metadata', 'binlog_checksum', 'rpl_semi_sync_master_enabled', "
            "'rpl_semi_sync_source_enabled')",
        )
    }
    semi = variables.get("rpl_semi_sync_master_enabled") or variables.get(
        "rpl_semi_sync_source_enabled"
    )
    return ServerInfo(
        version=version,
        is_mariadb=mariadb,
        server_id=int(variables.get("server_id", 0)),
        binlog_format=str(variables.get("binlog_format", "")),
        binlog_row_metadata=variables.get("binlog_row_metadata"),
        binlog_checksum=str(variables.get("binlog_checksum", "NONE")),
        semi_sync_enabled=str(semi).upper() in ("ON", "1"),
    )


async def current_position(conn: Any) -> tuple[FilePos | None, Gtid | MysqlGtidSet | None]:
    """The primary's binlog end: (file position, GTID state) as of now.

    The file position needs BINLOG MONITOR / REPLICATION CLIENT; ``None`` when
    the account lacks it or binary logging is off.
    """
    version = str((await _rows(conn, "SELECT VERSION()"))[0][0])
    mariadb = is_mariadb_version(version)
    filepos: FilePos | None = None
    for statement in ("SHOW MASTER STATUS", "SHOW BINARY LOG STATUS"):
        try:
            rows = await _rows(conn, statement)
        except Exception:  # privilege or syntax varies by server
            continue
        if rows:
            filepos = FilePos(str(rows[0][0]), int(rows[0][1]))
        break
    gtid: Gtid | MysqlGtidSet | None
    if mariadb:
        gtid = Gtid(str((await _rows(conn, "SELECT @@GLOBAL.gtid_binlog_pos"))[0][0] or ""))
    else:
        text = (await _rows(conn, "SELECT @@GLOBAL.gtid_executed"))[0][0]
        gtid = MysqlGtidSet(str(text or "")) if text else None
    return filepos, gtid


async def primary_state(conn: Any) -> PrimaryState:
    """Flavor, read-only flag and GTID state (no privilege needed beyond a login)."""
    version = str((await _rows(conn, "SELECT VERSION()"))[0][0])
    row = (await _rows(conn, PRIMARY_STATE_SQL[is_mariadb_version(version)]))[0]
    return primary_state_from(version, row)


async def binlog_files(conn: Any) -> list[tuple[str, int]]:
    """``SHOW BINARY LOGS``: (file name, size) pairs, oldest first."""
    return [(str(r[0]), int(r[1])) for r in await _rows(conn, "SHOW BINARY LOGS")]


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
