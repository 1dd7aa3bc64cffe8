"""A blocking binlog dump for the Spark source: transaction boundaries, and rows of a range.

No pyspark import. The source runs the replica's own
:class:`~replica_client.session.ReplicaSession` over the blocking driver
(:class:`~replica_client.blocking.BlockingReplica`, no event loop) with a
non-blocking dump, in two places:

- **The driver** plans: :meth:`BinlogDump.transactions` yields a :class:`Txn`
  per transaction boundary: where it begins and ends, its GTID, the GTID state
  and schema history after it, its size, and how many TABLE_MAP and rows events
  of the selected tables it holds. Rows are left undecoded
  (``DecoderOptions(decode_rows=False)``; the table filter still drops other
  tables' events) and no event's bytes are kept: the driver holds no binlog
  data, whatever the transactions' sizes.
- **Executors** read: :meth:`BinlogDump.rows` dumps one planned range again,
  from its begin to its end, on a connection of the task's own (its own
  ``server_id``), and yields its decoded rows events as they arrive: a task's
  memory is the decoder's, whatever the transactions' sizes.

Row counts (for ``maxRowsPerTrigger``) need the rows decoded; the driver does
that only when asked (``decode_rows=True``).

With a schema history (``definitions``, a
:class:`~replica_client.schema.tracker.SchemaTracker`) the session's decoder
completes every kept TABLE_MAP from it, so a TABLE_MAP it cannot prove raises
:class:`~replica_client.errors.SchemaHistoryError`, and follows every DDL; each
:class:`Txn` carries the history valid before it (``begin_schema``, where a
task reading from there starts) and after it (``schema``). Every QueryEvent is
checked in the driver (:meth:`~replica_client.changes.ChangeBuilder.statement`):
one that changed rows of a selected table as SQL text raises
:class:`~replica_client.errors.StatementLoggedError` before any task runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

from ..binlog.events import (
    DeleteRowsEvent,
    QueryEvent,
    RawRowsEvent,
    TableMapEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)
from ..binlog.transactions import TransactionTracker
from ..blocking import BlockingReplica
from ..config import DecoderOptions
from ..errors import BinlogPositionError
from ..position import FilePos, Gtid, MysqlGtidSet
from ..schema import SchemaTracker
from ..session import ReplicaSession
from .history import replica_config, statement_check
from .options import SourceOptions

__all__ = ["BinlogDump", "RangeRow", "Start", "Txn", "position_key"]

#: Where a dump starts: a file position, or a GTID state.
Start = FilePos | Gtid | MysqlGtidSet
#: A decoded rows event.
RowsEvent = WriteRowsEvent | UpdateRowsEvent | DeleteRowsEvent
#: A rows event of a range, with where it is: (event, file, start position, GTID).
RangeRow = tuple[RowsEvent, str, int, "str | None"]


def position_key(pos: FilePos) -> tuple[str, int, str, int]:
    """Sort key of a binlog position: ``FilePos.order``, the project's one file order."""
    return pos.order


@dataclass(slots=True)
class Txn:
    """One transaction (or one event outside transactions) of the dump.

    Attributes:
        file: the binlog file the transaction's events are in.
        events: how many TABLE_MAP and rows events of the selected tables it holds.
        gtid: the transaction's GTID, when the binlog has one.
        begin: where a dump reading this transaction starts: the end of the last
            real transaction before it (or the dump's own start).
        begin_state: the GTID state at ``begin`` (as text; empty when unknown).
        begin_schema: the schema history valid at ``begin`` (None without one).
        end: where the next transaction starts.
        gtid_state: the GTID state after this transaction (MariaDB state or
            MySQL executed set, as text; empty when unknown).
        nbytes: binlog bytes the transaction spans (all of its events).
        rows: rows of the kept rows events (counted only when asked, else 0).
        real: False for boundaries made only of artificial events (the fake
            ROTATE and re-sent FDE of a dump): their position is not a place
            the binlog can be re-read from.
        schema: the schema history valid after the transaction (a
            :class:`~replica_client.schema.history.SchemaHistory`; its TABLE_MAPs
            were completed with it), None without one.
        host: the primary dumped (``host:port``): the one ``begin`` and ``end``
            are positions of.
    """

    file: str
    events: int
    gtid: str | None
    begin: Start
    begin_state: str
    begin_schema: object
    end: FilePos
    gtid_state: str
    nbytes: int
    rows: int
    real: bool
    schema: object = None
    host: str = ""


class BinlogDump:
    """One non-blocking dump from ``start``, until the binlog's end or a planned end.

    Args:
        opts: connection and decoder options (host, port, user, ...).
        start: a file position, or a GTID state (first dump of a query
            started with a GTID).
        gtid_state: the GTID state at ``start`` (from the offset).
        decode_rows: decode rows events (:attr:`Txn.rows` counted; :meth:`rows`
            needs them).
        definitions: the schema tracker holding the history valid at ``start``
            (None: TABLE_MAPs as the binlog has them).
        binlog_format: the primary's global ``binlog_format``, for the message of
            :class:`~replica_client.errors.StatementLoggedError`.
        server_id: the replica id of this connection (default: the options').
    """

    def __init__(
        self,
        opts: SourceOptions,
        start: Start,
        gtid_state: Gtid | MysqlGtidSet,
        *,
        decode_rows: bool = False,
        definitions: SchemaTracker | None = None,
        binlog_format: str | None = None,
        server_id: int | None = None,
    ) -> None:
        # the registration connect() would make with these options, as a one-off read
        config = dataclasses.replace(
            replica_config(opts),
            blocking=False,
            heartbeat_period=0.0,
            semi_sync="off",
            annotate_rows=False,
        )
        if server_id is not None:
            config = dataclasses.replace(config, server_id=server_id)
        settings = config.registration_settings(start)
        decoder = DecoderOptions(
            verify_checksum=opts.verify_checksum, tables=opts.tables, decode_rows=decode_rows
        )
        session = ReplicaSession(
            settings,
            decoder_options=decoder,
            gtid_state=gtid_state,
            definitions=definitions,
        )
        self._start = start
        self._gtid_state = gtid_state
        self._history = definitions.history if definitions is not None else None
        self._address = opts.address
        # The one rule for statements logged as SQL text (raises StatementLoggedError).
        self._statement = statement_check(opts, binlog_format)
        self._replica = BlockingReplica(
            session,
            opts.host,
            opts.port,
            ssl_context=config.ssl_context(),
            connect_timeout=opts.connect_timeout,
            read_timeout=opts.read_timeout,
        )

    @property
    def bytes_received(self) -> int:
        return self._replica.bytes_received

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self._replica.close()

    def __enter__(self) -> BinlogDump:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def transactions(self) -> Iterator[Txn]:
        """Yield every transaction boundary of the dump, in order, until the binlog's end."""
        begin: Start = self._start
        begin_state = str(self._gtid_state)
        begin_schema: object = self._history
        events = nbytes = rows = 0
        real = False
        # The GTID of the transaction being read is the core tracker's, fed the
        # items' events as they are handed out (the items carry the boundaries, not
        # the GTID, and the session's own tracker may be events ahead of them).
        # ``grouped``: a transaction opened since the last boundary, so that a
        # boundary of events outside transactions carries no GTID.
        transactions = TransactionTracker()
        grouped = False
        statement = self._statement
        for item in self._replica.items():
            event = item.event
            if item.countable:
                real = True
                nbytes += item.size
            if isinstance(event, TableMapEvent | RawRowsEvent):
                events += 1
            elif isinstance(event, RowsEvent):
                events += 1
                rows += len(event.rows)
            elif event is not None:
                transactions.observe(event)
                grouped = grouped or transactions.in_group
                if type(event) is QueryEvent:
                    where = FilePos(item.file, item.start) if item.file else None
                    statement(event, where, transactions.gtid if grouped else None)
            cp = item.checkpoint
            if cp is not None:
                state = str(cp.gtid_state)
                gtid = transactions.gtid if grouped else None
                yield Txn(
                    item.file, events, gtid, begin, begin_state, begin_schema, cp.position,
                    state, nbytes, rows, real, cp.schema, self._address,
                )  # fmt: skip
                if real:
                    begin, begin_state, begin_schema = cp.position, state, cp.schema
                events = nbytes = rows = 0
                grouped = real = False

    def rows(self, end: FilePos) -> Iterator[RangeRow]:
        """Every rows event of the selected tables from the start until the transaction
        boundary ``end``: ``(event, file, start position, GTID)``, as it arrives.

        Raises:
            BinlogPositionError: the binlog has no transaction boundary at ``end``
                (purged, reset or rewritten since the range was planned).
        """
        transactions = TransactionTracker()
        stop = end.order
        try:
            for item in self._replica.items():
                event = item.event
                if isinstance(event, RowsEvent):
                    gtid = transactions.gtid if transactions.in_group else None
                    yield event, item.file, item.start, gtid
                elif event is not None and not isinstance(event, TableMapEvent):
                    transactions.observe(event)
                cp = item.checkpoint
                if cp is not None and item.countable:
                    at = cp.position.order
                    if at == stop:
                        return
                    if at > stop:
                        break
        finally:
            self.close()
        raise BinlogPositionError(
            1236,
            "HY000",
            f"cannot read the binlog of {self._address} from {self._start} to {end}: it "
            "has no transaction boundary there",
            "The binlog was purged, reset or rewritten since the batch was planned; "
            "restart the query from a new checkpoint (startingPosition)",
        )
