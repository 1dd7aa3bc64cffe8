"""Typed binlog events: frozen, slotted dataclasses. No I/O.

Every event carries its common header (:class:`EventHeader`). Field names follow
the server's names where they exist. Row values are plain tuples in column
order; column names live once on the :class:`TableMapEvent`.

This module holds the control, statement and GTID events of both flavours and
MySQL's own events, and names every event type (:func:`event_type_name`). It
re-exports the rest, so that every event class is importable from here: the
base :class:`Event` and :class:`UnknownEvent` (:mod:`.events_base`), the
legacy v1/v3 events (:mod:`.events_legacy`), TABLE_MAP and rows events
(:mod:`.events_rows`), and the values of row images (:mod:`.values`,
:mod:`.json_binary`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import ClassVar, Final, NamedTuple

from ..codec import is_mariadb_version
from ..position import GtidTriple
from .constants import EventType
from .events_base import Event, UnknownEvent
from .events_legacy import (
    CreateFileEvent,
    DeleteFileEvent,
    ExecLoadEvent,
    LoadEvent,
    SlaveEvent,
    StartEventV3,
)
from .events_rows import (
    ColumnInfo,
    DeleteRowsEvent,
    PartialJson,
    PartialUpdateRowsEvent,
    RawRowsEvent,
    RowsEvent,
    TableMapEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)
from .json_binary import JSON_NULL, JsonNull
from .values import MISSING, Geometry, InvalidDate, InvalidDatetime, Missing, Row

__all__ = [
    "JSON_NULL",
    "MISSING",
    "AnnotateRowsEvent",
    "AnonymousGtidEvent",
    "AppendBlockEvent",
    "BeginLoadQueryEvent",
    "BinlogCheckpointEvent",
    "ColumnInfo",
    "CreateFileEvent",
    "DeleteFileEvent",
    "DeleteRowsEvent",
    "Event",
    "ExecLoadEvent",
    "ExecuteLoadQueryEvent",
    "FormatDescriptionEvent",
    "Geometry",
    "GtidEvent",
    "GtidListEvent",
    "GtidSetEntry",
    "HeartbeatEvent",
    "HeartbeatV2Event",
    "IncidentEvent",
    "IntvarEvent",
    "InvalidDate",
    "InvalidDatetime",
    "JsonNull",
    "LoadEvent",
    "Missing",
    "MysqlGtidEvent",
    "PartialJson",
    "PartialUpdateRowsEvent",
    "PreviousGtidsEvent",
    "QueryEvent",
    "RawRowsEvent",
    "RandEvent",
    "RotateEvent",
    "Row",
    "RowsEvent",
    "RowsQueryEvent",
    "SlaveEvent",
    "StartEncryptionEvent",
    "StartEventV3",
    "StopEvent",
    "TableMapEvent",
    "TransactionContextEvent",
    "TransactionPayloadEvent",
    "UnknownEvent",
    "UpdateRowsEvent",
    "UserVarEvent",
    "ViewChangeEvent",
    "WriteRowsEvent",
    "XaPrepareEvent",
    "XidEvent",
]


_new_tuple: Final = tuple.__new__

# -- control events ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FormatDescriptionEvent(Event):
    """FORMAT_DESCRIPTION_EVENT: describes every later event of the log."""

    binlog_version: int
    server_version: str
    create_timestamp: int
    header_length: int
    #: Post-header length per event type; index 0 is event type 1.
    post_header_lengths: tuple[int, ...]
    #: BinlogChecksumAlg value (255 = the FDE predates checksums).
    checksum_alg: int

    def post_header_len(self, type_code: int) -> int:
        """The post-header length of ``type_code``, 0 if this FDE does not list it."""
        idx = type_code - 1
        lengths = self.post_header_lengths
        return lengths[idx] if 0 <= idx < len(lengths) else 0

    @property
    def is_mariadb(self) -> bool:
        return is_mariadb_version(self.server_version)


@dataclass(frozen=True, slots=True)
class RotateEvent(Event):
    """ROTATE_EVENT: the next event is at ``position`` in ``next_file``.

    The primary sends an artificial one first over the network (``artificial``
    is True, ``log_pos`` 0) to name the file it starts from.
    """

    position: int
    next_file: str


@dataclass(frozen=True, slots=True)
class StopEvent(Event):
    """STOP_EVENT: the server shut down cleanly; the log ends here."""


@dataclass(frozen=True, slots=True)
class HeartbeatEvent(Event):
    """HEARTBEAT_LOG_EVENT: sent by the primary when idle; never written to a file.

    ``log_file`` is the primary's current binlog; ``log_pos`` in the header the
    position the replica has reached.
    """

    log_file: str


@dataclass(frozen=True, slots=True)
class QueryEvent(Event):
    """QUERY_EVENT (also BEGIN/COMMIT and DDL). Status variables are decoded.

    Fields are ``None`` when the status variable is absent.
    """

    thread_id: int
    exec_time: int
    error_code: int
    schema: str
    query: str
    flags2: int | None = None
    sql_mode: int | None = None
    catalog: str | None = None
    auto_increment_increment: int | None = None
    auto_increment_offset: int | None = None
    #: (character_set_client, collation_connection, collation_server) ids.
    charset: tuple[int, int, int] | None = None
    time_zone: str | None = None
    lc_time_names: int | None = None
    charset_database: int | None = None
    table_map_for_update: int | None = None
    master_data_written: int | None = None
    #: (user, host) of the definer for stored routines / views.
    invoker: tuple[str, str] | None = None
    updated_db_names: tuple[str, ...] | None = None
    #: Fractional seconds of the statement start (Q_MICROSECONDS).
    microseconds: int | None = None
    explicit_defaults_for_timestamp: int | None = None
    ddl_xid: int | None = None
    default_collation_for_utf8mb4: int | None = None
    sql_require_primary_key: int | None = None
    default_table_encryption: int | None = None
    #: MariaDB Q_HRNOW: microseconds of the statement's NOW().
    hrnow: int | None = None
    #: MariaDB Q_XID: the XID of a DDL that is its own transaction.
    xid: int | None = None
    #: Status variables this decoder does not know (code, raw rest), never lost.
    unknown_status_vars: bytes = b""
    #: The raw query bytes (the text may not be valid in any single charset).
    query_bytes: bytes = field(default=b"", repr=False)


@dataclass(frozen=True, slots=True)
class XidEvent(Event):
    """XID_EVENT: a transaction on a transactional engine committed."""

    xid: int


@dataclass(frozen=True, slots=True)
class IntvarEvent(Event):
    """INTVAR_EVENT: LAST_INSERT_ID (1) or INSERT_ID (2) for the next statement."""

    kind: int
    value: int

    LAST_INSERT_ID: ClassVar[int] = 1
    INSERT_ID: ClassVar[int] = 2


@dataclass(frozen=True, slots=True)
class RandEvent(Event):
    """RAND_EVENT: the RAND() seeds of the next statement."""

    seed1: int
    seed2: int


@dataclass(frozen=True, slots=True)
class UserVarEvent(Event):
    """USER_VAR_EVENT: a user variable used by the next statement.

    ``value`` is ``None`` for NULL, ``int`` (signedness from ``unsigned``),
    ``float``, ``Decimal``, or ``str``/``bytes`` for strings (bytes when the
    charset is binary or unknown).
    """

    name: str
    value: int | float | Decimal | str | bytes | None
    #: Item_result: 0 STRING, 1 REAL, 2 INT, 3 ROW, 4 DECIMAL (None when NULL).
    value_type: int | None = None
    charset: int | None = None
    unsigned: bool = False


@dataclass(frozen=True, slots=True)
class GtidEvent(Event):
    """MariaDB GTID_EVENT: starts a transaction (or a standalone DDL).

    ``gtid`` is "domain-server-seq"; XA fields are set for XA PREPARE/COMMIT.
    """

    domain_id: int
    seq_no: int
    flags2: int
    commit_id: int | None = None
    xa_format_id: int | None = None
    xa_gtrid: bytes | None = None
    xa_bqual: bytes | None = None
    flags_extra: int = 0
    extra_engines: int | None = None
    sa_seq_no: int | None = None
    thread_id: int | None = None

    FL_STANDALONE: ClassVar[int] = 1
    FL_GROUP_COMMIT_ID: ClassVar[int] = 2
    FL_TRANSACTIONAL: ClassVar[int] = 4
    FL_ALLOW_PARALLEL: ClassVar[int] = 8
    FL_WAITED: ClassVar[int] = 16
    FL_DDL: ClassVar[int] = 32
    FL_PREPARED_XA: ClassVar[int] = 64
    FL_COMPLETED_XA: ClassVar[int] = 128

    @property
    def triple(self) -> GtidTriple:
        # tuple.__new__: the NamedTuple's generated __new__ is one more Python call
        return _new_tuple(GtidTriple, (self.domain_id, self.header[2], self.seq_no))

    @property
    def gtid(self) -> str:
        return f"{self.domain_id}-{self.header[2]}-{self.seq_no}"  # header[2]: server_id

    @property
    def standalone(self) -> bool:
        """True when the event group has no COMMIT/XID (a DDL or non-transactional)."""
        return bool(self.flags2 & self.FL_STANDALONE)


@dataclass(frozen=True, slots=True)
class GtidListEvent(Event):
    """MariaDB GTID_LIST_EVENT: the binlog state at the start of a log file."""

    gtids: tuple[GtidTriple, ...]
    #: The top four bits of the count field (GTID_LIST flags).
    list_flags: int = 0

    @property
    def gtid_state(self) -> str:
        return ",".join(str(g) for g in self.gtids)


@dataclass(frozen=True, slots=True)
class BinlogCheckpointEvent(Event):
    """MariaDB BINLOG_CHECKPOINT_EVENT: the oldest log still needed for recovery."""

    log_file: str


@dataclass(frozen=True, slots=True)
class AnnotateRowsEvent(Event):
    """MariaDB ANNOTATE_ROWS_EVENT: the SQL text behind the following row events."""

    query: str


@dataclass(frozen=True, slots=True)
class XaPrepareEvent(Event):
    """XA_PREPARE_LOG_EVENT: XA PREPARE (or one-phase XA COMMIT)."""

    one_phase: bool
    format_id: int
    gtrid: bytes
    bqual: bytes


@dataclass(frozen=True, slots=True)
class BeginLoadQueryEvent(Event):
    """BEGIN_LOAD_QUERY_EVENT: first block of a LOAD DATA file."""

    file_id: int
    data: bytes


@dataclass(frozen=True, slots=True)
class AppendBlockEvent(Event):
    """APPEND_BLOCK_EVENT: a further block of a LOAD DATA file."""

    file_id: int
    data: bytes


@dataclass(frozen=True, slots=True)
class ExecuteLoadQueryEvent(Event):
    """EXECUTE_LOAD_QUERY_EVENT: the LOAD DATA statement that uses the file.

    ``query`` holds the statement with the file name at
    ``[fn_pos_start:fn_pos_end]``; ``query_event`` has the status variables.
    """

    query_event: QueryEvent
    file_id: int
    fn_pos_start: int
    fn_pos_end: int
    dup_handling: int

    @property
    def query(self) -> str:
        return self.query_event.query


# -- MySQL events -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MysqlGtidEvent(Event):
    """MySQL GTID_LOG_EVENT (33) / GTID_TAGGED_LOG_EVENT (42): starts a transaction.

    ``gtid`` is ``"uuid:gno"`` (``"uuid:tag:gno"`` for tagged GTIDs). Fields a
    server version does not write are ``None`` (5.6 has no logical clock, 5.7
    no commit timestamps, ...). Timestamps are microseconds since the epoch.
    """

    flags: int
    uuid: str
    gno: int
    tag: str | None = None
    last_committed: int | None = None
    sequence_number: int | None = None
    immediate_commit_timestamp: int | None = None
    original_commit_timestamp: int | None = None
    transaction_length: int | None = None
    immediate_server_version: int | None = None
    original_server_version: int | None = None
    commit_group_ticket: int | None = None

    #: The transaction may contain statement-based changes.
    FLAG_MAY_HAVE_SBR: ClassVar[int] = 1

    @property
    def gtid(self) -> str | None:
        if self.tag:
            return f"{self.uuid}:{self.tag}:{self.gno}"
        return f"{self.uuid}:{self.gno}"


@dataclass(frozen=True, slots=True)
class AnonymousGtidEvent(MysqlGtidEvent):
    """MySQL ANONYMOUS_GTID_LOG_EVENT (34): a transaction without a GTID (gtid_mode=OFF)."""

    @property
    def gtid(self) -> str | None:
        return None


class GtidSetEntry(NamedTuple):
    """One source of a MySQL GTID set: UUID, tag ('' when untagged), intervals.

    Intervals are ``(first, last)`` pairs, both inclusive (``uuid:1-5`` is ``(1, 5)``).
    """

    uuid: str
    tag: str
    intervals: tuple[tuple[int, int], ...]

    def __str__(self) -> str:
        head = f"{self.uuid}:{self.tag}" if self.tag else self.uuid
        return head + "".join(f":{a}-{b}" if a != b else f":{a}" for a, b in self.intervals)


@dataclass(frozen=True, slots=True)
class PreviousGtidsEvent(Event):
    """MySQL PREVIOUS_GTIDS_LOG_EVENT (35): the GTIDs of all earlier binlog files."""

    entries: tuple[GtidSetEntry, ...]

    @property
    def gtid_set(self) -> str:
        """The set in MySQL's text form (``uuid:1-5:7,uuid2:tag:1-3``)."""
        return ",".join(str(e) for e in self.entries)


@dataclass(frozen=True, slots=True)
class RowsQueryEvent(Event):
    """MySQL ROWS_QUERY_LOG_EVENT (29): the SQL text behind the following row events."""

    query: str


@dataclass(frozen=True, slots=True)
class IncidentEvent(Event):
    """INCIDENT_EVENT (26): something happened on the primary that replicas must know.

    ``incident`` is the server's number as written (1 = LOST_EVENTS, 2 =
    LOST_GTIDS_IN_... ); values outside the known range are kept, not rejected.
    """

    incident: int
    message: str

    LOST_EVENTS: ClassVar[int] = 1


@dataclass(frozen=True, slots=True)
class HeartbeatV2Event(HeartbeatEvent):
    """HEARTBEAT_LOG_EVENT_V2 (41): heartbeat with a 64-bit position."""

    position: int = 0


@dataclass(frozen=True, slots=True)
class ViewChangeEvent(Event):
    """VIEW_CHANGE_EVENT (37): a group replication membership change."""

    view_id: str
    seq_number: int
    certification_info: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class TransactionContextEvent(Event):
    """TRANSACTION_CONTEXT_EVENT (36): group replication certification data."""

    server_uuid: str
    thread_id: int
    gtid_specified: bool
    snapshot_version: bytes
    write_set: tuple[bytes, ...]
    read_set: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class TransactionPayloadEvent(Event):
    """TRANSACTION_PAYLOAD_EVENT (40): a compressed transaction.

    ``events`` are the inner events (GTID excluded: it precedes the payload),
    decoded in order; ``EventDecoder.iter_decode`` yields them right after
    this event.
    """

    compression_type: int
    payload_size: int
    uncompressed_size: int
    events: tuple[Event, ...] = field(repr=False)


@dataclass(frozen=True, slots=True)
class StartEncryptionEvent(Event):
    """MariaDB START_ENCRYPTION_EVENT (164): every later event of the file is encrypted."""

    scheme: int
    key_version: int
    nonce: bytes


def event_type_name(type_code: int) -> str:
    """The server's name for ``type_code`` (``"UNKNOWN(n)"`` if not known)."""
    try:
        return EventType(type_code).name
    except ValueError:
        return f"UNKNOWN({type_code})"
