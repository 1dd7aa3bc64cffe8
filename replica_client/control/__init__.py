"""Every question to the primary over an ordinary client connection (never the replica's).

- :mod:`.queries`: the statements and the parsing of their rows, sans I/O, and
  the procedures built on them (capture a schema history at a binlog point);
- :mod:`.blocking`: the blocking runner (PyMySQL), for the Spark driver, and the
  binlog scans of both runners;
- the asyncio runner and the answers the stream asks for are
  :mod:`replica_client.aio.control` (aiomysql).
"""

from __future__ import annotations

from .blocking import connect_blocking, run, scan_queries
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
    "binlog_end",
    "connect_blocking",
    "prepare_history",
    "run",
    "scan_queries",
    "server_facts",
    "table_definitions",
]
