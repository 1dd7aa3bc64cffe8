"""The MySQL/MariaDB client protocol for one replication connection. No I/O.

Packet framing (:mod:`.framing`), packet builders and parsers
(:mod:`.packets`), authentication plugins (:mod:`.auth`) and the registration
state machine (:mod:`.registration`). GTID types live in :mod:`replica_client.position`.
Nothing here imports asyncio, socket, ssl, threading or mmap: bytes in, bytes
and payloads out.
"""

from __future__ import annotations

from .constants import BinlogDumpFlag, Capability, Command
from .framing import MAX_CHUNK, PacketFramer, frame_payload
from .registration import (
    END_OF_STREAM,
    Flavor,
    RegistrationMachine,
    RegistrationSettings,
    State,
)

__all__ = [
    "END_OF_STREAM",
    "MAX_CHUNK",
    "BinlogDumpFlag",
    "Capability",
    "Command",
    "Flavor",
    "PacketFramer",
    "RegistrationMachine",
    "RegistrationSettings",
    "State",
    "frame_payload",
]
