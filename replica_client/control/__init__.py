"""Every question to the primary over an ordinary client connection (never the replica's).

- :mod:`.queries`: the statements and the parsing of their rows, sans I/O, and
  the procedures built on them (capture a schema history at a binlog point);
- :mod:`.aio`: the asyncio runner (aiomysql), and the answers the stream asks for;
- :mod:`.blocking`: the blocking runner (PyMySQL), for the Spark driver.
"""

from __future__ import annotations

from .aio import (
    PRIMARY_STATE_SQL,
    InformationSchemaProvider,
    PrimaryState,
    ServerInfo,
    binlog_files,
    current_position,
    open_control,
    primary_state,
    primary_state_from,
    server_info,
)

__all__ = [
    "PRIMARY_STATE_SQL",
    "InformationSchemaProvider",
    "PrimaryState",
    "ServerInfo",
    "binlog_files",
    "current_position",
    "open_control",
    "primary_state",
    "primary_state_from",
    "server_info",
]
