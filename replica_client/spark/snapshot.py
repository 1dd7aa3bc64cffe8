"""``startingPosition=snapshot``: the tables' existing rows as the first micro-batches.

No pyspark import. The driver (:func:`plan_snapshot`) takes the stream's start
``P0`` (the primary's binlog end and GTID state now) and cuts every selected
table into primary-key ranges of about ``snapshotChunkRows`` rows (the key
boundaries only; a table whose key order is not Python's, text keys, is one
range). Each range is read by one executor task (:func:`read_chunk`) in its
own ``START TRANSACTION WITH CONSISTENT SNAPSHOT`` at its own binlog point
``Pc >= P0``; its rows are changelog rows with ``op`` ``r`` whose ``file``,
``pos``, ``gtid`` and ``seq`` are those of ``Pc``. The stream then starts at
``P0``.

A change streamed after the snapshot that comes before its row's read point
is already in the read row: its ``seq`` is lower than the read's. A sink that
applies a change to a key only when its ``seq`` is higher than the one it
holds for that key (``examples/spark_pipeline.py``) ends with exactly the
primary's rows. Tables need a primary key; MySQL needs ``RELOAD`` (each read
point is taken under a brief global read lock).
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Iterator
from typing import Any, TypeVar

import pyarrow as pa

from ..control.blocking import SqlConnection, run
from ..control.primary import NO_BINLOG, ServerFacts, binlog_end, server_facts, snapshot_point
from ..control.procedure import Procedure, Query
from ..errors import SnapshotError
from ..snapshot import (
    COLUMNS_SQL,
    KEY_SQL,
    NO_LOG_MESSAGE,
    SESSION_SQL,
    SYSTEM_SCHEMAS,
    TABLES_SQL,
    TablePlan,
    key_converters,
    key_from_json,
    key_to_json,
    plan_table,
    select_sql,
)
from ..wire.packets import text_row_values
from .changelog import ChangelogBuilder
from .history import replica_config
from .options import SourceOptions

__all__ = ["Chunk", "ask_on", "plan_snapshot", "read_chunk"]

#: One range of one table: ``"schema.table"``, the key after which it starts and the
#: key it ends with (key JSON as in ``SnapshotState``; None: unbounded).
Chunk = tuple[str, "list[Any] | None", "list[Any] | None"]

_FETCH = 1000
T = TypeVar("T")


class _Connection:
    """A task's (or the planner's) own client connection, in the snapshot's session
    settings: the project's wire protocol (:class:`SqlConnection`), as the stream's
    snapshot reader."""

    def __init__(self, opts: SourceOptions) -> None:
        self.config = replica_config(opts)
        self.sql = SqlConnection(self.config)
        try:
            for statement in SESSION_SQL:
                self.sql.rows(statement)
        except BaseException:
            self.sql.close()
            raise

    def rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return list(self.sql.rows(Query(sql, args).text))

    def close(self) -> None:
        self.sql.close()


def _connect(opts: SourceOptions) -> _Connection:
    return _Connection(opts)


def _rows(conn: _Connection, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    return conn.rows(sql, args)


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def ask_on(conn: _Connection, procedure: Procedure[T]) -> T:
    """Drive a control-layer procedure over this task's own connection (so a snapshot
    transaction it starts is the task's)."""
    return run(conn.config, procedure, conn=conn.sql)


def _server(conn: _Connection) -> ServerFacts:
    """What the primary is; raises on NO_LOG metadata (no charsets for the values)."""
    facts = ask_on(conn, server_facts())
    if facts.mariadb and facts.row_metadata == "NO_LOG":
        raise SnapshotError(NO_LOG_MESSAGE)
    return facts


def _plan(conn: _Connection, name: str, facts: ServerFacts) -> TablePlan:
    schema, _, table = name.partition(".")
    columns = [
        (_text(n), _text(d), _text(c)) for n, d, c in _rows(conn, COLUMNS_SQL, (schema, table))
    ]
    key = [_text(r[0]) for r in _rows(conn, KEY_SQL, (schema, table))]
    labels = facts.row_metadata == "FULL"  # ENUM/SET as the stream gives them
    plan = plan_table(schema, table, columns, key, labels=labels, mariadb=facts.mariadb)
    if not plan.key:
        raise SnapshotError(
            f"table {name} has no primary key: startingPosition=snapshot needs one "
            "(the sink merges the snapshot and the stream by key)"
        )
    return plan


def _point(conn: _Connection, facts: ServerFacts) -> tuple[str, int, str]:
    """Start a consistent-snapshot transaction: (file, pos, GTID state) it reads at."""
    while (end := ask_on(conn, snapshot_point(facts))) is None:
        time.sleep(0.1)  # the read lock gave way to running commits: ask again
    assert end.position is not None
    return end.position.file, end.position.pos, str(end.gtid)


def plan_snapshot(opts: SourceOptions, chunk_rows: int) -> tuple[tuple[str, int, str], list[Chunk]]:
    """The stream's start (file, pos, GTID state) and the key ranges to read."""
    conn = _connect(opts)
    try:
        facts = _server(conn)
        names = [
            f"{_text(s)}.{_text(t)}"
            for s, t in _rows(conn, TABLES_SQL)
            if _text(s) not in SYSTEM_SCHEMAS and opts.tables(_text(s), _text(t))
        ]
        end = ask_on(conn, binlog_end(facts, exact=True))
        if end.position is None:
            raise SnapshotError(NO_BINLOG)
        start = (end.position.file, end.position.pos, str(end.gtid))
        chunks: list[Chunk] = []
        for name in names:
            plan = _plan(conn, name, facts)
            chunks += _ranges(conn, plan, chunk_rows)
        return start, chunks
    finally:
        conn.close()


def _ranges(conn: _Connection, plan: TablePlan, chunk_rows: int) -> list[Chunk]:
    """``plan``'s table cut at every ``chunk_rows``-th key (one range: text keys)."""
    if not plan.ordered_key:
        return [(plan.name, None, None)]
    convert = key_converters(plan)
    out: list[Chunk] = []
    after = None
    while True:
        sql = select_sql(plan, after, None, 1, key_only=True, offset=chunk_rows - 1)
        columns = conn.sql.stream(sql)
        found = []
        while (batch := conn.sql.next_rows(_FETCH)) is not None:
            found += [text_row_values(p, len(columns)) for p in batch]
        if not found:
            out.append((plan.name, key_to_json(after), None))
            return out
        upto = tuple(None if v is None else f(v) for f, v in zip(convert, found[0], strict=True))
        out.append((plan.name, key_to_json(after), key_to_json(upto)))
        after = upto


def read_chunk(opts: SourceOptions, chunk: Chunk) -> Iterator[pa.RecordBatch]:
    """The rows of one key range as changelog rows (``op`` ``r``), read at their own point."""
    name, after, upto = chunk
    conn = _connect(opts)
    try:
        facts = _server(conn)
        plan = _plan(conn, name, facts)
        file, pos, gtid = _point(conn, facts)
        at = dt.datetime.now(dt.UTC)
        builder = ChangelogBuilder()
        sql = conn.sql
        columns = sql.stream(select_sql(plan, key_from_json(after), key_from_json(upto), None))
        text = plan.text_plan([c.charset for c in columns])
        names = [c.name for c in plan.columns]
        while (batch := sql.next_rows(_FETCH)) is not None:
            rows = [dict(zip(names, values, strict=True)) for values in text.parse(batch)]
            builder.add_reads(plan.schema, plan.table, plan.key, rows, file, pos, gtid or None, at)
            yield from builder.ready()
        _rows(conn, "COMMIT")
        yield from builder.rest()
    finally:
        conn.close()


def chunks_json(chunks: list[Chunk]) -> str:
    return json.dumps(chunks, separators=(",", ":"))
