"""Every question to the primary over an ordinary client connection (never the replica's).

- :mod:`.procedure`: what a question is (a generator of :class:`Query` values)
  and :func:`drive`, the one loop that answers one; sans I/O;
- :mod:`.primary`: what the primary is, where its binlog ends, the snapshot's
  read point, its state and :class:`FailoverChoice`; sans I/O;
- :mod:`.queries`: the table definitions and a schema history at a binlog
  point; sans I/O;
- :mod:`.blocking`: the runner: a client connection over the project's own wire
  protocol (:class:`SqlConnection`) and binlog scans, blocking;
- the asyncio runner and the answers the stream asks for are
  :mod:`replica_client.aio.control` (aiomysql).
"""

from __future__ import annotations

from .blocking import SqlConnection, run, scan_queries
from .primary import (
    BinlogEnd,
    FailoverChoice,
    PrimaryState,
    ServerFacts,
    binlog_end,
    binlog_files,
    primary_state,
    server_facts,
    snapshot_point,
)
from .procedure import (
    Procedure,
    Query,
    QueryFailed,
    ScannedQuery,
    ScanQueries,
    drive,
    sql_literal,
)
from .queries import PreparedHistory, prepare_history, table_definitions

__all__ = [
    "BinlogEnd",
    "FailoverChoice",
    "PreparedHistory",
    "PrimaryState",
    "Procedure",
    "Query",
    "QueryFailed",
    "ScanQueries",
    "ScannedQuery",
    "ServerFacts",
    "SqlConnection",
    "binlog_end",
    "binlog_files",
    "drive",
    "prepare_history",
    "primary_state",
    "run",
    "scan_queries",
    "server_facts",
    "snapshot_point",
    "sql_literal",
    "table_definitions",
]
