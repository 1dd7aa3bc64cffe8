"""``ReplicaConfig``: every option of a network replica, in one frozen object.

Driver layer (may import ssl). Validated on construction, so a bad option
fails before anything is sent. The password is hidden from ``repr``.
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Literal

from ..binlog.events import Event
from ..changes import Statements
from ..checkpoint import Checkpoint
from ..config import DecoderOptions, TableFilter, format_address, parse_address
from ..delivery import AckMode
from ..errors import ConfigError
from ..position import FilePos, Gtid, MysqlGtidSet
from ..schema import ProvidedColumns
from ..schema.history import SchemaHistory, Unproven
from ..snapshot import SnapshotMode, SnapshotState
from ..tls import TLS_MODES, TlsMode, client_ssl_context
from ..wire.framing import DEFAULT_MAX_PACKET_SIZE
from ..wire.registration import RegistrationSettings, SemiSyncMode

__all__ = [
    "AckMode",
    "ReconnectPolicy",
    "ReplicaConfig",
    "SchemaHistoryOption",
    "SchemaProvider",
    "Start",
    "TlsMode",
]

#: ``async (schema, table) -> columns | None``: column names, or
#: ``replica_client.schema.ColumnSchema`` entries (name and SQL data type), for
#: what the binlog cannot say (names without FULL row metadata; MariaDB UUID,
#: INET4/INET6 and VECTOR, written as binary strings). Called by the driver,
#: never by the decoder.
SchemaProvider = Callable[[str, str], Awaitable[ProvidedColumns | None]]
#: "earliest" (first binlog), "now" (the primary's current GTID state / end),
#: a file position, a MariaDB GTID state, or a MySQL GTID set. ``connect()`` also
#: takes a :class:`~replica_client.checkpoint.Checkpoint`: its GTID state (or
#: position), and its schema history as ``schema_history``.
Start = Literal["earliest", "now"] | FilePos | Gtid | MysqlGtidSet
#: Where the table definitions the binlog lacks come from: "auto" (read from the
#: primary at the start; the binlog between the start and that moment read for
#: DDL where it matters), "scan" (that read always), "off" (none: TABLE_MAPs as
#: the binlog has them), or a history (a checkpoint's, valid at ``start``).
SchemaHistoryOption = Literal["auto", "scan", "off"] | SchemaHistory

_PACKET_OVERHEAD = 64  # status byte + semi-sync header, with room to spare


@dataclass(frozen=True, slots=True)
class ReconnectPolicy:
    """How the stream reconnects after losing the primary.

    Attributes:
        enabled: reconnect at all (off: connection loss raises ``ConnectionLostError``).
        max_attempts: consecutive failed attempts before giving up (None: forever).
        initial_delay / max_delay / multiplier: exponential backoff, in seconds.
    """

    enabled: bool = True
    max_attempts: int | None = 20
    initial_delay: float = 0.1
    max_delay: float = 5.0
    multiplier: float = 2.0

    def __post_init__(self) -> None:
        if self.max_attempts is not None and self.max_attempts < 1:
            raise ConfigError("ReconnectPolicy.max_attempts must be at least 1 (or None)")
        if self.initial_delay < 0 or self.max_delay < self.initial_delay or self.multiplier < 1:
            raise ConfigError(
                "ReconnectPolicy delays must satisfy 0 <= initial <= max and multiplier >= 1"
            )

    def delay(self, attempt: int) -> float:
        """Seconds to wait before reconnect attempt ``attempt`` (0-based)."""
        return float(min(self.max_delay, self.initial_delay * self.multiplier**attempt))


@dataclass(frozen=True, slots=True)
class ReplicaConfig:
    """Options of :func:`replica_client.connect`.

    Attributes:
        host, port: the primary's address; or ``unix_socket``: a socket path.
        hosts: several primaries' addresses (``"h1:3306"``, ``"h2"``, ``"[::1]:3307"``),
            the first one streamed from (it sets ``host``/``port``): when the primary
            is lost and does not come back within the reconnect policy, the stream
            moves to the next host that is a writable primary holding every
            transaction already delivered, and resumes there by GTID.
        user, password: the replication account (needs REPLICATION SLAVE).
        server_id: this replica's id; must differ from the primary's and from
            every other replica's (a duplicate id makes the primary drop the other).
        report_host, report_port, report_user: what SHOW SLAVE HOSTS shows.
        start: where to start; see :data:`Start`.
        blocking: follow the binlog forever (True) or end at its current end
            (False: COM_BINLOG_DUMP's BINLOG_DUMP_NON_BLOCK; the iteration stops).
        heartbeat_period: seconds between heartbeats the primary sends when
            idle (0: none); no byte for twice this long counts as a stall.
        semi_sync: "on" (require), "off", or "auto" (when the primary has it on).
        ack_mode: see :data:`AckMode`.
        annotate_rows: ask MariaDB for ANNOTATE_ROWS events (dump flag 2).
        event_types: deliver only these event classes (None: all).
        decoder: decoder options: checksum verification, table filter, max
            event size, table-map cache.
        tls, tls_ca, tls_context: TLS; a given ``tls_context`` wins over ``tls``.
        reconnect: the reconnect policy.
        connect_timeout: seconds for TCP connect + login + registration.
        schema_provider: column names and types the binlog lacks (see SchemaProvider).
        gtid_strict_mode, gtid_ignore_duplicates: MariaDB GTID start options
            (None: the primary's default).
        max_buffered_events / max_buffered_bytes: undelivered events/bytes
            above which reading from the primary pauses (resumes at a quarter).
        server_public_key: PEM RSA key for sha256/caching_sha2 without TLS.
        replica_uuid: MySQL @replica_uuid (default: derived from server_id).
        snapshot: read the tables' existing rows first (``changes()`` yields them with
            ``op="read"``), then stream from exactly the point they were read at.
            ``True`` or ``"consistent"``: one transaction; ``"chunked"``: primary-key
            chunks of ``snapshot_chunk_rows`` in short transactions while the stream
            runs; a saved ``stream.snapshot_state`` resumes one. ``start`` is ignored.
        snapshot_tables: ``"schema.table"`` names to read (default: the tables the
            ``tables`` filter selects, system schemas excluded).
        schema_history: the tables' definitions where the binlog lacks them (see
            :data:`SchemaHistoryOption`): names, signedness, charsets, ENUM/SET
            labels and SQL types on primaries whose ``binlog_row_metadata`` is not
            FULL, followed through every DDL; checked against every TABLE_MAP.
        unproven: a TABLE_MAP the history cannot vouch for raises
            ``SchemaHistoryError`` (``"error"``) or is delivered as the binlog has it,
            keyed ``@1``, ``@2``, ... (``"positional"``).
        statements: ``changes()`` and a statement that changed rows logged as SQL
            text (``binlog_format`` MIXED/STATEMENT): ``"error"`` raises
            ``StatementLoggedError``, ``"deliver"`` yields a change with
            ``op="statement"``.
    """

    user: str
    server_id: int
    password: str = field(default="", repr=False)
    host: str = "127.0.0.1"
    port: int = 3306
    hosts: tuple[str, ...] = ()
    unix_socket: str | None = None
    report_host: str = ""
    report_port: int = 0
    report_user: str = ""
    start: Start = "earliest"
    blocking: bool = True
    heartbeat_period: float = 30.0
    semi_sync: SemiSyncMode = "off"
    ack_mode: AckMode = "auto"
    annotate_rows: bool = True
    event_types: tuple[type[Event], ...] | None = None
    decoder: DecoderOptions = field(default_factory=DecoderOptions)
    tls: TlsMode = "off"
    tls_ca: str | None = None
    tls_context: ssl.SSLContext | None = field(default=None, repr=False, compare=False)
    reconnect: ReconnectPolicy = field(default_factory=ReconnectPolicy)
    connect_timeout: float = 10.0
    schema_provider: SchemaProvider | None = field(default=None, repr=False, compare=False)
    gtid_strict_mode: bool | None = None
    gtid_ignore_duplicates: bool | None = None
    max_buffered_events: int = 1024
    max_buffered_bytes: int = 64 << 20
    server_public_key: bytes | None = field(default=None, repr=False)
    replica_uuid: str | None = None
    snapshot: bool | SnapshotMode | SnapshotState = False
    snapshot_tables: tuple[str, ...] | None = None
    snapshot_chunk_rows: int = 10_000
    schema_history: SchemaHistoryOption = field(default="auto", compare=False)
    unproven: Unproven = "error"
    statements: Statements = "error"

    def __post_init__(self) -> None:
        start: object = self.start
        if isinstance(start, Checkpoint):
            # a checkpoint: its GTID state (or position), and the history valid there
            checkpoint = start
            object.__setattr__(self, "start", checkpoint.start)
            if checkpoint.schema_history is not None and self.schema_history in ("auto", "scan"):
                object.__setattr__(self, "schema_history", checkpoint.schema_history)
        if isinstance(self.hosts, str):
            object.__setattr__(self, "hosts", tuple(h for h in self.hosts.split(",") if h))
        elif not isinstance(self.hosts, tuple):
            object.__setattr__(self, "hosts", tuple(str(h) for h in self.hosts))
        if self.hosts:
            parsed = [parse_address(h) for h in self.hosts]
            if self.unix_socket:
                raise ConfigError("hosts and unix_socket exclude each other")
            object.__setattr__(self, "hosts", tuple(format_address(h, p) for h, p in parsed))
            object.__setattr__(self, "host", parsed[0][0])
            object.__setattr__(self, "port", parsed[0][1])
        if not 0 < self.port < 65536:
            raise ConfigError(f"invalid port {self.port}")
        if self.tls not in TLS_MODES:
            raise ConfigError(f"invalid tls mode {self.tls!r}")
        if self.ack_mode not in ("auto", "manual", "receipt"):
            raise ConfigError(
                f"ack_mode must be 'auto', 'manual' or 'receipt', not {self.ack_mode!r}"
            )
        if self.max_buffered_events < 4 or self.max_buffered_bytes < 1024:
            raise ConfigError("max_buffered_events must be >= 4 and max_buffered_bytes >= 1024")
        if self.connect_timeout <= 0:
            raise ConfigError("connect_timeout must be positive")
        if isinstance(self.start, str) and self.start not in ("earliest", "now"):
            raise ConfigError(
                f"start must be 'earliest', 'now', a FilePos, a Gtid, a MysqlGtidSet or a "
                f"Checkpoint, not {self.start!r}"
            )
        if self.event_types is not None and not all(
            isinstance(t, type) and issubclass(t, Event) for t in self.event_types
        ):
            raise ConfigError("event_types must be Event subclasses")
        if isinstance(self.snapshot_tables, str):
            object.__setattr__(self, "snapshot_tables", (self.snapshot_tables,))
        elif self.snapshot_tables is not None:
            object.__setattr__(self, "snapshot_tables", tuple(self.snapshot_tables))
        if not (
            isinstance(self.snapshot, bool | SnapshotState)
            or self.snapshot in ("consistent", "chunked")
        ):
            raise ConfigError(
                f"snapshot must be True, 'consistent', 'chunked' or a SnapshotState, "
                f"not {self.snapshot!r}"
            )
        if self.snapshot_chunk_rows < 1:
            raise ConfigError("snapshot_chunk_rows must be at least 1")
        if not isinstance(self.schema_history, SchemaHistory) and self.schema_history not in (
            "auto",
            "scan",
            "off",
        ):
            raise ConfigError(
                "schema_history must be 'auto', 'scan', 'off' or a SchemaHistory, "
                f"not {self.schema_history!r}"
            )
        if self.unproven not in ("error", "positional"):
            raise ConfigError(f"unproven must be 'error' or 'positional', not {self.unproven!r}")
        if self.statements not in ("error", "deliver"):
            raise ConfigError(f"statements must be 'error' or 'deliver', not {self.statements!r}")
        self.registration_settings()  # validates server_id, heartbeat, semi_sync, uuid

    @classmethod
    def from_kwargs(cls, **kwargs: object) -> ReplicaConfig:
        """Build a config; ``tables``, ``verify_checksum`` and ``max_event_size``
        are accepted as shortcuts into ``decoder``."""
        dec: dict[str, object] = {}
        for key in ("tables", "verify_checksum", "max_event_size"):
            if key in kwargs:
                dec[key] = kwargs.pop(key)
        if isinstance(dec.get("tables"), str | list | tuple):
            dec["tables"] = TableFilter.parse(dec["tables"])  # type: ignore[arg-type]
        if dec:
            base = kwargs.pop("decoder", None) or DecoderOptions()
            assert isinstance(base, DecoderOptions)
            kwargs["decoder"] = replace(base, **dec)  # type: ignore[arg-type]
        if "tls" in kwargs and kwargs["tls"] is True:
            kwargs["tls"] = "required"
        elif "tls" in kwargs and kwargs["tls"] in (False, None):
            kwargs["tls"] = "off"
        if isinstance(kwargs.get("tls"), ssl.SSLContext):
            kwargs["tls_context"] = kwargs.pop("tls")
        return cls(**kwargs)  # type: ignore[arg-type]

    @property
    def snapshot_mode(self) -> SnapshotMode | None:
        """The snapshot's mode, None without one."""
        if isinstance(self.snapshot, SnapshotState):
            return self.snapshot.mode
        if self.snapshot is True:
            return "consistent"
        return self.snapshot or None

    @property
    def uses_tls(self) -> bool:
        return self.tls_context is not None or self.tls != "off"

    @property
    def address(self) -> str:
        return self.unix_socket or format_address(self.host, self.port)

    @property
    def addresses(self) -> tuple[str, ...]:
        """Every primary the stream may use, the current one first."""
        return self.hosts or (self.address,)

    def for_address(self, address: str) -> ReplicaConfig:
        """This config pointed at another of its hosts."""
        host, port = parse_address(address)
        return replace(self, host=host, port=port, hosts=())

    def ssl_context(self) -> ssl.SSLContext | None:
        """The SSLContext for the TLS upgrade (None without TLS)."""
        if self.tls_context is not None:
            return self.tls_context
        return client_ssl_context(self.tls, self.tls_ca)

    def registration_settings(
        self, start: FilePos | Gtid | MysqlGtidSet | Literal["now"] | None = None
    ) -> RegistrationSettings:
        """The sans-I/O registration settings (``start`` overrides the configured one)."""
        if start is None:
            start = None if self.start == "earliest" else self.start
        return RegistrationSettings(
            user=self.user,
            password=self.password.encode("utf-8"),
            server_id=self.server_id,
            start=start,
            blocking=self.blocking,
            heartbeat_period=self.heartbeat_period,
            semi_sync=self.semi_sync,
            annotate_rows=self.annotate_rows,
            tls=self.uses_tls,
            gtid_strict_mode=self.gtid_strict_mode,
            gtid_ignore_duplicates=self.gtid_ignore_duplicates,
            report_host=self.report_host,
            report_port=self.report_port,
            report_user=self.report_user,
            replica_uuid=self.replica_uuid,
            max_packet_size=min(
                self.decoder.max_event_size + _PACKET_OVERHEAD, DEFAULT_MAX_PACKET_SIZE
            ),
            server_public_key=self.server_public_key,
        )
