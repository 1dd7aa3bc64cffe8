"""What a replication connection is given to log in and ask for the binlog. No I/O.

:class:`RegistrationSettings`, validated when built, and the types of its start
position and semi-sync mode.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Final, Literal

from ..errors import ConfigError
from ..position import FilePos, Gtid, MysqlGtidSet
from .framing import DEFAULT_MAX_PACKET_SIZE

__all__ = [
    "RegistrationSettings",
    "SemiSyncMode",
    "StartSpec",
]

SemiSyncMode = Literal["on", "off", "auto"]
#: Where to start: ``None`` = the first binlog, "now" = the primary's current
#: position (resolved in-band), a file position, a MariaDB GTID state, or a
#: MySQL GTID set.
StartSpec = FilePos | Gtid | MysqlGtidSet | Literal["now"] | None

_MAX_HEARTBEAT_NS: Final = 4_294_967 * 10**9


@dataclass(frozen=True, slots=True)
class RegistrationSettings:
    """What the state machine needs to log in and ask for the binlog."""

    user: str
    password: bytes = field(default=b"", repr=False)
    server_id: int = 0
    start: StartSpec = None
    blocking: bool = True
    heartbeat_period: float = 0.0
    semi_sync: SemiSyncMode = "off"
    annotate_rows: bool = True
    tls: bool = False
    gtid_strict_mode: bool | None = None
    gtid_ignore_duplicates: bool | None = None
    report_host: str = ""
    report_port: int = 0
    report_user: str = ""
    replica_uuid: str | None = None
    max_packet_size: int = DEFAULT_MAX_PACKET_SIZE
    server_public_key: bytes | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not 1 <= self.server_id < 1 << 32:
            raise ConfigError("server_id must be between 1 and 4294967295")
        if self.heartbeat_period < 0 or self.heartbeat_period * 1e9 > _MAX_HEARTBEAT_NS:
            raise ConfigError("heartbeat_period must be between 0 and 4294967 seconds")
        if self.semi_sync not in ("on", "off", "auto"):
            raise ConfigError(f"semi_sync must be 'on', 'off' or 'auto', not {self.semi_sync!r}")
        if self.semi_sync == "on" and not self.blocking:
            raise ConfigError("semi_sync='on' needs blocking=True (a non-blocking dump never ACKs)")
        start = self.start
        if start not in (None, "now") and not isinstance(start, FilePos | Gtid | MysqlGtidSet):
            raise ConfigError(f"invalid start position {self.start!r}")
        if self.replica_uuid is not None:
            try:
                uuid.UUID(self.replica_uuid)
            except ValueError as exc:
                raise ConfigError(f"invalid replica_uuid {self.replica_uuid!r}") from exc
