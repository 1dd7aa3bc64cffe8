"""Binlog wire constants: event types, column types, flags. No I/O.

Names follow the server sources (``sql/log_event.h``, ``include/mysql_com.h``,
MariaDB ``sql/log_event.h``) so they can be looked up there.
"""

from __future__ import annotations

from enum import IntEnum, IntFlag
from typing import Final

__all__ = [
    "BINARY_COLLATION",
    "BINLOG_MAGIC",
    "CHECKSUM_LEN",
    "EVENT_HEADER_LEN",
    "HEARTBEAT_TYPES",
    "BinlogChecksumAlg",
    "ColumnType",
    "EventFlag",
    "EventType",
    "RowsFlag",
]

BINLOG_MAGIC: Final = b"\xfebin"
EVENT_HEADER_LEN: Final = 19
CHECKSUM_LEN: Final = 4
#: The collation id of the ``binary`` character set: a column with it holds bytes, not text.
BINARY_COLLATION: Final = 63


class EventType(IntEnum):
    """Binlog event type codes (MySQL 5.0 - 9.x and MariaDB)."""

    UNKNOWN_EVENT = 0
    START_EVENT_V3 = 1
    QUERY_EVENT = 2
    STOP_EVENT = 3
    ROTATE_EVENT = 4
    INTVAR_EVENT = 5
    LOAD_EVENT = 6
    SLAVE_EVENT = 7
    CREATE_FILE_EVENT = 8
    APPEND_BLOCK_EVENT = 9
    EXEC_LOAD_EVENT = 10
    DELETE_FILE_EVENT = 11
    NEW_LOAD_EVENT = 12
    RAND_EVENT = 13
    USER_VAR_EVENT = 14
    FORMAT_DESCRIPTION_EVENT = 15
    XID_EVENT = 16
    BEGIN_LOAD_QUERY_EVENT = 17
    EXECUTE_LOAD_QUERY_EVENT = 18
    TABLE_MAP_EVENT = 19
    PRE_GA_WRITE_ROWS_EVENT = 20
    PRE_GA_UPDATE_ROWS_EVENT = 21
    PRE_GA_DELETE_ROWS_EVENT = 22
    WRITE_ROWS_EVENT_V1 = 23
    UPDATE_ROWS_EVENT_V1 = 24
    DELETE_ROWS_EVENT_V1 = 25
    INCIDENT_EVENT = 26
    HEARTBEAT_LOG_EVENT = 27
    IGNORABLE_LOG_EVENT = 28
    ROWS_QUERY_LOG_EVENT = 29
    WRITE_ROWS_EVENT = 30
    UPDATE_ROWS_EVENT = 31
    DELETE_ROWS_EVENT = 32
    GTID_LOG_EVENT = 33
    ANONYMOUS_GTID_LOG_EVENT = 34
    PREVIOUS_GTIDS_LOG_EVENT = 35
    TRANSACTION_CONTEXT_EVENT = 36
    VIEW_CHANGE_EVENT = 37
    XA_PREPARE_LOG_EVENT = 38
    PARTIAL_UPDATE_ROWS_EVENT = 39
    TRANSACTION_PAYLOAD_EVENT = 40
    HEARTBEAT_LOG_EVENT_V2 = 41
    GTID_TAGGED_LOG_EVENT = 42
    # MariaDB
    ANNOTATE_ROWS_EVENT = 160
    BINLOG_CHECKPOINT_EVENT = 161
    GTID_EVENT = 162
    GTID_LIST_EVENT = 163
    START_ENCRYPTION_EVENT = 164
    QUERY_COMPRESSED_EVENT = 165
    WRITE_ROWS_COMPRESSED_EVENT_V1 = 166
    UPDATE_ROWS_COMPRESSED_EVENT_V1 = 167
    DELETE_ROWS_COMPRESSED_EVENT_V1 = 168
    WRITE_ROWS_COMPRESSED_EVENT = 169
    UPDATE_ROWS_COMPRESSED_EVENT = 170
    DELETE_ROWS_COMPRESSED_EVENT = 171


#: The events that open a transaction (MariaDB's GTID event, MySQL's GTID events,
#: anonymous or not): where a resumed dump by GTID starts again, and where a file
#: may be cut.
TRANSACTION_START_TYPES: Final = frozenset(
    {
        int(EventType.GTID_EVENT),
        int(EventType.GTID_LOG_EVENT),
        int(EventType.ANONYMOUS_GTID_LOG_EVENT),
        int(EventType.GTID_TAGGED_LOG_EVENT),
    }
)

#: The heartbeats a primary sends while it has nothing else (never written to a binlog).
HEARTBEAT_TYPES: Final = frozenset(
    {int(EventType.HEARTBEAT_LOG_EVENT), int(EventType.HEARTBEAT_LOG_EVENT_V2)}
)


class EventFlag(IntFlag):
    """Flags in the common event header."""

    #: FDE only: the log was not closed cleanly (still in use, or a crash).
    BINLOG_IN_USE = 0x1
    THREAD_SPECIFIC = 0x4
    SUPPRESS_USE = 0x8
    UPDATE_TABLE_MAP_VERSION = 0x10
    #: Made up by the primary for the replica (fake ROTATE, fake GTID_LIST).
    ARTIFICIAL = 0x20
    RELAY_LOG = 0x40
    #: A replica that does not know this event type may ignore it.
    IGNORABLE = 0x80
    NO_FILTER = 0x100
    MTS_ISOLATE = 0x200
    #: MariaDB: the event was skipped by a replica's filters (replicate_*).
    SKIP_REPLICATION = 0x8000


class RowsFlag(IntFlag):
    """Flags in the post-header of rows events."""

    STMT_END = 0x1
    NO_FOREIGN_KEY_CHECKS = 0x2
    RELAXED_UNIQUE_CHECKS = 0x4
    COMPLETE_ROWS = 0x8


class BinlogChecksumAlg(IntEnum):
    """The checksum algorithm announced by the FORMAT_DESCRIPTION_EVENT."""

    OFF = 0
    CRC32 = 1
    #: Pre-5.6.1 MySQL / pre-5.3 MariaDB FDE: no algorithm byte, no trailers.
    UNDEF = 255


class ColumnType(IntEnum):
    """Column type codes of TABLE_MAP_EVENT (``enum_field_types``)."""

    DECIMAL = 0
    TINY = 1
    SHORT = 2
    LONG = 3
    FLOAT = 4
    DOUBLE = 5
    NULL = 6
    TIMESTAMP = 7
    LONGLONG = 8
    INT24 = 9
    DATE = 10
    TIME = 11
    DATETIME = 12
    YEAR = 13
    NEWDATE = 14
    VARCHAR = 15
    BIT = 16
    TIMESTAMP2 = 17
    DATETIME2 = 18
    TIME2 = 19
    TYPED_ARRAY = 20
    #: MariaDB ``BLOB``/``TEXT ... COMPRESSED`` and ``VARCHAR ... COMPRESSED``
    #: (column compression; the value is compressed in the row image too).
    BLOB_COMPRESSED = 140
    VARCHAR_COMPRESSED = 141
    VECTOR = 242
    INVALID = 243
    BOOL = 244
    JSON = 245
    NEWDECIMAL = 246
    ENUM = 247
    SET = 248
    TINY_BLOB = 249
    MEDIUM_BLOB = 250
    LONG_BLOB = 251
    BLOB = 252
    VAR_STRING = 253
    STRING = 254
    GEOMETRY = 255
