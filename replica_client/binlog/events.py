"""Typed binlog events: frozen, slotted dataclasses. No I/O.

Every event carries its common header (:class:`EventHeader`). Field names follow
the server's names where they exist. Row values are plain tuples in column
order; column names live once on the :class:`TableMapEvent`.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import ClassVar, Final, NamedTuple

from ..codec import is_mariadb_version
from ..position import GtidTriple
from .constants import EventFlag, EventType
from .header import EventHeader
from .json_binary import JSON_NULL, JsonDiff, JsonNull
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

# -- base -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Event:
    """Base class of all events. ``header`` is the 19-byte common header."""

    header: EventHeader

    @property
    def type_code(self) -> int:
        return self.header.type_code

    @property
    def timestamp(self) -> int:
        """Seconds since the epoch when the statement started on the primary."""
        return self.header.timestamp

    @property
    def server_id(self) -> int:
        return self.header.server_id

    @property
    def log_pos(self) -> int:
        """End position of this event in the primary's binlog (0 if unknown)."""
        return self.header.log_pos

    @property
    def artificial(self) -> bool:
        """True for events the primary made up for the replica (fake ROTATE ...)."""
        return bool(self.header.flags & EventFlag.ARTIFICIAL)

    @property
    def datetime(self) -> _dt.datetime:
        """The header timestamp as an aware UTC datetime."""
        return _dt.datetime.fromtimestamp(self.header.timestamp, _dt.UTC)


@dataclass(frozen=True, slots=True)
class UnknownEvent(Event):
    """An event type this decoder does not know, marked ignorable by the server."""

    body: bytes


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


# -- legacy events (binlog v1/v3, MySQL 3.23 - 5.0) ----------------------------------------


@dataclass(frozen=True, slots=True)
class StartEventV3(Event):
    """START_EVENT_V3 (1): first event of a v1 (3.23) or v3 (4.0) binlog."""

    binlog_version: int
    server_version: str
    create_timestamp: int


@dataclass(frozen=True, slots=True)
class LoadEvent(Event):
    """LOAD_EVENT (6) / NEW_LOAD_EVENT (12): LOAD DATA INFILE as logged by 3.23/4.0.

    ``field_term`` ... ``escaped`` are the FIELDS/LINES options; ``fields`` the
    column list; ``file_name`` the file on the primary.
    """

    thread_id: int
    exec_time: int
    skip_lines: int
    schema: str
    table: str
    fields: tuple[str, ...]
    file_name: str
    field_term: bytes
    enclosed: bytes
    line_term: bytes
    line_start: bytes
    escaped: bytes
    opt_flags: int
    empty_flags: int = 0


@dataclass(frozen=True, slots=True)
class CreateFileEvent(LoadEvent):
    """CREATE_FILE_EVENT (8): a LOAD DATA statement with the first block of its file."""

    file_id: int = 0
    data: bytes = b""


@dataclass(frozen=True, slots=True)
class ExecLoadEvent(Event):
    """EXEC_LOAD_EVENT (10): execute the LOAD DATA of ``file_id``."""

    file_id: int


@dataclass(frozen=True, slots=True)
class DeleteFileEvent(Event):
    """DELETE_FILE_EVENT (11): the LOAD DATA of ``file_id`` failed; drop its file."""

    file_id: int


@dataclass(frozen=True, slots=True)
class SlaveEvent(Event):
    """SLAVE_EVENT (7): a replica's primary coordinates (never written by any server)."""

    master_pos: int
    master_port: int
    master_host: str
    master_log: str


# -- row events --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ColumnInfo:
    """One column of a TABLE_MAP, with what the optional metadata told."""

    index: int
    #: The type code in the TABLE_MAP (ENUM/SET appear as STRING there).
    type: int
    #: The real type (ENUM/SET/STRING resolved from the metadata).
    real_type: int
    #: The raw type metadata (meaning depends on the type).
    meta: int
    nullable: bool
    name: str | None = None
    #: None when the server did not send SIGNEDNESS (binlog_row_metadata=MINIMAL
    #: on MySQL sends it; MariaDB MINIMAL does too; without it ints are signed).
    unsigned: bool | None = None
    #: Collation id of a character column (None when unknown).
    collation: int | None = None
    enum_values: tuple[str, ...] | None = None
    set_values: tuple[str, ...] | None = None
    geometry_type: int | None = None
    visible: bool = True
    #: VECTOR dimensionality (MySQL 9).
    dimensions: int | None = None
    #: The SQL data type from a schema provider (``information_schema.COLUMNS.DATA_TYPE``,
    #: e.g. ``"uuid"``), None when no provider was asked; see ``replica_client.schema``.
    data_type: str | None = None


@dataclass(frozen=True, slots=True)
class TableMapEvent(Event):
    """TABLE_MAP_EVENT: maps ``table_id`` to a table definition for row events."""

    table_id: int
    table_flags: int
    schema: str
    table: str
    columns: tuple[ColumnInfo, ...]
    #: Column indexes of the primary key (SIMPLE_PRIMARY_KEY or PK_WITH_PREFIX).
    primary_key: tuple[int, ...] = ()
    #: (column index, prefix length) pairs; prefix 0 means the whole column.
    primary_key_prefixes: tuple[tuple[int, int], ...] = ()
    #: Optional-metadata fields this decoder does not know: (type, raw value).
    unknown_metadata: tuple[tuple[int, bytes], ...] = ()

    @property
    def column_names(self) -> tuple[str, ...]:
        """Names from the optional metadata; ``@1``, ``@2``, ... where unknown."""
        return tuple(c.name if c.name is not None else f"@{c.index + 1}" for c in self.columns)

    @property
    def has_column_names(self) -> bool:
        return all(c.name is not None for c in self.columns)


@dataclass(frozen=True, slots=True)
class RowsEvent(Event):
    """Base of WRITE/UPDATE/DELETE rows events (v1, v2, compressed and PRE_GA)."""

    table_id: int
    rows_flags: int
    table: TableMapEvent = field(repr=False)
    #: Columns-present bitmap of the (before) image, bit i = column i.
    columns_present: int
    #: v2 extra data (raw), empty for v1.
    extra_data: bytes

    @property
    def schema(self) -> str:
        return self.table.schema

    @property
    def table_name(self) -> str:
        return self.table.table

    @property
    def statement_end(self) -> bool:
        return bool(self.rows_flags & 1)


@dataclass(frozen=True, slots=True)
class RawRowsEvent(Event):
    """A rows event whose rows were left undecoded (``DecoderOptions(decode_rows=False)``).

    Its table is known (and passed the table filter); its bytes are in the
    stream item (``StreamItem.raw``) for a decoder elsewhere.
    """

    table_id: int
    rows_flags: int
    table: TableMapEvent = field(repr=False)


@dataclass(frozen=True, slots=True)
class WriteRowsEvent(RowsEvent):
    """WRITE_ROWS: inserted rows (after images)."""

    rows: tuple[Row, ...]

    op: ClassVar[str] = "insert"


@dataclass(frozen=True, slots=True)
class DeleteRowsEvent(RowsEvent):
    """DELETE_ROWS: deleted rows (before images)."""

    rows: tuple[Row, ...]

    op: ClassVar[str] = "delete"


@dataclass(frozen=True, slots=True)
class UpdateRowsEvent(RowsEvent):
    """UPDATE_ROWS: (before image, after image) pairs."""

    rows: tuple[tuple[Row, Row], ...]
    #: Columns-present bitmap of the after image.
    columns_present_after: int = 0

    op: ClassVar[str] = "update"


class PartialJson(NamedTuple):
    """A JSON after-image value sent as a diff whose base document is not in the event.

    PARTIAL_UPDATE_ROWS with a before image that lacks the column (MINIMAL row
    image): apply ``diffs`` (``json_binary.apply_json_diffs``) to the column's
    previous value to get the new document.
    """

    diffs: tuple[JsonDiff, ...]


@dataclass(frozen=True, slots=True)
class PartialUpdateRowsEvent(UpdateRowsEvent):
    """PARTIAL_UPDATE_ROWS_EVENT (39): UPDATE with JSON columns sent as diffs.

    ``rows`` holds full after images: each partially updated JSON column is
    the before-image document with the diffs applied (or a :class:`PartialJson`
    when the before image lacks that column). ``json_diffs`` gives, per row, the
    diffs by column index, exactly as logged.
    """

    json_diffs: tuple[dict[int, tuple[JsonDiff, ...]], ...] = ()


def event_type_name(type_code: int) -> str:
    """The server's name for ``type_code`` (``"UNKNOWN(n)"`` if not known)."""
    try:
        return EventType(type_code).name
    except ValueError:
        return f"UNKNOWN({type_code})"
