"""Micro-batch planning for the streaming source: offsets, limits, partitions.

Driver side, no pyspark import (the Spark classes in ``source.py`` delegate
here). One :class:`StreamPlanner` lives in Spark's driver-side Python process
for the streaming reader, created lazily on the first call (the reader object
itself is pickled before that). The resume points are :class:`Offset`
(:mod:`.offset`, with their JSON form); a batch is cut into binlog ranges by
:func:`split_partitions` (:mod:`.partitions`) at transaction boundaries,
found without decoding rows, and every task dumps its own range: no binlog
data travels from the driver to a task.

Exactly once: a batch always ends at a transaction boundary, and a batch's
range is re-read deterministically from the primary (``partitions(start,
end)`` after a restart walks from ``start`` until exactly ``end``, and each
task reads until exactly its range's end); when the primary no longer has
that range, :class:`BinlogPositionError` is raised.

Schema history (option ``schemaHistory``, see :mod:`.history`): the first
offset of a new query holds the table definitions valid there, read from the
primary as ``connect()`` reads them (a ``latest`` start is then exactly the
point they were read at); the dump's decoder follows every DDL from there and
completes every TABLE_MAP (one it cannot prove fails the query here, with
:class:`~replica_client.errors.SchemaHistoryError`); every later offset holds
the history valid at it, under ``"schema"``, so a restarted query decodes
with the definitions of its checkpoint, never with the primary's current
ones. Each range starts with the history valid at its start
(:class:`RangePartition`), and its task's decoder follows the DDL within it
as the driver's did. A QueryEvent that changed rows of a selected table as
SQL text fails the query here, in the driver, with
:class:`~replica_client.errors.StatementLoggedError`, before any task runs.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import replace
from typing import Any, TypeVar

from ..control.primary import (
    NO_BINLOG,
    FailoverChoice,
    binlog_files,
    current_end,
    primary_state,
)
from ..control.procedure import Procedure
from ..errors import (
    BinlogPositionError,
    ConfigError,
    ConnectionLostError,
    ReplicaError,
    ReplicaTimeoutError,
)
from ..position import (
    FilePos,
    Gtid,
    GtidTriple,
    MysqlGtidSet,
    missing_transactions,
    parse_gtid_triples,
)
from ..schema import SchemaHistory, SchemaTracker
from .dump import BinlogDump, Txn, position_key
from .history import HistoryJson, load_history_file, prepare, replica_config
from .offset import Offset
from .options import SourceOptions
from .partitions import RangePartition, split_partitions
from .snapshot import Chunk, plan_snapshot

T = TypeVar("T")

__all__ = [
    "Offset",
    "RangePartition",
    "StreamPlanner",
    "query",
    "split_partitions",
]

_CACHE_ENTRIES = 8

_Key = tuple[tuple[str, int, str], tuple[str, int, str]]


def _control_connection(opts: SourceOptions) -> Any:
    import pymysql

    return pymysql.connect(**opts.connection_kwargs())


def query(opts: SourceOptions, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The rows of one statement on the primary, over a short control connection."""
    conn = _control_connection(opts)
    try:
        with conn.cursor() as cur:
            cur.execute(sql, args or None)
            return [tuple(r) for r in cur.fetchall()]
    finally:
        conn.close()


def _ask(opts: SourceOptions, procedure: Procedure[T]) -> T:
    """A control-layer procedure answered by the primary of ``opts``."""
    from ..control.blocking import run

    return run(replica_config(opts), procedure)


def _end(opts: SourceOptions, *, exact: bool = False) -> tuple[FilePos, str]:
    """The primary's binlog end now: its file position and GTID state (``exact``: the
    state at that position)."""
    end = _ask(opts, current_end(exact=exact))
    if end.position is None:
        raise ConfigError(f"the server at {opts.address}: {NO_BINLOG}")
    return end.position, str(end.gtid)


def primary_end(opts: SourceOptions) -> FilePos:
    """The end of the primary's binlog now (its file position)."""
    return _end(opts)[0]


def resolve_start(opts: SourceOptions) -> Offset:
    """The offset of ``startingPosition`` (asks the primary for earliest/latest)."""
    start = opts.starting_position
    if isinstance(start, FilePos):
        return Offset(start.file, start.pos, "", opts.address)
    if isinstance(start, Gtid | MysqlGtidSet):
        return Offset("", 0, str(start), opts.address)
    if start == "earliest":
        files = _ask(opts, binlog_files())
        if not files:
            raise ConfigError(f"the server at {opts.address} has no binary logs")
        return Offset(files[0][0], 4, "", opts.address)
    position, gtid = _end(opts, exact=True)
    return Offset(position.file, position.pos, gtid, opts.address)


def _history(schema: object) -> SchemaHistory | None:
    return schema if isinstance(schema, SchemaHistory) else None


class StreamPlanner:
    """Driver-side state of one streaming query: the live dump, read-ahead, cache."""

    def __init__(self, opts: SourceOptions) -> None:
        opts.require_connection()
        self.opts = opts
        #: The primary streamed from now (one of ``opts.hosts``).
        self._address = opts.addresses[0]
        self._target: FilePos | None = None
        self._dump: BinlogDump | None = None
        self._txns: Iterator[Txn] | None = None
        self._live: Offset | None = None  # where the live dump's next txn starts
        self._peek: Txn | None = None
        self._counting = False
        self._cache: dict[_Key, list[Txn]] = {}
        # The MariaDB GTIDs of the last transactions planned, to name the ones a new
        # primary lacks.
        self._recent: deque[GtidTriple] = deque(maxlen=100_000)
        self._initial: Offset | None = None  # the first offset of a new query
        #: The schema history where the live dump's next transaction starts.
        self._live_history: SchemaHistory | None = None
        #: The JSON form of histories, kept to the selected tables.
        self._history_json = HistoryJson(opts.tables or None)
        #: The primary's global binlog_format (for StatementLoggedError), once read.
        self._binlog_format: str | None = None

    # -- Spark calls ------------------------------------------------------------------------

    @property
    def primary(self) -> SourceOptions:
        """The options of the primary streamed from now."""
        return self.opts.for_address(self._address)

    def initial_offset(self) -> Offset:
        """Where a new query starts, with the schema history valid there (the same
        offset for every call of this query run)."""
        if self._initial is None:
            self._initial = self._starting_offset()
        return self._initial

    def prepare_available_now(self) -> None:
        """Fix the target: the primary's binlog end now; batches never pass it."""
        self._target = primary_end(self.primary)

    def latest_offset(self, start: Offset, max_rows: int | None, max_bytes: int | None) -> Offset:
        """The end of the next batch from ``start``, within the limits and the target."""
        if start.snapshot:
            # Snapshot batches: up to maxPartitions key ranges each (one task a range).
            chunks, planned = start.snapshot_plan()
            return start.with_snapshot(chunks, planned + self.opts.max_partitions)
        target = self._target
        if (
            target is not None
            and start.file
            and start.on(self._address)
            and position_key(FilePos(start.file, start.pos)) >= position_key(target)
        ):
            return start
        self._open(start, count_rows=max_rows is not None)
        taken: list[Txn] = []
        rows = nbytes = 0
        end = start
        history: object = None  # the history at ``end`` once it moved
        while True:
            txn = self._next()
            if txn is None:
                break
            if target is not None and txn.real and position_key(txn.end) > position_key(target):
                self._peek = txn
                break
            if (rows or nbytes) and (
                (max_rows is not None and rows + txn.rows > max_rows)
                or (max_bytes is not None and nbytes + txn.nbytes > max_bytes)
            ):
                self._peek = txn
                break
            rows += txn.rows
            nbytes += txn.nbytes
            if txn.events:
                taken.append(txn)
            if txn.gtid is not None and ":" not in txn.gtid:
                # a MariaDB GTID (parse_gtid_state's rule: a MySQL one has a colon)
                self._recent.extend(parse_gtid_triples(txn.gtid))
            if txn.real:
                end = Offset(txn.end.file, txn.end.pos, txn.gtid_state, self._address)
                history = txn.schema
                self._live = end
                self._live_history = _history(txn.schema)
        if end != start:
            end = replace(end, schema=self._history_json(history))
            if start == self._initial and not start.snapshot:  # the query's first batch
                end = replace(end, initial_schema=start.schema)
            self._remember((start.key, end.key), taken)
        return end

    def snapshot_chunks(self, start: Offset, end: Offset) -> list[Chunk]:
        """The key ranges the snapshot batch ``[start, end)`` reads.

        The plan is the end's where it has one: a first batch replayed after a
        restart may start from a newly planned initial offset, while its end and
        every later offset hold the plan that was logged.
        """
        planned = start.snapshot_plan()[1]
        if end.snapshot:
            chunks, upto = end.snapshot_plan()
            return chunks[planned:upto]
        chunks = start.snapshot_plan()[0]
        return chunks[planned:]

    def plan(self, start: Offset, end: Offset) -> list[RangePartition]:
        """The binlog ranges the tasks of the batch ``[start, end)`` read (its transaction
        boundaries walked again when not cached)."""
        if start == end:
            return []
        if end.initial_schema is not None:  # the first batch: its start's history as planned
            start = replace(start, schema=end.initial_schema)
        txns = self._cache.pop((start.key, end.key), None)
        if txns is None:
            txns = self._reread(start, end)
        return split_partitions(txns, self.opts, self._history_json)

    def commit(self, end: Offset) -> None:
        """Forget cached batches that end at or before ``end`` (Spark calls this late)."""
        if not end.file:
            return
        done = position_key(FilePos(end.file, end.pos))
        for key in list(self._cache):
            file, pos, _ = key[1]
            if file and position_key(FilePos(file, pos)) <= done:
                del self._cache[key]

    def close(self) -> None:
        """Close the live dump (Spark may never call stop(); nothing depends on it)."""
        self._drop_live()
        self._cache.clear()

    # -- internals --------------------------------------------------------------------------

    def _starting_offset(self) -> Offset:
        """The offset of ``startingPosition`` and the schema history valid there."""
        opts = self.opts
        start = opts.starting_position
        if start == "snapshot":
            (file, pos, gtid), chunks = plan_snapshot(self.primary, opts.snapshot_chunk_rows)
            offset = Offset(file, pos, gtid, self._address).with_snapshot(chunks, 0)
        elif start == "latest" and opts.schema_history != "off" and not opts.schema_history_file:
            # exactly the point the definitions were read at (its GTID state, else its position)
            prepared = self._prepare("now")
            point = prepared.point
            if point.gtid:
                offset = Offset("", 0, str(point.gtid), self._address)
            elif point.position is not None:
                offset = Offset(point.position.file, point.position.pos, "", self._address)
            else:
                raise ConfigError(
                    f"the server at {self._address} has no binary log position to start at "
                    "(log_bin off, or the user lacks BINLOG MONITOR / REPLICATION CLIENT)"
                )
            return replace(offset, schema=self._history_json(prepared.history))
        else:
            offset = resolve_start(self.primary)
        history = self._history_at_start(offset)
        return replace(offset, schema=self._history_json(history))

    def _prepare(self, start: FilePos | Gtid | MysqlGtidSet | str) -> Any:
        """The definitions valid at ``start``, read from the primary (``history.prepare``)."""
        prepared = prepare(self.primary, start)
        self._binlog_format = prepared.facts.binlog_format or None
        return prepared

    def _history_at_start(self, offset: Offset) -> SchemaHistory | None:
        """The history valid at a start the query did not plan to (a new query's start,
        or an offset written without a history): the file's of option schemaHistory,
        or read from the primary (None with schemaHistory=off)."""
        opts = self.opts
        if opts.schema_history_file is not None:
            return load_history_file(opts.schema_history_file)
        if opts.schema_history == "off":
            return None
        history: SchemaHistory = self._prepare(offset.start(self._address)).history
        return history

    def _history_at(self, offset: Offset) -> SchemaHistory | None:
        """The history a dump from ``offset`` starts with: the offset's own (a restarted
        query never reads the primary's current definitions for an offset that has one)."""
        if not self.opts.uses_history:
            return None
        history = offset.history()
        if history is not None:
            return history
        return self._history_at_start(offset)  # an offset of a query run before histories

    def _remember(
        self, key: tuple[tuple[str, int, str], tuple[str, int, str]], txns: list[Txn]
    ) -> None:
        if len(self._cache) >= _CACHE_ENTRIES:
            del self._cache[next(iter(self._cache))]
        self._cache[key] = txns

    def _drop_live(self) -> None:
        if self._txns is not None and hasattr(self._txns, "close"):
            self._txns.close()
        if self._dump is not None:
            self._dump.close()
        self._dump = self._txns = self._live = self._peek = None
        self._live_history = None

    def _open(
        self,
        start: Offset,
        *,
        count_rows: bool,
        history: SchemaHistory | None = None,
    ) -> None:
        """The transactions from ``start``: the live dump when it is there, else a new one
        whose decoder starts with ``history`` (None: the offset's)."""
        if self._txns is not None and self._live == start and self._counting >= count_rows:
            return
        self._drop_live()
        if history is None:
            history = self._history_at(start)
        count_rows = count_rows or self.opts.max_rows_per_trigger is not None
        tracker = (
            SchemaTracker(history, unproven=self.opts.unproven) if history is not None else None
        )
        dump = BinlogDump(
            self.primary,
            start.start(self._address),
            start.gtid_state(),
            decode_rows=count_rows,
            definitions=tracker,
            binlog_format=self._binlog_format,
        )
        self._dump = dump
        self._counting = count_rows
        self._txns = dump.transactions()
        self._live = start
        self._live_history = history

    def _next(self) -> Txn | None:
        """The next transaction of the live dump (None at the binlog's end).

        A dump left open between two micro-batches may have been dropped by the
        primary meanwhile (``net_write_timeout``): on a connection error the
        dump is opened again, once, from the last transaction taken.
        """
        if self._peek is not None:
            txn, self._peek = self._peek, None
            return txn
        for attempt in range(3):
            assert self._txns is not None
            try:
                return next(self._txns)
            except StopIteration:
                self._dump = self._txns = self._live = None
                return None
            except (ConnectionLostError, ReplicaTimeoutError) as exc:
                resume, history = self._live, self._live_history
                if resume is None or attempt == 2 or (attempt and len(self.opts.addresses) < 2):
                    raise
                self._drop_live()
                if attempt:  # the primary did not come back: another host takes over
                    self._fail_over(resume, exc)
                self._open(resume, count_rows=self._counting, history=history)
        raise AssertionError("unreachable")  # pragma: no cover

    def _fail_over(self, delivered: Offset, cause: BaseException) -> None:
        """Move to the next writable primary holding every transaction planned so far.

        Raises:
            LostTransactionsError: a writable primary lacks planned transactions.
            FailoverError: no host can take over.
        """
        choice = FailoverChoice(
            self.opts.addresses,
            self._address,
            lambda state: missing_transactions(
                delivered.gtid_state(), state.gtid_state, self._recent, state.binlog_state
            ),
            cause,
        )
        for address in choice.candidates:
            try:
                state = _ask(self.opts.for_address(address), primary_state())
            except ReplicaError as exc:  # unreachable, refused: try the next one
                choice.passed_over(address, exc)
                continue
            if choice.accepts(address, state):
                self._address = address
                if self._target is not None:
                    self._target = primary_end(self.primary)
                return
        raise choice.error() from cause

    def _reread(self, start: Offset, end: Offset) -> list[Txn]:
        """Read ``[start, end)`` again (a restart from the checkpoint)."""
        self._drop_live()
        if not end.file and not end.gtid:
            raise ConfigError(f"offset {end.shown()} has no position to read up to")
        taken: list[Txn] = []
        try:
            self._open(start, count_rows=False)
            while True:
                txn = self._next()
                if txn is None:
                    break
                if end.on(self._address):
                    reached = txn.end == FilePos(end.file, end.pos)
                    beyond = position_key(txn.end) > position_key(FilePos(end.file, end.pos))
                else:  # a batch planned on another primary: its end is a GTID state
                    reached = bool(end.gtid) and txn.gtid_state == str(end.gtid_state())
                    beyond = False
                if txn.real and beyond:
                    break
                if txn.events:
                    taken.append(txn)
                if txn.real:
                    self._live = Offset(txn.end.file, txn.end.pos, txn.gtid_state, self._address)
                    self._live_history = _history(txn.schema)
                    if reached:
                        return taken
        except BinlogPositionError:
            raise
        except ReplicaError:
            self._drop_live()
            raise
        self._drop_live()
        raise BinlogPositionError(
            1236,
            "HY000",
            f"cannot re-read the binlog from {start.shown()} to {end.shown()}: the primary's "
            "binlog no longer has a transaction boundary at the end offset",
            "The binlog was purged, reset or rewritten since the checkpoint was written; "
            "restart the query from a new checkpoint (startingPosition)",
        )
