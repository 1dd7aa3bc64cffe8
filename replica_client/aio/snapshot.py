"""The snapshot driver: reads existing rows over a client connection, then hands over to the stream.

Driver layer, used by :class:`~replica_client.aio.stream.BinlogStream`
when ``snapshot`` is set; the rules (read points, progress, value types, the
seam) are in :mod:`replica_client.snapshot`.

Read points are the control layer's (:func:`replica_client.control.primary.
snapshot_point`: MariaDB's consistent snapshot is exact without a lock, MySQL's
is taken under a brief global read lock, RELOAD needed), asked over this
reader's own connection so the transaction is its.

Rows are read over the project's own wire protocol
(:class:`~replica_client.aio.sql.SqlConnection`) in primary-key order, one
streamed SELECT per table (consistent mode) or ``LIMIT`` chunks (chunked
mode); their row packets are typed in batches by the table's text-row plan
(:meth:`~replica_client.snapshot.TablePlan.text_plan`: the same values as the
binlog decoder gives).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import AsyncGenerator, Awaitable, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..binlog.events import QueryEvent, RowsEvent
from ..changes import Change
from ..control.primary import NO_BINLOG, ServerFacts, binlog_end, server_facts, snapshot_point
from ..control.procedure import Query
from ..errors import ServerError, SnapshotError
from ..position import FilePos, Gtid, MysqlGtidSet
from ..snapshot import (
    COLUMNS_SQL,
    KEY_SQL,
    NO_LOG_MESSAGE,
    SESSION_SQL,
    SYSTEM_SCHEMAS,
    TABLES_SQL,
    Key,
    ReadPoint,
    Seam,
    SnapshotMode,
    SnapshotState,
    TablePlan,
    TableProgress,
    ddl_tables,
    plan_table,
    select_sql,
)
from ..snapshot.progress import SnapshotProgress
from ..snapshot.reads import read_changes
from .config import ReplicaConfig
from .metrics import StreamMetrics
from .sql import SqlConnection, drive_sql

if TYPE_CHECKING:
    from ..session import StreamItem


class StreamPlace(Protocol):
    """Where the stream stands (``BinlogStream``, or the ``ChangeStream`` over it)."""

    @property
    def config(self) -> ReplicaConfig: ...

    @property
    def position(self) -> FilePos | None: ...

    @property
    def gtid_state(self) -> Gtid | MysqlGtidSet: ...


class ChangeSource(StreamPlace, Protocol):
    """What the snapshot's merge takes from the stream (the ``ChangeStream`` of
    ``stream.changes()``): where it stands, and its next item with that item's
    changes."""

    async def next_changes(self) -> tuple[StreamItem, list[Change]]: ...

    def passed_on(self, item: StreamItem) -> None: ...

    @property
    def received(self) -> bool: ...


__all__ = ["ChangeSource", "SnapshotReader", "StreamPlace"]

#: What a batch of read rows adds to its table's progress once handed out: the
#: table, the rows' keys in order, the point they were read at.
_Marks = tuple["TableProgress", "list[Key]", "ReadPoint"]
#: A batch of changes (read rows of one table, or the stream's), and its marks.
_Item = tuple[list[Change], "_Marks | None"]

_T = TypeVar("_T")
_log = logging.getLogger("replica_client.snapshot")
_FETCH = 1000
#: Seconds between two tries of a read point whose read lock gave way (MySQL).
_LOCK_RETRY = 0.1
_NO_SUCH_TABLE = 1146
_TABLE_DEF_CHANGED = 1412
_UNKNOWN_COLUMN = 1054
#: The server's estimate of a table's rows (exact for MyISAM, approximate for InnoDB).
TABLE_ROWS_SQL = (
    "SELECT TABLE_ROWS FROM information_schema.TABLES "
    "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s"
)


class SnapshotReader:
    """Reads the snapshot tables and merges their rows with the stream's changes."""

    def __init__(
        self,
        config: ReplicaConfig,
        mode: SnapshotMode,
        resume: SnapshotState | None,
        tables: tuple[str, ...] | None = None,
        metrics: StreamMetrics | None = None,
    ):
        self._config = config
        self._tables = tables if tables is not None else config.snapshot_tables
        self._mode = mode
        self._resume = resume
        self._conn: SqlConnection | None = None
        self._mariadb = True
        self._facts: ServerFacts | None = None
        self._plans: dict[str, TablePlan] = {}
        self.state: SnapshotState | None = None
        self._seam: Seam | None = None
        self._run: AsyncGenerator[_Item, None] | None = None
        self._marks: _Marks | None = None  # of the last batch, not settled yet
        self._tx_point: ReadPoint | None = None  # the consistent transaction's point
        self._descriptions: dict[str, tuple[Any, ...]] = {}
        self._ended = False
        self._stream: ChangeSource | None = None
        self._in_tx = False
        self._metrics = metrics
        self._gtids: dict[FilePos, Gtid] = {}  # the GTID state at read points asked
        # per table: rows handed on in this run, and TABLE_ROWS when it began
        self._counts: dict[str, int] = {}
        self._estimates: dict[str, int | None] = {}

    # -- setup --------------------------------------------------------------------------------

    async def begin(self) -> ReadPoint:
        """Connect, plan the tables and take the first read point; returns where to stream from.

        Raises:
            SnapshotError: the snapshot cannot be taken as asked.
            ServerError, ConnectionLostError: the primary refused a statement, or was lost.
        """
        return await self._begin()

    async def _begin(self) -> ReadPoint:
        cfg = self._config
        self._conn = await SqlConnection.open(cfg)
        self._facts = facts = await drive_sql(server_facts(), self._conn)
        self._mariadb = facts.mariadb
        metadata = facts.row_metadata
        # With a schema history the stream's TABLE_MAPs are completed from it (ENUM/SET
        # as labels whatever the metadata); without one, NO_LOG gives no charsets.
        history = cfg.schema_history != "off"
        if self._mariadb and metadata == "NO_LOG" and not history:
            raise SnapshotError(NO_LOG_MESSAGE)
        for sql in SESSION_SQL:
            await self._execute(sql)
        if self._resume is not None:
            # The tables the snapshot began with, whatever the filter says now.
            names = [t.name for t in self._resume.tables]
            self._tables = tuple(names)
            await self._table_names()  # each must still exist
        else:
            names = await self._table_names()
        labels = metadata == "FULL" or history
        for name in names:
            self._plans[name] = await self._plan(name, labels)
            self._estimates[name] = await self._estimate(name)
            self._counts[name] = 0
        if self._mode == "chunked":
            for plan in self._plans.values():
                if not plan.ordered_key:
                    raise SnapshotError(
                        f"table {plan.name} cannot be read in chunks: it has "
                        + (
                            "no primary key"
                            if not plan.key
                            else "a primary key whose order is not Python's (text columns)"
                        )
                        + "; use snapshot='consistent'"
                    )
        if self._mode == "consistent" and (self._resume is None or self._resume.reading):
            point = self._tx_point = await self._start_transaction()
        else:
            point = await self._point_now()
        resume = self._resume
        if resume is not None:
            known = {t.name: t for t in resume.tables}
            tables = [known.get(n) or TableProgress(n) for n in names]
            state = SnapshotState(self._mode, resume.start, tables)
        else:
            state = SnapshotState(self._mode, point, [TableProgress(n) for n in names])
        self.state = state
        self._seam = Seam(state, self._plans)
        _log.info(
            "snapshot (%s) of %d tables; stream from %s",
            self._mode,
            len(names),
            state.start.position,
        )
        return state.start

    def keep(self, change: Change) -> Change | None:
        """``change`` as the seam delivers it (None: dropped), for changes decoded before."""
        assert self._seam is not None, "begin() first"
        return self._seam.keep(change)

    @property
    def attached(self) -> bool:
        return self._run is not None

    def stream_gtid(self, stream: StreamPlace) -> Gtid | MysqlGtidSet | None:
        """The stream's GTID state where it is the whole state (the stream started from a
        GTID state); None where it holds only what this stream delivered (a start at a
        file position or "now"): then positions compare."""
        if not isinstance(stream.config.start, Gtid | MysqlGtidSet):
            return None
        gtid = stream.gtid_state
        return gtid if gtid else None

    def attach(self, stream: ChangeSource) -> None:
        self._stream = stream
        self._run = self._changes()

    async def _table_names(self) -> list[str]:
        cfg = self._config
        wanted = self._tables
        rows = await self._rows(TABLES_SQL)
        found = [(_text(s), _text(t)) for s, t in rows]
        if wanted is not None:
            have = {f"{s}.{t}" for s, t in found}
            missing = [n for n in wanted if n not in have]
            if missing:
                raise SnapshotError(f"snapshot tables not found: {', '.join(missing)}")
            return list(wanted)
        match = cfg.decoder.tables
        return [
            f"{s}.{t}"
            for s, t in found
            if s not in SYSTEM_SCHEMAS and (match is None or match(s, t))
        ]

    async def _columns(self, name: str) -> list[tuple[str, str, str]]:
        """(name, DATA_TYPE, COLUMN_TYPE) of each column of table ``name``, in order."""
        schema, _, table = name.partition(".")
        columns = await self._rows(COLUMNS_SQL, (schema, table))
        return [(_text(n), _text(d), _text(c)) for n, d, c in columns]

    async def _estimate(self, name: str) -> int | None:
        schema, _, table = name.partition(".")
        found = await self._rows(TABLE_ROWS_SQL, (schema, table))
        return int(found[0][0]) if found and found[0][0] is not None else None

    def progress(self) -> list[SnapshotProgress]:
        """How far each table is read (rows handed on, the server's estimate)."""
        state = self.state
        done = {t.name for t in state.tables if t.done} if state is not None else set()
        return [
            SnapshotProgress(name, count, self._estimates.get(name), name in done)
            for name, count in self._counts.items()
        ]

    def _counted(self, name: str, rows: int) -> None:
        self._counts[name] = self._counts.get(name, 0) + rows
        if self._metrics is not None:
            self._metrics.snapshot_rows += rows

    async def _plan(self, name: str, labels: bool) -> TablePlan:
        schema, _, table = name.partition(".")
        columns = await self._columns(name)
        key = await self._rows(KEY_SQL, (schema, table))
        return plan_table(
            schema,
            table,
            columns,
            [_text(k[0]) for k in key],
            labels=labels,
            mariadb=self._mariadb,
        )

    # -- read points --------------------------------------------------------------------------

    async def _start_transaction(self) -> ReadPoint:
        """Start a consistent-snapshot transaction; the point it reads at (asked again
        while the primary's read lock gives way to running commits: MySQL)."""
        while (point := await self._try_transaction()) is None:
            await asyncio.sleep(_LOCK_RETRY)
        return point

    async def _try_transaction(self) -> ReadPoint | None:
        """:meth:`_start_transaction`, or None where the read lock gave way."""
        assert self._facts is not None
        end = await drive_sql(snapshot_point(self._facts, self._gtids), self._sql)
        if end is None:
            return None
        self._in_tx = True
        assert end.position is not None
        return ReadPoint(end.position, end.gtid or None)

    async def _point_now(self) -> ReadPoint:
        assert self._facts is not None
        end = await drive_sql(binlog_end(self._facts, exact=True), self._sql)
        if end.position is None:
            raise SnapshotError(NO_BINLOG)
        return ReadPoint(end.position, end.gtid or None)

    async def _commit(self) -> None:
        if self._in_tx:
            await self._execute("COMMIT")
            self._in_tx = False

    # -- the merged iteration -----------------------------------------------------------------

    async def next_batch(self) -> list[Change] | None:
        """The next changes (read rows of one table, or the stream's kept by the seam;
        maybe none); None once the seam is behind. The changes of the batch before
        are taken to be handed out."""
        assert self._run is not None, "attach() first"
        self.settle(0)
        try:
            changes, self._marks = await anext(self._run)
        except StopAsyncIteration:
            await self.aclose()
            return None
        return changes

    def settle(self, pending: int) -> None:
        """The last batch is handed out but for its last ``pending`` changes: its table's
        progress moves past the keys of the rows handed out (what a saved
        ``snapshot_state`` resumes after)."""
        marks = self._marks
        if marks is None:
            return
        progress, keys, point = marks
        handed = len(keys) - pending
        if handed > 0:
            progress.read(progress.last_key, keys[handed - 1], point)
        if pending <= 0:
            self._marks = None

    async def _changes(self) -> AsyncGenerator[_Item, None]:
        state = self.state
        assert state is not None
        reads = self._consistent(state) if self._mode == "consistent" else self._chunked(state)
        async with aclosing(reads):
            async for item in reads:
                yield item
        await self._commit()
        async with aclosing(self._stream_until(None)) as rest:
            async for item in rest:
                yield item

    async def _consistent(self, state: SnapshotState) -> AsyncGenerator[_Item, None]:
        point = self._tx_point
        for progress in state.tables:
            if progress.done:
                continue
            assert point is not None
            while True:
                try:
                    scan = self._scan(self._plans[progress.name], progress, point)
                    async with aclosing(scan):
                        async for item in scan:
                            yield item
                except _RedoError:
                    # The table changed after this transaction began (before it read it):
                    # read it again, from its start, in a new transaction at a new point.
                    await self._commit()
                    point = await self._start_transaction()
                    await self._replan(progress)
                    continue
                break

    async def _replan(self, progress: TableProgress) -> None:
        old = self._plans[progress.name]
        self._plans[progress.name] = await self._plan(progress.name, old.labels)
        self._descriptions.pop(progress.name, None)
        progress.segments.clear()
        _log.warning("table %s changed during the snapshot: reading it again", progress.name)

    async def _scan(
        self, plan: TablePlan, progress: TableProgress, point: ReadPoint
    ) -> AsyncGenerator[_Item, None]:
        """Every row of ``plan``'s table after the progress so far, read at ``point``."""
        if not plan.ordered_key:
            progress.segments.clear()  # read whole, from its start
        at = dt.datetime.now(dt.UTC)
        conn = self._sql
        text = await self._execute_select(plan, progress.last_key, None)
        finished = False
        try:
            while (batch := await self._fetch(conn.next_rows(_FETCH), plan)) is not None:
                changes, keys = read_changes(plan, text.parse(batch), point, at)
                self._counted(plan.name, len(changes))
                yield changes, (progress, keys, point) if keys is not None else None
            finished = True
        finally:
            if not finished and conn.reading_rows:
                # (the stream closed in the middle of the table: the rest of the result
                # set is not read, the connection not used again)
                self._close_connection()
        progress.read(progress.last_key, None, point)
        progress.done = True

    async def _execute_select(self, plan: TablePlan, after: Key | None, limit: int | None) -> Any:
        """Run the table's SELECT (its rows follow: ``next_rows``); the text-row plan
        of its columns.

        Raises:
            _RedoError: the table's definition changed since it was planned.
            SnapshotError: the table was dropped or renamed.
        """
        # A column added, dropped or retyped since the plan (the SELECT names its columns,
        # so its result alone would not show every change).
        planned = [(c.name, c.data_type, c.column_type) for c in plan.columns]
        if [(n, d.lower(), t.lower()) for n, d, t in await self._columns(plan.name)] != planned:
            raise _RedoError()
        conn = self._sql
        columns = await self._fetch(conn.stream(select_sql(plan, after, None, limit)), plan)
        shape = tuple((c.name, c.column_type, c.charset, c.length) for c in columns)
        if self._descriptions.setdefault(plan.name, shape) != shape:
            while await conn.next_rows(10_000) is not None:
                pass  # (the result set's rows, before the next statement)
            raise _RedoError()
        return plan.text_plan([c.charset for c in columns])

    @staticmethod
    async def _fetch(step: Awaitable[_T], plan: TablePlan) -> _T:
        """``await step`` (a query or a fetch of ``plan``'s table), its errors translated.

        Raises:
            _RedoError: the table's definition changed after the transaction began
                (the server may say so at the query or at its first rows).
            SnapshotError: the table was dropped or renamed.
        """
        try:
            return await step
        except ServerError as exc:
            code = exc.errno
            if code in (_TABLE_DEF_CHANGED, _UNKNOWN_COLUMN):
                raise _RedoError() from exc
            if code == _NO_SUCH_TABLE:
                raise SnapshotError(
                    f"table {plan.name} was dropped or renamed during the snapshot"
                ) from exc
            raise

    async def _chunked(self, state: SnapshotState) -> AsyncGenerator[_Item, None]:
        size = self._config.snapshot_chunk_rows
        for progress in state.tables:
            while not progress.done:
                plan = self._plans[progress.name]
                if not self._mariadb:
                    # MySQL's read point waits for the commits running, and one may
                    # wait for this replica's semi-sync ACK: what the stream has
                    # received, up to the binlog's end, goes first (what it hands out
                    # is ACKed). By position: the executed GTIDs lack the commits
                    # that wait.
                    end = ReadPoint((await self._point_now()).position, None)
                    async with aclosing(self._stream_until(end, received=True)) as now:
                        async for item in now:
                            yield item
                point = await self._try_transaction()
                if point is None:  # the read lock gave way to a commit: again
                    continue
                try:
                    rows = await self._chunk(plan, progress.last_key, size)
                except _RedoError:
                    await self._replan(progress)
                    continue
                finally:
                    await self._commit()
                # The stream up to the chunk's point goes first (changes of its keys are dropped).
                async with aclosing(self._stream_until(point)) as before:
                    async for item in before:
                        yield item
                changes, keys = read_changes(plan, rows, point, dt.datetime.now(dt.UTC))
                assert keys is not None  # (chunks need a key in Python's order)
                self._counted(plan.name, len(changes))
                yield changes, (progress, keys, point)
                if len(rows) < size:
                    progress.read(progress.last_key, None, point)
                    progress.done = True

    async def _chunk(self, plan: TablePlan, after: Key | None, size: int) -> list[tuple[Any, ...]]:
        text = await self._execute_select(plan, after, size)
        rows: list[tuple[Any, ...]] = []
        while (batch := await self._fetch(self._sql.next_rows(_FETCH), plan)) is not None:
            rows.extend(text.parse(batch))
        return rows

    async def _stream_until(
        self, point: ReadPoint | None, *, received: bool = False
    ) -> AsyncGenerator[_Item, None]:
        """The stream's changes kept by the seam, until it passed ``point`` (None: every
        point); ``received``: only those received already (it never waits)."""
        stream, seam = self._stream, self._seam
        assert stream is not None and seam is not None and self.state
        state = self.state
        while not self._ended:
            points = [point] if point is not None else state.points()
            gtid = self.stream_gtid(stream)
            if all(p.passed(stream.position, gtid) for p in points):
                return
            if received and not stream.received:
                return
            try:
                item, changes = await stream.next_changes()
            except StopAsyncIteration:
                self._ended = True  # a non-blocking stream reached the end, or it was closed
                return
            event = item.event
            if isinstance(event, RowsEvent):
                keep = seam.keep
                kept = [k for c in changes if (k := keep(c)) is not None]
                if kept:
                    yield kept, None
            else:
                if isinstance(event, QueryEvent):
                    self._check_ddl(event)
                if changes:  # a statement's (statements="deliver")
                    yield changes, None
            if item.needs_ack:
                # The merge reads on only once the consumer holds every change before:
                # a manual ack() that came since covers this end, which had not
                # arrived then ("auto" ACKed it as it passed).
                stream.passed_on(item)

    def _check_ddl(self, event: QueryEvent) -> None:
        """Raise on a TRUNCATE, DROP or RENAME of a table whose rows are partly handed out:
        the rows read before it would stand in the consumer's copy with no change to
        remove them."""
        kind, names = ddl_tables(event.query, event.schema)
        if not names or self.state is None:
            return
        partly = {t.name for t in self.state.tables if t.segments and not t.done}
        hit = [n for n in names if n in partly]
        if hit:
            raise SnapshotError(
                f"{kind} of {', '.join(hit)} while its snapshot was half read: the rows "
                "read before it are void; snapshot the table again"
            )

    async def aclose(self) -> None:
        self._close_connection()
        run, self._run = self._run, None
        if run is not None:
            await run.aclose()

    # -- SQL ----------------------------------------------------------------------------------

    @property
    def _sql(self) -> SqlConnection:
        conn = self._conn
        if conn is None:
            raise SnapshotError("the snapshot's connection is closed")
        return conn

    def _close_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    async def _rows(self, sql: str, args: Sequence[object] | None = None) -> list[tuple[Any, ...]]:
        return list(await self._sql.rows(Query(sql, tuple(args or ())).text))

    async def _execute(self, sql: str) -> None:
        await self._sql.rows(sql)


class _RedoError(Exception):
    """The table's definition changed after the snapshot transaction began."""


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
