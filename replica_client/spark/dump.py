"""A blocking binlog dump for the Spark driver: raw events grouped into transactions.

Driver side, no pyspark import. The Spark source must not decode rows in the
driver (executors do that, in parallel), but it must know where transactions
end, their GTIDs, and their size. So this module runs the replica's own
:class:`~replica_client.session.ReplicaSession` over the blocking driver
(:class:`~replica_client.blocking.BlockingReplica`, no event loop) with a
non-blocking dump, the session keeping every event's bytes and the decoder
leaving rows undecoded (``DecoderOptions(decode_rows=False)``; the table
filter still drops other tables' events). Positions, transaction boundaries,
GTIDs and the GTID state are the session's; this module only collects
:class:`Txn` objects: the kept raw events of each transaction, the
FORMAT_DESCRIPTION_EVENT they need, the GTID, and the checkpoint after it.

Row counts (for ``maxRowsPerTrigger``) need the rows decoded; that happens here
only when asked (``count_rows=True``).

With a schema history (``definitions``, a
:class:`~replica_client.schema.tracker.SchemaTracker`) the session's decoder
completes every kept TABLE_MAP from it, so a TABLE_MAP it cannot prove raises
:class:`~replica_client.errors.SchemaHistoryError` here, in the driver, and
follows every DDL; each :class:`Txn` carries the history valid after it
(``checkpoint.schema``), which is also the one its TABLE_MAPs were completed
with (a DDL ends the transaction before it). The executors only see TABLE_MAP
and rows events: every QueryEvent is checked here
(:meth:`~replica_client.changes.ChangeBuilder.statement`), and one that changed
rows of a selected table as SQL text raises
:class:`~replica_client.errors.StatementLoggedError`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

from ..binlog.events import (
    DeleteRowsEvent,
    FormatDescriptionEvent,
    QueryEvent,
    RawRowsEvent,
    TableMapEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)
from ..binlog.transactions import TransactionTracker
from ..blocking import BlockingReplica
from ..config import DecoderOptions
from ..position import FilePos, Gtid, MysqlGtidSet
from ..schema import SchemaTracker
from ..session import ReplicaSession
from .history import replica_config, statement_check
from .options import SourceOptions

__all__ = ["BinlogDump", "Txn", "position_key"]


def position_key(pos: FilePos) -> tuple[str, int, str, int]:
    """Sort key of a binlog position: ``FilePos.order``, the project's one file order."""
    return pos.order


@dataclass(slots=True)
class Txn:
    """One transaction (or one event outside transactions) of the dump.

    Attributes:
        fde: the raw FORMAT_DESCRIPTION_EVENT the events are decoded with.
        file: the binlog file the events are in.
        events: ``(start position, raw bytes)`` of the TABLE_MAP and rows
            events kept by the table filter, in order.
        gtid: the transaction's GTID, when the binlog has one.
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
    """

    fde: bytes
    file: str
    events: list[tuple[int, bytes]]
    gtid: str | None
    end: FilePos
    gtid_state: str
    nbytes: int
    rows: int
    real: bool
    schema: object = None


class BinlogDump:
    """One non-blocking dump from ``start``: ``transactions()`` until the binlog's end.

    Args:
        opts: connection and decoder options (host, port, user, ...).
        start: a file position, or a GTID state (first dump of a query
            started with a GTID).
        gtid_state: the GTID state at ``start`` (from the offset).
        count_rows: decode rows events to fill :attr:`Txn.rows`.
        definitions: the schema tracker holding the history valid at ``start``
            (None: TABLE_MAPs as the binlog has them).
        binlog_format: the primary's global ``binlog_format``, for the message of
            :class:`~replica_client.errors.StatementLoggedError`.
    """

    def __init__(
        self,
        opts: SourceOptions,
        start: FilePos | Gtid | MysqlGtidSet,
        gtid_state: Gtid | MysqlGtidSet,
        *,
        count_rows: bool = False,
        definitions: SchemaTracker | None = None,
        binlog_format: str | None = None,
    ) -> None:
        # the registration connect() would make with these options, as a one-off read
        config = dataclasses.replace(
            replica_config(opts),
            blocking=False,
            heartbeat_period=0.0,
            semi_sync="off",
            annotate_rows=False,
        )
        settings = config.registration_settings(start)
        decoder = DecoderOptions(
            verify_checksum=opts.verify_checksum, tables=opts.tables, decode_rows=count_rows
        )
        session = ReplicaSession(
            settings,
            decoder_options=decoder,
            gtid_state=gtid_state,
            keep_raw=True,
            definitions=definitions,
        )
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
        fde = b""
        events: list[tuple[int, bytes]] = []
        nbytes = rows = 0
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
            assert item.raw is not None
            if isinstance(event, TableMapEvent | RawRowsEvent):
                events.append((item.start, item.raw))
            elif isinstance(event, WriteRowsEvent | UpdateRowsEvent | DeleteRowsEvent):
                events.append((item.start, item.raw))
                rows += len(event.rows)
            elif event is not None:
                transactions.observe(event)
                grouped = grouped or transactions.in_group
                if isinstance(event, FormatDescriptionEvent):
                    fde = item.raw
                elif type(event) is QueryEvent:
                    where = FilePos(item.file, item.start) if item.file else None
                    statement(event, where, transactions.gtid if grouped else None)
            cp = item.checkpoint
            if cp is not None:
                state = cp.gtid_state
                gtid = transactions.gtid if grouped else None
                yield Txn(
                    fde, item.file, events, gtid, cp.position, str(state), nbytes, rows, real,
                    cp.schema,
                )  # fmt: skip
                events = []
                grouped = False
                nbytes = rows = 0
                real = False
