"""replica_client: a MariaDB replica in Python.

Streams the binary log of a live primary through ``async for`` (``connect``),
reads binlog files (``open_binlog``), and turns row events into changes
(``iter_changes``).
"""

from __future__ import annotations

from .errors import (
    AuthenticationError,
    BinlogPositionError,
    ChecksumMismatchError,
    ConfigError,
    ConnectionLostError,
    DecryptionError,
    LimitExceededError,
    MalformedEventError,
    PacketSequenceError,
    PacketTooLargeError,
    ProtocolError,
    ReplicaError,
    ReplicaTimeoutError,
    ServerError,
    StateError,
    TruncatedBinlogError,
    UnknownEventError,
    UnsupportedError,
)
from .position import FilePos, Gtid, GtidTriple

__version__ = "0.1.0"

__all__ = [
    "AuthenticationError",
    "BinlogPositionError",
    "ChecksumMismatchError",
    "ConfigError",
    "ConnectionLostError",
    "DecryptionError",
    "FilePos",
    "Gtid",
    "GtidTriple",
    "LimitExceededError",
    "MalformedEventError",
    "PacketSequenceError",
    "PacketTooLargeError",
    "ProtocolError",
    "ReplicaError",
    "ReplicaTimeoutError",
    "ServerError",
    "StateError",
    "TruncatedBinlogError",
    "UnknownEventError",
    "UnsupportedError",
    "__version__",
]
