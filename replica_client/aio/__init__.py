"""The asyncio driver: the only package that imports asyncio.

``connect()`` opens a replication connection and returns a
:class:`BinlogStream`; :class:`ReplicaConfig` holds every option.
"""

from __future__ import annotations

from .config import AckMode, ReconnectPolicy, ReplicaConfig, SchemaProvider, Start, TlsMode
from .protocol import ReplicaProtocol
from .stream import BinlogStream, ChangeStream, StreamMetrics, connect

__all__ = [
    "AckMode",
    "BinlogStream",
    "ChangeStream",
    "ReconnectPolicy",
    "ReplicaConfig",
    "ReplicaProtocol",
    "SchemaProvider",
    "Start",
    "StreamMetrics",
    "TlsMode",
    "connect",
]
