"""Every question to the primary over an ordinary client connection (never the replica's).

- :mod:`.queries`: the statements and the parsing of their rows, sans I/O, and
  the procedures built on them (capture a schema history at a binlog point);
- :mod:`.blocking`: the runner: a client connection over the project's own wire
  protocol (:class:`SqlConnection`) and binlog scans, blocking;
- the asyncio runner and the answers the stream asks for are
  :mod:`replica_client.aio.control` (aiomysql).
"""

from __future__ import annotations

from .blocking import SqlConnection, run, scan_queries, sql_literal
from .queries import (
    BinlogEnd,
    PreparedHistory,
    Procedure,
    Query,
    QueryFailed,
    ScannedQuery,
    ScanQueries,
    ServerFacts,
    binlog_end,
    prepare_history,
    server_facts,
    table_definitions,
)

__all__ = [
    "BinlogEnd",
    "PreparedHistory",
    "Procedure",
    "Query",
    "QueryFailed",
    "ScanQueries",
    "ScannedQuery",
    "ServerFacts",
    "SqlConnection",
    "binlog_end",
    "prepare_history",
    "run",
    "scan_queries",
    "server_facts",
    "sql_literal",
    "table_definitions",
]
