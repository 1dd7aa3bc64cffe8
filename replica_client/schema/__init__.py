"""What the binlog does not say about a table, and where it comes from. No I/O.

- :mod:`.provided`: names and SQL data types given by a schema provider, applied
  to a TABLE_MAP (``schema_provider=`` of a stream, ``column_names=`` of files);
- :mod:`.model`: table definitions (:class:`TableDef`, :class:`ColumnDef`);
- :mod:`.history`: the schema history (:class:`SchemaHistory`), a value moved by DDL;
- :mod:`.tracker`: what the decoder consults per TABLE_MAP (:class:`SchemaTracker`);
- :mod:`.sqltypes`: how a column appears in a TABLE_MAP, both ways;
- :mod:`.ddl` (with :mod:`.dialect`) and :mod:`.statements`: DDL and other
  statements of QueryEvents, read with sqlglot.
"""

from __future__ import annotations

from .history import SchemaHistory, Unknown, Unproven
from .model import ColumnDef, TableDef
from .provided import (
    ColumnSchema,
    ProvidedColumns,
    apply_schema,
    converter_for,
    needs_schema,
    retype_rows,
)
from .tracker import SchemaTracker

__all__ = [
    "ColumnDef",
    "ColumnSchema",
    "ProvidedColumns",
    "SchemaHistory",
    "SchemaTracker",
    "TableDef",
    "Unknown",
    "Unproven",
    "apply_schema",
    "converter_for",
    "needs_schema",
    "retype_rows",
]
