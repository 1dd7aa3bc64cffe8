"""The ``mariadb_binlog`` data source on Spark's Python Data Source API (pyspark >= 4.2).

The only module that subclasses pyspark's classes; the work is done by
``changelog`` (executors: events -> Arrow), ``dump`` and ``planner``
(driver: the replication connection, offsets, limits). See the package
docstring of :mod:`replica_client.spark` for options and pitfalls.

Process layout, as Spark runs it:

* ``MariaDBBinlogDataSource`` is pickled to Spark's Python workers. The batch
  reader expands the paths in the driver and returns one partition per file;
  the stream reader is pickled before it is used, so its driver-side state
  (:class:`~replica_client.spark.planner.StreamPlanner`, which owns the
  replication connection) is created lazily in the long-lived driver-side
  Python process that Spark keeps for the query, and is never pickled.
* ``read(partition)`` runs on executors: it decodes binlog files (batch), or
  dumps the binlog range the partition names on a replication connection of
  its own (stream; :func:`~replica_client.spark.partitions.read_range`), its
  TABLE_MAPs completed from the schema history the partition carries
  (:mod:`~replica_client.spark.history`), and yields ``pyarrow.RecordBatch`` es
  of the changelog schema. A stream task carries no binlog data.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    BinaryType,
    DataType,
    DateType,
    DayTimeIntervalType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from ..binlog.events import QueryEvent, RowsEvent
from ..binlog.transactions import TransactionTracker
from ..config import DecoderOptions
from ..errors import ConfigError
from ..files import BinlogFileReader, binlog_files_in, file_spans
from ..schema import SchemaHistory
from .changelog import ARROW_SCHEMA, FIELDS, ChangelogBuilder, file_number
from .history import history_from_json, load_history_file, span_histories, statement_check
from .options import SourceOptions, parse_options
from .partitions import RangePartition, read_range
from .planner import Offset, StreamPlanner, query
from .snapshot import Chunk, read_chunk
from .typed import (
    TypedChangelogBuilder,
    TypedColumn,
    check_row_image,
    file_layout,
    history_layout,
    stream_layout,
)

__all__ = [
    "CHANGELOG_SCHEMA",
    "BinlogBatchReader",
    "BinlogStreamReader",
    "FilePartition",
    "MariaDBBinlogDataSource",
    "StreamPartition",
    "changelog_schema",
    "typed_schema",
]

#: Spark types by their ``simpleString()`` (the changelog's and typed mode's).
_SPARK_TYPES: dict[str, DataType] = {
    t.simpleString(): t
    for t in (
        StringType(),
        LongType(),
        IntegerType(),
        TimestampType(),
        TimestampNTZType(),
        DateType(),
        FloatType(),
        DoubleType(),
        BinaryType(),
        DayTimeIntervalType(),
    )
}
_DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)")


def _spark_type(name: str) -> DataType:
    found = _SPARK_TYPES.get(name)
    if found is not None:
        return found
    decimal = _DECIMAL.fullmatch(name)
    if decimal is None:  # pragma: no cover - typed.py names no other type
        raise AssertionError(f"no Spark type {name!r}")
    return DecimalType(int(decimal[1]), int(decimal[2]))


def changelog_schema() -> StructType:
    """The one changelog schema of every table (see ``changelog``)."""
    return StructType([StructField(n, _SPARK_TYPES[t], nullable) for n, t, nullable in FIELDS])


def typed_schema(layout: tuple[TypedColumn, ...]) -> StructType:
    """The changelog schema with ``before``/``after`` as structs of one table (typed=true)."""
    row = StructType([StructField(c.name, _spark_type(c.spark), True) for c in layout])
    return StructType(
        [
            StructField(n, row if n in ("before", "after") else _SPARK_TYPES[t], nullable)
            for n, t, nullable in FIELDS
        ]
    )


def _typed_fields(schema: StructType) -> tuple[tuple[str, str], ...]:
    """(name, Spark type) of the struct fields of a typed schema's ``after``."""
    after = schema["after"].dataType
    if not isinstance(after, StructType):
        raise ConfigError(f"typed=true: the schema's after column is {after.simpleString()}")
    return tuple((f.name, f.dataType.simpleString()) for f in after.fields)


def _builder(opts: SourceOptions, schema: StructType) -> ChangelogBuilder:
    """The builder of ``read()``'s batches: the changelog's, or typed mode's."""
    if not opts.typed:
        return ChangelogBuilder()
    return TypedChangelogBuilder(
        opts.typed_table, _typed_fields(schema), _arrow_schema_for(schema), opts.invalid_values
    )


#: The changelog schema as a Spark ``StructType``.
CHANGELOG_SCHEMA = changelog_schema()


def _arrow_schema_for(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark checks ``read()``'s batches against."""
    try:
        from pyspark.sql.pandas.types import to_arrow_schema

        return to_arrow_schema(schema, timezone="UTC")
    except Exception:  # another signature: our own form matches the 4.2/4.3 one
        return ARROW_SCHEMA


def _conform(batches: Iterator[pa.RecordBatch], target: pa.Schema) -> Iterator[Any]:
    for batch in batches:
        if batch.schema.equals(target):
            yield batch
        else:
            yield pa.RecordBatch.from_arrays(batch.columns, schema=target)


def _decoder_options(opts: SourceOptions, keys: dict[int, bytes] | None) -> DecoderOptions:
    options = opts.decoder_options()
    return replace(options, encryption_keys=keys) if keys else options


# -- batch: binlog files -----------------------------------------------------------------


class FilePartition(InputPartition):
    """A binlog file, or a span of one (``files.file_spans``), read by one task, with the
    schema history valid at its start (JSON form; None without one)."""

    def __init__(
        self,
        index: int,
        path: str,
        span: tuple[int, int] | None = None,
        history: dict[str, Any] | None = None,
    ) -> None:
        self.index = index
        self.path = path
        self.span = span
        self.history = history


def expand_paths(paths: tuple[str, ...]) -> list[Path]:
    """Files named by ``load()``: files, directories (their binlogs) and globs."""
    if not paths:
        raise ConfigError("give the binlog files to read: load('<dir, file or glob>')")
    out: list[Path] = []
    for given in paths:
        entry = os.path.expanduser(given)
        if glob.has_magic(entry):
            matched = sorted(
                (Path(p) for p in glob.glob(entry) if Path(p).is_file()),
                key=lambda p: (_ext_number(p), p.name),
            )
            matched = [p for p in matched if not p.name.endswith(".index")]
            if not matched:
                raise ConfigError(f"no binlog files match {entry!r}")
            out.extend(matched)
        elif Path(entry).is_dir():
            out.extend(binlog_files_in(entry))
        elif Path(entry).is_file():
            out.append(Path(entry))
        else:
            raise ConfigError(f"no such binlog file or directory: {entry!r}")
    return [p.resolve() for p in out]


def _ext_number(path: Path) -> int:
    return file_number(path.name.removesuffix(".gz"))


class BinlogBatchReader(DataSourceReader):
    """``spark.read.format("mariadb_binlog").load(path)``: a partition per file, or per
    ``splitBytes`` of a larger one, cut where a transaction starts (the driver reads
    only the files' event headers for that).

    With ``schemaHistory`` naming a file (the history at the start of the first
    file), the driver reads every file's events in order before planning (rows
    undecoded) and gives each task the history valid where its span starts
    (:func:`~replica_client.spark.history.span_histories`): TABLE_MAPs it cannot
    prove and statements logged as SQL text fail at planning already.
    """

    def __init__(self, opts: SourceOptions, schema: StructType) -> None:
        self.opts = opts
        self.schema = schema
        self.files = [str(p) for p in expand_paths(opts.paths)]
        # Parsed here in the driver and shipped: executors need not see the file.
        self.keys = _encryption_keys(opts)
        self.history = _file_history(opts)

    def __getstate__(self) -> dict[str, Any]:
        # The history is shipped per partition, in its JSON form.
        state = self.__dict__.copy()
        state["history"] = None
        return state

    def partitions(self) -> list[FilePartition]:
        spans: list[list[tuple[int, int]]] = []
        for path in self.files:
            if path.endswith(".gz"):  # cutting would decompress it in the driver too
                spans.append([(0, 0)])
            else:
                spans.append(file_spans(path, self.opts.split_bytes))
        histories: list[list[dict[str, Any] | None]] = [[None] * len(s) for s in spans]
        if self.history is not None:
            found = span_histories(
                self.files,
                [[lo for lo, _ in s] for s in spans],
                _decoder_options(self.opts, self.keys),
                self.history,
                self.opts.unproven,
                statement_check(self.opts),
            )
            keep = self.opts.tables or None
            forms: dict[int, dict[str, Any]] = {}  # id(history) -> its JSON form
            for i, per_span in enumerate(found):
                for j, history in enumerate(per_span):
                    form = forms.get(id(history))
                    if form is None:
                        form = forms[id(history)] = history.to_json(keep=keep)
                    histories[i][j] = form
        parts: list[FilePartition] = []
        for path, cuts, forms_of in zip(self.files, spans, histories, strict=True):
            for span, form in zip(cuts, forms_of, strict=True):
                whole = len(cuts) == 1 or path.endswith(".gz")
                parts.append(FilePartition(len(parts), path, None if whole else span, form))
        return parts

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, FilePartition)
        batches = self._batches(partition.path, partition.span, partition.history)
        return _conform(batches, _arrow_schema_for(self.schema))

    def _batches(
        self, path: str, span: tuple[int, int] | None, history: dict[str, Any] | None = None
    ) -> Iterator[pa.RecordBatch]:
        builder = _builder(self.opts, self.schema)
        options = _decoder_options(self.opts, self.keys)
        start = None if history is None else history_from_json(history, "a file partition")
        reader = BinlogFileReader(
            [Path(path)], options, span=span, schema_history=start, unproven=self.opts.unproven
        )
        statement = statement_check(self.opts)
        # The transaction each event belongs to, as the core tracks it for every
        # reader (a span starts where a transaction does).
        transactions = TransactionTracker()
        with reader:
            for event in reader:
                if isinstance(event, RowsEvent):
                    where = reader.event_position
                    assert where is not None
                    builder.add(event, where.file, where.pos, transactions.gtid)
                    yield from builder.ready()
                    continue
                transactions.observe(event)
                if type(event) is QueryEvent:
                    statement(event, reader.event_position, transactions.gtid)
        yield from builder.rest()


def _file_history(opts: SourceOptions) -> SchemaHistory | None:
    """The history of option schemaHistory's file (batch: at the first file's start)."""
    if opts.schema_history_file is None:
        return None
    return load_history_file(opts.schema_history_file)


def _encryption_keys(opts: SourceOptions) -> dict[int, bytes] | None:
    """The keys of ``keyFile`` (None without one)."""
    if opts.key_file is None:
        return None
    from ..binlog.encryption import parse_key_file

    return parse_key_file(Path(opts.key_file).read_bytes(), opts.key_file_password)


# -- streaming: a live primary -----------------------------------------------------------


class StreamPartition(InputPartition):
    """One binlog range of a micro-batch, which the task dumps itself (no binlog data
    in the task: see :class:`~replica_client.spark.partitions.RangePartition`)."""

    def __init__(self, index: int, part: RangePartition) -> None:
        self.index = index
        self.part = part


class SnapshotPartition(InputPartition):
    """One primary-key range of one table, read by one task (startingPosition=snapshot)."""

    def __init__(self, index: int, chunk: Chunk) -> None:
        self.index = index
        self.chunk = chunk


class BinlogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("mariadb_binlog")``: micro-batches from a live primary."""

    def __init__(self, opts: SourceOptions, schema: StructType) -> None:
        opts.require_connection()
        self.opts = opts
        self.schema = schema
        self._planner: StreamPlanner | None = None

    def __getstate__(self) -> dict[str, Any]:
        # The planner (socket, cache) stays in the driver-side process.
        state = self.__dict__.copy()
        state["_planner"] = None
        return state

    @property
    def planner(self) -> StreamPlanner:
        if self._planner is None:
            self._planner = StreamPlanner(self.opts)
        return self._planner

    # -- driver side --------------------------------------------------------------------------

    def initialOffset(self) -> dict[str, Any]:  # noqa: N802 - Spark's name
        return self.planner.initial_offset().to_json()

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802 - Spark's name
        if self.opts.max_rows_per_trigger is not None:
            return ReadMaxRows(self.opts.max_rows_per_trigger)
        if self.opts.max_bytes_per_trigger is not None:
            return ReadMaxBytes(self.opts.max_bytes_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:  # noqa: N802 - Spark's name
        if isinstance(limit, ReadAllAvailable):
            max_rows = max_bytes = None  # Trigger.Once and the like: options do not apply
        else:
            max_rows = self.opts.max_rows_per_trigger
            max_bytes = self.opts.max_bytes_per_trigger
            if isinstance(limit, ReadMaxRows):
                max_rows = limit.max_rows
            elif isinstance(limit, ReadMaxBytes):
                max_bytes = limit.max_bytes
        end = self.planner.latest_offset(Offset.from_json(start), max_rows, max_bytes)
        return end.to_json()

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802 - Spark's name
        self.planner.prepare_available_now()

    def partitions(
        self, start: dict[str, Any], end: dict[str, Any]
    ) -> list[StreamPartition] | list[SnapshotPartition]:
        first, last = Offset.from_json(start), Offset.from_json(end)
        if first.snapshot:
            chunks = self.planner.snapshot_chunks(first, last)
            return [SnapshotPartition(i, c) for i, c in enumerate(chunks)]
        return [StreamPartition(i, p) for i, p in enumerate(self.planner.plan(first, last))]

    def commit(self, end: dict[str, Any]) -> None:
        self.planner.commit(Offset.from_json(end))

    def stop(self) -> None:
        if self._planner is not None:
            self._planner.close()

    # -- executors ----------------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if isinstance(partition, SnapshotPartition):
            return _conform(read_chunk(self.opts, partition.chunk), _arrow_schema_for(self.schema))
        assert isinstance(partition, StreamPartition)
        part = partition.part
        context = TaskContext.get()
        if context is not None:
            # Two attempts of one partition may run at once (a query that reads the
            # micro-batch twice in one job, speculation): the primary drops a dump
            # whose id another registers with, so the id follows the attempt.
            first, last = self.opts.task_server_ids
            part = replace(part, server_id=first + context.taskAttemptId() % (last - first + 1))
        batches = read_range(self.opts, part, _builder(self.opts, self.schema))
        return _conform(batches, _arrow_schema_for(self.schema))


class MariaDBBinlogDataSource(DataSource):
    """The ``mariadb_binlog`` format: batch over binlog files, streaming from a primary."""

    @classmethod
    def name(cls) -> str:
        return "mariadb_binlog"

    def schema(self) -> StructType:
        opts = parse_options(self.options)
        if not opts.typed:
            return changelog_schema()
        if opts.paths:  # batch: the table's first TABLE_MAP in the files
            files = expand_paths(opts.paths)
            options = _decoder_options(opts, _encryption_keys(opts))
            history = _file_history(opts)
            return typed_schema(file_layout(opts, files, options, history, opts.unproven))
        opts.require_connection()
        if not opts.uses_history:
            return typed_schema(stream_layout(opts, lambda sql, args: query(opts, sql, args)))
        # the table's definition where the query starts, as the planner will prepare it
        planner = StreamPlanner(opts)
        try:
            start = planner.initial_offset()
        finally:
            planner.close()
        history = start.history()
        assert history is not None
        check_row_image(opts, str(query(opts, "SELECT @@GLOBAL.binlog_row_image")[0][0]))
        return typed_schema(history_layout(opts, history))

    def reader(self, schema: StructType) -> BinlogBatchReader:
        return BinlogBatchReader(parse_options(self.options), schema)

    def streamReader(self, schema: StructType) -> BinlogStreamReader:  # noqa: N802 - Spark's name
        return BinlogStreamReader(parse_options(self.options), schema)
