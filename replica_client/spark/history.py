"""The schema history of the Spark source: prepared in the driver, shipped to executors.

No pyspark import. Primaries in their default settings write TABLE_MAPs without
column names, signedness, charsets or ENUM/SET labels (MariaDB
``binlog_row_metadata=NO_LOG``, MySQL ``MINIMAL``); a
:class:`~replica_client.schema.history.SchemaHistory` says them, valid at one
binlog point and moved by the DDL read after it. A history cannot be read from
the primary where a task starts (its definitions are today's), so the driver
follows the DDL and hands each task the history valid where its work starts.

- Stream: the driver prepares the history at the query's start
  (:func:`prepare`, as ``connect()`` does), its dump session follows every DDL
  with a :class:`~replica_client.schema.tracker.SchemaTracker`, every offset
  carries the history valid there (:class:`HistoryJson`: the JSON form, kept
  to the tables of the ``tables`` option and those the binlog changed) and a
  restarted query resumes from its offset's, and each partition carries the
  history valid where its range starts (see ``partitions.py``); the task's
  decoder follows the DDL within the range.
- Batch over files: ``schemaHistory`` names a JSON file holding the history at
  the start of the first file (:func:`load_history_file`); the driver reads the
  files' events in order before planning (rows undecoded) and gives every
  task the history valid at the start of its span (:func:`span_histories`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..binlog.events import QueryEvent
from ..changes import ChangeBuilder
from ..config import DecoderOptions
from ..errors import ConfigError
from ..position import FilePos, Gtid, MysqlGtidSet
from ..schema import SchemaHistory, Unproven
from .options import SourceOptions

if TYPE_CHECKING:
    from ..aio.config import ReplicaConfig
    from ..control.queries import PreparedHistory

__all__ = [
    "HistoryJson",
    "history_from_json",
    "load_history_file",
    "prepare",
    "replica_config",
    "span_histories",
    "statement_check",
]


def replica_config(opts: SourceOptions) -> ReplicaConfig:
    """The library's replica configuration for the primary of ``opts`` (its control
    connection and its scans of the binlog for DDL)."""
    from ..aio.config import ReplicaConfig

    opts.require_connection()
    assert opts.server_id is not None
    return ReplicaConfig(
        user=opts.user,
        password=opts.password,
        server_id=opts.server_id,
        host=opts.host,
        port=opts.port,
        tls=opts.tls,
        tls_ca=opts.tls_ca,
        connect_timeout=opts.connect_timeout,
        decoder=DecoderOptions(verify_checksum=opts.verify_checksum, tables=opts.tables),
    )


def prepare(opts: SourceOptions, start: FilePos | Gtid | MysqlGtidSet | str) -> PreparedHistory:
    """The table definitions valid at ``start`` ("now" or a binlog point), read from the
    primary of ``opts`` (``schemaHistory=scan``: the binlog between ``start`` and the
    moment they were read is always read for DDL; ``auto``: where it matters).

    Raises:
        SchemaHistoryError: DDL kept coming while the definitions were read.
        ConnectionLostError, ServerError: the primary could not be asked.
    """
    from ..control.blocking import run
    from ..control.queries import prepare_history

    scan = "always" if opts.schema_history == "scan" else "auto"
    return run(replica_config(opts), prepare_history(opts.tables or None, start, scan=scan))


def history_from_json(data: Any, where: str) -> SchemaHistory:
    """A history from its JSON form (``where``: what held it, for the error).

    Raises:
        ConfigError: not a schema history.
    """
    try:
        if not isinstance(data, dict):
            raise ValueError(f"a {type(data).__name__}, not an object")
        return SchemaHistory.from_json(data)
    except ValueError as exc:
        raise ConfigError(f"{where} holds no valid schema history: {exc}") from None


def load_history_file(path: str) -> SchemaHistory:
    """The history of option ``schemaHistory``'s file: a Checkpoint's JSON (its
    ``schema``) or a SchemaHistory's (``SchemaHistory.to_json``).

    Raises:
        ConfigError: the file cannot be read, or holds neither.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"option schemaHistory: cannot read {path!r}: {exc}") from None
    if isinstance(data, dict) and "tables" not in data and ("schema" in data or "gtid" in data):
        from ..checkpoint import Checkpoint

        checkpoint = Checkpoint.from_dict(data)
        if checkpoint.schema_history is None:
            raise ConfigError(
                f"option schemaHistory: the checkpoint in {path!r} holds no schema history"
            )
        return checkpoint.schema_history
    return history_from_json(data, f"option schemaHistory's file {path!r}")


class HistoryJson:
    """The JSON form of histories as offsets and partitions carry them, kept to the
    tables ``keep`` selects (and those the binlog changed: see ``SchemaHistory.to_json``).

    A history is a value that a tracker replaces only when a DDL or a TABLE_MAP
    changes it, so the form of the last one asked for is kept and given again
    while the same object comes.
    """

    __slots__ = ("_form", "_keep", "_last")

    def __init__(self, keep: Callable[[str, str], bool] | None) -> None:
        self._keep = keep
        self._last: SchemaHistory | None = None
        self._form: dict[str, Any] | None = None

    def __call__(self, history: object) -> dict[str, Any] | None:
        if not isinstance(history, SchemaHistory):
            return None
        if history is not self._last:
            self._form = history.to_json(keep=self._keep)
            self._last = history
        return self._form


def span_histories(
    files: Sequence[str],
    starts: Sequence[Sequence[int]],
    options: DecoderOptions,
    history: SchemaHistory,
    unproven: str = "error",
    check: Callable[[QueryEvent, FilePos | None, str | None], object] | None = None,
) -> list[list[SchemaHistory]]:
    """The history valid where every span of every file starts (``starts[i]``: the
    start offsets of the spans of ``files[i]``, in order; 0 is the file's start),
    ``history`` being the one at the start of the first file.

    Reads every event of the files in order (rows left undecoded): DDL moves the
    history, a TABLE_MAP it cannot prove raises
    :class:`~replica_client.errors.SchemaHistoryError` (``unproven="error"``), and
    ``check(event, position, gtid)`` sees every QueryEvent (the statement rule).
    """
    from ..binlog.transactions import TransactionTracker
    from ..files import BinlogFileReader

    options = replace(options, decode_rows=False)
    mode: Unproven = "positional" if unproven == "positional" else "error"
    out: list[list[SchemaHistory]] = []
    transactions = TransactionTracker()  # the GTID of each event's transaction
    for path, offsets in zip(files, starts, strict=True):
        found: list[SchemaHistory] = []
        reader = BinlogFileReader([Path(path)], options, schema_history=history, unproven=mode)
        with reader:
            tracker = reader.schema
            assert tracker is not None
            for event in reader:
                where = reader.event_position
                assert where is not None
                while len(found) < len(offsets) and offsets[len(found)] <= where.pos:
                    found.append(history)  # the history before this event
                transactions.observe(event)
                if check is not None and type(event) is QueryEvent:
                    check(event, where, transactions.gtid)
                history = tracker.history
        found.extend([history] * (len(offsets) - len(found)))
        out.append(found)
    return out


def statement_check(
    opts: SourceOptions, binlog_format: str | None = None
) -> Callable[[QueryEvent, FilePos | None, str | None], object]:
    """The statement rule for the tables of ``opts``: raises StatementLoggedError for a
    QueryEvent that changed rows of a selected table as SQL text."""
    builder = ChangeBuilder(
        statements="error",
        tables=opts.tables,
        binlog_format=binlog_format,
        remedy="or leave such tables out of the source's tables option: the changelog has no "
        "row for a statement",
    )
    return builder.statement
