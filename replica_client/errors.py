"""The exception tree. Every exception replica_client raises on purpose derives
from :class:`ReplicaError`.

Malformed bytes raise :class:`ProtocolError` subclasses only (the sans-I/O core
raises nothing else for bad input); server ERR packets become
:class:`ServerError` subclasses keyed by errno; transport failures become
:class:`ConnectionLostError` / :class:`ReplicaTimeoutError` at the driver edge;
API misuse is a :class:`StateError`.
"""

from __future__ import annotations

__all__ = [
    "AuthenticationError",
    "BinlogPositionError",
    "ChecksumMismatchError",
    "ConfigError",
    "ConnectionLostError",
    "DecryptionError",
    "FailoverError",
    "LimitExceededError",
    "LostTransactionsError",
    "MalformedEventError",
    "PacketSequenceError",
    "PacketTooLargeError",
    "ProtocolError",
    "ReplicaError",
    "ReplicaTimeoutError",
    "SchemaChangedError",
    "SchemaHistoryError",
    "SchemaMismatchError",
    "ServerError",
    "ServerIdConflictError",
    "SnapshotError",
    "StateError",
    "StatementLoggedError",
    "TruncatedBinlogError",
    "UnknownEventError",
    "UnknownSchemaError",
    "UnrepresentableValueError",
    "UnsupportedError",
    "server_error",
]


class ReplicaError(Exception):
    """Base class for all errors raised by replica_client."""


# -- raised by the sans-I/O core: the bytes we were given are wrong ------------------


class ProtocolError(ReplicaError):
    """Input does not follow the MySQL/MariaDB wire or binlog format."""


class PacketSequenceError(ProtocolError):
    """A packet arrived with an unexpected sequence id."""

    def __init__(self, *, expected: int, received: int) -> None:
        super().__init__(f"packet sequence id {received}, expected {expected}")
        self.expected = expected
        self.received = received


class PacketTooLargeError(ProtocolError):
    """A reassembled packet payload is larger than the configured limit."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(
            f"payload of {size} bytes exceeds the limit of {limit} bytes "
            "(raise max_packet_size / max_event_size if this is expected)"
        )
        self.size = size
        self.limit = limit


class MalformedEventError(ProtocolError):
    """A binlog event could not be decoded; carries enough context to find it.

    The shared byte codec (:mod:`replica_client.codec`) raises it, with the
    offset, for any field that breaks its layout; the decoder adds the event's
    type and position, and ``wire/`` parsers report it as the
    :class:`ProtocolError` of the packet they were reading.

    Attributes:
        event_type: the event's type code, when the header could be read.
        position: where the event starts (file offset, or the primary's
            position for network events), when known.
        offset: the byte offset inside the event where decoding failed.
    """

    def __init__(
        self,
        message: str,
        *,
        event_type: int | None = None,
        position: int | None = None,
        offset: int | None = None,
    ) -> None:
        self.reason = message
        self.event_type = event_type
        self.position = position
        self.offset = offset
        super().__init__(self._format())

    def _format(self) -> str:
        where = []
        if self.event_type is not None:
            where.append(f"event type {self.event_type}")
        if self.position is not None:
            where.append(f"at position {self.position}")
        if self.offset is not None:
            where.append(f"offset {self.offset} in event")
        return f"{self.reason} ({', '.join(where)})" if where else self.reason

    def with_context(
        self, *, event_type: int | None = None, position: int | None = None
    ) -> MalformedEventError:
        """Fill in context that the raising code did not know; returns self."""
        if self.event_type is None:
            self.event_type = event_type
        if self.position is None:
            self.position = position
        self.args = (self._format(),)
        return self


class ChecksumMismatchError(MalformedEventError):
    """The CRC32 trailer does not match the event bytes."""


class TruncatedBinlogError(MalformedEventError):
    """The input ends in the middle of an event (or is too short to be a binlog)."""


class UnknownEventError(MalformedEventError):
    """An event type this decoder does not know, without LOG_EVENT_IGNORABLE_F."""


class DecryptionError(ProtocolError):
    """An encrypted binlog cannot be decrypted: missing/wrong key or bad key file."""


class LimitExceededError(ProtocolError):
    """A configured limit (event size, table-map cache, buffer) was exceeded."""


# -- valid input this version does not handle ----------------------------------------


class UnsupportedError(ReplicaError):
    """Well-formed input or a server feature this version cannot handle."""


class UnrepresentableValueError(UnsupportedError):
    """A decoded value that the requested output type cannot hold as it is.

    Raised by the Spark source's typed mode for a zero or partly-zero date, a
    text value that is not valid in its character set, an ENUM/SET value
    outside its labels, or a column absent from the row image; never changed
    silently. The message names the table, the column and the binlog position.

    Attributes:
        table: ``schema.table``.
        column: the column's name.
        position: ``file:pos`` of the rows event, and the row's index in it.
    """

    def __init__(
        self, message: str, *, table: str = "", column: str = "", position: str = ""
    ) -> None:
        super().__init__(message)
        self.table = table
        self.column = column
        self.position = position


class SchemaChangedError(UnsupportedError):
    """A table's layout changed (ALTER TABLE) where the output's schema cannot change.

    Attributes:
        table: ``schema.table``.
        position: ``file:pos`` of the first rows event with the new layout.
    """

    def __init__(self, message: str, *, table: str = "", position: str = "") -> None:
        super().__init__(message)
        self.table = table
        self.position = position


# -- the binlog does not say what is needed, and nothing else proves it ----------------


class StatementLoggedError(ReplicaError):
    """Rows were changed by a statement the primary logged as SQL text.

    With ``binlog_format`` MIXED (MariaDB's default) or STATEMENT, the primary
    logs many changes as the statement that made them, not as row images: the
    binlog does not say which rows changed, or to what. ``changes()`` raises this
    rather than skip them; set ``binlog_format=ROW`` on the primary (and end the
    sessions that set their own), or pass ``statements="deliver"`` to receive
    such statements as changes with ``op="statement"``.

    Attributes:
        statement: the SQL text.
        schema: the statement's current database.
        tables: ``schema.table`` names it may write (empty when they cannot be told).
        position: ``file:pos`` of its QueryEvent, when known.
        gtid: its transaction's GTID, when known.
        binlog_format: the primary's global ``binlog_format`` when it was read.
    """

    def __init__(
        self,
        statement: str,
        *,
        schema: str = "",
        tables: tuple[str, ...] = (),
        position: str = "",
        gtid: str | None = None,
        binlog_format: str | None = None,
        remedy: str = (
            "or pass statements='deliver' to receive such statements as op='statement' changes"
        ),
    ) -> None:
        self.statement = statement
        self.schema = schema
        self.tables = tables
        self.position = position
        self.gtid = gtid
        self.binlog_format = binlog_format
        where = ", ".join(
            p
            for p in (
                f"at {position}" if position else "",
                f"GTID {gtid}" if gtid else "",
                f"writing {', '.join(tables)}" if tables else "writing tables it does not name",
            )
            if p
        )
        text = statement if len(statement) <= 200 else statement[:200] + "..."
        setting = (
            f"the primary's global binlog_format is {binlog_format}"
            if binlog_format and binlog_format.upper() != "ROW"
            else "a session set its own binlog_format"
            if binlog_format
            else "the primary's binlog_format is not ROW"
        )
        super().__init__(
            f"rows were changed by a statement logged as SQL text ({where}): {text!r}; "
            f"{setting}, so the binlog has no row images of this change. Set "
            "binlog_format=ROW on the primary (SET GLOBAL binlog_format=ROW, and in its "
            f"configuration file; sessions already open keep theirs), {remedy}"
        )


class SchemaHistoryError(ReplicaError):
    """A column name or type the binlog does not say cannot be proven at this point.

    Raised where the primary writes TABLE_MAPs without full metadata
    (``binlog_row_metadata`` MINIMAL or NO_LOG) and the schema history cannot
    vouch for the table's definition there. ``unproven="positional"`` delivers
    such a table's rows keyed ``@1``, ``@2``, ... with the binlog's own types
    instead.

    Attributes:
        schema, table: the table.
        column: the column that disagrees, when one does.
        statement: the DDL statement that could not be applied, when one.
        position: where the TABLE_MAP is (``file:pos``, or the offset), when known.
    """

    def __init__(
        self,
        message: str,
        *,
        schema: str = "",
        table: str = "",
        column: str | None = None,
        statement: str | None = None,
        position: str = "",
    ) -> None:
        self.reason = message
        self.schema = schema
        self.table = table
        self.column = column
        self.statement = statement
        self.position = position
        super().__init__(self._format())

    def _format(self) -> str:
        text = self.reason
        if self.statement is not None:
            stmt = self.statement if len(self.statement) <= 200 else self.statement[:200] + "..."
            text += f"; the statement: {stmt!r}"
        if self.position:
            text += f" (TABLE_MAP at {self.position})"
        return text

    def with_context(self, position: str) -> SchemaHistoryError:
        """Fill in where the TABLE_MAP is; returns self."""
        if not self.position:
            self.position = position
            self.args = (self._format(),)
        return self


class SchemaMismatchError(SchemaHistoryError):
    """A TABLE_MAP disagrees with its table's definition in the schema history."""


class UnknownSchemaError(SchemaHistoryError):
    """The schema history has no definition of a table at this point (it was not
    visible when captured, or a DDL statement changed it in a way not applied)."""


class ConfigError(ReplicaError, ValueError):
    """An option has an invalid value (caught before anything is sent)."""


# -- the server answered with an ERR packet ------------------------------------------


class ServerError(ReplicaError):
    """The primary answered with an ERR packet."""

    def __init__(self, errno: int, sqlstate: str, message: str, hint: str = "") -> None:
        text = f"({errno}, {sqlstate!r}) {message}"
        if hint:
            text = f"{text}. {hint}"
        super().__init__(text)
        self.errno = errno
        self.sqlstate = sqlstate
        self.message = message
        self.hint = hint


class AuthenticationError(ServerError):
    """Access denied (errno 1045 and friends)."""


class BinlogPositionError(ServerError):
    """The primary cannot serve the requested file, position or GTID (errno 1236)."""


class ServerIdConflictError(ServerError):
    """Another replica registered with this replica's server_id and the primary
    dropped this connection for it (MariaDB errno 4052). Not retried: reconnecting
    would drop the other replica in turn."""


#: MariaDB ER_SLAVE_SAME_ID; MySQL reports the same as 1236 with this text.
_SAME_ID_ERRNO = 4052
_SAME_ID_TEXT = "same server_uuid/server_id"

_HINTS: dict[int, str] = {
    1236: (
        "The requested binlog position is not available on the primary (purged, "
        "unknown file, or a GTID the primary does not have). Start from "
        "start='earliest' or from a position listed by SHOW BINARY LOGS / "
        "@@gtid_binlog_state, and re-snapshot if changes were lost"
    ),
    1045: "Check the user name and password, and that the user may connect from this host",
    _SAME_ID_ERRNO: (
        "Another replica registered with the same server_id, so the primary dropped "
        "this connection. Give every replica of this primary a unique server_id "
        "(SHOW SLAVE HOSTS lists the ones in use)"
    ),
}

_BY_ERRNO: dict[int, type[ServerError]] = {
    1045: AuthenticationError,
    1044: AuthenticationError,
    1251: AuthenticationError,
    1698: AuthenticationError,
    1236: BinlogPositionError,
    _SAME_ID_ERRNO: ServerIdConflictError,
}


def server_error(errno: int, sqlstate: str, message: str) -> ServerError:
    """Map an ERR packet to the most specific :class:`ServerError` subclass."""
    if _SAME_ID_TEXT in message:
        return ServerIdConflictError(errno, sqlstate, message, _HINTS[_SAME_ID_ERRNO])
    cls = _BY_ERRNO.get(errno, ServerError)
    return cls(errno, sqlstate, message, _HINTS.get(errno, ""))


# -- raised only by drivers (aio/, files.py) -----------------------------------------


class ConnectionLostError(ReplicaError, ConnectionError):
    """The connection closed or failed while more data was expected."""


class ReplicaTimeoutError(ReplicaError, TimeoutError):
    """No data (not even a heartbeat) arrived within the configured time."""


class FailoverError(ReplicaError):
    """The primary was lost and no other host could take over the stream."""


class LostTransactionsError(FailoverError):
    """The new primary lacks transactions the stream already delivered.

    Attributes:
        host: the host that would have taken over.
        missing: the GTIDs delivered by the stream and absent on ``host``
            (MariaDB ``domain-server-seq``, MySQL ``uuid:n`` ranges).
    """

    def __init__(self, host: str, missing: tuple[str, ...], detail: str = "") -> None:
        self.host = host
        self.missing = missing
        shown = ", ".join(missing[:20])
        if len(missing) > 20:
            shown += f" and {len(missing) - 20} more"
        super().__init__(
            f"the new primary {host} lacks transactions this stream already delivered: "
            f"{shown}{detail}; it did not take over (re-snapshot, or fail over to a host "
            "that has them)"
        )


# -- the caller used the API in the wrong state --------------------------------------


class SnapshotError(ReplicaError):
    """The snapshot of existing rows cannot be taken or continued as asked.

    Raised for a primary whose binlog cannot say what the snapshot's values
    are (``binlog_row_metadata=NO_LOG``), a table that cannot be read in
    chunks (no primary key), or a table dropped or renamed while it is read.
    """


class StateError(ReplicaError, RuntimeError):
    """Method not allowed in the current state (e.g. ack() before streaming)."""
