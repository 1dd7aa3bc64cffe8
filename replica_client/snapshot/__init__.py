"""Snapshot, then stream: the rules, without I/O.

A snapshot reads a table's existing rows and emits each as a ``Change`` with
``op="read"``; the stream then continues with the binlog. What makes the seam
exact is one rule per row key: a row was read at a :class:`ReadPoint` (the
binlog position and GTID state whose transactions the read includes), and a
change of that key from the binlog is delivered exactly when its transaction
comes after that point. Keys not read yet are dropped: their read, later, will
include the change.

- *consistent* mode reads every table in one transaction, at one point, and
  the stream starts there: nothing is dropped;
- *chunked* mode reads primary-key ranges in short transactions, each at its
  own point, while the stream runs; a chunk's rows are emitted once the stream
  has passed its point, and changes of keys in ranges not read yet are dropped;
- a snapshot resumed after a crash reads what is left at a new point, while
  the stream restarts from the first point: the per-key rule keeps the rows
  read before the crash and drops the stream's changes that the new read holds.

An update that moves a row from a key whose change is delivered to one whose
change is dropped (or back) is delivered as the delete (or the insert) of the
side that is delivered.

Values are typed exactly as the binlog decoder types them: text through the
decoder's own charset rules (:func:`~replica_client.binlog.columns.text_reader`),
dates through its ``InvalidDate``/``InvalidDatetime`` rules, types the binlog
does not say (UUID, INET, VECTOR) through :mod:`replica_client.schema`.
``TablePlan.text_plan(collations).parse(payloads)`` turns a text result's row
packets into rows by those rules at once (``textrows.py``; compiled when the
accelerator is loaded).
"""

from __future__ import annotations

from .plan import (
    COLUMNS_SQL,
    GEOMETRY_TYPES,
    KEY_SQL,
    NO_LOG_MESSAGE,
    SESSION_SQL,
    SYSTEM_SCHEMAS,
    TABLES_SQL,
    ColumnPlan,
    TablePlan,
    key_converters,
    plan_table,
    select_sql,
)
from .progress import SnapshotProgress
from .seam import Seam, ddl_tables
from .state import (
    Key,
    ReadPoint,
    Segment,
    SnapshotMode,
    SnapshotState,
    TableProgress,
    key_from_json,
    key_to_json,
)
from .textrows import TextCode, TextColumn, TextRowPlan, parse_rows

__all__ = [
    "COLUMNS_SQL",
    "GEOMETRY_TYPES",
    "KEY_SQL",
    "NO_LOG_MESSAGE",
    "SESSION_SQL",
    "SYSTEM_SCHEMAS",
    "TABLES_SQL",
    "ReadPoint",
    "key_converters",
    "key_from_json",
    "key_to_json",
    "select_sql",
    "SnapshotMode",
    "SnapshotState",
    "TablePlan",
    "TableProgress",
    "ddl_tables",
    "plan_table",
    "# also public, from the modules of the package",
    "ColumnPlan",
    "Key",
    "Seam",
    "Segment",
    "TextCode",
    "TextColumn",
    "TextRowPlan",
    "parse_rows",
    "SnapshotProgress",
]
